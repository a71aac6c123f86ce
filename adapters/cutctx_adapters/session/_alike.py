"""Whether two values are sent as the same JSON: key order and kinds of scalars included.

Python's ``==`` takes ``1``, ``True`` and ``1.0`` for one value and a dict for the same whatever
the order of its keys, but a provider is sent ``1``, ``true`` or ``1.0``, and the keys in their
order: a session that took such values for unchanged would go on sending what it read before,
where a fresh worker sends what it is given now. ``sent_alike`` compares what is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..history._conversion import MAX_DEPTH

__all__ = ["sent_alike"]


def sent_alike(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` serialize to the same JSON text (a caller's value against the
    plain copy read from it: mappings of any class, tuples as lists, ``str``/``int`` subclasses
    as their plain values). Anything else (an SDK object) is alike only to itself.

    >>> sent_alike({"a": 1, "b": [True]}, {"a": 1, "b": [True]})
    True
    >>> sent_alike({"a": 1}, {"a": True}), sent_alike({"a": 1, "b": 2}, {"b": 2, "a": 1})
    (False, False)

    Values nested deeper than ``MAX_DEPTH`` (which no plain copy is) are not alike.
    """
    return _alike(a, b, MAX_DEPTH)


def _alike(a: Any, b: Any, depth: int) -> bool:
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b) or depth <= 0:
        return _alike_as_sent(a, b, depth)
    if kind is dict:
        if len(a) != len(b):
            return False
        for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True):
            if key_a != key_b or (value_a is not value_b
                                  and not _alike(value_a, value_b, depth - 1)):
                return False
        return True
    if kind is list:
        if len(a) != len(b):
            return False
        for value_a, value_b in zip(a, b, strict=True):
            if value_a is not value_b and not _alike(value_a, value_b, depth - 1):
                return False
        return True
    if kind is float:
        return a == b and repr(a) == repr(b)  # 0.0 and -0.0 are sent apart
    if kind is str or kind is int or kind is bool:
        return bool(a == b)
    return _alike_as_sent(a, b, depth)


def _alike_as_sent(a: Any, b: Any, depth: int) -> bool:
    """``sent_alike`` for values of different classes: compared as the plain JSON they are."""
    plain_a, plain_b = _json_kind(a), _json_kind(b)
    if plain_a is None or plain_a != plain_b:
        return False
    if plain_a in ("object", "array") and depth <= 0:
        return False
    if plain_a == "object":
        return len(a) == len(b) and all(
            _alike(key_a, key_b, depth - 1) and _alike(value_a, value_b, depth - 1)
            for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True))
    if plain_a == "array":
        return len(a) == len(b) and all(
            _alike(value_a, value_b, depth - 1) for value_a, value_b in zip(a, b, strict=True))
    if plain_a == "number":
        if isinstance(a, float) or isinstance(b, float):
            return isinstance(a, float) and isinstance(b, float) and repr(float(a)) == repr(
                float(b))
        return int(a) == int(b)
    return bool(a == b)


def _json_kind(value: Any) -> str | None:
    """The JSON kind ``value`` is sent as (None: not plain JSON data)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return "null" if value is None else None

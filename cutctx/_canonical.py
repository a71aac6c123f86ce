"""Canonical JSON and hashing: the byte format behind every ``plan_hash``.

Values are normalized first (enums to values, tuples to lists, ``-0.0`` to ``0.0``) and anything
without one obvious JSON form is refused, so equal values always hash alike.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from enum import Enum
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from .errors import ValidationError

__all__ = ["canonical_json", "dumps_normalized", "sha256_of", "sha256_text"]


def _normalize(value: Any, path: str) -> Any:
    if isinstance(value, Enum):
        return _normalize(value.value, path)
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"non-finite float at {path}", {"path": path})
        return 0.0 if value == 0 else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"non-str mapping key at {path}", {"path": path})
            out[key] = _normalize(item, f"{path}.{key}")
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_normalize(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise ValidationError(
        f"value of type {type(value).__name__} at {path} has no canonical JSON form",
        {"path": path, "type": type(value).__name__},
    )


def dumps_normalized(value: Any) -> str:
    """Serialize a value that is already plain JSON data (str keys, lists, finite floats)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``.

    >>> canonical_json({"b": (1, 2), "a": -0.0})
    '{"a":0.0,"b":[1,2]}'
    """
    return dumps_normalized(_normalize(value, "$"))


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError("text is not encodable as UTF-8 (lone surrogate)",
                              {"position": exc.start}) from None
    return hashlib.sha256(data).hexdigest()


def sha256_of(value: Any) -> str:
    """Hex sha256 of ``canonical_json(value)``; a string hashes its quoted JSON form."""
    if type(value) is str:  # the hot path (mask stubs): quote directly, no encoder set-up
        # For ASCII text both quoting functions give the same JSON; the ASCII one is faster.
        quote = encode_basestring_ascii if value.isascii() else encode_basestring
        return sha256_text(quote(value))
    return sha256_text(canonical_json(value))

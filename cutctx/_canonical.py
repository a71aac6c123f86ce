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
from json.encoder import encode_basestring
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


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError("text is not encodable as UTF-8 (lone surrogate)",
                              {"position": exc.start}) from None


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(_utf8(text)).hexdigest()


# JSON escapes these bytes with a two-character sequence; in UTF-8 none of them can occur inside
# a multi-byte character, so they can be replaced in the encoded bytes directly.
_SHORT_ESCAPES = ((b"\\", b"\\\\"), (b'"', b'\\"'), (b"\n", b"\\n"), (b"\t", b"\\t"),
                  (b"\r", b"\\r"))
# Every byte but the other control characters (JSON writes them as \u00XX): deleting these
# from a text leaves exactly its other control characters.
_NOT_OTHER_CONTROLS = bytes(byte for byte in range(256)
                            if byte >= 0x20 or byte in b"\n\t\r")


def _escaped_utf8(text: str) -> bytes:
    """UTF-8 of ``canonical_json(text)`` without its quotes, built with bulk byte operations
    where it can be.

    Tool output is mostly plain text with newlines, quotes and tabs: replacing those few bytes
    in the encoded text is several times faster than the JSON encoder's per-character loop.
    Text with rarer control characters takes the encoder's path; both give the same bytes.
    """
    data = _utf8(text)
    if data.translate(None, _NOT_OTHER_CONTROLS):
        return encode_basestring(text)[1:-1].encode("utf-8")
    for raw, escaped in _SHORT_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def _quoted_utf8(text: str) -> bytes:
    """UTF-8 of ``canonical_json(text)`` (``_escaped_utf8`` between quotes)."""
    return b'"' + _escaped_utf8(text) + b'"'


def sha256_of(value: Any) -> str:
    """Hex sha256 of ``canonical_json(value)``; a string hashes its quoted JSON form.

    >>> sha256_of("a") == sha256_text('"a"')
    True
    """
    if type(value) is str:  # the hot path (mask stubs): the quotes hashed around the text
        digest = hashlib.sha256(b'"')
        digest.update(_escaped_utf8(value))
        digest.update(b'"')
        return digest.hexdigest()
    return sha256_text(canonical_json(value))

"""Request bodies: read as JSON (a gzip or deflate one inflated first), and written back.

A body the proxy did not change is forwarded as its very bytes; one it changed is written as
compact JSON (UTF-8, keys in the order read), which is the same bytes for the same value.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

__all__ = ["READABLE", "dumps", "inflater", "read_json"]

_MAX_INFLATED = 256 * 1024 * 1024
READABLE = frozenset({"", "identity", "gzip", "deflate"})
"""The content codings the proxy reads (the standard library's): requests' and replies'."""


def inflater(coding: str) -> zlib._Decompress | None:
    """A decompressor for a gzip or deflate body (``coding`` lower-cased), None for a plain
    one."""
    if coding == "gzip":
        return zlib.decompressobj(32 + zlib.MAX_WBITS)
    return zlib.decompressobj(zlib.MAX_WBITS) if coding == "deflate" else None


def read_json(body: bytes, content_encoding: str) -> dict[str, Any] | None:
    """The body as a JSON object, or None when it is not one (or is in a coding the proxy does
    not read: it is then forwarded untouched)."""
    coding = content_encoding.strip().lower()
    if coding not in READABLE:
        return None
    try:
        inflate = inflater(coding)
        if inflate is not None:
            body = inflate.decompress(body, _MAX_INFLATED)
            if inflate.unconsumed_tail:
                return None
        value = json.loads(body)
    except (ValueError, zlib.error, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def dumps(value: dict[str, Any]) -> bytes:
    """Compact JSON of a request the proxy changed."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (escaped in the input): keep it escaped
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")

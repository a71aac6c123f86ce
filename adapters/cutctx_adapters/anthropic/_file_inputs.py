"""Base64 sources given as files, read as the SDK reads them.

The SDK's types let a ``{"type": "base64", "data": ...}`` source carry a ``pathlib.Path`` or an
open binary file instead of the base64 text; the SDK reads and encodes it when it sends. cutctx
converts a history before the SDK sees it, so it does the same first: a path is read, a file
object is read from where it stands and put back there (when it can seek), the caller's
message is never changed (the blocks on the way to a file are copied).
"""

from __future__ import annotations

import base64
import io
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from cutctx import ValidationError

__all__ = ["with_file_data"]

_MAX_DEPTH = 8
"""Sources sit in a content block, or in a block inside a tool result's content."""


def with_file_data(message: Any, index: int) -> Any:
    """``message`` with every base64 source's file ``data`` read and encoded (the message itself
    when it has none)."""
    return _walk(message, index, "", 0)


def _walk(value: Any, index: int, field: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        data = value.get("data")
        if value.get("type") == "base64" and _is_file(data):
            return {**value, "data": _encoded(data, index, f"{field}.data".lstrip("."))}
        changed: dict[str, Any] | None = None
        for key, item in value.items():
            if isinstance(item, Mapping | list):
                new = _walk(item, index, f"{field}.{key}" if isinstance(key, str) else field,
                            depth + 1)
                if new is not item:
                    changed = dict(value) if changed is None else changed
                    changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        out: list[Any] | None = None
        for position, item in enumerate(value):
            new = _walk(item, index, f"{field}[{position}]", depth + 1)
            if new is not item:
                out = list(value) if out is None else out
                out[position] = new
        return value if out is None else out
    return value


def _is_file(data: object) -> bool:
    return isinstance(data, io.IOBase | os.PathLike)


def _encoded(data: Any, index: int, field: str) -> str:
    """The bytes behind ``data``, base64-encoded; a ``ValidationError`` naming where if they
    cannot be read (never the path or the bytes)."""
    try:
        if isinstance(data, pathlib.Path):
            raw: Any = data.read_bytes()
        elif isinstance(data, os.PathLike):
            raise TypeError("only pathlib.Path and file objects are read")
        else:
            raw = _read_in_place(data)
        if isinstance(raw, str):
            raw = raw.encode()
        if not isinstance(raw, bytes | bytearray):
            raise TypeError("the file gave no bytes")
    except (OSError, TypeError, ValueError) as exc:
        raise ValidationError(
            f"message {index}: the file given as base64 data at {field!r} could not be read "
            f"({type(exc).__name__})",
            {"index": index, "field": field, "rule": "file_unreadable"}) from None
    return base64.b64encode(bytes(raw)).decode("ascii")


def _read_in_place(stream: Any) -> Any:
    """Read a file object from where it stands and put it back there, if it can seek."""
    start = stream.tell() if stream.seekable() else None
    try:
        return stream.read()
    finally:
        if start is not None:
            stream.seek(start)

"""What a payload no tokenizer reads costs, shared by every provider's token accounting: a
base64 PDF's pages (read from its page objects, else its size; counted once per document) and
opaque bytes by their size."""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import OrderedDict

__all__ = ["decoded_base64", "opaque_tokens", "pdf_pages"]

_BYTES_PER_TOKEN = 4
"""Opaque or encrypted payloads (redacted thinking, encrypted results, unknown inline types)."""
_PDF_BYTES_PER_PAGE = 100_000
"""The page count of a PDF whose page objects are compressed: its size over this."""
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PDF_CACHE_SIZE = 32
_pdf_cache: OrderedDict[tuple[int, int], int] = OrderedDict()
"""Page counts by (length, hash) of the base64 text: counts only, never a document's bytes."""
_pdf_lock = threading.Lock()


def decoded_base64(data: str) -> bytes:
    """Base64 text (standard or URL-safe alphabet, padded or not) as bytes (empty if it is
    not base64)."""
    try:
        return base64.b64decode(data.replace("-", "+").replace("_", "/") + "==",
                                validate=False)
    except (binascii.Error, ValueError):
        return b""


def opaque_tokens(data: str) -> int:
    """Tokens of a base64 payload no model reads as text: its bytes over four."""
    return -(-len(data) * 3 // 4 // _BYTES_PER_TOKEN)


def pdf_pages(data: str) -> int:
    """Pages of a base64 PDF: its page objects, else its size; found once per document."""
    key = (len(data), hash(data))
    with _pdf_lock:
        if key in _pdf_cache:
            _pdf_cache.move_to_end(key)
            return _pdf_cache[key]
    raw = decoded_base64(data)
    pages = len(_PDF_PAGE.findall(raw)) or max(1, -(-len(raw) // _PDF_BYTES_PER_PAGE))
    with _pdf_lock:
        _pdf_cache[key] = pages
        while len(_pdf_cache) > _PDF_CACHE_SIZE:
            _pdf_cache.popitem(last=False)
    return pages

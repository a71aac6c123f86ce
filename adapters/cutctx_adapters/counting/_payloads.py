"""What a payload no tokenizer reads costs, shared by every provider's token accounting: a
base64 PDF's pages (read from its page objects, else its page tree's count, else its size;
counted once per document) and opaque bytes by their size."""

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
_PDF_COUNT = re.compile(rb"/Count\s+(\d+)")
_PDF_MAGIC = b"%PDF-"
_PDF_HEADER_WITHIN = 1024
"""A PDF's header may follow a little junk: readers look for it within the first kilobyte."""
_PDF_CACHE_SIZE = 64
_pdf_cache: OrderedDict[tuple[int, int], int | None] = OrderedDict()
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


def pdf_pages(data: str) -> int | None:
    """Pages of a base64 PDF (or a ``data:`` URL holding one): its page objects, else the count
    its page tree states, else its size; None when it is no PDF. Found once per document."""
    key = (len(data), hash(data))
    with _pdf_lock:
        if key in _pdf_cache:
            _pdf_cache.move_to_end(key)
            return _pdf_cache[key]
    raw = decoded_base64(data.partition(",")[2] if data.startswith("data:") else data)
    pages: int | None = None
    if _PDF_MAGIC in raw[:_PDF_HEADER_WITHIN]:
        pages = (len(_PDF_PAGE.findall(raw))
                 or max((int(n) for n in _PDF_COUNT.findall(raw)), default=0)
                 or max(1, -(-len(raw) // _PDF_BYTES_PER_PAGE)))
    with _pdf_lock:
        _pdf_cache[key] = pages
        while len(_pdf_cache) > _PDF_CACHE_SIZE:
            _pdf_cache.popitem(last=False)
    return pages

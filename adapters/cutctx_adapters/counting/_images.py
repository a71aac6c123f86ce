"""Image sizes read from base64 headers, shared by every provider's token accounting.

Only the bytes a PNG, GIF, WEBP or JPEG header needs are decoded, never the whole image, so
estimating a history full of screenshots stays cheap.
"""

from __future__ import annotations

import base64
import binascii
import struct

__all__ = ["Base64Bytes", "data_url_bytes", "image_size", "image_size_from_base64",
           "image_size_from_data_url"]


def image_size_from_data_url(url: str) -> tuple[int, int] | None:
    """``(width, height)`` read from the header of a base64 ``data:`` URL's PNG, JPEG, GIF or WEBP.

    Only the bytes the header needs are decoded. None for a remote URL, another format, or data
    that is not what it claims.
    """
    data = data_url_bytes(url)
    return None if data is None else image_size(data)


def image_size_from_base64(data: str) -> tuple[int, int] | None:
    """``(width, height)`` from bare base64 image data (as Anthropic's ``source.data`` holds)."""
    return image_size(Base64Bytes(data, 0))


def image_size(data: Base64Bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG, GIF or WEBP header; None if it is none of those."""
    try:
        head = data.read(0, 30)
        if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
            return _positive(*struct.unpack(">II", head[16:24]))
        if head[:6] in (b"GIF87a", b"GIF89a"):
            return _positive(*struct.unpack("<HH", head[6:10]))
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            return _webp_size(head)
        if head[:2] == b"\xff\xd8":
            return _jpeg_size(data)
    except (struct.error, binascii.Error, ValueError, IndexError):
        return None
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return _positive(width, height)
    return None


# Start-of-frame markers carry the size: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset(range(0xD0, 0xD8)) | {0x01}
_JPEG_MAX_SEGMENTS = 1024


def _jpeg_size(data: Base64Bytes) -> tuple[int, int] | None:
    position = 2
    for _ in range(_JPEG_MAX_SEGMENTS):
        marker = data.read(position, 2)
        if len(marker) < 2 or marker[0] != 0xFF:
            return None
        if marker[1] == 0xFF:  # fill byte
            position += 1
            continue
        code = marker[1]
        position += 2
        if code in _JPEG_STANDALONE:
            continue
        if code in (0xD9, 0xDA):  # end of image, or scan data, before any frame header
            return None
        segment = data.read(position, 7)
        if len(segment) < 7:
            return None
        if code in _JPEG_SOF:
            height, width = struct.unpack(">HH", segment[3:7])
            return _positive(width, height)
        (length,) = struct.unpack(">H", segment[:2])
        if length < 2:
            return None
        position += length
    return None


class Base64Bytes:
    """Random access to the bytes of the base64 text in ``text[start:]``, decoding only windows."""

    def __init__(self, text: str, start: int) -> None:
        self._text = text
        self._start = start
        padding = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
        self.size = max(0, (len(text) - start) * 3 // 4 - padding)

    def read(self, offset: int, size: int) -> bytes:
        first = offset // 3
        last = -(-(offset + size) // 3)
        chunk = self._text[self._start + 4 * first : self._start + 4 * last]
        if "-" in chunk or "_" in chunk:
            chunk = chunk.translate(_URLSAFE)
        if len(chunk) % 4:
            chunk += "=" * (-len(chunk) % 4)
        decoded = base64.b64decode(chunk)
        skip = offset - 3 * first
        return decoded[skip : skip + size]


_URLSAFE = str.maketrans("-_", "+/")


def data_url_bytes(url: str) -> Base64Bytes | None:
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",", 5, 512)
    if comma < 0 or ";base64" not in url[5:comma].lower():
        return None
    return Base64Bytes(url, comma + 1)

"""Bodies made of parts (text and media): what the engine is told of them, and a clip rebuilt.

The engine sees a turn's text only, with each image, file or document as a short placeholder.
So that a clip keeps such parts whole (or names them as cut) and costs what they cost, a turn
records where each placeholder stands and what its part costs (``cutctx.atoms``); rendering a
clipped turn then rebuilds the body from the kept ranges: text parts cut, media parts whole, the
marker as a text part where the cut is. A body whose text cannot be laid out part by part is
clipped as plain text, as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cutctx import MARKER_KEY, TranscriptTurn, excerpt_of

__all__ = ["Layout", "PartsCodec", "atoms_entry", "clipped_payload", "layout", "original_sha256"]


class PartsCodec(Protocol):
    """What a format tells about a body of parts (a subset of ``Codec``)."""

    def content(self, part: Any) -> Any:
        """The body as the caller gave it: a string, or a list of parts."""
        ...

    def with_content(self, part: Any, content: Any) -> Any:
        """The part's payload with its body replaced by ``content``."""
        ...

    def piece(self, block: Any) -> tuple[str, str | None]:
        """A body part's text as the turn's text has it, and the key holding that text in the
        part (None: not text, kept whole or not at all)."""
        ...

    def text_block(self, text: str) -> Any:
        """A text part of this format holding ``text``."""
        ...


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each part of a body stands in the turn's text."""

    blocks: tuple[Any, ...]
    spans: tuple[tuple[int, int], ...]
    keys: tuple[str | None, ...]


def layout(codec: PartsCodec, part: Any, text: str) -> Layout | None:
    """The body's parts laid over ``text`` (joined by newlines, after any prefix the format puts
    first, such as ``[error] ``); None for a string body or one that does not lay out so."""
    content = codec.content(part)
    if not isinstance(content, list) or not content:
        return None
    pieces = [codec.piece(block) for block in content]
    joined = "\n".join(piece for piece, _ in pieces)
    if not text.endswith(joined):
        return None
    offset = len(text) - len(joined)
    spans: list[tuple[int, int]] = []
    for piece, _ in pieces:
        spans.append((offset, offset + len(piece)))
        offset += len(piece) + 1
    return Layout(tuple(content), tuple(spans), tuple(key for _, key in pieces))


def atoms_entry(found: Layout | None, total_tokens: int, text: str,
                count_text: Callable[[str], int] | None) -> str | None:
    """``cutctx.atoms`` for a body: each non-text part's range and its share of what the body
    costs beyond its text (media are priced by the format's own rules in ``total_tokens``)."""
    if found is None or count_text is None:
        return None
    atoms = [span for span, key in zip(found.spans, found.keys, strict=True) if key is None]
    if not atoms:
        return None
    words = "\n".join(text[start:end] for (start, end), key
                      in zip(found.spans, found.keys, strict=True) if key is not None)
    beyond = max(0, total_tokens - count_text(words))
    each = beyond // len(atoms)
    return ",".join(f"{start}:{end}:{each}" for start, end in atoms)


def original_sha256(content: Any, text: str) -> str | None:
    """The sha256 a stub names for a body whose turn text is ``text``: of the UTF-8 bytes of a
    string body, of the canonical JSON (sorted keys, no spaces, UTF-8) of a body of parts. None
    where the engine's own hash of the text is that already (a string body read as it is)."""
    if content is None or (isinstance(content, str) and content == text):
        return None
    if isinstance(content, str):  # the text carries a prefix (an error flag, say)
        return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def clipped_payload(codec: PartsCodec, part: Any, text: str,
                    turn: TranscriptTurn) -> Any | None:
    """The payload of a clipped turn with its parts rebuilt around the kept ranges (None when the
    body is not made of parts, or the clip was not recorded: the caller renders plain text)."""
    ranges = excerpt_of(turn)
    marker = turn.metadata.get(MARKER_KEY)
    found = layout(codec, part, text)
    if found is None or not ranges or marker is None:
        return None
    head_end = ranges[0][1]
    out: list[Any] = []
    placed = False
    for block, (start, end), key in zip(found.blocks, found.spans, found.keys, strict=True):
        if key is None:
            if any(a <= start and end <= b for a, b in ranges):
                placed = _place(out, placed, start >= head_end, codec, marker)
                out.append(block)
            continue
        for a, b in _overlaps(ranges, start, end):
            placed = _place(out, placed, a >= head_end, codec, marker)
            out.append({**block, key: text[a:b]})
    if not placed:
        out.append(codec.text_block(marker))
    return codec.with_content(part, out)


def _overlaps(ranges: Sequence[tuple[int, int]], start: int,
              end: int) -> list[tuple[int, int]]:
    return [(max(a, start), min(b, end)) for a, b in ranges if max(a, start) < min(b, end)]


def _place(out: list[Any], placed: bool, after_cut: bool, codec: PartsCodec,
           marker: str) -> bool:
    """Put the marker before the first kept piece past the cut (once)."""
    if not placed and after_cut:
        out.append(codec.text_block(marker))
        return True
    return placed

"""A masked tool result's digest: the few lines of it most likely to matter later.

Its first line, lines that look like errors or results, lines holding identifier-like codes, and
its last line — in their original order, each at most ``LINE_CHARS`` characters, within a token
cap. Deterministic, so a stub renders the same bytes on every call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .estimator import TokenEstimator
from .types import Excerpt

__all__ = ["LINE_CHARS", "Lines", "choose", "digest", "digest_ranges", "lines_of"]

LINE_CHARS = 200
_CANDIDATES = 24
_CLIP_MARKER = "[... cutctx clipped"
"""A clip's own marker line is never part of a digest of the clipped text."""
_SALIENT = re.compile(
    r"\b(errors?|exception|traceback|fail(s|ed|ure|ures)?|warn(ing|ings)?|assert(ion)?\w*|"
    r"passed|success(ful)?|results?|total|summary|status|exit code|returned|found)\b",
    re.IGNORECASE)
_CODE = re.compile(
    r"\b(?=[A-Za-z0-9_.-]*\d)(?=[A-Za-z0-9_.-]*[A-Za-z])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+\b"
    r"|\b0x[0-9a-fA-F]{4,}\b|\b[0-9a-f]{8,40}\b|\bv?\d+\.\d+\.\d+\b")


def digest(content: str, max_tokens: int, estimator: TokenEstimator) -> str:
    """Salient lines of ``content`` in order, estimated at <= ``max_tokens`` (empty if none fit).

    >>> from cutctx import CharRatioEstimator
    >>> digest("running\\nok\\nERROR E1432: disk full\\ndone", 40, CharRatioEstimator())
    'running\\nERROR E1432: disk full\\ndone'
    """
    return "\n".join(content[start:end] for start, end in digest_ranges(content, max_tokens,
                                                                         estimator))


def digest_ranges(content: str, max_tokens: int, estimator: TokenEstimator, *,
                  ends: bool = True) -> Excerpt:
    """Where ``digest``'s lines stand in ``content``: each line stripped and cut to
    ``LINE_CHARS`` characters, as a ``(start, end)`` range, in order. ``ends=False`` leaves the
    first and last lines to their own merit (for the middle of a text whose ends are kept)."""
    if max_tokens <= 0:
        return ()
    return choose(lines_of(content), content, max_tokens, estimator, ends=ends)


@dataclass(frozen=True, slots=True)
class Lines:
    """A text's non-blank lines (stripped, cut to ``LINE_CHARS``), and which look salient: read
    once, so a clip trying several cuts of a long text chooses among them without rereading."""

    spans: tuple[tuple[int, int], ...]
    salient: tuple[int, ...]
    """Indexes into ``spans`` of lines that look like errors or results, in order."""
    codes: tuple[int, ...]
    """Indexes into ``spans`` of lines holding identifier-like codes, in order."""


def lines_of(content: str) -> Lines:
    """``content``'s lines as ``choose`` reads them (a clip's own marker line left out)."""
    spans: list[tuple[int, int]] = []
    salient: list[int] = []
    codes: list[int] = []
    offset = 0
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith(_CLIP_MARKER):
            start = offset + (len(line) - len(line.lstrip()))
            text = stripped[:LINE_CHARS]
            if _SALIENT.search(text):
                salient.append(len(spans))
            if _CODE.search(text):
                codes.append(len(spans))
            spans.append((start, start + len(text)))
        offset += len(line) + 1
    return Lines(tuple(spans), tuple(salient), tuple(codes))


def choose(lines: Lines, content: str, max_tokens: int, estimator: TokenEstimator, *,
           ends: bool = True, within: tuple[int, int] | None = None) -> Excerpt:
    """The digest's lines among ``lines`` (of ``content``): the first and last (``ends``), then
    salient lines, then lines with codes, each while it fits ``max_tokens``; only lines lying
    ``within`` a range of ``content``, if given. In order, as ranges."""
    spans = lines.spans
    if within is not None:
        low, high = within
        inside = [i for i, (start, end) in enumerate(spans) if low <= start and end <= high]
        first, last = (inside[0], inside[-1]) if inside else (0, -1)
        keep = set(inside)
    else:
        first, last = 0, len(spans) - 1
        keep = None
    if max_tokens <= 0 or last < first:
        return ()

    def among(indexes: tuple[int, ...]) -> list[int]:
        picked = [i for i in indexes if (keep is None or i in keep)
                  and (not ends or first < i < last)]
        return picked[:_CANDIDATES]

    order = [*among(lines.salient), *among(lines.codes)]
    if ends:
        order = [first, *order, last]
    chosen: set[int] = set()
    seen: set[str] = set()
    spent = 0
    for index in order:
        start, end = spans[index]
        line = content[start:end]
        if index in chosen or line in seen:
            continue
        cost = estimator.estimate_tokens(line) + 1
        if spent + cost > max_tokens:
            continue
        chosen.add(index)
        seen.add(line)
        spent += cost
    return tuple(spans[index] for index in sorted(chosen))

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
    """Where a text's digest may take lines from: its first and last non-blank lines, and the
    lines that look salient (each stripped and cut to ``LINE_CHARS``). Found once, by
    searching the whole text (not line by line), so a clip trying several cuts of a long text
    chooses among them without reading it again, in memory that does not grow with it."""

    first: Span | None
    last: Span | None
    salient: tuple[Span, ...]
    """Lines that look like errors or results, in order (at most ``_SEEN``)."""
    codes: tuple[Span, ...]
    """Lines holding identifier-like codes, in order (at most ``_SEEN``)."""


Span = tuple[int, int]
_SEEN = 4096


def lines_of(content: str) -> Lines:
    """``content``'s candidate lines as ``choose`` reads them (a clip's own marker left out)."""
    return Lines(_edge_line(content, forward=True), _edge_line(content, forward=False),
                 _matching_lines(content, _SALIENT), _matching_lines(content, _CODE))


def _line_at(content: str, start: int) -> Span | None:
    """The stripped, cut line starting at ``start`` (None if blank or a clip's marker)."""
    end = content.find("\n", start)
    end = len(content) if end < 0 else end
    while start < end and content[start].isspace():
        start += 1
    while end > start and content[end - 1].isspace():
        end -= 1
    if start == end or content.startswith(_CLIP_MARKER, start):
        return None
    return start, min(end, start + LINE_CHARS)


def _edge_line(content: str, *, forward: bool) -> Span | None:
    """The first (or last) non-blank line of ``content``."""
    if forward:
        position = 0
        while position <= len(content):
            found = _line_at(content, position)
            if found is not None:
                return found
            next_line = content.find("\n", position)
            if next_line < 0:
                return None
            position = next_line + 1
        return None
    end = len(content)
    while end >= 0:
        start = content.rfind("\n", 0, end) + 1
        found = _line_at(content, start)
        if found is not None:
            return found
        if start == 0:
            return None
        end = start - 1
    return None


def _matching_lines(content: str, pattern: re.Pattern[str]) -> tuple[Span, ...]:
    """The lines where ``pattern`` matches within their first ``LINE_CHARS`` characters."""
    out: list[Span] = []
    last_start = -1
    for match in pattern.finditer(content):
        line_start = content.rfind("\n", 0, match.start()) + 1
        if line_start == last_start:
            continue
        last_start = line_start
        span = _line_at(content, line_start)
        if span is not None and span[0] <= match.start() and match.end() <= span[1]:
            out.append(span)
            if len(out) >= _SEEN:
                break
    return tuple(out)


def choose(lines: Lines, content: str, max_tokens: int, estimator: TokenEstimator, *,
           ends: bool = True, within: Span | None = None) -> Excerpt:
    """The digest's lines among ``lines`` (of ``content``): the first and last (``ends``), then
    salient lines, then lines with codes, each while it fits ``max_tokens``; only lines lying
    ``within`` a range of ``content``, if given (then without ``ends``). In order, as ranges."""
    if max_tokens <= 0:
        return ()
    edges = (lines.first, lines.last) if ends and within is None else ()

    def among(spans: tuple[Span, ...]) -> list[Span]:
        if within is not None:
            low, high = within
            spans = tuple(span for span in spans if low <= span[0] and span[1] <= high)
        return [span for span in spans if span not in edges][:_CANDIDATES]

    order = [*among(lines.salient), *among(lines.codes)]
    if edges:
        order = [span for span in (edges[0], *order, edges[1]) if span is not None]
    chosen: set[Span] = set()
    seen: set[str] = set()
    spent = 0
    for span in order:
        line = content[span[0]:span[1]]
        if span in chosen or line in seen:
            continue
        cost = estimator.estimate_tokens(line) + 1
        if spent + cost > max_tokens:
            continue
        chosen.add(span)
        seen.add(line)
        spent += cost
    return tuple(sorted(chosen))

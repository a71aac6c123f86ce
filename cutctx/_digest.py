"""A masked tool result's digest: what of it is most likely to matter later.

Two styles, both ranges of the result's own text, in order, within a token cap. ``lines``: its
first line, lines that look like errors or results, lines holding identifier-like codes, and its
last line, each at most ``LINE_CHARS`` characters. ``identifiers``: what it names — error types
(with the rest of their line), paths and file names, symbols, numbers — each once, the most
telling first, so a stub still answers "which file, which line, which error". Deterministic, so
a stub renders the same bytes on every call.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .actions import Excerpt
from .estimator import TokenEstimator

__all__ = ["DIGEST_STYLES", "LINE_CHARS", "Lines", "choose", "digest", "digest_ranges",
           "identifier_ranges", "identifiers", "lines_of"]

DIGEST_STYLES = ("lines", "identifiers")

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


def digest(content: str, max_tokens: int, estimator: TokenEstimator,
           style: str = "lines") -> str:
    """The digest of ``content`` in order, one piece a line, estimated at <= ``max_tokens``
    (empty if none fit).

    >>> from cutctx import CharRatioEstimator
    >>> digest("running\\nok\\nERROR E1432: disk full\\ndone", 40, CharRatioEstimator())
    'running\\nERROR E1432: disk full\\ndone'
    >>> digest("[File: src/app.py]\\n12: x = load_config()\\nKeyError: 'home'", 40,
    ...        CharRatioEstimator(), "identifiers")
    "src/app.py\\n12\\nload_config\\nKeyError: 'home'"
    """
    ranges = (identifier_ranges(content, max_tokens, estimator) if style == "identifiers"
              else digest_ranges(content, max_tokens, estimator))
    return "\n".join(content[start:end] for start, end in ranges)


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


_IDENTIFIER = re.compile(
    r"(?P<error>\b[A-Z][A-Za-z0-9]*+(?:(?<=Error)|(?<=Exception)|(?<=Warning)|(?<=Interrupt))\b)"
    r"|(?P<code>\b(?=[A-Za-z0-9.-]*\d)(?=[A-Za-z0-9.-]*[A-Za-z])[A-Za-z0-9]++"
    r"(?:[-.][A-Za-z0-9]++)++\b|\b0x[0-9a-fA-F]{4,}+\b|\b[0-9a-f]{8,40}\b"
    r"|\bv?\d+\.\d+\.\d+\b)"
    r"|(?P<path>(?<![\w.-])(?:\.{0,2}/)?+(?:[\w.-]++/)++[\w.-]*+(?<=\w)"
    r"|\b[\w-]++\.[A-Za-z][A-Za-z0-9]{0,5}+\b)"
    r"|(?P<symbol>\b_*+[A-Za-z][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)++\b"
    r"|\b[a-z][a-z0-9]*+(?:[A-Z][a-z0-9]*+)++\b|\b[A-Z][a-z0-9]++(?:[A-Z][a-z0-9]*+)++\b)"
    r"|(?P<number>\b\d{2,}+\b)")
"""Error types; codes (letters and digits joined by ``-`` or ``.``: ``E-1432``, ``TOOL-1A2B3C``;
hex hashes, versions); paths and file names (``name.ext``, dotted names); snake_case,
camelCase and PascalCase symbols; numbers of two digits or more."""
_RANK = {"error": 0, "code": 1, "path": 2, "symbol": 3, "number": 4}
_ERROR_LINE_CHARS = 120


_TOKEN = re.compile(r"(?<![\w./-])(?=[\w./-]*[0-9_./A-Z-])[\w./-]+")
"""Runs of the characters identifiers are made of that hold more than lowercase letters: only
those are searched (most of a text is plain words, and one pattern per run is cheaper than one
per place)."""


@functools.lru_cache(maxsize=4096)
def identifiers(content: str) -> tuple[tuple[int, int, str], ...]:
    """Every identifier ``content`` names, as ``(start, end, kind)`` in order (``kind``: error,
    code, path, symbol or number). Clip markers are left out. Remembered for the last few
    thousand texts: a compaction asks for the same results' identifiers in every projection."""
    out: list[tuple[int, int, str]] = []
    search = _IDENTIFIER.finditer
    for token in _TOKEN.finditer(content):
        text = token.group()
        if text.isalpha() and text[1:].islower():
            continue  # a capitalised plain word: "Found"
        base = token.start()
        for match in search(text):
            kind = match.lastgroup
            assert kind is not None
            out.append((base + match.start(), base + match.end(), kind))
    if _CLIP_MARKER in content:
        out = [entry for entry in out if not _in_marker(content, entry[0])]
    return tuple(out)


def _in_marker(content: str, position: int) -> bool:
    """Whether ``position`` lies on a clip marker's line."""
    line_start = content.rfind("\n", 0, position) + 1
    head = content[line_start:line_start + len(_CLIP_MARKER) + 16]
    return head.lstrip().startswith(_CLIP_MARKER)


def identifier_ranges(content: str, max_tokens: int, estimator: TokenEstimator) -> Excerpt:
    """Where the identifiers a digest keeps stand in ``content``: each distinct one once (its
    first occurrence; an error type with the rest of its line), chosen by kind (errors, codes,
    paths, symbols, numbers), then by how often it occurs, then by position, while within
    ``max_tokens``; one contained in another already chosen is left out. In order."""
    if max_tokens <= 0:
        return ()
    first: dict[str, tuple[int, int, str]] = {}
    counts: dict[str, int] = {}
    for start, end, kind in identifiers(content):
        if kind == "error":
            line_end = content.find("\n", end)
            line_end = len(content) if line_end < 0 else line_end
            end = len(content[start:min(line_end, start + _ERROR_LINE_CHARS)].rstrip()) + start
        text = content[start:end]
        counts[text] = counts.get(text, 0) + 1
        first.setdefault(text, (start, end, kind))
    ranked = sorted(first.items(), key=lambda item: (_RANK[item[1][2]], -counts[item[0]],
                                                     item[1][0]))
    chosen: list[tuple[int, int]] = []
    kept: list[str] = []
    spent = 0
    for text, (start, end, _kind) in ranked[:_CANDIDATES * 4]:
        if any(text in other for other in kept):
            continue
        if any(start < other_end and other_start < end for other_start, other_end in chosen):
            continue
        cost = estimator.estimate_tokens(text) + 1
        if spent + cost > max_tokens:
            continue
        chosen.append((start, end))
        kept.append(text)
        spent += cost
    return tuple(sorted(chosen))

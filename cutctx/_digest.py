"""A masked tool result's digest: the few lines of it most likely to matter later.

Its first line, lines that look like errors or results, lines holding identifier-like codes, and
its last line — in their original order, each at most ``LINE_CHARS`` characters, within a token
cap. Deterministic, so a stub renders the same bytes on every call.
"""

from __future__ import annotations

import re

from .estimator import TokenEstimator
from .types import Excerpt

__all__ = ["LINE_CHARS", "digest", "digest_ranges"]

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


def digest_ranges(content: str, max_tokens: int, estimator: TokenEstimator) -> Excerpt:
    """Where ``digest``'s lines stand in ``content``: each line stripped and cut to
    ``LINE_CHARS`` characters, as a ``(start, end)`` range, in order."""
    if max_tokens <= 0:
        return ()
    lines: list[tuple[int, int, int]] = []  # (position, start, end) of each non-blank line
    offset = 0
    for position, line in enumerate(content.split("\n")):
        stripped = line.strip()
        if stripped and not stripped.startswith(_CLIP_MARKER):
            start = offset + (len(line) - len(line.lstrip()))
            lines.append((position, start, start + min(len(stripped), LINE_CHARS)))
        offset += len(line) + 1
    if not lines:
        return ()
    text = {entry[0]: content[entry[1]:entry[2]] for entry in lines}
    first, last = lines[0], lines[-1]
    salient = [entry for entry in lines[1:-1] if _SALIENT.search(text[entry[0]])][:_CANDIDATES]
    codes = [entry for entry in lines[1:-1] if _CODE.search(text[entry[0]])][:_CANDIDATES]
    chosen: dict[int, tuple[int, int]] = {}
    seen: set[str] = set()
    spent = 0
    for position, start, end in (first, *salient, *codes, last):
        line = text[position]
        if position in chosen or line in seen:
            continue
        cost = estimator.estimate_tokens(line) + 1
        if spent + cost > max_tokens:
            continue
        chosen[position] = (start, end)
        seen.add(line)
        spent += cost
    return tuple(chosen[position] for position in sorted(chosen))

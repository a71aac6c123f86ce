"""A masked tool result's digest: the few lines of it most likely to matter later.

Its first line, lines that look like errors or results, lines holding identifier-like codes, and
its last line — in their original order, each at most ``LINE_CHARS`` characters, within a token
cap. Deterministic, so a stub renders the same bytes on every call.
"""

from __future__ import annotations

import re

from .estimator import TokenEstimator

__all__ = ["LINE_CHARS", "digest"]

LINE_CHARS = 200
_CANDIDATES = 24
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
    if max_tokens <= 0:
        return ""
    lines = [(position, line.strip()[:LINE_CHARS]) for position, line in
             enumerate(content.split("\n")) if line.strip()]
    if not lines:
        return ""
    first, last = lines[0], lines[-1]
    salient = [entry for entry in lines[1:-1] if _SALIENT.search(entry[1])][:_CANDIDATES]
    codes = [entry for entry in lines[1:-1] if _CODE.search(entry[1])][:_CANDIDATES]
    chosen: dict[int, str] = {}
    seen: set[str] = set()
    spent = 0
    for position, line in (first, *salient, *codes, last):
        if position in chosen or line in seen:
            continue
        cost = estimator.estimate_tokens(line) + 1
        if spent + cost > max_tokens:
            continue
        chosen[position] = line
        seen.add(line)
        spent += cost
    return "\n".join(line for _, line in sorted(chosen.items()))

"""A deterministic summarizer that needs no model: the opening of each folded turn, fitted.

Each turn becomes one line (``role [tool]: first sentence…``); lines are shortened, then the
newest dropped, until the whole summary fits the request's ``target_tokens`` as measured by the
given estimator. Same turns in, same text out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from cutctx import Role, SummarizationRequest, TokenEstimator, TranscriptTurn

from ..prompts import TOOL_NAME_KEY

__all__ = ["OfflineSummarizer"]

_LINE_CAPS = (240, 160, 100, 60, 32)
"""Characters kept per turn, tried longest first."""
_SENTENCE_END = re.compile(r"(?<=[a-z)\]`'\"][.!?])\s+(?=[A-Z`\"'(\[])")
_ELLIPSIS = "…"


class OfflineSummarizer:
    """``(request, turns) -> str`` from the turns' own text, within ``target_tokens``.

    >>> from cutctx import CharRatioEstimator, Role, SummarizationRequest, TranscriptTurn
    >>> turns = [TranscriptTurn("m1", Role.USER, "Fix the parser. It fails on tabs.", 9),
    ...          TranscriptTurn("m2", Role.ASSISTANT, "Reading parser.py first.", 6)]
    >>> request = SummarizationRequest("g1", ("m1", "m2"), 60, "p")
    >>> print(OfflineSummarizer(CharRatioEstimator())(request, turns))
    Earlier turns (1 user, 1 assistant), condensed:
    - user: Fix the parser.
    - assistant: Reading parser.py first.
    """

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        target = max(1, request.target_tokens)
        counts = Counter(turn.role.value for turn in turns)
        header = "Earlier turns ({}), condensed:".format(
            ", ".join(f"{n} {role}" for role, n in counts.items()))
        text = ""
        for cap in _LINE_CAPS:
            lines = [_line(turn, cap) for turn in turns]
            text = "\n".join([header, *lines])
            if self._fits(text, target):
                return text
        # Still too long at the shortest lines: keep the oldest lines that fit, say how many went.
        lines = [_line(turn, _LINE_CAPS[-1]) for turn in turns]
        for keep in range(len(lines) - 1, -1, -1):
            text = "\n".join([header, *lines[:keep], f"- {_ELLIPSIS} {len(lines) - keep} more"])
            if self._fits(text, target):
                return text
        return self._truncated(text, target)

    def _fits(self, text: str, target: int) -> bool:
        return self.estimator.estimate_tokens(text) <= target

    def _truncated(self, text: str, target: int) -> str:
        """The longest prefix of ``text`` (plus an ellipsis) that fits; never empty."""
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if self._fits(text[:middle].rstrip() + _ELLIPSIS, target):
                low = middle
            else:
                high = middle - 1
        return text[:low].rstrip() + _ELLIPSIS


def _line(turn: TranscriptTurn, cap: int) -> str:
    tool = turn.metadata.get(TOOL_NAME_KEY)
    who = f"{turn.role.value} {tool}" if tool else turn.role.value
    text = _first_line(turn.content) if turn.role is Role.TOOL else turn.content
    return f"- {who}: {_opening(text, cap)}"


def _first_line(text: str) -> str:
    """Tool output reads best by its first line (a file name, a command, a status)."""
    return next((line for line in text.splitlines() if line.strip()), "")


def _opening(text: str, cap: int) -> str:
    """The first sentence of ``text``, whitespace collapsed, cut to ``cap`` characters."""
    flat = " ".join(text.split())
    if not flat:
        return "(empty)"
    first = _SENTENCE_END.split(flat, maxsplit=1)[0]
    if len(first) <= cap:
        return first
    cut = first[:cap]
    space = cut.rfind(" ")
    return (cut[:space] if space > cap // 2 else cut).rstrip() + _ELLIPSIS

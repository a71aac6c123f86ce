"""A deterministic summarizer that needs no model: the opening of each folded turn, fitted.

Each turn becomes one line (``role [tool]: first sentence…``); lines are shortened, then the
newest dropped, until the whole summary fits the request's ``target_tokens`` as measured by the
given estimator. Same turns in, same text out. Linear in the turns: each turn's text is read
once, and how many lines fit is found from each line's own count (a line ends in a newline
before the next ``-``, where tiktoken's encodings never join two pre-tokens, so the counts add
up), then checked once whole.
"""

from __future__ import annotations

import itertools
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
        openings = [_Opening.of(turn) for turn in turns]
        lines: list[str] = []
        for cap in _LINE_CAPS:
            lines = [opening.line(cap) for opening in openings]
            text = "\n".join([header, *lines])
            if self._fits(text, target):
                return text
        # Still too long at the shortest lines: keep the oldest lines that fit, say how many went.
        keep = self._lines_that_fit(header, lines, target)
        text = _with_more(header, lines, keep)
        return text if self._fits(text, target) else self._truncated(text, target)

    def _fits(self, text: str, target: int) -> bool:
        return self.estimator.estimate_tokens(text) <= target

    def _lines_that_fit(self, header: str, lines: Sequence[str], target: int) -> int:
        """The most leading ``lines`` that fit with the header and the "N more" line: from each
        line's own count where the counts add up (tiktoken), checked whole; by halving, counting
        whole texts, where they do not (another estimator)."""
        count = self.estimator.estimate_tokens
        head = count(header + "\n")
        sums = list(itertools.accumulate((count(line + "\n") for line in lines), initial=head))
        keep = next((keep for keep in range(len(lines) - 1, -1, -1)
                     if sums[keep] + count(_more(len(lines) - keep)) <= target), 0)
        if self._fits(_with_more(header, lines, keep), target) and (
                keep + 1 >= len(lines) or not self._fits(_with_more(header, lines, keep + 1),
                                                         target)):
            return keep
        low, high = 0, len(lines) - 1  # the largest keep that fits, assuming more lines cost more
        while low < high:
            middle = (low + high + 1) // 2
            if self._fits(_with_more(header, lines, middle), target):
                low = middle
            else:
                high = middle - 1
        return low

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


def _more(dropped: int) -> str:
    return f"- {_ELLIPSIS} {dropped} more"


def _with_more(header: str, lines: Sequence[str], keep: int) -> str:
    return "\n".join([header, *lines[:keep], _more(len(lines) - keep)])


class _Opening:
    """A turn's speaker and the start of its first sentence, read once for every line cap."""

    __slots__ = ("first", "who")

    def __init__(self, who: str, first: str) -> None:
        self.who = who
        self.first = first

    @classmethod
    def of(cls, turn: TranscriptTurn) -> _Opening:
        tool = turn.metadata.get(TOOL_NAME_KEY)
        who = f"{turn.role.value} {tool}" if tool else turn.role.value
        text = _first_line(turn.content) if turn.role is Role.TOOL else turn.content
        return cls(who, _first_sentence(text, max(_LINE_CAPS)))

    def line(self, cap: int) -> str:
        return f"- {self.who}: {_cut(self.first, cap)}"


def _first_line(text: str) -> str:
    """Tool output reads best by its first line (a file name, a command, a status)."""
    return next((line for line in text.splitlines() if line.strip()), "")


def _first_sentence(text: str, longest: int) -> str:
    """The first sentence of ``text``, whitespace collapsed, as far as a line of ``longest``
    characters can show it (one character more, to tell it was cut)."""
    flat = " ".join(text.split())
    if not flat:
        return "(empty)"
    # A sentence end at or before ``longest`` is found within ``longest + 2`` characters (the
    # end, one space, the next sentence's first character); a later one cuts the line anyway.
    return _SENTENCE_END.split(flat[:longest + 2], maxsplit=1)[0][:longest + 1]


def _cut(first: str, cap: int) -> str:
    """``first`` within ``cap`` characters: cut at a space where one is near, with an ellipsis."""
    if len(first) <= cap:
        return first
    cut = first[:cap]
    space = cut.rfind(" ")
    return (cut[:space] if space > cap // 2 else cut).rstrip() + _ELLIPSIS

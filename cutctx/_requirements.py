"""What a person required, in their own words: the sentences a dropped message must not lose.

A person's message states requirements in a few sentences — prohibitions ("never touch the
billing module"), obligations ("all amounts in EUR"), decisions ("use FIX-0042 instead") and
instructions ("tag every file with REQ-1A2B3C") — with the names and numbers they bind. Those
sentences are kept verbatim, as ranges of the message (a plan names ranges, never text), the
most binding first within a token cap, in their order. Fenced code is never a requirement.
Deterministic, so a stub renders the same bytes on every call.
"""

from __future__ import annotations

import re

from .actions import Excerpt
from .estimator import TokenEstimator

__all__ = ["MAX_SENTENCE_CHARS", "requirement_ranges"]

MAX_SENTENCE_CHARS = 400
"""A longer "sentence" is a pasted block, not a requirement someone wrote."""
_SCANNED_CHARS = 65_536
"""Only a message's opening is searched: requirements are typed, not pasted by the megabyte."""

_SENTENCE = re.compile(r"(?:[^\n.!?]|[.!?]+(?=[^\s.!?]))+[.!?]*")
"""A run up to a sentence end (``.``, ``!``, ``?`` before a space or the end) or a line end; a
dot inside a word (``config.yaml``, ``v1.2``) does not end it."""
_BOUND = re.compile(r"\d|\w[-_./:]\w|[a-z][A-Z]|\b[A-Z]{2,}\b")
"""What a requirement binds: a number, a code or path (``FIX-0042``, ``src/app.py``), a
camelCase name or an acronym (``EUR``)."""
_CLIP_MARKER = "[... cutctx clipped"
"""A clip's own marker (of a message clipped earlier) is never a requirement."""
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_PROHIBITION = re.compile(
    r"\b(never|don'?t|do not|does not|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|"
    r"won'?t|no longer|not allowed|forbidden|avoid|stop|without|under no circumstances)\b",
    re.IGNORECASE)
_OBLIGATION = re.compile(
    r"\b(must|always|should|shall|needs? to|ha(ve|s) to|required?|requirements?|mandatory|"
    r"make sure|ensure|be sure|only|every|each|all|exactly|at (least|most))\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(instead|rather than|use|switch(ed)? to|from now on|going forward|decided|decision|"
    r"change of plan|prefer|keep|stick (to|with)|let'?s|please)\b", re.IGNORECASE)
_INSTRUCTION = re.compile(
    r"^\W*(?:(?:now|then|next|also|first|finally|so|and|ok(?:ay)?)\W+)?(add|fix|change|remove|"
    r"delete|rename|write|rewrite|run|check|look|update|make|create|move|implement|test|tag|"
    r"set|replace|convert|format|build|deploy|refactor|read|open|find|search|try|call|return|"
    r"send|print|log|commit|push|merge|revert|undo|document|explain|show|list|install|"
    r"upgrade|pin|bump|limit|round|sort|split|migrate|port|drop|skip|handle|support)\b",
    re.IGNORECASE)


def requirement_ranges(content: str, max_tokens: int, estimator: TokenEstimator) -> Excerpt:
    """Where the requirement sentences of a person's message stand in ``content``, chosen by
    how binding they are (a prohibition, then an obligation or decision, then an instruction;
    naming an identifier or a number counts too), then by position, while within
    ``max_tokens``; in order. Empty when none is found or none fits.

    >>> from cutctx import CharRatioEstimator
    >>> text = "Thanks! Never touch billing.py. All amounts in EUR. Looks good."
    >>> [text[a:b] for a, b in requirement_ranges(text, 40, CharRatioEstimator())]
    ['Never touch billing.py.', 'All amounts in EUR.']
    """
    if max_tokens <= 0 or not content:
        return ()
    scored: list[tuple[int, int, int]] = []  # (-score, start, end)
    for start, end in _sentences(content[:_SCANNED_CHARS]):
        score = _score(content[start:end])
        if score:
            scored.append((-score, start, end))
    scored.sort()
    chosen: list[tuple[int, int]] = []
    spent = 0
    for _, start, end in scored:
        cost = estimator.estimate_tokens(content[start:end]) + 1
        if spent + cost <= max_tokens:
            chosen.append((start, end))
            spent += cost
    return tuple(sorted(chosen))


def _sentences(content: str) -> list[tuple[int, int]]:
    """Each sentence outside fenced code, stripped, as a range (long ones left out)."""
    fenced = _fenced(content)
    out: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(content):
        start, end = match.span()
        while start < end and content[start] in " \t-*>•":
            start += 1
        while end > start and content[end - 1].isspace():
            end -= 1
        if (start == end or end - start > MAX_SENTENCE_CHARS
                or content.startswith(_CLIP_MARKER, start)):
            continue
        if any(low <= start < high for low, high in fenced):
            continue
        out.append((start, end))
    return out


def _fenced(content: str) -> list[tuple[int, int]]:
    """The ranges of fenced code blocks (an unclosed fence runs to the end)."""
    marks = [match.start() for match in _FENCE.finditer(content)]
    blocks: list[tuple[int, int]] = []
    for opening, closing in zip(marks[::2], [*marks[1::2], len(content)], strict=False):
        blocks.append((opening, closing + 3))
    return blocks


def _score(sentence: str) -> int:
    """How binding a sentence reads: 0 for none of the cues (a remark, a question, thanks)."""
    if sentence.endswith("?") and not _PROHIBITION.search(sentence):
        return 0
    if _PROHIBITION.search(sentence):
        score = 4
    elif _OBLIGATION.search(sentence) or _DECISION.search(sentence):
        score = 3
    elif _INSTRUCTION.search(sentence):
        score = 2
    else:
        return 0
    return score + (1 if _BOUND.search(sentence) else 0)

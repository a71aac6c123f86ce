"""Which tool results later turns refer back to: what the agent (or a person) still works with.

A result whose paths, symbols or error types a later assistant or person's turn names is in use
(the file being edited, the error being fixed); one nobody names again is a dead end. Policies
that must choose what to give up take the dead ends first. Derived from the transcript alone,
once per transcript.
"""

from __future__ import annotations

from ._digest import TextFacts, identifiers, text_facts
from ._replaced import is_result
from .transcript import Transcript

__all__ = ["GIVE_WAY_ORDERS", "later_references"]

GIVE_WAY_ORDERS = ("oldest", "value")
"""Which tool results give way first. ``oldest``: by age alone. ``value``: by what is kept —
those no later turn refers back to first, each group oldest first."""

_MAX_SPREAD = 3
"""A name found in more results than this (a working directory, a module every file imports)
tells one result from another no more than a common word does: it is not counted."""
_MIN_NUMBER_DIGITS = 3
"""Numbers shorter than this (counts, small line numbers) are too common to tell anything."""


def later_references(transcript: Transcript) -> tuple[int, ...]:
    """Per turn: how many distinct identifiers of it (a tool result; 0 for any other turn)
    later turns that are not results name.

    >>> from cutctx import Role, TranscriptTurn
    >>> t = Transcript((TranscriptTurn("r", Role.TOOL, "src/app.py: KeyError", 5),
    ...                 TranscriptTurn("s", Role.TOOL, "setup.cfg", 3),
    ...                 TranscriptTurn("a", Role.ASSISTANT, "fix src/app.py", 4)))
    >>> later_references(t)
    (1, 0, 0)
    """
    found: tuple[int, ...] | None = transcript._derived.get(("references", None))
    if found is not None:
        return found
    turns = transcript.turns
    facts = text_facts(transcript)
    names = [_names(turn.content, facts) for turn in turns]
    spread: dict[str, int] = {}
    for turn, found_names in zip(turns, names, strict=True):
        if is_result(turn):
            for name in found_names:
                spread[name] = spread.get(name, 0) + 1
    named_later: set[str] = set()
    counts = [0] * len(turns)
    for position in range(len(turns) - 1, -1, -1):
        if is_result(turns[position]):
            counts[position] = sum(1 for name in names[position] & named_later
                                   if spread[name] <= _MAX_SPREAD)
        else:
            named_later |= names[position]
    found = transcript._derived[("references", None)] = tuple(counts)
    return found


def _names(content: str, facts: TextFacts) -> frozenset[str]:
    """The names ``content`` holds that may tell it apart (numbers only if long enough), found
    once per caller (``facts``)."""
    found = facts.names.get(content)
    if found is None:
        found = facts.names[content] = frozenset(
            content[start:end] for start, end, kind in identifiers(content, facts.identifiers)
            if kind != "number" or end - start >= _MIN_NUMBER_DIGITS)
    return found

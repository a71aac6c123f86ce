"""What happened to every turn of a history, across all the compactions of its view.

An event's own report is over the view as earlier events left it, where a turn masked before is
simply kept. A call's report says, for each turn of the history as the caller gave it, the one
thing it is now: kept, masked, clipped, deduplicated, summarized or dropped (the latest fate
wins: a turn clipped and then masked is masked; one summarized into a summary later dropped is
dropped). Ids only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cutctx import KIND_KEY, SummarizationRequest, TranscriptTurn

__all__ = ["FATES", "TurnFates", "fates_of", "summary_members"]

FATES = ("kept", "masked", "clipped", "deduplicated", "summarized", "dropped")
"""The six fates, as ``TurnFates`` names them."""

_REPLACED = frozenset({"masked", "clipped", "deduplicated"})

Members = Mapping[str, tuple[str, ...]]
"""A summary turn's id -> the ids of the history's turns it stands for."""


@dataclass(frozen=True, slots=True)
class TurnFates:
    """Every turn of a history in exactly one of six lists, in history order."""

    kept: tuple[str, ...] = ()
    masked: tuple[str, ...] = ()
    clipped: tuple[str, ...] = ()
    deduplicated: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many turns met each fate."""
        return {fate: len(getattr(self, fate)) for fate in FATES}

    def to_dict(self) -> dict[str, list[str]]:
        """The six lists, for logs (ids only)."""
        return {fate: list(getattr(self, fate)) for fate in FATES}


def summary_members(requests: Iterable[SummarizationRequest], earlier: Members) -> dict[str, tuple[
        str, ...]]:
    """The history's turns behind each summary ``requests`` make, a summary folded into a new
    one standing for its own members (``earlier``: the summaries already in the view)."""
    out: dict[str, tuple[str, ...]] = {}
    for request in requests:
        members: list[str] = []
        for turn_id in request.turn_ids:
            members.extend(earlier.get(turn_id, (turn_id,)))
        out[request.summary_turn_id] = tuple(members)
    return out


def fates_of(history: Sequence[TranscriptTurn], view: Sequence[TranscriptTurn],
             members: Members) -> TurnFates:
    """The fate of each of ``history``'s turns in ``view`` (a view of it; ``members``: its
    summaries' turns)."""
    in_view = {turn.turn_id: turn.metadata.get(KIND_KEY) for turn in view}
    summarized = {turn_id for summary, ids in members.items() if summary in in_view
                  for turn_id in ids}
    lists: dict[str, list[str]] = {fate: [] for fate in FATES}
    for turn in history:
        turn_id = turn.turn_id
        if turn_id in in_view:
            kind = in_view[turn_id]  # a replaced turn's kind names its fate; a summary has none
            lists[kind if kind in _REPLACED else "kept"].append(turn_id)
        elif turn_id in summarized:
            lists["summarized"].append(turn_id)
        else:
            lists["dropped"].append(turn_id)
    return TurnFates(**{fate: tuple(ids) for fate, ids in lists.items()})

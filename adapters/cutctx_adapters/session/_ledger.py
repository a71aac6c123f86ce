"""What earlier compaction events decided, carried forward so later ones never undo it.

A session's decisions are final for the life of a history: a masked, clipped or deduplicated turn
keeps its stub, a dropped turn stays dropped, a summary stands for its span. The ledger is simply
the view the last event left (its turns) and how much of the history it covers; the history as
seen now is that view followed by the turns appended since (``project``). Planning over that
projection — never over rendered stubs taken back as content — is what keeps stubs from being
masked again and keeps their figures naming the original.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cutctx import REPLACEMENT_KINDS, SummarizationRequest, Transcript, TranscriptTurn

from ..history import KIND_KEY, Conversion, Growing, GrownList, Part
from ..reports import FATES, Source, TurnFates

__all__ = [
    "EMPTY",
    "Ledger",
    "closed_boundaries",
    "fates_of",
    "positions_of",
    "project",
    "running_sums",
    "sources_of",
    "summary_members",
]


@dataclass(frozen=True, slots=True)
class Ledger:
    """The view after the last compaction event, and the prefix of the history it covers."""

    view: tuple[TranscriptTurn, ...]
    covered_items: int
    """Items (messages) of the caller's history the view stands for."""
    covered_turns: int
    """Turns of the history's conversion the view stands for (a message may be several)."""
    tokens: int
    """Prompt tokens of the view as rendered at that event (overhead included), each summary
    as long as its plan allows (``unwritten`` says by how much their texts differ)."""
    positions: tuple[int | None, ...] = ()
    """Where each view turn stands in the history's conversion (None: a summary), so that a
    later call finds them without indexing the whole history; empty: look them up by id."""
    members: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each summary in the view, and the history's turns it stands for (for reports)."""
    by_provider: tuple[str, ...] = ()
    """Turns of the history events left out because a provider's compaction covers them
    (the report's ``covered``)."""
    compacted: bool = False
    """Whether the view is cutctx's own compaction: an event masked, clipped, deduplicated,
    summarized or dropped a turn (False: it only left out what a provider's compaction
    covers, so the view is the history less that)."""
    unwritten: int = 0
    """Tokens the view's summary texts take beyond their stand-ins (0 or less: ``tokens``
    measures each at the most its plan allows, so where the next events fall never depends
    on a model's words): added for what a call reports, never for where it compacts."""

    @property
    def empty(self) -> bool:
        """No event has happened: the view is the history itself."""
        return not self.covered_items


EMPTY = Ledger((), 0, 0, 0)


def project(conv: Conversion[Any] | Growing[Any], ledger: Ledger) -> Conversion[Any]:
    """``conv`` (a conversion of the whole history) as earlier events left it.

    Turns the ledger kept are refreshed from ``conv`` (their exchange and pin are those of the
    history as it is now); turns it replaced keep their body; summaries stay as they are.
    """
    if ledger.empty:
        return conv if isinstance(conv, Conversion) else conv.conversion()
    turns = conv.turns
    head: list[TranscriptTurn] = []
    for turn, now in zip(ledger.view, _current(turns, ledger), strict=True):
        if now is None:  # a summary: no turn of the history stands behind it
            head.append(turn)
        elif KIND_KEY not in turn.metadata:
            head.append(now)
        elif (now.tool_call_id, now.pinned) == (turn.tool_call_id, turn.pinned):
            head.append(turn)
        else:
            head.append(replace(turn, tool_call_id=now.tool_call_id, pinned=now.pinned))
    projected = Transcript((*head, *turns[ledger.covered_turns:]))
    return Conversion(projected, conv.parts, conv.codec, conv.task_turn_id, conv.reading)


def positions_of(view: Sequence[TranscriptTurn], conv: Conversion[Any] | Growing[Any],
                 ledger: Ledger) -> tuple[int | None, ...]:
    """Where each of ``view``'s turns (planned over ``project(conv, ledger)``) stands in
    ``conv``'s turns (None for a summary). Looked up among the turns that planning saw: the
    ledger's (at their recorded positions, where those hold) and those appended since, so an
    event costs what it planned over, not the whole history."""
    turns, covered = conv.turns, ledger.covered_turns
    where: dict[str, int] = {}
    if not ledger.empty and len(ledger.positions) == len(ledger.view):
        for turn, position in zip(ledger.view, ledger.positions, strict=True):
            if position is None:
                continue
            if position >= covered or turns[position].turn_id != turn.turn_id:
                where = {}
                break
            where[turn.turn_id] = position
        else:
            where.update((turn.turn_id, position) for position, turn
                         in enumerate(turns[covered:], start=covered))
    if not where:
        where = {turn.turn_id: position for position, turn in enumerate(turns)}
    return tuple(where.get(turn.turn_id) for turn in view)


def _current(turns: Sequence[TranscriptTurn], ledger: Ledger) -> list[TranscriptTurn | None]:
    """The history's turn behind each of the ledger's view turns (None for a summary): by the
    recorded positions when they still hold (a history only grows), else by id."""
    covered = ledger.covered_turns
    if len(ledger.positions) == len(ledger.view):
        found = [None if position is None else turns[position]
                 for position in ledger.positions]
        if all((position is None) == (now is None)
               and (now is None or (position is not None and position < covered
                                    and now.turn_id == turn.turn_id))
               for turn, position, now in zip(ledger.view, ledger.positions, found,
                                              strict=True)):
            return found
    by_id = {turn.turn_id: turn for turn in turns[:covered]}
    return [by_id.get(turn.turn_id) for turn in ledger.view]


def closed_boundaries(conv: Conversion[Any] | Growing[Any], start: int = 0
                      ) -> list[tuple[int, int]]:
    """Where the history could end as a request: ``(items, turns)`` after each item that leaves
    no tool call unanswered, in order. Derived from the history alone, so every process that
    sees it finds the same points. ``start``: only from that turn on (no call open before it).
    """
    parts = [conv.parts[turn.turn_id] for turn in conv.turns[start:]]
    out: list[tuple[int, int]] = []
    open_calls = 0
    for position, part in enumerate(parts, start=start):
        open_calls += len(part.calls) - len(part.answers)
        if part.index < 0:
            continue  # a side turn (system, instructions): before every item
        last_of_item = (position + 1 == start + len(parts)
                        or parts[position + 1 - start].index != part.index)
        if last_of_item and open_calls == 0:
            out.append((part.index + 1, position + 1))
    return out


def running_sums(conv: Conversion[Any] | Growing[Any], start: int, sums: GrownList[int]
                 ) -> GrownList[int]:
    """``sums`` (the running token sums of ``conv``'s first ``start`` turns, 0 first) continued
    over the rest of its turns."""
    more = itertools.accumulate((turn.token_estimate for turn in conv.turns[start:]),
                                initial=sums[-1])
    next(more)  # the initial value: already the last of ``sums``
    return sums.extended(more)


def turns_before(parts: Sequence[Part], items: int) -> int:
    """How many of ``parts`` (in order) come from the first ``items`` items."""
    indexes = [part.index for part in parts]
    return bisect_left(indexes, items)


Members = Mapping[str, tuple[str, ...]]
"""A summary turn's id -> the ids of the history's turns it stands for."""


def summary_members(requests: Iterable[SummarizationRequest],
                    earlier: Members) -> dict[str, tuple[str, ...]]:
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
             members: Members, covered: Collection[str] = ()) -> TurnFates:
    """The fate of each of ``history``'s turns in ``view`` (a view of it; ``members``: its
    summaries' turns). What a provider's compaction ``covered`` (left out of what is sent,
    whether ``view`` holds it or not) is summarized: the provider's compaction summarized it,
    and the turns a summary of cutctx's among it stands for with it."""
    in_view = {turn.turn_id: turn.metadata.get(KIND_KEY) for turn in view}
    left_out = frozenset(covered)
    summarized = {turn_id for summary, ids in members.items()
                  if summary in in_view or summary in left_out for turn_id in ids}
    summarized.update(left_out)
    lists: dict[str, list[str]] = {fate: [] for fate in FATES}
    for turn in history:
        turn_id = turn.turn_id
        if turn_id in in_view and turn_id not in left_out:
            kind = in_view[turn_id]  # a replaced turn's kind names its fate; a summary has none
            lists[kind if kind in REPLACEMENT_KINDS else "kept"].append(turn_id)
        elif turn_id in summarized:
            lists["summarized"].append(turn_id)
        else:
            lists["dropped"].append(turn_id)
    return TurnFates(**{fate: tuple(ids) for fate, ids in lists.items()})


def sources_of(view: Sequence[TranscriptTurn], parts: Mapping[str, Part], members: Members
               ) -> tuple[Source, ...]:
    """Where each item rendered from ``view`` comes from, for a format of one item per turn:
    a kept or replaced turn's own item, or the items a summary's turns came from (``members``).
    Side turns (instructions, at a negative index) render no item."""
    out: list[Source] = []
    for turn in view:
        part = parts.get(turn.turn_id)
        kind = turn.metadata.get(KIND_KEY)
        if part is None or kind == "summary":
            positions = {parts[member].index for member in members.get(turn.turn_id, ())
                         if member in parts}
            out.append(Source("summarized", tuple(sorted(index for index in positions
                                                         if index >= 0))))
        elif part.index >= 0:
            out.append(Source(str(kind) if kind in REPLACEMENT_KINDS else "kept",
                              (part.index,)))
    return tuple(out)

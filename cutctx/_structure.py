"""Facts about a transcript that every policy and the invariants derive the same way.

Untouchable turns, tool exchanges and removability, all as positions, so every ordering comes from
transcript position and never from a dict's or set's iteration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import cast

from .errors import BudgetUnsatisfiable, ValidationError
from .transcript import CompactionBudget, Role, Transcript, TranscriptTurn

__all__ = ["Structure", "require_satisfiable", "turn_id_set"]


@dataclass(frozen=True, slots=True)
class Exchanges:
    """Each turn's exchange (the turns sharing its tool call id, else the turn alone): the
    same whatever the protection, so found once per transcript."""

    exchange_of: tuple[int, ...]
    exchanges: tuple[tuple[int, ...], ...]
    shared_exchanges: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, turns: tuple[TranscriptTurn, ...]) -> Exchanges:
        by_call_id: dict[str, int] = {}
        members: list[Sequence[int]] = []
        exchange_of: list[int] = []
        add_index, add_members = exchange_of.append, members.append
        for position, call_id in enumerate([turn.tool_call_id for turn in turns]):
            if call_id is None:  # a turn of its own
                add_index(len(members))
                add_members((position,))
                continue
            index = by_call_id.get(call_id)
            if index is None:
                index = by_call_id[call_id] = len(members)
                add_members([position])
            else:
                cast(list[int], members[index]).append(position)
            add_index(index)
        exchanges = tuple(map(tuple, members))
        return cls(tuple(exchange_of), exchanges,
                   tuple(group for group in exchanges if len(group) > 1))


class Structure:
    """Positions of untouchable turns and of each turn's exchange.

    The exchange facts are found when first read: a plan that only masks or clips (most of a
    10k-turn decision's) never needs them.
    """

    __slots__ = ("_exchanges", "_removable", "_turns", "untouchable", "untouchable_tokens",
                 "whole")

    untouchable: tuple[bool, ...]
    """Turns no policy may remove: every SYSTEM turn, every pinned turn, the newest ones."""
    whole: tuple[bool, ...]
    """The untouchable turns kept exactly as they are (SYSTEM and pinned); a turn protected
    only for being recent may be clipped (its head and tail kept) or deduplicated (a pointer to
    an identical later copy), never masked or removed."""
    untouchable_tokens: int

    def __init__(self, transcript: Transcript, untouchable: tuple[bool, ...],
                 whole: tuple[bool, ...], untouchable_tokens: int) -> None:
        self.untouchable = untouchable
        self.whole = whole
        self.untouchable_tokens = untouchable_tokens
        self._turns = transcript.turns
        # One holder per transcript, shared by its structures for every protection count (a
        # list, not the transcript: no reference cycle keeps a transcript's text alive).
        self._exchanges: list[Exchanges] = transcript._derived.setdefault(_EXCHANGES, [])
        self._removable: tuple[bool, ...] | None = None

    @property
    def exchange_of(self) -> tuple[int, ...]:
        """Index into ``exchanges`` for each turn position."""
        return self._grouped().exchange_of

    @property
    def exchanges(self) -> tuple[tuple[int, ...], ...]:
        """Member positions of each exchange, exchanges ordered by their earliest turn."""
        return self._grouped().exchanges

    @property
    def shared_exchanges(self) -> tuple[tuple[int, ...], ...]:
        """The exchanges with more than one member (the only ones a plan could split)."""
        return self._grouped().shared_exchanges

    @property
    def removable_exchange(self) -> tuple[bool, ...]:
        """Per exchange: no member is untouchable."""
        if self._removable is None:
            grouped = self._grouped()
            removable = [True] * len(grouped.exchanges)
            for position in compress(range(len(self.untouchable)), self.untouchable):
                removable[grouped.exchange_of[position]] = False
            self._removable = tuple(removable)
        return self._removable

    def _grouped(self) -> Exchanges:
        if not self._exchanges:
            self._exchanges.append(Exchanges.of(self._turns))
        return self._exchanges[0]

    @classmethod
    def of(cls, transcript: Transcript, budget: CompactionBudget) -> Structure:
        """The structure for a budget's protection; computed once per transcript and count."""
        require_inputs(transcript, budget)
        key = ("structure", budget.protected_recent_turns)
        found: Structure | None = transcript._derived.get(key)
        if found is None:
            found = transcript._derived[key] = cls._derive(transcript,
                                                           budget.protected_recent_turns)
        return found

    @classmethod
    def _derive(cls, transcript: Transcript, protected_recent_turns: int) -> Structure:
        turns = transcript.turns
        count = len(turns)
        first_protected = count - min(protected_recent_turns, count)
        system = Role.SYSTEM
        whole = [turn.role is system or turn.pinned for turn in turns]
        untouchable = whole[:first_protected] + [True] * (count - first_protected)
        tokens = sum(turns[position].token_estimate  # few: system, pinned, recent
                     for position in compress(range(count), untouchable))
        return cls(transcript, tuple(untouchable), tuple(whole), tokens)

    def removable(self, position: int) -> bool:
        """Whether the turn at ``position`` may be dropped or summarized."""
        return self.removable_exchange[self.exchange_of[position]]


_EXCHANGES = ("exchanges", None)


def require_satisfiable(budget: CompactionBudget, structure: Structure,
                        saved: int = 0) -> None:
    """Raise ``BudgetUnsatisfiable`` if the untouchable turns alone exceed the budget
    (``saved``: tokens a plan's clips of recent turns take off them)."""
    tokens = structure.untouchable_tokens - saved
    if tokens > budget.max_tokens:
        raise BudgetUnsatisfiable(
            f"untouchable turns need {tokens} tokens but the budget is {budget.max_tokens}",
            {
                "untouchable_tokens": tokens,
                "max_tokens": budget.max_tokens,
                "untouchable_turn_count": structure.untouchable.count(True),
                "protected_recent_turns": budget.protected_recent_turns,
            },
        )


def turn_id_set(transcript: Transcript) -> frozenset[str]:
    """The transcript's turn ids as a set (computed once per transcript)."""
    ids: frozenset[str] | None = transcript._derived.get(("turn_ids", None))
    if ids is None:
        ids = transcript._derived[("turn_ids", None)] = frozenset(transcript.turn_ids())
    return ids


def require_inputs(transcript: object, budget: object) -> None:
    """Refuse what is not a ``Transcript`` and a ``CompactionBudget``, naming the argument."""
    if not isinstance(transcript, Transcript):
        raise ValidationError(f"transcript must be a Transcript, got {type(transcript).__name__}",
                              {"field": "transcript"})
    if not isinstance(budget, CompactionBudget):
        raise ValidationError(f"budget must be a CompactionBudget, got {type(budget).__name__}",
                              {"field": "budget"})

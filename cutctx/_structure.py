"""Facts about a transcript that every policy and the invariants derive the same way.

Untouchable turns, tool exchanges and removability, all as positions, so every ordering comes from
transcript position and never from a dict's or set's iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BudgetUnsatisfiable
from .types import CompactionBudget, Role, Transcript

__all__ = ["Structure", "require_satisfiable"]


@dataclass(frozen=True, slots=True)
class Structure:
    """Positions of untouchable turns and of each turn's exchange."""

    untouchable: tuple[bool, ...]
    exchange_of: tuple[int, ...]
    """Index into ``exchanges`` for each turn position."""
    exchanges: tuple[tuple[int, ...], ...]
    """Member positions of each exchange, exchanges ordered by their earliest turn."""
    removable_exchange: tuple[bool, ...]
    """Per exchange: no member is untouchable."""

    @classmethod
    def of(cls, transcript: Transcript, budget: CompactionBudget) -> Structure:
        turns = transcript.turns
        count = len(turns)
        first_protected = count - min(budget.protected_recent_turns, count)
        untouchable = tuple(
            turn.role is Role.SYSTEM or turn.pinned or position >= first_protected
            for position, turn in enumerate(turns)
        )
        by_call_id: dict[str, int] = {}
        members: list[list[int]] = []
        exchange_of: list[int] = []
        for position, turn in enumerate(turns):
            call_id = turn.tool_call_id
            if call_id is None:
                index = len(members)
                members.append([position])
            else:
                found = by_call_id.get(call_id)
                if found is None:
                    index = by_call_id[call_id] = len(members)
                    members.append([position])
                else:
                    index = found
                    members[index].append(position)
            exchange_of.append(index)
        removable = tuple(
            not any(untouchable[position] for position in group) for group in members
        )
        return cls(untouchable, tuple(exchange_of), tuple(tuple(g) for g in members), removable)

    def removable(self, position: int) -> bool:
        """Whether the turn at ``position`` may be dropped or summarized."""
        return self.removable_exchange[self.exchange_of[position]]


def require_satisfiable(
    transcript: Transcript, budget: CompactionBudget, structure: Structure
) -> None:
    """Raise ``BudgetUnsatisfiable`` if the untouchable turns alone exceed the budget."""
    tokens = 0
    count = 0
    for turn, untouchable in zip(transcript.turns, structure.untouchable, strict=True):
        if untouchable:
            tokens += turn.token_estimate
            count += 1
    if tokens > budget.max_tokens:
        raise BudgetUnsatisfiable(
            f"untouchable turns need {tokens} tokens but the budget is {budget.max_tokens}",
            {
                "untouchable_tokens": tokens,
                "max_tokens": budget.max_tokens,
                "untouchable_turn_count": count,
                "protected_recent_turns": budget.protected_recent_turns,
            },
        )

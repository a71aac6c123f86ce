"""Facts about a transcript that every policy and the invariants derive the same way.

Untouchable turns, tool exchanges and removability, all as positions, so every ordering comes from
transcript position and never from a dict's or set's iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BudgetUnsatisfiable, ValidationError
from .transcript import CompactionBudget, Role, Transcript

__all__ = ["Structure", "require_satisfiable", "turn_id_set"]


@dataclass(frozen=True, slots=True)
class Structure:
    """Positions of untouchable turns and of each turn's exchange."""

    untouchable: tuple[bool, ...]
    """Turns no policy may remove: every SYSTEM turn, every pinned turn, the newest ones."""
    whole: tuple[bool, ...]
    """The untouchable turns kept exactly as they are (SYSTEM and pinned); a turn protected
    only for being recent may be clipped (its head and tail kept) or deduplicated (a pointer to
    an identical later copy), never masked or removed."""
    exchange_of: tuple[int, ...]
    """Index into ``exchanges`` for each turn position."""
    exchanges: tuple[tuple[int, ...], ...]
    """Member positions of each exchange, exchanges ordered by their earliest turn."""
    removable_exchange: tuple[bool, ...]
    """Per exchange: no member is untouchable."""
    shared_exchanges: tuple[tuple[int, ...], ...]
    """The exchanges with more than one member (the only ones a plan could split)."""
    untouchable_tokens: int

    @classmethod
    def of(cls, transcript: Transcript, budget: CompactionBudget) -> Structure:
        """The structure for a budget's protection; computed once per transcript and count."""
        require_inputs(transcript, budget)
        key = ("structure", budget.protected_recent_turns)
        found = transcript._derived.get(key)
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
        untouchable: list[bool] = []
        whole: list[bool] = []
        untouchable_tokens = 0
        by_call_id: dict[str, int] = {}
        members: list[list[int]] = []
        exchange_of: list[int] = []
        for position, turn in enumerate(turns):
            kept_as_is = turn.role is system or turn.pinned
            fixed = kept_as_is or position >= first_protected
            untouchable.append(fixed)
            whole.append(kept_as_is)
            if fixed:
                untouchable_tokens += turn.token_estimate
            call_id = turn.tool_call_id
            index = -1 if call_id is None else by_call_id.get(call_id, -1)
            if index == -1:
                index = len(members)
                if call_id is not None:
                    by_call_id[call_id] = index
                members.append([position])
            else:
                members[index].append(position)
            exchange_of.append(index)
        removable = [True] * len(members)
        for position, fixed in enumerate(untouchable):
            if fixed:
                removable[exchange_of[position]] = False
        exchanges = tuple(tuple(group) for group in members)
        return cls(tuple(untouchable), tuple(whole), tuple(exchange_of), exchanges,
                   tuple(removable),
                   tuple(group for group in exchanges if len(group) > 1), untouchable_tokens)

    def removable(self, position: int) -> bool:
        """Whether the turn at ``position`` may be dropped or summarized."""
        return self.removable_exchange[self.exchange_of[position]]


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

"""Drop whole exchanges oldest first, user messages only after everything else."""

from __future__ import annotations

from .._planning import build_plan, keep_all
from .._structure import Structure, require_satisfiable
from ..types import (
    SUMMARY_TURN_ID_PREFIX,
    Action,
    CompactionBudget,
    CompactionPlan,
    Role,
    Transcript,
    TurnAction,
)

__all__ = ["UserLastDropPolicy"]


class UserLastDropPolicy:
    """``DropOldestPolicy`` in three passes, each oldest first and only while still over: the
    removable exchanges holding neither a user turn nor a summary (old assistant text, tool
    exchanges), then the summaries, then the exchanges with user turns. User messages are short
    and carry the requirements and corrections; a summary is old history already compressed.

    >>> UserLastDropPolicy().name
    'drop_oldest_user_last'
    """

    name = "drop_oldest_user_last"
    version = "1.0.0"

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure = Structure.of(transcript, budget)
        require_satisfiable(budget, structure)
        actions = keep_all(transcript)
        turns = transcript.turns
        total = transcript.token_estimate()
        rank = [_rank(transcript, members) for members in structure.exchanges]
        for current in (0, 1, 2):
            for index, members in enumerate(structure.exchanges):
                if total <= budget.max_tokens:
                    break
                if rank[index] != current or not structure.removable_exchange[index]:
                    continue
                for position in members:
                    actions[position] = TurnAction._trusted(turns[position].turn_id, Action.DROP)
                    total -= turns[position].token_estimate
        return build_plan(transcript, budget, actions, (), policy_name=self.name,
                          policy_version=self.version, tokens_after=total)

    def __repr__(self) -> str:
        return "UserLastDropPolicy()"


def _rank(transcript: Transcript, members: tuple[int, ...]) -> int:
    """0: plain exchanges, 1: summaries, 2: anything with a user turn (dropped last)."""
    turns = transcript.turns
    if any(turns[p].role is Role.USER for p in members):
        return 2
    if any(turns[p].turn_id.startswith(SUMMARY_TURN_ID_PREFIX) for p in members):
        return 1
    return 0

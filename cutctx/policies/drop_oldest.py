"""Drop whole exchanges, oldest first, until the transcript fits."""

from __future__ import annotations

from ..actions import Action, TurnAction
from ..plan import CompactionPlan, build_plan, opening
from ..transcript import CompactionBudget, Transcript

__all__ = ["DropOldestPolicy"]


class DropOldestPolicy:
    """Walks exchanges by their earliest turn and drops each removable one until it fits.

    >>> DropOldestPolicy().name
    'drop_oldest'
    """

    name = "drop_oldest"
    version = "1.0.0"

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure, actions = opening(transcript, budget)
        turns = transcript.turns
        total = transcript.token_estimate()
        for index, members in enumerate(structure.exchanges):
            if total <= budget.max_tokens:
                break
            if not structure.removable_exchange[index]:
                continue
            for position in members:
                actions[position] = TurnAction._trusted(turns[position].turn_id, Action.DROP)
                total -= turns[position].token_estimate
        return build_plan(transcript, budget, actions, (), policy_name=self.name,
                          policy_version=self.version, tokens_after=total)

    def __repr__(self) -> str:
        return "DropOldestPolicy()"

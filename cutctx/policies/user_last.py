"""Drop whole exchanges oldest first, user messages only after everything else."""

from __future__ import annotations

from .._references import GIVE_WAY_ORDERS, later_references
from .._replaced import is_person, is_result
from .._structure import Structure, require_satisfiable
from ..actions import SUMMARY_TURN_ID_PREFIX, Action, TurnAction
from ..errors import ValidationError
from ..plan import CompactionPlan, build_plan, keep_all
from ..transcript import CompactionBudget, Transcript

__all__ = ["UserLastDropPolicy"]


class UserLastDropPolicy:
    """``DropOldestPolicy`` in passes, each oldest first and only while still over: the
    removable exchanges holding neither a user turn nor a summary (old assistant text, tool
    exchanges), then the summaries, then the exchanges with user turns. User messages are short
    and carry the requirements and corrections; a summary is old history already compressed.
    A user turn marked as an observation (``cutctx.observation``: tool output sent as a user
    message) is no person's message: it goes with the first pass.

    ``order="value"`` splits the first pass by what is kept: exchanges made only of tool
    results that no later turn refers back to go first, then those results that one does, then
    the agent's own steps (its messages and tool-call exchanges).

    >>> UserLastDropPolicy().name
    'drop_oldest_user_last'
    """

    name = "drop_oldest_user_last"
    version = "1.0.0"

    def __init__(self, *, order: str = "oldest") -> None:
        if order not in GIVE_WAY_ORDERS:
            raise ValidationError(f"order must be one of {', '.join(GIVE_WAY_ORDERS)}",
                                  {"field": "order"})
        self.order = order

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure = Structure.of(transcript, budget)
        require_satisfiable(budget, structure)
        actions = keep_all(transcript)
        turns = transcript.turns
        total = transcript.token_estimate()
        if total > budget.max_tokens:
            rank = self._ranks(transcript, structure)
            for current in sorted(set(rank)):
                for index, members in enumerate(structure.exchanges):
                    if total <= budget.max_tokens:
                        break
                    if rank[index] != current or not structure.removable_exchange[index]:
                        continue
                    for position in members:
                        actions[position] = TurnAction._trusted(turns[position].turn_id,
                                                                Action.DROP)
                        total -= turns[position].token_estimate
        return build_plan(transcript, budget, actions, (), policy_name=self.name,
                          policy_version=self.version, tokens_after=total)

    def _ranks(self, transcript: Transcript, structure: Structure) -> list[int]:
        """Per exchange, the pass it goes in: 0-2 plain exchanges (one pass unless ``value``),
        3 summaries, 4 anything with a message a person typed (dropped last)."""
        turns = transcript.turns
        references = later_references(transcript) if self.order == "value" else None
        out: list[int] = []
        for members in structure.exchanges:
            if any(is_person(turns[p]) for p in members):
                out.append(4)
            elif any(turns[p].turn_id.startswith(SUMMARY_TURN_ID_PREFIX) for p in members):
                out.append(3)
            elif references is None:
                out.append(0)
            elif all(is_result(turns[p]) for p in members):
                out.append(1 if any(references[p] for p in members) else 0)
            else:
                out.append(2)
        return out

    def __repr__(self) -> str:
        return f"UserLastDropPolicy(order={self.order!r})"

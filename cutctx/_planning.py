"""Building a plan from per-turn decisions: the arithmetic every policy shares."""

from __future__ import annotations

from collections.abc import Sequence

from .types import (
    Action,
    CompactionBudget,
    CompactionPlan,
    SummarizationRequest,
    Transcript,
    TurnAction,
)

__all__ = ["build_plan", "keep_all"]


def build_plan(
    transcript: Transcript,
    budget: CompactionBudget,
    actions: Sequence[TurnAction],
    requests: Sequence[SummarizationRequest],
    *,
    policy_name: str,
    policy_version: str,
    estimator_ratio: float | None = None,
) -> CompactionPlan:
    """A plan whose totals and verdict are derived from its actions (then validated)."""
    after = sum(request.target_tokens for request in requests)
    for action, turn in zip(actions, transcript.turns, strict=False):
        if action.action is Action.KEEP:
            after += turn.token_estimate
        elif action.replacement is not None:
            after += action.replacement.token_estimate
    return CompactionPlan(
        actions=tuple(actions),
        summarization_requests=tuple(requests),
        tokens_before=transcript.token_estimate(),
        tokens_after_estimate=after,
        policy_name=policy_name,
        policy_version=policy_version,
        estimator_ratio=estimator_ratio,
        budget_unmet=after > budget.max_tokens,
        transcript=transcript,
        budget=budget,
    )


def keep_all(transcript: Transcript) -> list[TurnAction]:
    """A KEEP action for every turn."""
    return [TurnAction._trusted(turn.turn_id, Action.KEEP) for turn in transcript.turns]

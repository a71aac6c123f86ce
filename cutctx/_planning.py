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
    tokens_after: int | None = None,
) -> CompactionPlan:
    """A plan whose totals and verdict are derived from its actions (then validated).

    A policy that kept a running total passes it as ``tokens_after`` to save a pass over the
    turns; the plan's validation recomputes it independently either way.
    """
    if tokens_after is None:
        tokens_after = sum(request.target_tokens for request in requests)
        for action, turn in zip(actions, transcript.turns, strict=False):
            if action.action is Action.KEEP:
                tokens_after += turn.token_estimate
            elif action.replacement is not None:
                tokens_after += action.replacement.token_estimate
    return CompactionPlan(
        actions=tuple(actions),
        summarization_requests=tuple(requests),
        tokens_before=transcript.token_estimate(),
        tokens_after_estimate=tokens_after,
        policy_name=policy_name,
        policy_version=policy_version,
        estimator_ratio=estimator_ratio,
        budget_unmet=tokens_after > budget.max_tokens,
        transcript=transcript,
        budget=budget,
    )


def keep_all(transcript: Transcript) -> list[TurnAction]:
    """A KEEP action for every turn: a fresh list over actions made once per transcript (they
    are immutable, so every policy and chain member deciding over it can share them)."""
    keep: tuple[TurnAction, ...] | None = transcript._derived.get(("keep", None))
    if keep is None:
        make = TurnAction._trusted
        keep = transcript._derived[("keep", None)] = tuple(
            make(turn.turn_id, Action.KEEP) for turn in transcript.turns)
    return list(keep)

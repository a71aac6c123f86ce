"""What the tool-result policies share: walk tool results oldest first, give each a new body.

Deduplicating, clipping and masking differ only in which body a result gets; the walk, the
running total, the skipped turns (untouchable, already final) and the plan are the same.
"""

from __future__ import annotations

from collections.abc import Callable

from .._planning import build_plan, keep_all
from .._replaced import is_final
from .._structure import Structure, require_satisfiable
from ..errors import ValidationError
from ..estimator import CharRatioEstimator, TokenEstimator
from ..types import (
    Action,
    CompactionBudget,
    CompactionPlan,
    Role,
    Transcript,
    TranscriptTurn,
    TurnAction,
    TurnReplacement,
)

__all__ = ["chosen_estimator", "replace_tool_results"]

Body = Callable[[int, TranscriptTurn], tuple[str, int] | None]
"""(position, turn) -> the new body's text and estimate, or None to leave the turn."""


def chosen_estimator(estimator: TokenEstimator | None) -> tuple[TokenEstimator, bool]:
    """The policy's estimator (CharRatioEstimator by default), and whether it is the default."""
    if estimator is not None and not callable(getattr(estimator, "estimate_tokens", None)):
        raise ValidationError("estimator must have an estimate_tokens(text) method",
                              {"field": "estimator"})
    return (CharRatioEstimator(), True) if estimator is None else (estimator, False)


def replace_tool_results(
    transcript: Transcript,
    budget: CompactionBudget,
    body: Body,
    *,
    kind: str,
    spare_recent: int = 0,
    may_replace: Callable[[TranscriptTurn], bool] = lambda turn: not is_final(turn),
    policy_name: str,
    policy_version: str,
    estimator: TokenEstimator,
    default_estimator: bool,
) -> CompactionPlan:
    """Over TOOL turns oldest first (the newest ``spare_recent`` spared), while the transcript is
    over budget: each turn that is not untouchable and ``may_replace`` gets ``body``'s text of
    ``kind`` when that is estimated strictly smaller."""
    structure = Structure.of(transcript, budget)
    require_satisfiable(budget, structure)
    actions = keep_all(transcript)
    turns = transcript.turns
    tools = [p for p, turn in enumerate(turns) if turn.role is Role.TOOL]
    candidates = tools[: len(tools) - spare_recent] if spare_recent else tools
    total = transcript.token_estimate()
    replaced = False
    for position in candidates:
        if total <= budget.max_tokens:
            break
        turn = turns[position]
        if structure.untouchable[position] or not may_replace(turn):
            continue
        made = body(position, turn)
        if made is None or made[1] >= turn.token_estimate:
            continue
        text, estimate = made
        replacement = TurnReplacement._checked(text, estimate, kind)
        actions[position] = TurnAction._trusted(turn.turn_id, Action.MASK,
                                                replacement=replacement)
        total -= turn.token_estimate - estimate
        replaced = True
    ratio = None
    if replaced and default_estimator and isinstance(estimator, CharRatioEstimator):
        ratio = estimator.chars_per_token
    return build_plan(transcript, budget, actions, (), policy_name=policy_name,
                      policy_version=policy_version, estimator_ratio=ratio, tokens_after=total)

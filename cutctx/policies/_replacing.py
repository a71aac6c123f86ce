"""What the tool-result policies share: walk tool results, give each a new body.

A tool result is a TOOL turn or a USER turn marked as an observation (``cutctx.observation``).

Deduplicating, clipping and masking differ only in which body a result gets and in which order
results are taken; the walk, the running total, the skipped turns (untouchable, already final)
and the plan are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._replaced import is_final, is_result
from .._structure import Structure, require_satisfiable
from ..actions import Action, TurnAction, TurnReplacement
from ..errors import ValidationError
from ..estimator import CharRatioEstimator, TokenEstimator
from ..plan import CompactionPlan, build_plan, keep_all
from ..transcript import CompactionBudget, Transcript, TranscriptTurn

__all__ = ["Body", "chosen_estimator", "replace_tool_results", "result_positions"]

Body = Callable[[int, TranscriptTurn], TurnReplacement | None]
"""(position, turn) -> the turn's new body, or None to leave the turn."""


def chosen_estimator(estimator: TokenEstimator | None) -> tuple[TokenEstimator, bool]:
    """The policy's estimator (CharRatioEstimator by default), and whether it is the default."""
    if estimator is not None and not callable(getattr(estimator, "estimate_tokens", None)):
        raise ValidationError("estimator must have an estimate_tokens(text) method",
                              {"field": "estimator"})
    return (CharRatioEstimator(), True) if estimator is None else (estimator, False)


def result_positions(transcript: Transcript) -> list[int]:
    """Positions of the tool results (TOOL turns and observations: ``is_result``), oldest
    first."""
    return [p for p, turn in enumerate(transcript.turns) if is_result(turn)]


def replace_tool_results(
    transcript: Transcript,
    budget: CompactionBudget,
    body: Body,
    *,
    action: Action,
    candidates: Sequence[int] | None = None,
    recent_too: bool = False,
    may_replace: Callable[[TranscriptTurn], bool] = lambda turn: not is_final(turn),
    policy_name: str,
    policy_version: str,
    estimator: TokenEstimator,
    default_estimator: bool,
) -> CompactionPlan:
    """Over ``candidates`` (default: tool results oldest first), while the transcript is over
    budget: each turn that ``may_replace`` and is not untouchable gets ``body``'s replacement
    under ``action`` when that is estimated strictly smaller (a replacement pointing at a later
    copy, ``refers_to``, is a DEDUPLICATE whatever ``action`` says). ``recent_too``: a turn
    protected only for being recent is a candidate as well (a clip keeps its head and tail; a
    pointer to an identical later copy loses nothing), and the budget's satisfiability is
    judged after, counting what those bodies saved."""
    structure = Structure.of(transcript, budget)
    if not recent_too:
        require_satisfiable(budget, structure)
    actions = keep_all(transcript)
    turns = transcript.turns
    total = transcript.token_estimate()
    replaced = False
    for position in result_positions(transcript) if candidates is None else candidates:
        if total <= budget.max_tokens:
            break
        turn = turns[position]
        if structure.untouchable[position] and (structure.whole[position] or not recent_too):
            continue
        if not may_replace(turn):
            continue
        replacement = body(position, turn)
        if replacement is None or replacement.token_estimate >= turn.token_estimate:
            continue
        kind = action if replacement.refers_to is None else Action.DEDUPLICATE
        actions[position] = TurnAction._trusted(turn.turn_id, kind, replacement=replacement)
        total -= turn.token_estimate - replacement.token_estimate
        replaced = True
    ratio = None
    if replaced and default_estimator and isinstance(estimator, CharRatioEstimator):
        ratio = estimator.chars_per_token
    return build_plan(transcript, budget, actions, (), policy_name=policy_name,
                      policy_version=policy_version, estimator_ratio=ratio, tokens_after=total)

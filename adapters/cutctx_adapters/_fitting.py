"""Protection that bends before it breaks: when the turns that must be kept do not fit.

``keep_recent`` is a preference. When the untouchable turns (system, pins, the newest turns)
alone exceed the budget, the plan is made again protecting fewer recent turns, down to the newest
one (and what its exchange needs); if that turn is a tool result too large for what is left, it is
clipped to its head and tail. Only when the system prompt, the pinned turns and the newest user
message alone exceed the budget is there a refusal, naming turn ids and sizes, never content.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cutctx import (
    BudgetUnsatisfiable,
    CompactionBudget,
    CompactionPlan,
    CompactionPolicy,
    Role,
    TokenEstimator,
    Transcript,
    TranscriptTurn,
    clip_text,
    replaced_metadata,
)

__all__ = ["Fitted", "decide_fitting"]

STUB_ALLOWANCE = 64
"""Tokens assumed for a masked tool result that must stay (a stub with its framing)."""
_MAX_IDS = 10


@dataclass(frozen=True, slots=True)
class Fitted:
    """A plan, and what had to give for the history to fit at all."""

    transcript: Transcript
    """What was planned over: the history, with the newest result clipped if it had to be."""
    budget: CompactionBudget
    plan: CompactionPlan
    protection_relaxed: int = 0
    """Recent turns no longer protected (0: ``keep_recent`` held)."""
    clipped_newest: tuple[str, ...] = ()


def decide_fitting(policy: CompactionPolicy, transcript: Transcript, budget: CompactionBudget,
                   estimator: TokenEstimator, *, strict: bool) -> Fitted:
    """``policy.decide``, relaxing protection (unless ``strict``) when it cannot fit."""
    try:
        return Fitted(transcript, budget, policy.decide(transcript, budget))
    except BudgetUnsatisfiable:
        if strict:
            raise
    protected = min(budget.protected_recent_turns, len(transcript.turns))
    for keep in range(protected - 1, 0, -1):
        relaxed = CompactionBudget(budget.max_tokens, keep)
        try:
            return Fitted(transcript, relaxed, policy.decide(transcript, relaxed),
                          budget.protected_recent_turns - keep)
        except BudgetUnsatisfiable:
            continue
    newest = CompactionBudget(budget.max_tokens, min(1, protected))
    clipped = _clip_newest(transcript, newest, estimator)
    if clipped is not None:
        try:
            return Fitted(clipped[0], newest, policy.decide(clipped[0], newest),
                          budget.protected_recent_turns - newest.protected_recent_turns,
                          (clipped[1],))
        except BudgetUnsatisfiable:
            pass
    raise refusal(transcript, newest)


def _untouchable(transcript: Transcript, budget: CompactionBudget) -> list[TranscriptTurn]:
    turns = transcript.turns
    first_protected = len(turns) - min(budget.protected_recent_turns, len(turns))
    return [turn for position, turn in enumerate(turns)
            if turn.role is Role.SYSTEM or turn.pinned or position >= first_protected]


def _clip_newest(transcript: Transcript, budget: CompactionBudget,
                 estimator: TokenEstimator) -> tuple[Transcript, str] | None:
    """The transcript with its newest turn clipped to what the rest leaves, if that turn is an
    unpinned tool result and clipping can make everything that must stay fit."""
    if not transcript.turns or budget.protected_recent_turns < 1:
        return None
    newest = transcript.turns[-1]
    if newest.role is not Role.TOOL or newest.pinned or newest.metadata.get("cutctx.kind"):
        return None
    fixed = sum(turn.token_estimate for turn in _untouchable(transcript, budget)[:-1])
    if newest.tool_call_id is not None:  # the rest of its exchange stays, results as stubs
        for turn in transcript.turns[:-1]:
            if turn.tool_call_id == newest.tool_call_id and not (
                    turn.role is Role.SYSTEM or turn.pinned):
                fixed += (min(turn.token_estimate, STUB_ALLOWANCE) if turn.role is Role.TOOL
                          else turn.token_estimate)
    room = budget.max_tokens - fixed
    if room >= newest.token_estimate:
        return None
    clip = clip_text(newest.content, newest.token_estimate, room, estimator)
    if clip is None:
        return None
    text, tokens = clip
    turn = replace(newest, content=text, token_estimate=tokens,
                   metadata=replaced_metadata(newest, "clipped"))
    return Transcript((*transcript.turns[:-1], turn)), newest.turn_id


def refusal(transcript: Transcript, budget: CompactionBudget) -> BudgetUnsatisfiable:
    """The typed refusal: which turns must stay and how large they are (ids and counts only)."""
    kept = _untouchable(transcript, budget)
    tokens = sum(turn.token_estimate for turn in kept)
    largest = sorted(kept, key=lambda turn: -turn.token_estimate)[:_MAX_IDS]
    named = ", ".join(f"{turn.turn_id} ({turn.token_estimate})" for turn in largest)
    return BudgetUnsatisfiable(
        f"the turns that must be kept (system, pinned, the newest) need {tokens} tokens but the "
        f"budget is {budget.max_tokens}; largest: {named}",
        {
            "untouchable_tokens": tokens,
            "max_tokens": budget.max_tokens,
            "untouchable_turn_count": len(kept),
            "protected_recent_turns": budget.protected_recent_turns,
            "turn_ids": [turn.turn_id for turn in largest],
            "turn_tokens": [turn.token_estimate for turn in largest],
        },
    )

"""Protection that bends before it breaks: when the turns that must be kept do not fit.

``keep_recent`` is a preference. When the untouchable turns (system, pins, the newest turns)
alone exceed the budget, the plan is made again protecting fewer recent turns, down to the newest
one (and what its exchange needs); if that is still too large, the newest turn (a tool result or
a user message) is clipped to its head and tail, then the task as well (sharing what is left).
Only when what is left cannot hold even a clip of them is there a refusal, naming turn ids and
sizes, never content.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    is_final,
    replaced_metadata,
)

__all__ = ["Fitted", "decide_fitting"]

STUB_ALLOWANCE = 64
"""Tokens assumed for a masked tool result that must stay (a stub with its framing)."""
MIN_CLIP_TOKENS = 96
"""The share a clip is first given at least: less keeps little beyond the marker, so the next
candidate gives way too before a clip that small is tried."""
_CLIP_SUBJECTS = {Role.TOOL: "tool result", Role.USER: "message"}
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
    clipped: tuple[str, ...] = ()
    """Turns clipped so that what must stay fits (the newest, then the task)."""


def decide_fitting(policy: CompactionPolicy, transcript: Transcript, budget: CompactionBudget,
                   estimator: TokenEstimator, *, strict: bool,
                   task_turn_id: str | None = None) -> Fitted:
    """``policy.decide``, relaxing protection (unless ``strict``) when it cannot fit.

    As a last resort the newest turn (a tool result or a user message) is clipped, and if that
    is not enough the task (``task_turn_id``) too, the two sharing what is left.
    """
    try:
        return Fitted(transcript, budget, policy.decide(transcript, budget))
    except BudgetUnsatisfiable as unsatisfiable:
        if strict:
            raise refusal(transcript, budget) from unsatisfiable
    protected = min(budget.protected_recent_turns, len(transcript.turns))
    for keep in range(protected - 1, 0, -1):
        relaxed = CompactionBudget(budget.max_tokens, keep)
        try:
            return Fitted(transcript, relaxed, policy.decide(transcript, relaxed),
                          budget.protected_recent_turns - keep)
        except BudgetUnsatisfiable:
            continue
    newest = CompactionBudget(budget.max_tokens, min(1, protected))
    for clipped, ids in _clipped_to_fit(transcript, newest, estimator, task_turn_id):
        try:
            return Fitted(clipped, newest, policy.decide(clipped, newest),
                          budget.protected_recent_turns - newest.protected_recent_turns, ids)
        except BudgetUnsatisfiable:
            continue
    raise refusal(transcript, newest)


def _untouchable(transcript: Transcript, budget: CompactionBudget) -> list[TranscriptTurn]:
    turns = transcript.turns
    first_protected = len(turns) - min(budget.protected_recent_turns, len(turns))
    return [turn for position, turn in enumerate(turns)
            if turn.role is Role.SYSTEM or turn.pinned or position >= first_protected]


def _clippable(turn: TranscriptTurn) -> bool:
    return turn.role in _CLIP_SUBJECTS and bool(turn.content) and not is_final(turn)


def _clip_candidates(transcript: Transcript, task_turn_id: str | None) -> list[TranscriptTurn]:
    """What may be clipped, in the order it gives way: the newest turn (unless the caller pinned
    it), then the task."""
    newest = transcript.turns[-1]
    out = [newest] if _clippable(newest) and (
        not newest.pinned or newest.turn_id == task_turn_id) else []
    for turn in transcript.turns:
        if turn.turn_id == task_turn_id and turn is not newest and _clippable(turn):
            out.append(turn)
    return out


def _clipped_to_fit(transcript: Transcript, budget: CompactionBudget, estimator: TokenEstimator,
                    task_turn_id: str | None) -> Iterator[tuple[Transcript, tuple[str, ...]]]:
    """The transcript with the fewest candidates clipped (see ``_clip_candidates``) so that what
    must stay fits: the newest alone first, then the newest and the task."""
    if not transcript.turns or budget.protected_recent_turns < 1:
        return
    candidates = _clip_candidates(transcript, task_turn_id)
    chosen = {turn.turn_id for turn in candidates}
    fixed = sum(turn.token_estimate for turn in _untouchable(transcript, budget)
                if turn.turn_id not in chosen)
    newest = transcript.turns[-1]
    if newest.role is Role.TOOL and newest.tool_call_id is not None:
        for turn in transcript.turns[:-1]:  # the rest of its exchange stays, results as stubs
            if turn.tool_call_id == newest.tool_call_id and not (
                    turn.role is Role.SYSTEM or turn.pinned):
                fixed += (min(turn.token_estimate, STUB_ALLOWANCE) if turn.role is Role.TOOL
                          else turn.token_estimate)
    room = budget.max_tokens - fixed
    if room >= sum(turn.token_estimate for turn in candidates):
        return
    for floor in (MIN_CLIP_TOKENS, 0):  # useful clips first, then whatever still fits
        for count in range(1, len(candidates) + 1):
            clipping, untouched = candidates[:count], candidates[count:]
            left = room - sum(turn.token_estimate for turn in untouched)
            clips = _clip_all(clipping, left, estimator, floor)
            if clips is not None:
                swap = {turn.turn_id: turn for turn in clips}
                yield (Transcript(tuple(swap.get(turn.turn_id, turn)
                                        for turn in transcript.turns)), tuple(swap))


def _clip_all(turns: list[TranscriptTurn], room: int, estimator: TokenEstimator,
              floor: int) -> list[TranscriptTurn] | None:
    """``turns`` sharing ``room`` fairly (the smaller ones whole if they fit their share, the
    rest clipped to equal shares); None if a clip's share is below ``floor`` or holds nothing."""
    shares: dict[str, int] = {}
    left = room
    by_size = sorted(turns, key=lambda turn: turn.token_estimate)
    for position, turn in enumerate(by_size):
        shares[turn.turn_id] = left // (len(by_size) - position)
        left -= min(shares[turn.turn_id], turn.token_estimate)
    out: list[TranscriptTurn] = []
    for turn in turns:
        share = shares[turn.turn_id]
        if turn.token_estimate <= share:
            continue
        if share < max(1, floor):
            return None
        clip = clip_text(turn.content, turn.token_estimate, share, estimator,
                         subject=_CLIP_SUBJECTS[turn.role])
        if clip is None:
            return None
        text, tokens = clip
        out.append(replace(turn, content=text, token_estimate=tokens,
                           metadata=replaced_metadata(turn, "clipped")))
    return out or None


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

"""Protection that bends before it breaks: a plan over the budget is never the last word.

``keep_recent`` and ``keep_recent_results`` are preferences. While the plan is over the budget
(or the untouchable turns alone do not fit), the adapters try again, each step only if the one
before did not fit: protecting fewer recent turns, down to the newest one (and what its exchange
needs); sparing no recent result from masking; clipping the newest turn (a tool result or a user
message) to what is left; and, last of all, clipping the task too, the two sharing what is left.
The first plan that fits is taken; if none does, the one closest to the budget, honestly marked
over. Only when what is left cannot hold even a clip is there a refusal, naming turn ids and
sizes, never content.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from cutctx import (
    Action,
    BudgetUnsatisfiable,
    Clip,
    CompactionBudget,
    CompactionPlan,
    CompactionPolicy,
    Role,
    TokenEstimator,
    Transcript,
    TranscriptTurn,
    TurnAction,
    atoms_of,
    is_final,
    plan_clip,
    replaced_turn,
    text_sha256,
)

__all__ = ["Fitted", "decide_fitting", "refusal"]

STUB_ALLOWANCE = 64
"""Tokens assumed for a masked tool result that must stay (a stub with its framing)."""
MIN_CLIP_TOKENS = 96
"""The share a clip is first given at least: less keeps little beyond the marker, so the next
candidate gives way too before a clip that small is tried."""
_CLIP_SUBJECTS = {Role.TOOL: "tool result", Role.USER: "message"}
_MAX_IDS = 10


@dataclass(frozen=True, slots=True)
class Fitted:
    """A plan over the history, and what had to give for the history to fit at all."""

    transcript: Transcript
    budget: CompactionBudget
    plan: CompactionPlan
    protection_relaxed: int = 0
    """Recent turns no longer protected (0: ``keep_recent`` held)."""
    clipped: tuple[str, ...] = ()
    """Turns clipped as a last resort so that what must stay fits (the newest, then the task)."""
    results_relaxed: int = 0
    """Recent tool results no longer spared from masking (0: ``keep_recent_results`` held)."""
    policy: CompactionPolicy | None = None
    """The policy that made the plan (a relaxed one, when protection gave way)."""


def decide_fitting(policy: CompactionPolicy, transcript: Transcript, budget: CompactionBudget,
                   estimator: TokenEstimator, *, strict: bool,
                   task_turn_id: str | None = None,
                   relaxed: tuple[CompactionPolicy, int] | None = None) -> Fitted:
    """``policy.decide``, escalating (unless ``strict``) while the plan does not fit.

    ``relaxed``: the same policy sparing no recent result, and how many it sparing gave up,
    tried once protection is down to the newest turn. Returns the first plan that fits, else
    the one with the fewest tokens (``budget_unmet``); raises only when none could be made.
    """
    best: Fitted | None = None
    first = True
    for attempt in _attempts(policy, transcript, budget, estimator, task_turn_id, relaxed):
        try:
            fitted = attempt()
        except BudgetUnsatisfiable as unsatisfiable:
            if strict and first:
                raise refusal(transcript, budget) from unsatisfiable
            first = False
            continue
        if not fitted.plan.budget_unmet or strict:
            return fitted
        first = False
        if best is None or fitted.plan.tokens_after_estimate < best.plan.tokens_after_estimate:
            best = fitted
    if best is not None:
        return best
    raise refusal(transcript, CompactionBudget(budget.max_tokens,
                                               min(1, budget.protected_recent_turns)))


def _attempts(policy: CompactionPolicy, transcript: Transcript, budget: CompactionBudget,
              estimator: TokenEstimator, task_turn_id: str | None,
              relaxed: tuple[CompactionPolicy, int] | None) -> Iterator[_Attempt]:
    """Each way of planning, in the order they give way (see the module docstring)."""
    protected = min(budget.protected_recent_turns, len(transcript.turns))
    yield _Attempt(policy, transcript, budget, 0)
    for keep in range(protected - 1, 0, -1):
        yield _Attempt(policy, transcript, CompactionBudget(budget.max_tokens, keep),
                       budget.protected_recent_turns - keep)
    newest = CompactionBudget(budget.max_tokens, min(1, protected))
    given_up = budget.protected_recent_turns - newest.protected_recent_turns
    if relaxed is not None:
        yield _Attempt(relaxed[0], transcript, newest, given_up, results_relaxed=relaxed[1])
    last = relaxed[0] if relaxed is not None else policy
    for clips in _clipped_to_fit(transcript, newest, estimator, task_turn_id):
        yield _Attempt(last, transcript, newest, given_up, clips,
                       results_relaxed=0 if relaxed is None else relaxed[1])


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One way of planning: a policy, a budget, and the turns clipped before it plans."""

    policy: CompactionPolicy
    transcript: Transcript
    budget: CompactionBudget
    protection_relaxed: int
    clips: dict[str, Clip] | None = None
    results_relaxed: int = 0

    def __call__(self) -> Fitted:
        if not self.clips:
            return Fitted(self.transcript, self.budget,
                          self.policy.decide(self.transcript, self.budget),
                          self.protection_relaxed, (), self.results_relaxed, self.policy)
        return Fitted(self.transcript, self.budget, self._with_clips(), self.protection_relaxed,
                      tuple(self.clips), self.results_relaxed, self.policy)

    def _with_clips(self) -> CompactionPlan:
        """Plan over the history with the clipped turns in place (still protected), then name
        the clips in the plan itself: over the real history, each is a CLIP."""
        assert self.clips is not None
        clips = self.clips
        turns = self.transcript.turns
        actions = {turn.turn_id: TurnAction(turn.turn_id, Action.CLIP,
                                            replacement=clips[turn.turn_id].replacement())
                   for turn in turns if turn.turn_id in clips}
        planning = Transcript(tuple(
            replaced_turn(turn, actions[turn.turn_id]) if turn.turn_id in actions else turn
            for turn in turns))
        planned = self.policy.decide(planning, self.budget)
        final = tuple(actions[action.turn_id] if action.turn_id in actions
                      and action.action is Action.KEEP else action
                      for action in planned.actions)
        # The task may be clipped only as this last resort: here it is unpinned for the check,
        # since a pin otherwise means "exactly as given".
        checked = Transcript(tuple(
            replace(turn, pinned=False) if turn.turn_id in clips and turn.pinned else turn
            for turn in turns))
        return CompactionPlan(
            actions=final, summarization_requests=planned.summarization_requests,
            tokens_before=self.transcript.token_estimate(),
            tokens_after_estimate=planned.tokens_after_estimate,
            policy_name=planned.policy_name, policy_version=planned.policy_version,
            estimator_ratio=planned.estimator_ratio, budget_unmet=planned.budget_unmet,
            transcript=checked, budget=self.budget)


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
                    task_turn_id: str | None) -> Iterator[dict[str, Clip]]:
    """Clips of the fewest candidates (see ``_clip_candidates``) so that what must stay fits:
    the newest alone first, then the newest and the task. Each gets all the room the rest
    leaves (every other removable turn gives way first)."""
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
            if clips:
                yield clips


def _clip_all(turns: list[TranscriptTurn], room: int, estimator: TokenEstimator,
              floor: int) -> dict[str, Clip] | None:
    """``turns`` sharing ``room`` fairly (the smaller ones whole if they fit their share, the
    rest clipped to equal shares); None if a clip's share is below ``floor`` or holds nothing."""
    shares: dict[str, int] = {}
    left = room
    by_size = sorted(turns, key=lambda turn: turn.token_estimate)
    for position, turn in enumerate(by_size):
        shares[turn.turn_id] = left // (len(by_size) - position)
        left -= min(shares[turn.turn_id], turn.token_estimate)
    out: dict[str, Clip] = {}
    for turn in turns:
        share = shares[turn.turn_id]
        if turn.token_estimate <= share:
            continue
        if share < max(1, floor):
            return None
        clip = plan_clip(turn.content, turn.token_estimate, share, estimator,
                         original_sha256=text_sha256(turn), subject=_CLIP_SUBJECTS[turn.role],
                         atoms=atoms_of(turn.metadata, len(turn.content)))
        if clip is None:
            return None
        out[turn.turn_id] = clip
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

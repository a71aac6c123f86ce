"""Give back what a plan took beyond need: a compaction lands at its budget, not far below it.

Masks and drops come in whole results and whole exchanges, so the last one a policy takes can
overshoot by its whole size. After the inner policy, the turns it masked, clipped or dropped are
given back newest first (the newest is what the next step most likely looks at), each only if
the plan still fits with it whole and it is within a result's share (``max_result_fraction``,
``max_result_tokens``: a clipped result stays clipped); with an estimator, a masked result
that does not fit whole comes back clipped to the room left (within its share). Decisions made
before this plan (a stub from an earlier compaction is a KEEP of a final turn here) are never
undone, and summaries stand.
"""

from __future__ import annotations

from .._clipping import Clip, atoms_of, plan_clip
from .._replaced import is_final, is_person, text_sha256
from .._structure import Structure
from ..actions import Action, TurnAction
from ..estimator import TokenEstimator
from ..plan import CompactionPlan, CompactionPolicy, build_plan
from ..transcript import CompactionBudget, Transcript, TranscriptTurn
from .clipping import ToolResultClipPolicy, subject_of

__all__ = ["FillingPolicy"]

MIN_GIVEN_BACK = 128
"""The least room a result is given back clipped into: less would hold little but the marker."""


class FillingPolicy:
    """``policy``'s plan, with masked, clipped and dropped turns given back, newest first,
    while the plan still fits its budget. ``people_first``: what a person typed comes back
    before the rest (it gave way last). A person's message comes back whole or not at all.

    >>> from cutctx import DropOldestPolicy
    >>> FillingPolicy(DropOldestPolicy()).name
    'fill(drop_oldest@1.0.0)'
    """

    version = "1.0.0"

    def __init__(self, policy: CompactionPolicy, *, estimator: TokenEstimator | None = None,
                 max_result_fraction: float | None = None,
                 max_result_tokens: int | None = None, people_first: bool = False) -> None:
        self.policy = policy
        self.estimator = estimator
        self.people_first = people_first
        self.cap = (ToolResultClipPolicy(max_result_tokens,
                                         max_result_fraction=max_result_fraction)
                    if max_result_fraction is not None or max_result_tokens is not None
                    else None)
        self.name = f"fill({policy.name}@{policy.version})"

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        plan = self.policy.decide(transcript, budget)
        total = plan.tokens_after_estimate
        structure = Structure.of(transcript, budget)
        turns = transcript.turns
        actions = list(plan.actions)
        cap = budget.max_tokens if self.cap is None else self.cap.cap(budget)
        for position in self._order(turns, actions, structure) if total < budget.max_tokens else ():
            action = actions[position]
            if action.action is Action.DROP:
                members = structure.exchanges[structure.exchange_of[position]]
                if members[-1] != position:
                    continue  # an exchange is weighed once, at its newest member
                gain = sum(turns[p].token_estimate for p in members)
                if total + gain <= budget.max_tokens:
                    for member in members:
                        actions[member] = TurnAction._trusted(turns[member].turn_id,
                                                              Action.KEEP)
                    total += gain
            elif action.action in (Action.MASK, Action.CLIP) and action.replacement is not None:
                turn = turns[position]
                gain = turn.token_estimate - action.replacement.token_estimate
                if turn.token_estimate <= cap and total + gain <= budget.max_tokens:
                    actions[position] = TurnAction._trusted(action.turn_id, Action.KEEP)
                    total += gain
                    continue
                if action.action is Action.CLIP or is_person(turn):
                    continue  # over its share it stays clipped; a person's stays shortened
                clip = self._clip(turn, min(cap, budget.max_tokens - total
                                            + action.replacement.token_estimate))
                if clip is not None and clip.token_estimate > action.replacement.token_estimate:
                    actions[position] = TurnAction._trusted(action.turn_id, Action.CLIP,
                                                            replacement=clip.replacement())
                    total += clip.token_estimate - action.replacement.token_estimate
        total = self._widen_clips(transcript, budget, actions, total)
        return build_plan(transcript, budget, actions, plan.summarization_requests,
                          policy_name=self.name, policy_version=self.version,
                          estimator_ratio=plan.estimator_ratio, tokens_after=total)

    def _order(self, turns: tuple[TranscriptTurn, ...], actions: list[TurnAction],
               structure: Structure) -> list[int]:
        """The positions weighed, newest first; with ``people_first``, those holding what a
        person typed before the rest (the reverse of the order in which they gave way)."""
        newest_first = list(range(len(actions) - 1, -1, -1))
        if not self.people_first:
            return newest_first

        def person(position: int) -> bool:
            if actions[position].action is Action.DROP:
                members = structure.exchanges[structure.exchange_of[position]]
                return any(is_person(turns[member]) for member in members)
            return is_person(turns[position])

        people = [position for position in newest_first if person(position)]
        return people + [position for position in newest_first if not person(position)]

    def _widen_clips(self, transcript: Transcript, budget: CompactionBudget,
                     actions: list[TurnAction], total: int) -> int:
        """Room still left is shared evenly among the results this plan clipped: each keeps
        more of its head and tail, none grows much past its share (so that a later compaction,
        which may have to spare it as recent, still finds room beside it)."""
        turns = transcript.turns
        clipped = [p for p in range(len(actions) - 1, -1, -1)
                   if actions[p].action is Action.CLIP and not is_final(turns[p])]
        room = budget.max_tokens - total
        if not clipped or room < MIN_GIVEN_BACK:
            return total
        for count, position in enumerate(clipped):
            action = actions[position]
            assert action.replacement is not None
            share = (budget.max_tokens - total) // (len(clipped) - count)
            clip = self._clip(turns[position], action.replacement.token_estimate + share)
            if clip is not None and clip.token_estimate > action.replacement.token_estimate:
                actions[position] = TurnAction._trusted(action.turn_id, Action.CLIP,
                                                        replacement=clip.replacement())
                total += clip.token_estimate - action.replacement.token_estimate
        return total

    def _clip(self, turn: TranscriptTurn, room: int) -> Clip | None:
        """``turn`` (an original, not a stub or a clip) clipped to ``room``, if that keeps more
        than the marker's worth of it."""
        if self.estimator is None or is_final(turn) or room < MIN_GIVEN_BACK:
            return None
        return plan_clip(turn.content, turn.token_estimate, room, self.estimator,
                         original_sha256=text_sha256(turn),
                         subject=subject_of(turn),
                         atoms=atoms_of(turn.metadata, len(turn.content)))

    def __repr__(self) -> str:
        return f"FillingPolicy({self.policy!r}, estimator={self.estimator!r})"

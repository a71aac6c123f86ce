"""Applying a plan: the one place a compacted view is produced."""

from __future__ import annotations

from collections.abc import Mapping

from ._invariants import validated_for
from ._replaced import KIND_KEY, replaced_metadata, replaced_text
from .actions import Action, SummarizationRequest, TurnAction
from .errors import PlanTranscriptMismatch, SummaryMissing, ValidationError
from .plan import CompactionPlan
from .report import CompactedTranscript, CompactionReport
from .transcript import Role, Transcript, TranscriptTurn

__all__ = ["CompactionExecutor", "replaced_turn"]


class CompactionExecutor:
    """Applies a plan to the transcript it was made for; never modifies the input.

    Summaries for the plan's requests are supplied by the caller, keyed by group id.
    """

    def apply(
        self,
        transcript: Transcript,
        plan: CompactionPlan,
        summaries: Mapping[str, str] | None = None,
    ) -> CompactedTranscript:
        if not isinstance(transcript, Transcript):
            raise ValidationError(
                f"transcript must be a Transcript, got {type(transcript).__name__}",
                {"field": "transcript"})
        if not isinstance(plan, CompactionPlan):
            raise ValidationError(f"plan must be a CompactionPlan, got {type(plan).__name__}",
                                  {"field": "plan"})
        summaries = {} if summaries is None else summaries
        if not isinstance(summaries, Mapping):
            raise ValidationError(
                f"summaries must be a mapping of group id to text, got "
                f"{type(summaries).__name__}", {"field": "summaries"})
        _require_same_turns(transcript, plan)
        requests = {request.group_id: request for request in plan.summarization_requests}
        texts = {request.group_id: _summary_text(request, summaries)
                 for request in plan.summarization_requests}
        view: list[TranscriptTurn] = []
        fates: dict[Action, list[str]] = {action: [] for action in Action}
        keep, summarize, drop = Action.KEEP, Action.SUMMARIZE, Action.DROP
        kept = fates[keep]
        for turn, action in zip(transcript.turns, plan.actions, strict=True):
            kind = action.action
            if kind is keep:
                kept.append(turn.turn_id)
                view.append(turn)
                continue
            fates[kind].append(turn.turn_id)
            if kind is summarize:
                assert action.summary_group is not None
                request = requests[action.summary_group]
                if request.turn_ids[0] == turn.turn_id:
                    view.append(_summary_turn(request, texts[request.group_id]))
            elif kind is not drop:
                view.append(replaced_turn(turn, action))
        report = CompactionReport(
            plan_hash=plan.plan_hash(),
            policy_name=plan.policy_name,
            policy_version=plan.policy_version,
            tokens_before=plan.tokens_before,
            tokens_after_estimate=plan.tokens_after_estimate,
            estimator_ratio=plan.estimator_ratio,
            budget_unmet=plan.budget_unmet,
            turns_before=len(transcript.turns),
            turns_after=len(view),
            kept_turn_ids=tuple(fates[Action.KEEP]),
            masked_turn_ids=tuple(fates[Action.MASK]),
            summarized_turn_ids=tuple(fates[Action.SUMMARIZE]),
            dropped_turn_ids=tuple(fates[Action.DROP]),
            summary_turn_ids=tuple(r.summary_turn_id for r in plan.summarization_requests),
            clipped_turn_ids=tuple(fates[Action.CLIP]),
            deduplicated_turn_ids=tuple(fates[Action.DEDUPLICATE]),
        )
        # The plan's own turns (ids distinct) and summary turns whose ids the plan's validation
        # found free: the view needs no second check.
        return CompactedTranscript(Transcript._trusted(tuple(view)), report)


def replaced_turn(turn: TranscriptTurn, action: TurnAction) -> TranscriptTurn:
    """``turn`` kept in place with the body a MASK, CLIP or DEDUPLICATE gives it."""
    replacement = action.replacement
    assert replacement is not None
    # A valid turn's fields with a body cutctx wrote and a fresh metadata mapping: only the
    # body needs checking (done by _trusted where it is not ASCII).
    make = TranscriptTurn._trusted if isinstance(turn, TranscriptTurn) else TranscriptTurn
    return make(
        turn.turn_id, turn.role, replaced_text(action.action, turn.content, replacement),
        replacement.token_estimate, turn.tool_call_id, turn.pinned,
        replaced_metadata(turn, action.action, replacement))


def _require_same_turns(transcript: Transcript, plan: CompactionPlan) -> None:
    if validated_for(plan.actions, transcript):  # the plan was made for this very transcript
        return
    planned = [action.turn_id for action in plan.actions]
    actual = transcript.turn_ids()
    if len(planned) == len(actual) and all(a == b for a, b in zip(planned, actual, strict=True)):
        return
    planned_set = set(planned)
    actual_set = set(actual)
    raise PlanTranscriptMismatch(
        "the plan was made for a different transcript",
        {
            "unknown_turn_ids": [i for i in planned if i not in actual_set],
            "unplanned_turn_ids": [i for i in actual if i not in planned_set],
            "reordered": planned_set == actual_set,
        },
    )


def _summary_text(request: SummarizationRequest, summaries: Mapping[str, str]) -> str:
    text = summaries.get(request.group_id)
    if text is None:
        raise SummaryMissing(
            f"no summary supplied for group {request.group_id}",
            {
                "group_id": request.group_id,
                "turn_ids": list(request.turn_ids),
                "target_tokens": request.target_tokens,
                "prompt_id": request.prompt_id,
            },
        )
    if not isinstance(text, str):
        raise ValidationError("a summary must be a str", {"group_id": request.group_id})
    return text


def _summary_turn(request: SummarizationRequest, text: str) -> TranscriptTurn:
    return TranscriptTurn(
        request.summary_turn_id,
        Role.ASSISTANT,
        text,
        request.target_tokens,
        metadata={
            KIND_KEY: "summary",
            "cutctx.summary_group": request.group_id,
            "cutctx.replaced_turn_count": str(len(request.turn_ids)),
        },
    )

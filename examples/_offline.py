"""A deterministic stand-in for a summarizing model, shared by the example scripts."""

from __future__ import annotations

from collections.abc import Sequence

from cutctx import SummarizationRequest, TranscriptTurn


def first_sentences(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """The first sentence of each folded turn, cut to about the request's target."""
    lines = [f"{turn.role.value}: {turn.content.split('. ')[0][:160]}" for turn in turns]
    return "\n".join(lines)[: max(80, request.target_tokens * 3)]


def print_report(result: object, before: int, budget: int) -> None:
    """The figures a reader wants from a ``CompactionResult``: sizes, actions, verdict, hash."""
    report = result.report  # type: ignore[attr-defined]
    after = result.measured_tokens  # type: ignore[attr-defined]
    verdict = "budget unmet" if result.budget_unmet else "fits"  # type: ignore[attr-defined]
    print(f"before:  {report.turns_before} turns, {before} prompt tokens; budget {budget}")
    print(f"policy:  {report.policy_name}")
    print(f"after:   {report.turns_after} turns, {after} prompt tokens ({verdict})")
    print(f"masked {len(report.masked_turn_ids)}, summarized {len(report.summarized_turn_ids)} "
          f"into {len(report.summary_turn_ids)} summary, dropped {len(report.dropped_turn_ids)}")
    print(f"plan hash: {report.plan_hash}")

"""Fold the oldest qualifying span of removable turns into one summary request."""

from __future__ import annotations

from collections.abc import Callable

from .._canonical import sha256_of
from .._checks import require_int, require_ratio, require_text
from .._structure import Structure, turn_id_set
from ..actions import SUMMARY_TURN_ID_PREFIX, Action, SummarizationRequest, TurnAction
from ..plan import CompactionPlan, build_plan, opening
from ..transcript import CompactionBudget, Transcript

__all__ = ["GROUP_ID_PREFIX", "SummarizingPolicy", "group_id_for", "summary_spans"]

GROUP_ID_PREFIX = "span-"


def group_id_for(turn_ids: tuple[str, ...]) -> str:
    """``span-`` + the first 16 hex digits of the hash of the NUL-joined turn ids."""
    return GROUP_ID_PREFIX + sha256_of("\x00".join(turn_ids))[:16]


def summary_spans(structure: Structure,
                  passed_over: Callable[[int], bool] | None = None) -> list[list[int]]:
    """Runs of adjacent removable turns that hold only whole exchanges, oldest first.

    A turn whose exchange reaches outside its run is filtered out and the run re-split at the gap;
    this repeats until nothing changes, so no span ever holds part of an exchange (0.1.0 stopped
    after one pass and could return such a span). Removable positions ``passed_over`` are left
    out of spans without ending them (they stay where they are, between the span's turns).
    """
    count = len(structure.exchange_of)
    skip = [False] * count if passed_over is None else [
        structure.removable(p) and passed_over(p) for p in range(count)]
    pending: list[list[int]] = []
    run: list[int] = []
    for position in range(count):
        if skip[position]:
            continue
        if structure.removable(position):
            run.append(position)
        elif run:
            pending.append(run)
            run = []
    if run:
        pending.append(run)
    spans: list[list[int]] = []
    pending.reverse()  # used as a stack: the oldest run is on top
    while pending:
        span = pending.pop()
        inside = set(span)
        kept = [p for p in span
                if all(m in inside for m in structure.exchanges[structure.exchange_of[p]])]
        if len(kept) == len(span):
            spans.append(span)
            continue
        pending.extend(reversed(_split_at_gaps(kept, skip)))
    return spans


def _split_at_gaps(positions: list[int], skip: list[bool]) -> list[list[int]]:
    """``positions`` cut wherever a position between two of them is neither in nor passed over."""
    pieces: list[list[int]] = []
    for position in positions:
        if pieces and all(skip[p] for p in range(pieces[-1][-1] + 1, position)):
            pieces[-1].append(position)
        else:
            pieces.append([position])
    return pieces


class SummarizingPolicy:
    """Asks for one summary of the oldest span with enough turns to be worth it."""

    name = "summarizing"
    version = "1.0.0"

    def __init__(self, prompt_id: str, target_ratio: float = 0.2, min_span_turns: int = 4) -> None:
        self.prompt_id = require_text(prompt_id, "prompt_id")
        self.target_ratio = require_ratio(target_ratio, "target_ratio")
        self.min_span_turns = require_int(min_span_turns, "min_span_turns", minimum=1)

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure, actions = opening(transcript, budget)
        requests: list[SummarizationRequest] = []
        if transcript.token_estimate() > budget.max_tokens:
            turns = transcript.turns
            for span in summary_spans(structure):
                if len(span) < self.min_span_turns:
                    continue
                span_tokens = sum(turns[p].token_estimate for p in span)
                target = max(1, round(span_tokens * self.target_ratio))
                if target >= span_tokens:
                    continue
                turn_ids = tuple(turns[p].turn_id for p in span)
                group_id = group_id_for(turn_ids)
                if SUMMARY_TURN_ID_PREFIX + group_id in turn_id_set(transcript):
                    continue
                for position in span:
                    actions[position] = TurnAction._trusted(
                        turns[position].turn_id, Action.SUMMARIZE, summary_group=group_id)
                requests.append(SummarizationRequest(group_id, turn_ids, target, self.prompt_id))
                break
        return build_plan(transcript, budget, actions, requests, policy_name=self.name,
                          policy_version=self.version)

    def __repr__(self) -> str:
        return (f"SummarizingPolicy({self.prompt_id!r}, target_ratio={self.target_ratio}, "
                f"min_span_turns={self.min_span_turns})")

"""Loads the 0.1.0 golden cases and rebuilds their inputs (shared by the golden tests)."""

from __future__ import annotations

import json
from typing import Any

from cutctx import (
    CharRatioEstimator,
    CompactionBudget,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SummarizingPolicy,
    Transcript,
    TranscriptTurn,
    default_chain,
)
from tests._support.data import ENGINE_GOLDENS

PROMPT_ID = "cutctx/summary@1"


def load_cases() -> list[dict[str, Any]]:
    with ENGINE_GOLDENS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def build_policy(spec: dict[str, Any]) -> CompactionPolicy:
    kind = spec["kind"]
    if kind == "drop":
        return DropOldestPolicy()
    if kind == "mask":
        ratio = spec["ratio"]
        estimator = None if ratio is None else CharRatioEstimator(ratio)
        return ObservationMaskingPolicy(spec["keep_recent_results"], spec["placeholder"],
                                        estimator=estimator)
    if kind == "summ":
        return SummarizingPolicy(PROMPT_ID, spec["target_ratio"], spec["min_span_turns"])
    if kind == "default":
        return default_chain(prompt_id=PROMPT_ID, keep_recent_results=spec["keep_recent_results"],
                             target_ratio=spec["target_ratio"],
                             min_span_turns=spec["min_span_turns"])
    if kind == "chain":
        return PolicyChain([build_policy(member) for member in spec["members"]])
    raise AssertionError(f"unknown policy kind {kind}")


def build_transcript(case_input: dict[str, Any]) -> Transcript:
    return Transcript(tuple(
        TranscriptTurn(t["turn_id"], Role(t["role"]), t["content"], t["token_estimate"],
                       t["tool_call_id"], t["pinned"], t["metadata"])
        for t in case_input["turns"]
    ))


def build_budget(case_input: dict[str, Any]) -> CompactionBudget:
    return CompactionBudget(case_input["max_tokens"], case_input["protected_recent_turns"])


def view_rows(transcript: Transcript) -> list[list[Any]]:
    return [[t.turn_id, t.role.value, t.content, t.token_estimate, t.tool_call_id, t.pinned,
             dict(t.metadata)] for t in transcript.turns]

"""Every 0.1.0 golden case reproduces byte for byte: plan JSON, hash, report and view."""

from __future__ import annotations

from typing import Any

import pytest

from cutctx import CompactionError, CompactionExecutor
from tests.engine.engine_goldens import (
    build_budget,
    build_policy,
    build_transcript,
    load_cases,
    view_rows,
)

CASES = load_cases()


def test_all_goldens_are_present() -> None:
    assert len(CASES) == 119


@pytest.mark.parametrize("case", CASES, ids=[str(c["expected"]["case"]) for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    expected = case["expected"]
    transcript = build_transcript(case["input"])
    policy = build_policy(case["input"]["policy"])
    budget = build_budget(case["input"])
    if "error" in expected:
        with pytest.raises(CompactionError) as caught:
            policy.decide(transcript, budget)
        assert type(caught.value).__name__ == expected["error"]
        assert caught.value.code == expected["code"]
        return
    plan = policy.decide(transcript, budget)
    assert plan.policy_name == expected["policy_name"]
    assert plan.canonical_json() == expected["plan"]
    assert plan.plan_hash() == expected["hash"]
    summaries = {r.group_id: f"summary of {len(r.turn_ids)} turns"
                 for r in plan.summarization_requests}
    view = CompactionExecutor().apply(transcript, plan, summaries)
    report = view.report.to_dict()
    # 0.2.0 reports two more fates; a 0.1.0 plan has none of them, and the rest is 0.1.0's.
    assert report.pop("clipped_turn_ids") == []
    assert report.pop("deduplicated_turn_ids") == []
    assert report == expected["report"]
    assert view_rows(view.transcript) == expected["view"]

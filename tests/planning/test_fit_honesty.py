"""A request is over its budget only when nothing could fit it, and says so only then (issue 32).

* An over-budget plan is never accepted while a further step exists: protecting fewer recent
  turns, sparing no recent result, clipping (point 2).
* Fit is judged on what is sent: ``budget_unmet`` is the measured request against the budget,
  not the plan's estimate (point 8).
* A retry of the same history sends what the first try sent, and what a fresh worker sends
  (point 14).
* A session's view may be stickier than stateless ``compact``'s, never less fitting (point 17).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutctx import CharRatioEstimator
from cutctx_adapters import CompactionResult
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning._format import HistoryFormat
from cutctx_adapters.session import CompactionSession, Prepared
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run, send

CHARS = CharRatioEstimator()
FORMATS: dict[str, tuple[HistoryFormat, Callable[[int, int], AgentRun], Any]] = {
    "chat": (chat.FORMAT, chat_run, chat),
    "responses": (responses.FORMAT, responses_run, responses),
    "anthropic": (anthropic_messages.FORMAT, anthropic_run, anthropic_messages),
}


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Anthropic's count calibrates tiktoken: the seeded cache, never the network."""


def _compact(module: Any, run: AgentRun, items: list[dict[str, Any]], budget: int,
             **options: Any) -> CompactionResult:
    side = {} if run.side is None else (
        {"instructions": run.side} if module is responses else {"system": run.side})
    return module.compact(items, model="gpt-4o", budget=budget, estimator=CHARS,  # type: ignore[no-any-return]
                          **side, **options)


def _body(prepared: Prepared) -> str:
    return json.dumps(prepared.request, sort_keys=True)


def test_a_big_system_prompt_and_parallel_results_fit_by_sparing_fewer_results() -> None:
    """Point 2's example: the newest turn is a round of parallel calls; the two results
    ``keep_recent_results`` spares do not fit beside the system prompt, masking them does."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Follow the house rules. " * 450},
        {"role": "user", "content": "Audit the three services."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}", "type": "function",
             "function": {"name": "read_logs", "arguments": json.dumps({"service": n})}}
            for n in range(3)]},
        *({"role": "tool", "tool_call_id": f"call_{n}",
           "content": f"service {n}: " + "request served in 12 ms\n" * 120} for n in range(3)),
    ]
    budget = 3_800
    unrelaxed = chat.compact(history, model="gpt-4o", budget=budget, estimator=CHARS,
                             keep_recent=1, strict=True)
    assert unrelaxed.budget_unmet  # what was sent before: the first plan, over the budget
    result = chat.compact(history, model="gpt-4o", budget=budget, estimator=CHARS,
                          keep_recent=1)
    assert not result.budget_unmet and result.measured_tokens is not None
    assert result.measured_tokens <= budget and result.results_relaxed == 2


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rounds=st.integers(4, 14),
       fraction=st.sampled_from([0.08, 0.15, 0.3, 0.5]), spared=st.integers(0, 4))
def test_over_budget_only_when_even_the_most_relaxed_plan_is(
        name: str, seed: int, rounds: int, fraction: float, spared: int) -> None:
    _, build, module = FORMATS[name]
    run = build(seed, rounds)
    total = _compact(module, run, run.items, 10**9).measured_tokens or 0
    budget = max(1, int(total * fraction))
    try:
        result = _compact(module, run, run.items, budget, keep_recent_results=spared)
    except Exception as refused:  # only a typed refusal: the system prompt alone is too big
        assert type(refused).__name__ == "BudgetUnsatisfiable"
        return
    assert result.measured_tokens is not None and result.prompt_budget is not None
    assert result.budget_unmet == (result.measured_tokens > result.prompt_budget)
    if result.budget_unmet:
        relaxed = _compact(module, run, run.items, budget, keep_recent=1, keep_recent_results=0)
        assert relaxed.budget_unmet


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rounds=st.integers(15, 30),
       window=st.sampled_from([2_000, 3_000, 5_000, 8_000]), spared=st.integers(2, 4))
def test_sessions_retry_identically_and_are_never_less_fitting_than_compact(
        name: str, seed: int, rounds: int, window: int, spared: int) -> None:
    fmt, build, module = FORMATS[name]
    run = build(seed, rounds)

    def session() -> CompactionSession:
        return CompactionSession(fmt, model="gpt-4o", window=window, reserve=0,
                                 estimator=CHARS, keep_recent_results=spared)

    live = session()
    for items in run.calls():
        try:
            first = send(live, fmt, run, items)
        except Exception as refused:
            assert type(refused).__name__ == "BudgetUnsatisfiable"
            continue
        again = send(live, fmt, run, items)
        assert _body(again) == _body(first), "a retry sends what the first try sent"
        if first.report.budget_unmet:
            stateless = _compact(module, run, items, first.report.prompt_budget or window)
            assert stateless.budget_unmet, "compact fits where the session did not"
    fresh = send(session(), fmt, run, run.calls()[-1])
    assert _body(fresh) == _body(send(live, fmt, run, run.calls()[-1]))

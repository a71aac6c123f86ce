"""One huge tool result never costs the rest of the conversation; compactions land on target
(issue 31).

An agent loop (``tests/_support/agent_loop.py``: results of 2–20k characters, repeats, and at
turn 30 a result of about a million characters) goes through one session per format and window.
The huge result is sent clipped to its share, then masked; the call it arrives with keeps as
many messages as stateless ``compact`` at the target; every compaction lands within 10% below
its target. The same loop through a real ``OpenAI`` client wrapped by ``CompactingOpenAI`` (HTTP
mocked with respx) puts the same on the wire.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from cutctx import (
    Action,
    CompactionBudget,
    CompactionExecutor,
    FillingPolicy,
    Role,
    ToolResultMaskingPolicy,
    Transcript,
    TranscriptTurn,
)
from cutctx_adapters import CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import CompactingOpenAI, chat, responses
from tests._support.agent_loop import agent_loop
from tests._support.http import mocked_http

HUGE_AT = 30
MODELS = {"chat": "gpt-4o", "responses": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
MODULES: dict[str, Any] = {"chat": chat, "responses": responses,
                           "anthropic": anthropic_messages}
LOOP = agent_loop(turns=36, huge_at=HUGE_AT)
HUGE_SHA = hashlib.sha256(LOOP.steps[HUGE_AT].output.encode()).hexdigest()


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


def _request(fmt: str, side: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    key = "input" if fmt == "responses" else "messages"
    request: dict[str, Any] = {"model": MODELS[fmt], key: items}
    if side is not None:
        request["instructions" if fmt == "responses" else "system"] = side
    return request


def _items(fmt: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    return list(request["input" if fmt == "responses" else "messages"])


def _stateless(fmt: str, side: Any, items: list[dict[str, Any]], budget: int) -> int:
    module = MODULES[fmt]
    if fmt == "responses":
        return len(module.compact(items, instructions=side, model=MODELS[fmt],
                                  budget=budget).input)
    extra = {} if side is None else {"system": side}
    return len(module.compact(items, model=MODELS[fmt], budget=budget, **extra).messages)


@pytest.mark.parametrize(("fmt", "window"), [
    ("chat", 16_000), ("responses", 16_000), ("anthropic", 16_000),
    ("chat", 64_000), ("anthropic", 128_000)])
def test_a_huge_result_is_clipped_then_masked_and_costs_nothing_else(fmt: str,
                                                                     window: int) -> None:
    session = CompactionSession(MODULES[fmt].FORMAT, model=MODELS[fmt], window=window)
    clipped_at = masked_at = None
    for number, (side, items) in enumerate(LOOP.requests(fmt)):
        prepared = session.prepare(_request(fmt, side, items))
        report = prepared.report
        text = json.dumps(prepared.request)
        assert not report.budget_unmet
        if report.decision in ("compacted", "recompacted"):
            target = report.goal_tokens or report.target_tokens or 0  # where it aimed
            assert 0.9 * target <= (report.tokens_sent or 0) <= target, (number, report.reason)
            assert target <= (report.target_tokens or 0)
        if number == HUGE_AT + 1:  # the call the huge result arrives with
            assert "cutctx clipped this tool result" in text and HUGE_SHA in text
            clipped_at = number
            kept = len(_items(fmt, prepared.request))
            # issue 38: keeping the cached prefix keeps older stubs for a few later exchanges
            stateless = _stateless(fmt, side, items, report.goal_tokens or report.target_tokens
                                   or 0)
            assert kept >= 0.9 * stateless
            assert report.protection_relaxed == 0
        elif clipped_at is not None and "(original: " in text and f"sha256:{HUGE_SHA})" in text:
            masked_at = masked_at or number  # its clip gave way to a stub naming the original
    assert clipped_at is not None
    if window == 16_000:
        assert masked_at is not None


def test_the_wrapped_client_sends_the_loop_within_the_window() -> None:
    """The same loop through ``CompactingOpenAI`` over a real client: what reaches the wire."""
    reply = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
             "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": "ok"}}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    with mocked_http(base_url="https://api.openai.test/v1") as router:
        route = router.post("/chat/completions").respond(json=reply)
        client = CompactingOpenAI(OpenAI(api_key="k", base_url="https://api.openai.test/v1",
                                         max_retries=0), window=16_000)
        for _, items in LOOP.requests("chat"):
            messages: list[Any] = items  # plain dicts, as an agent keeps them
            client.chat.completions.create(model="gpt-4o", messages=messages)
        wire = [json.loads(call.request.content)["messages"] for call in route.calls]
    budget = 16_000 - 4_096
    arrived = wire[HUGE_AT + 1]
    assert chat.count_tokens(arrived, model="gpt-4o") <= budget
    assert len(arrived) >= 40  # the exchanges before it are still there
    assert "cutctx clipped this tool result" in arrived[-1]["content"]
    assert all(chat.count_tokens(messages, model="gpt-4o") <= budget for messages in wire)


def test_filling_gives_back_the_newest_masked_result_clipped_to_the_room_left() -> None:
    def result(number: int, size: int) -> TranscriptTurn:
        text = "\n".join(f"line {n} of output {number}" for n in range(size))
        return TranscriptTurn(f"r{number}", Role.TOOL, text, len(text) // 4)

    transcript = Transcript((TranscriptTurn("s", Role.SYSTEM, "system", 2),
                             result(0, 200), result(1, 200), result(2, 200),
                             TranscriptTurn("u", Role.USER, "go on", 2)))
    budget = CompactionBudget(1_800, 1)
    masking = ToolResultMaskingPolicy(0)
    plain = masking.decide(transcript, budget)
    filled = FillingPolicy(masking, estimator=masking.estimator).decide(transcript, budget)
    assert plain.tokens_after_estimate < 0.8 * budget.max_tokens
    assert 0.95 * budget.max_tokens <= filled.tokens_after_estimate <= budget.max_tokens
    actions = {action.turn_id: action.action for action in filled.actions}
    assert actions["r2"] is Action.KEEP  # the newest first
    assert Action.CLIP in actions.values()
    view = CompactionExecutor().apply(transcript, filled).transcript
    assert sum(turn.token_estimate for turn in view.turns) == filled.tokens_after_estimate


def test_the_agent_loop_benchmark_runs() -> None:
    """``benchmarks/agent_loop.py`` stays runnable: a short loop, its figures in range."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from agent_loop import run

    row = run("chat", 8_000, turns=10, huge_at=5)
    assert row.calls == 11 and 0 < row.shared < row.calls
    assert row.compactions and row.on_target == row.compactions
    assert row.kept_after_huge is not None and row.stateless_after_huge is not None
    assert row.kept_after_huge >= row.stateless_after_huge
    assert 0 < row.fewest <= row.compactions  # a lower bound on what any session could do


def test_max_result_tokens_replaces_the_share_of_the_budget() -> None:
    """``max_result_tokens`` is a result's cap in place of ``max_result_share`` (as the settings
    table says), not the smaller of the two: a result under it stays whole even when it is
    over a quarter of the budget, and an older one is masked instead."""
    def output(lines: int) -> str:
        return "\n".join(f"{n:5d}  value render module token cache" for n in range(lines))

    def exchange(call_id: str, text: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": None, "tool_calls": [{
                    "id": call_id, "type": "function",
                    "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": call_id, "content": text}]

    newest = output(600)
    history = [{"role": "user", "content": "Find the bug."},
               *exchange("c1", output(400)), *exchange("c2", newest)]
    whole = chat.count_tokens([history[0], *history[3:]], model="gpt-4o")
    budget = whole + 600
    empty = chat.count_tokens([history[0], *exchange("c2", "")], model="gpt-4o")
    assert whole - empty > budget // 4
    shared = chat.compact(history, model="gpt-4o", budget=budget)
    assert "cutctx clipped this tool result" in str(shared.messages[-1]["content"])
    capped = chat.compact(history, model="gpt-4o", budget=budget, max_result_tokens=budget)
    assert not capped.report.budget_unmet
    assert capped.messages[-1]["content"] == newest

"""A 120-call agent loop on ``CompactingGenAI``: the mocked model answers with two parallel
function calls a turn (the first signed), some responses carry images, the user follows up every
tenth turn; sync, async and streaming. Every request is valid by the rules, within the window,
and reuses the previous request as its prefix when its report says ``appended``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import types

from cutctx_adapters import CallReport
from cutctx_adapters.gemini import CompactingGenAI, contents
from tests._support.http import mocked_http
from tests.gemini.api import BASE_URL, MODEL, reply, sdk, sse
from tests.gemini.histories import MARKER, SIGNATURE, png
from tests.gemini.rules import check_request, current_turn

CALLS = 120
FOLLOW_UP = 10
WINDOW, RESERVE = 12_000, 1_000
BUDGET = WINDOW - RESERVE


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


def model_parts(turn: int) -> list[dict[str, Any]]:
    """The model's reply on ``turn``: two parallel calls, or a remark every tenth turn."""
    if turn % FOLLOW_UP == FOLLOW_UP - 1:
        return [{"text": f"Checked step {turn}.", "thoughtSignature": SIGNATURE}]
    return [{"functionCall": {"id": f"t{turn}a", "name": "read_file", "args": {"n": turn}},
             "thoughtSignature": SIGNATURE},
            {"functionCall": {"id": f"t{turn}b", "name": "screenshot", "args": {"n": turn}}}]


def responses(parts: list[Any]) -> dict[str, Any]:
    """The agent's answer to the calls in ``parts``: each call's output, a screenshot for
    every other one."""
    out = []
    for part in parts:
        call = part.function_call
        response: dict[str, Any] = {"id": call.id, "name": call.name, "response": {
            "output": f"{call.name} {call.args['n']} {MARKER} " + "lorem ipsum dolor " * 40}}
        if call.name == "screenshot" and call.args["n"] % 2:
            response["parts"] = [{"inline_data": {"mime_type": "image/png",
                                                  "data": png(320, 200)}}]
        out.append({"function_response": response})
    return {"role": "user", "parts": out}


class Model:
    """The mocked API: which turn it is comes from how many calls it has answered."""

    def __init__(self) -> None:
        self.turn = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        parts = model_parts(self.turn)
        self.turn += 1
        if "streamGenerateContent" not in request.url.path:
            return httpx.Response(200, json=reply(parts))
        chunks = [reply([part]) for part in parts]  # one part a chunk, as streams go
        for chunk in chunks[:-1]:
            chunk["candidates"][0].pop("finishReason")
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=sse(chunks))


def next_input(model_contents: list[Any], turn: int) -> dict[str, Any]:
    calls = [part for content in model_contents for part in content.parts or []
             if part.function_call is not None]
    if calls:
        return responses(calls)
    return {"role": "user", "parts": [{"text": f"Go on (after {turn}). {MARKER}"}]}


def check(history: list[Any], body: dict[str, Any], report: CallReport,
          previous: list[Any] | None) -> None:
    plain = contents.to_transcript(history).render(
        contents.to_transcript(history).transcript)
    assert isinstance(plain, list)
    sent = body["contents"]
    tail = current_turn(plain)
    fits = contents.count_tokens([plain[0], *tail], model=MODEL) <= BUDGET
    check_request(sent, json.loads(json.dumps(plain)), current_kept=fits)
    assert contents.count_tokens(sent, model=MODEL) <= BUDGET
    if report.decision == "appended":
        assert previous is not None and sent[:len(previous)] == previous
    assert MARKER not in repr(report)


def run(mode: str) -> list[CallReport]:
    """The loop, sending through ``mode`` (``sync``, ``async`` or ``stream``)."""
    reports: list[CallReport] = []
    client = CompactingGenAI(sdk(), window=WINDOW, reserve=RESERVE, on_call=reports.append)
    model = Model()
    with mocked_http(base_url=BASE_URL) as api:
        route = api.post(path__regex=r"/v1beta/models/.*").mock(side_effect=model)
        history: list[Any] = [{"role": "user", "parts": [{"text": f"Fix it. {MARKER}"}]}]
        previous: list[Any] | None = None
        calls = 0
        while calls < CALLS:
            if mode == "sync":
                got = [client.models.generate_content(model=MODEL, contents=history)]
            elif mode == "async":
                got = [asyncio.run(client.aio.models.generate_content(model=MODEL,
                                                                       contents=history))]
            else:
                got = list(client.models.generate_content_stream(model=MODEL,
                                                                 contents=history))
            body = json.loads(route.calls.last.request.content)
            check(history, body, reports[-1], previous)
            previous = body["contents"]
            model_contents: list[Any] = [chunk.candidates[0].content for chunk in got
                                         if chunk.candidates]
            history.extend(model_contents)  # as the SDK's chats record a reply
            calls += len([part for content in model_contents for part in content.parts or []
                          if part.function_call is not None])
            history.append(next_input(model_contents, model.turn))
    return reports


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_a_long_agent_loop_stays_valid_and_within_the_window(mode: str) -> None:
    reports = run(mode)
    decisions = {report.decision for report in reports}
    assert "compacted" in decisions or "recompacted" in decisions
    assert "appended" in decisions
    assert all(not report.budget_unmet for report in reports)


def test_the_loop_sends_the_sdks_own_types() -> None:
    assert isinstance(types.Content.model_validate(responses([types.Part(
        function_call=types.FunctionCall(id="x", name="read_file", args={"n": 1}))])),
        types.Content)


@pytest.mark.parametrize("window", [16_000, 64_000])
def test_one_huge_result_in_a_single_turn_loop(window: int) -> None:
    """The loop of ``benchmarks/agent_loop.py`` (one task, one call a turn, a ~1M-character
    result at turn 30) through a Gemini session: the huge result is clipped as it arrives,
    every request is valid and within the budget, earlier compactions' stubs stay as they
    were while the rest of the current turn is pinned."""
    import hashlib

    from cutctx_adapters import CompactionSession
    from tests._support.agent_loop import agent_loop

    loop = agent_loop(turns=36, huge_at=30)
    huge = hashlib.sha256(loop.steps[30].output.encode()).hexdigest()
    session = CompactionSession(contents.FORMAT, model=MODEL, window=window)
    for number, (side, items) in enumerate(loop.requests("gemini")):
        prepared = session.prepare(model=MODEL, contents=items,
                                   config={"system_instruction": side})
        sent = prepared.request["contents"]
        assert not prepared.report.budget_unmet
        check_request(sent, items, current_kept=False)
        if number == 31:
            assert huge in json.dumps(sent) and "cutctx clipped this tool result" in json.dumps(
                sent)

"""``CompactingAnthropic`` where Messages differs from Chat Completions: no system at all, a real
agent history with thinking, ``count_tokens``, the raw and streaming response views, and the
beta namespace. What every wrapped client does is in ``tests/contracts/test_wrapped_clients.py``.
Real ``anthropic`` clients, HTTP mocked with respx's httpcore2 mocker (``pytest-httpx2``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
import respx
from anthropic.types import Message, MessageTokensCount
from anthropic.types.beta import BetaMessage

from cutctx_adapters.anthropic import CompactingAnthropic
from tests._support.http import mocked_api
from tests.contracts.providers import ANTHROPIC, bodies, sent

ROOT = Path(__file__).resolve().parents[2]
CODING_AGENT = ROOT / "examples" / "histories" / "coding_agent.anthropic.json"
BASE_URL = ANTHROPIC.base_url
MODEL = ANTHROPIC.model
SYSTEM = ANTHROPIC.system
MAX_TOKENS = ANTHROPIC.max_tokens
WINDOW = 10_000
TRIGGER = 3_000
TARGET = 2_000

sdk, async_sdk = ANTHROPIC.sdk, ANTHROPIC.async_sdk
call, agent_history, message = ANTHROPIC.call, ANTHROPIC.agent_history, ANTHROPIC.reply
assert_sendable = ANTHROPIC.assert_sendable


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


api = mocked_api(BASE_URL)


@pytest.fixture
def route(api: respx.Router) -> respx.Route:
    return api.post("/v1/messages").mock(side_effect=ANTHROPIC.answer)


@pytest.fixture
def count_route(api: respx.Router) -> respx.Route:
    return api.post("/v1/messages/count_tokens").respond(json={"input_tokens": 4_321})


def wrap(client: Any, reports: list[Any] | None = None,
         **settings: Any) -> CompactingAnthropic[Any]:
    settings = {"window": WINDOW, "trigger": TRIGGER, "target": TARGET, **settings}
    on_call = reports.append if reports is not None else None
    return CompactingAnthropic(client, on_call=on_call, **settings)


def tokens(history: list[Any], tools: Any = None, system: Any = SYSTEM) -> int:
    return ANTHROPIC.tokens({"messages": history, "system": system, "tools": tools})


class Verdict(pydantic.BaseModel):
    answer: str


SMALL = agent_history(2)
BIG = agent_history(12)


def test_without_a_system_none_is_sent(route: respx.Route) -> None:
    client = wrap(sdk())
    client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=SMALL)
    assert "system" not in sent(route) and sent(route)["messages"] == SMALL
    client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=BIG)
    assert "system" not in sent(route)
    assert_sendable(sent(route))


def test_a_real_agent_history_with_thinking_and_tools(route: respx.Route) -> None:
    request = json.loads(CODING_AGENT.read_text())
    request = request.get("request", request)
    reports: list[Any] = []
    client = wrap(sdk(), reports, window=24_000, trigger=0.9, target=0.6)
    client.messages.create(**request)
    body = sent(route)
    assert reports[-1].decision == "compacted"
    assert reports[-1].prompt_budget == 24_000 - request["max_tokens"]
    assert body["tools"] == request["tools"] and body["thinking"] == request["thinking"]
    assert body["system"] == request["system"]
    assert_sendable(body, request["messages"])
    assert "masked by cutctx" in json.dumps(body["messages"])
    assert body["messages"][-1] == request["messages"][-1]
    size = tokens(body["messages"], request["tools"], request["system"])
    assert size <= int((24_000 - request["max_tokens"]) * 0.9)  # within the trigger


def test_count_tokens_passes_through_untouched(route: respx.Route,
                                               count_route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    tools = [{"name": "read_file", "description": "Reads a file.",
              "input_schema": {"type": "object", "properties": {}}}]
    count = client.messages.count_tokens(model=MODEL, system=SYSTEM, messages=BIG, tools=tools)
    assert type(count) is MessageTokensCount and count.input_tokens == 4_321
    assert sent(count_route) == {"model": MODEL, "system": SYSTEM, "messages": BIG,
                                 "tools": tools}
    assert reports == [] and client.last_report is None and route.call_count == 0


def test_raw_and_streaming_response_views_compact_too(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    raw = client.messages.with_raw_response.create(**call(BIG))
    assert raw.http_request.url.path == "/v1/messages"
    assert type(raw.parse()) is Message
    assert reports[-1].decision == "compacted"
    assert len(sent(route)["messages"]) < len(BIG)
    with client.messages.with_streaming_response.create(**call(agent_history(13))) as response:
        assert type(response.parse()) is Message
    assert reports[-1].decision == "compacted"
    assert_sendable(sent(route), agent_history(13))
    assert route.call_count == 2


def test_beta_messages_compact_like_messages(route: respx.Route,
                                             count_route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    response = client.beta.messages.create(**call(BIG), betas=["context-management-2025-06-27"])
    assert type(response) is BetaMessage
    assert route.calls.last.request.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert_sendable(sent(route), BIG)
    assert len(sent(route)["messages"]) < len(BIG) and reports[-1].decision == "compacted"
    with client.beta.messages.stream(**call(agent_history(13))) as stream:
        assert "".join(stream.text_stream) == "Hello"
    assert_sendable(sent(route), agent_history(13))
    assert reports[-1].decision == "compacted"
    # one session behind both: the beta call's view is reused by a plain call that appends
    client.messages.create(**call([*agent_history(13), {"role": "assistant", "content": "On it."},
                                   {"role": "user", "content": "Thanks."}]))
    assert reports[-1].decision == "appended" and reports[-1].reused_items > 0
    count = client.beta.messages.count_tokens(model=MODEL, messages=BIG)
    assert count.input_tokens == 4_321 and sent(count_route)["messages"] == BIG
    assert len(reports) == 3 and client.beta.models is client.wrapped.beta.models


def test_a_beta_call_continuing_a_server_thread_is_sent_untouched(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    thread = {"type": "continue", "previous_message_id": "msg_0"}
    client.beta.messages.create(**call(BIG), thread=thread)
    assert sent(route)["messages"] == BIG and sent(route)["thread"] == thread
    [report] = reports
    assert report.decision == "not_possible" and "thread" in report.reason
    client.beta.messages.create(**call(BIG), thread={"type": "create"})
    assert reports[-1].decision == "compacted"
    assert len(sent(route)["messages"]) < len(BIG)


@pytest.mark.anyio
async def test_async_beta_messages_compact(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(async_sdk(), reports)
    response = await client.beta.messages.create(**call(BIG))
    assert type(response) is BetaMessage
    async with client.beta.messages.stream(**call(agent_history(13))) as events:
        text = "".join([chunk async for chunk in events.text_stream])
    assert text == "Hello"
    assert [r.decision for r in reports] == ["compacted", "compacted"]
    assert_sendable(sent(route), agent_history(13))
    route.side_effect = None
    route.return_value = httpx.Response(200, json=message('{"answer": "7"}'))
    parsed = await client.beta.messages.parse(**call(agent_history(14)), output_format=Verdict)
    assert parsed.parsed_output == Verdict(answer="7")
    assert reports[-1].decision == "compacted"
    assert_sendable(sent(route), agent_history(14))


@pytest.mark.anyio
async def test_async_raw_and_streaming_views_compact_and_count_tokens_passes_through(
        route: respx.Route, count_route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(async_sdk(), reports)

    raw = await client.messages.with_raw_response.create(**call(agent_history(15)))
    assert type(await raw.parse()) is Message
    assert reports[-1].decision == "compacted"

    # A plain def returning an async context manager, around a coroutine function.
    async with client.messages.with_streaming_response.create(
            **call(agent_history(16))) as streamed:
        assert type(await streamed.parse()) is Message
    assert reports[-1].decision == "compacted"

    count = await client.messages.count_tokens(model=MODEL, messages=BIG)
    assert count.input_tokens == 4_321
    assert sent(count_route) == {"model": MODEL, "messages": BIG}

    assert len(reports) == 2  # counting makes no report
    for body, rounds in zip(bodies(route), (15, 16), strict=True):
        assert_sendable(body, agent_history(rounds))
        assert tokens(body["messages"]) < TRIGGER

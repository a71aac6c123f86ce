"""``CompactingAnthropic`` end to end: real ``anthropic`` clients, HTTP mocked with respx's
httpcore2 mocker (``pytest-httpx2``), assertions on the JSON body the SDK actually sent."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import pydantic
import pytest
import pytest_httpx2  # noqa: F401  (registers the httpcore2 mocker respx uses below)
import respx
from anthropic import Anthropic, AsyncAnthropic, AsyncStream, Stream
from anthropic.types import Message, MessageTokensCount, ParsedMessage
from anthropic.types.beta import BetaMessage

import cutctx
from cutctx import BudgetUnsatisfiable, CompactionReport
from cutctx_adapters import SummarizationFailed
from cutctx_adapters.anthropic import AnthropicSummarizer, CompactingAnthropic, messages

ROOT = Path(__file__).resolve().parents[2]
CODING_AGENT = ROOT / "examples" / "histories" / "coding_agent.anthropic.json"
BASE_URL = "https://api.anthropic.test"
MODEL = "claude-sonnet-4-5"
SUMMARY_MODEL = "claude-haiku-4-5"
SUMMARY_TEXT = "The agent listed files and read logs; next it should patch parser.py."
MARKER = "MARKER-a71c"  # in the history; must never reach an error or a report
SYSTEM = "You are a coding agent."
MAX_TOKENS = 1_024


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- responses -----------------------------------------------------------------------------


def message(text: str = "ok", model: str = MODEL) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


SSE_BODY = "".join([
    _event("message_start", message={**message(), "content": [], "stop_reason": None}),
    _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
    _event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hel"}),
    _event("content_block_delta", index=0, delta={"type": "text_delta", "text": "lo"}),
    _event("content_block_stop", index=0),
    _event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
           usage={"output_tokens": 2}),
    _event("message_stop"),
]).encode()
SSE_EVENTS = ["message_start", "content_block_start", "content_block_delta",
              "content_block_delta", "content_block_stop", "message_delta", "message_stop"]


def answer(request: httpx.Request) -> httpx.Response:
    """The mocked API: summaries for the summary model, SSE for streams, JSON otherwise."""
    body = json.loads(request.content)
    if body["model"] == SUMMARY_MODEL:
        return httpx.Response(200, json=message(SUMMARY_TEXT, SUMMARY_MODEL))
    if body.get("stream"):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=SSE_BODY)
    return httpx.Response(200, json=message())


@pytest.fixture
def api() -> Iterator[respx.Router]:
    """respx over httpcore2, the transport under the SDK's httpx2 (plain respx misses it)."""
    with respx.mock(using="httpcore2", base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture
def route(api: respx.Router) -> respx.Route:
    return api.post("/v1/messages").mock(side_effect=answer)


@pytest.fixture
def count_route(api: respx.Router) -> respx.Route:
    return api.post("/v1/messages/count_tokens").respond(json={"input_tokens": 4_321})


def bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls]


def sent(route: respx.Route) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls.last.request.content)
    return body


def main_bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [body for body in bodies(route) if body["model"] != SUMMARY_MODEL]


# --- clients and histories -----------------------------------------------------------------


def sdk() -> Anthropic:
    return Anthropic(api_key="test", base_url=BASE_URL, max_retries=0)


def async_sdk() -> AsyncAnthropic:
    return AsyncAnthropic(api_key="test", base_url=BASE_URL, max_retries=0)


WINDOW = 10_000
TRIGGER = 3_000
TARGET = 2_000
BUDGET = WINDOW - MAX_TOKENS


def wrap(client: Any, reports: list[Any] | None = None,
         **settings: Any) -> CompactingAnthropic[Any]:
    settings = {"window": WINDOW, "trigger": TRIGGER, "target": TARGET, **settings}
    on_call = reports.append if reports is not None else None
    return CompactingAnthropic(client, on_call=on_call, **settings)


def call(messages_: Any, **fields: Any) -> dict[str, Any]:
    """The keyword arguments of a ``messages.create`` call."""
    return {"model": MODEL, "max_tokens": MAX_TOKENS, "system": SYSTEM, "messages": messages_,
            **fields}


def agent_history(rounds: int, size: int = 60) -> list[dict[str, Any]]:
    """An agent run: task, then rounds of two parallel tool calls and a message with both
    results; the last one also carries the user's next instruction."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": f"Fix the failing test. {MARKER}"}]
    for i in range(rounds):
        history.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}."},
            *({"type": "tool_use", "id": f"toolu_{i}_{k}", "name": name,
               "input": {"arg": f"{i}-{k}"}}
              for k, name in enumerate(("read_file", "run_tests")))]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}_{k}",
             "content": f"result {i}.{k} {MARKER} " + "lorem ipsum " * size}
            for k in range(2)]})
    history[-1]["content"].append({"type": "text", "text": "Continue."})
    return history


def one_round(i: int, text: str = "More.") -> list[dict[str, Any]]:
    """One more exchange to append to a history ending with a user message."""
    return [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_x{i}", "name": "read_file", "input": {"n": i}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_x{i}",
             "content": f"more {i} " + "lorem ipsum " * 60},
            {"type": "text", "text": text}]},
    ]


def chat_history(rounds: int, size: int = 120) -> list[dict[str, Any]]:
    """Plain user/assistant talk: masking cannot help, so a summarizer gets asked."""
    history: list[dict[str, Any]] = []
    for i in range(rounds):
        history.append({"role": "user", "content": f"question {i} {MARKER} " + "why " * size})
        history.append({"role": "assistant", "content": f"answer {i} " + "because " * size})
    history.append({"role": "user", "content": "And finally?"})
    return history


def tokens(history: list[Any], tools: Any = None, system: Any = SYSTEM) -> int:
    return messages.count_tokens(history, system=system, model=MODEL, tools=tools)


def assert_sendable(body: dict[str, Any], original: list[Any] | None = None) -> None:
    """What the Messages API asks of the request the SDK sent."""
    history = body["messages"]
    messages.validate(history, system=body.get("system"), tools=body.get("tools"),
                      thinking=body.get("thinking"), original=original)
    assert history and history[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(history))


SMALL = agent_history(2)
BIG = agent_history(12)


def test_histories_sit_where_the_tests_need_them() -> None:
    assert tokens(SMALL) < TRIGGER < tokens(BIG) < BUDGET


# --- the wrapper ---------------------------------------------------------------------------


def test_below_the_trigger_the_request_is_sent_exactly_as_given(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    response = client.messages.create(**call(SMALL, system=system, stop_sequences=["STOP"],
                                             metadata={"user_id": "u-1"}))
    assert type(response) is Message
    assert response.content[0].type == "text" and response.content[0].text == "ok"
    body = sent(route)
    assert body["messages"] == SMALL and body["system"] == system
    assert body["model"] == MODEL and body["max_tokens"] == MAX_TOKENS
    assert body["stop_sequences"] == ["STOP"] and body["metadata"] == {"user_id": "u-1"}
    [report] = reports
    assert report.decision == "unchanged" and report.compaction is None
    assert report.tokens_in == report.tokens_sent == tokens(SMALL, system=system)
    assert client.last_report is report


def test_without_a_system_none_is_sent(route: respx.Route) -> None:
    client = wrap(sdk())
    client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=SMALL)
    assert "system" not in sent(route) and sent(route)["messages"] == SMALL
    client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=BIG)
    assert "system" not in sent(route)
    assert_sendable(sent(route))


def test_over_the_trigger_the_history_is_compacted_valid_and_reported(
        route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    response = client.messages.create(**call(BIG))
    assert type(response) is Message
    body = sent(route)
    assert_sendable(body, BIG)
    history = body["messages"]
    assert body["system"] == SYSTEM and body["max_tokens"] == MAX_TOKENS
    assert tokens(history) < tokens(BIG)
    assert history[-1] == BIG[-1]
    assert "masked by cutctx" in json.dumps(history)
    [report] = reports
    assert report.decision == "compacted"
    assert isinstance(report.compaction, CompactionReport)
    assert not report.compaction.budget_unmet
    assert report.format == "anthropic-messages" and report.model == MODEL
    assert report.prompt_budget == BUDGET
    assert (report.trigger_tokens, report.target_tokens) == (TRIGGER, TARGET)
    assert report.tokens_in == tokens(BIG)
    assert report.tokens_sent is not None and report.tokens_sent <= TRIGGER
    assert tokens(history) <= TRIGGER
    assert not report.summarization_fallback
    assert MARKER not in repr(report)


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


def test_compaction_is_sticky_until_the_trigger_is_crossed_again(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    history = agent_history(12)
    client.messages.create(**call(history))
    first = sent(route)["messages"]
    history += [{"role": "assistant", "content": "Looking."}, {"role": "user", "content": "Go."}]
    client.messages.create(**call(history))
    second = sent(route)["messages"]
    assert reports[-1].decision == "appended"
    assert second == first + history[-2:]  # the cached prefix is sent byte for byte
    assert json.dumps(second).startswith(json.dumps(first)[:-1])
    assert reports[-1].reused_items == len(first)
    previous = second
    i = 0
    while reports[-1].decision != "recompacted":
        history += one_round(i)
        client.messages.create(**call(history))
        if reports[-1].decision == "appended":
            assert sent(route)["messages"] == previous + history[-2:]
            previous = sent(route)["messages"]
        i += 1
        assert i < 20
    assert i > 1
    assert_sendable(sent(route))
    assert tokens(sent(route)["messages"]) <= TARGET + 200
    # After the recompaction the new view is the prefix that stays.
    third = sent(route)["messages"]
    history += one_round(99)
    client.messages.create(**call(history))
    assert reports[-1].decision == "appended"
    assert sent(route)["messages"] == third + history[-2:]


def test_the_callers_list_and_dicts_are_never_mutated(route: respx.Route) -> None:
    client = wrap(sdk())
    history = agent_history(12)
    history[0]["content"] = [{"type": "text", "text": f"Fix it. {MARKER}"}]
    system = [{"type": "text", "text": SYSTEM}]
    before, system_before = copy.deepcopy(history), copy.deepcopy(system)
    response = client.messages.create(**call(history, system=system))
    assert history == before and system == system_before
    assert sent(route)["messages"] != history and sent(route)["system"] == system
    # Users append the SDK's own response content; that is left alone too.
    history.append({"role": "assistant", "content": response.content})
    history.append({"role": "user", "content": "Next."})
    snapshot = [block.model_dump() for block in response.content]
    client.messages.create(**call(history, system=system))
    assert history[:-2] == before and system == system_before
    assert [block.model_dump() for block in response.content] == snapshot
    assert sent(route)["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "Next."}]


def test_any_iterable_of_messages_is_sent_in_full(route: respx.Route) -> None:
    """The SDK takes any iterable; a generator must not be read by compaction and sent empty."""
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    client.messages.create(**call(m for m in SMALL))
    assert sent(route)["messages"] == SMALL and reports[-1].decision == "unchanged"
    client.messages.create(**call(iter(agent_history(13))))
    assert reports[-1].decision == "compacted"
    assert_sendable(sent(route))
    assert sent(route)["messages"][-1] == agent_history(13)[-1]


def test_the_sdks_not_given_sentinels_are_ignored(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    for sentinel in (anthropic.NOT_GIVEN, anthropic.omit):
        client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=BIG,
                               system=sentinel, tools=sentinel, tool_choice=sentinel)
        assert reports[-1].prompt_budget == BUDGET
        assert reports[-1].decision in ("compacted", "reused")
        assert reports[-1].tokens_in == tokens(BIG, system=None)
        body = sent(route)
        assert "system" not in body and "tools" not in body and "tool_choice" not in body
        assert_sendable(body)


def test_stream_true_returns_the_sdks_stream(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    stream = client.messages.create(**call(BIG), stream=True)
    assert isinstance(stream, Stream)
    events = list(stream)
    assert [event.type for event in events] == SSE_EVENTS
    assert "".join(event.delta.text for event in events
                   if event.type == "content_block_delta") == "Hello"
    body = sent(route)
    assert body["stream"] is True
    assert_sendable(body, BIG)
    assert len(body["messages"]) < len(BIG)
    assert reports[-1].decision == "compacted"


def test_the_stream_helper_sends_the_compacted_messages(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    with client.messages.stream(**call(BIG)) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert "text" in kinds and kinds[-1] == "message_stop"
    assert final.content[0].type == "text" and final.content[0].text == "Hello"
    body = sent(route)
    assert body["stream"] is True
    assert_sendable(body, BIG)
    assert len(body["messages"]) < len(BIG)
    assert reports[-1].decision == "compacted"
    with client.messages.stream(**call(SMALL)) as stream:
        assert "".join(stream.text_stream) == "Hello"
    assert sent(route)["messages"] == SMALL and reports[-1].decision == "unchanged"


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


class Verdict(pydantic.BaseModel):
    answer: str


def test_parse_sends_the_compacted_messages(api: respx.Router) -> None:
    route = api.post("/v1/messages").respond(json=message('{"answer": "42"}'))
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    parsed = client.messages.parse(**call(BIG), output_format=Verdict)
    assert isinstance(parsed, ParsedMessage) and parsed.parsed_output == Verdict(answer="42")
    body = sent(route)
    assert "output_config" in body and body["system"] == SYSTEM
    assert_sendable(body, BIG)
    assert len(body["messages"]) < len(BIG) and reports[-1].decision == "compacted"


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
async def test_async_create_stream_helper_and_count_tokens(route: respx.Route,
                                                           count_route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(async_sdk(), reports)

    response = await client.messages.create(**call(agent_history(12)))
    assert type(response) is Message
    assert reports[-1].decision == "compacted"
    small = await client.messages.create(**call(SMALL))
    assert type(small) is Message and sent(route)["messages"] == SMALL
    assert sent(route)["system"] == SYSTEM and reports[-1].decision == "unchanged"

    stream = await client.messages.create(**call(agent_history(13)), stream=True)
    assert isinstance(stream, AsyncStream)
    kinds = [event.type async for event in stream]
    assert kinds == SSE_EVENTS and sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

    async with client.messages.stream(**call(agent_history(14))) as events:
        text = "".join([chunk async for chunk in events.text_stream])
        final = await events.get_final_message()
    assert text == "Hello" and final.content[0].text == "Hello"
    assert sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

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

    compacted = [body for body in bodies(route) if body["messages"] != SMALL]
    assert len(compacted) == 5 and len(reports) == 6
    for body, rounds in zip(compacted, (12, 13, 14, 15, 16), strict=True):
        assert_sendable(body, agent_history(rounds))
        assert tokens(body["messages"]) < TRIGGER


def test_max_tokens_comes_out_of_the_budget(route: respx.Route) -> None:
    history = agent_history(6)
    size = tokens(history)
    reports: list[Any] = []
    # trigger/target as fractions of the budget: max_tokens moves them.
    client = wrap(sdk(), reports, window=size + 1_000, trigger=1.0, target=0.8)
    client.messages.create(**call(history, max_tokens=500))
    assert reports[-1].prompt_budget == size + 500
    assert reports[-1].decision == "unchanged" and sent(route)["messages"] == history
    assert sent(route)["max_tokens"] == 500
    client.messages.create(**call(history, max_tokens=2_000))
    assert reports[-1].prompt_budget == size - 1_000
    assert reports[-1].decision == "compacted"
    assert sent(route)["max_tokens"] == 2_000
    assert tokens(sent(route)["messages"]) <= size - 1_000
    assert_sendable(sent(route), history)


def test_tool_definitions_count_toward_the_prompt(route: respx.Route) -> None:
    tools = [{"name": f"tool_{i}", "description": "Does a thing. " * 40,
              "input_schema": {"type": "object", "properties": {
                  "path": {"type": "string", "description": "A path to a file. " * 10}}}}
             for i in range(3)]
    history = agent_history(5)
    assert tokens(history) < TRIGGER < tokens(history, tools)
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    client.messages.create(**call(history))
    assert reports[-1].decision == "unchanged"
    client.messages.create(**call(history, tools=tools, tool_choice={"type": "auto"}))
    assert reports[-1].decision == "compacted"
    assert reports[-1].tokens_in == tokens(history, tools)
    body = sent(route)
    assert body["tools"] == tools and body["tool_choice"] == {"type": "auto"}
    assert tokens(body["messages"], tools) < tokens(history, tools)
    assert tokens(body["messages"], tools) <= TRIGGER
    assert_sendable(body, history)


def test_the_window_comes_from_the_table_or_the_caller(route: respx.Route) -> None:
    reports: list[Any] = []
    CompactingAnthropic(sdk(), on_call=reports.append).messages.create(
        **call(SMALL, model="claude-sonnet-4-5-20250929"))
    CompactingAnthropic(sdk(), on_call=reports.append).messages.create(
        **call(SMALL, model="claude-3-5-haiku-latest", max_tokens=2_000))
    CompactingAnthropic(sdk(), on_call=reports.append, window=50_000).messages.create(
        **call(SMALL))
    CompactingAnthropic(sdk(), on_call=reports.append,
                        windows={"acme-claude": 32_000}).messages.create(
        **call(SMALL, model="acme-claude-7b"))
    assert [r.prompt_budget for r in reports] == [
        200_000 - MAX_TOKENS, 198_000, 50_000 - MAX_TOKENS, 32_000 - MAX_TOKENS]
    assert all(r.decision == "unchanged" for r in reports)
    assert route.call_count == 4


def test_an_unknown_model_without_a_window_fails_before_sending(route: respx.Route) -> None:
    client = CompactingAnthropic(sdk())
    with pytest.raises(cutctx.ValidationError) as caught:
        client.messages.create(**call(SMALL, model="acme-private-llm"))
    assert "acme-private-llm" in str(caught.value)
    assert caught.value.details["model"] == "acme-private-llm"
    assert "window" in str(caught.value)
    assert route.call_count == 0


def test_every_other_attribute_delegates(api: respx.Router, route: respx.Route) -> None:
    inner = sdk()
    reports: list[Any] = []
    client = wrap(inner, reports)
    assert client.wrapped is inner
    assert client.api_key == "test"
    assert str(client.base_url).rstrip("/") == BASE_URL
    assert client.models is inner.models
    assert client.messages.batches is inner.messages.batches
    assert client.messages.count_tokens == inner.messages.count_tokens
    api.get("/v1/models").respond(json={"data": [
        {"id": MODEL, "type": "model", "display_name": "Claude Sonnet 4.5",
         "created_at": "2025-09-29T00:00:00Z"}], "has_more": False, "first_id": MODEL,
        "last_id": MODEL})
    assert [m.id for m in client.models.list()] == [MODEL]

    faster = client.with_options(timeout=5)
    assert isinstance(faster, CompactingAnthropic)
    assert faster.timeout == 5 and client.timeout != 5
    faster.messages.create(**call(BIG))
    assert reports[-1].decision == "compacted"
    assert len(sent(route)["messages"]) < len(BIG)
    assert route.calls.last.request.extensions["timeout"]["read"] == 5
    # The clone shares the sticky state: the same history again reuses the view.
    client.messages.create(**call(BIG))
    assert reports[-1].decision == "reused"


def test_a_summarizer_answers_first_then_the_summary_is_sent(route: respx.Route) -> None:
    reports: list[Any] = []
    summarizer = AnthropicSummarizer(sdk(), model=SUMMARY_MODEL)
    client = wrap(sdk(), reports, summarizer=summarizer, keep_user_turns=False)
    history = chat_history(10)
    assert tokens(history) > TRIGGER
    client.messages.create(**call(history))
    summary_request, main = bodies(route)
    assert summary_request["model"] == SUMMARY_MODEL
    assert main["model"] == MODEL and main["system"] == SYSTEM
    assert_sendable(main, history)
    assert main["messages"][-1] == history[-1]
    summaries = [m for m in main["messages"] if SUMMARY_TEXT in json.dumps(m["content"])]
    assert len(summaries) == 1 and summaries[0]["role"] == "user"
    report = reports[-1]
    assert report.decision == "compacted" and report.compaction is not None
    assert "summarizing" in report.compaction.policy_name
    assert len(report.compaction.summary_turn_ids) == 1
    assert tokens(main["messages"]) < tokens(history)
    # The same span is not summarized twice: the view is reused as the history grows.
    history += [{"role": "assistant", "content": "Finally: yes."},
                {"role": "user", "content": "Thanks."}]
    client.messages.create(**call(history))
    assert len(bodies(route)) == 3 and reports[-1].decision == "appended"


def test_a_failed_summary_raises_and_sends_nothing(api: respx.Router) -> None:
    api.post("/v1/messages").mock(side_effect=lambda request: httpx.Response(
        500, json={"type": "error", "error": {"type": "api_error",
                                              "message": f"boom {MARKER}"}}))
    client = wrap(sdk(), summarizer=AnthropicSummarizer(sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False)
    with pytest.raises(SummarizationFailed) as caught:
        client.messages.create(**call(chat_history(10)))
    assert caught.value.details["cause"] == "InternalServerError"
    assert MARKER not in str(caught.value) and MARKER not in repr(caught.value.details)
    assert [json.loads(c.request.content)["model"] for c in api.calls] == [SUMMARY_MODEL]


def test_a_failed_summary_can_fall_back_to_masking_and_dropping(api: respx.Router) -> None:
    def failing_summaries(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == SUMMARY_MODEL:
            raise httpx2.ReadTimeout("timed out")
        return httpx.Response(200, json=message())

    route = api.post("/v1/messages").mock(side_effect=failing_summaries)
    reports: list[Any] = []
    client = wrap(sdk(), reports, summarizer=AnthropicSummarizer(sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False,
                  on_summary_error="fallback")
    history = chat_history(10)
    response = client.messages.create(**call(history))
    assert type(response) is Message
    [main] = main_bodies(route)
    assert_sendable(main, history)
    assert tokens(main["messages"]) <= BUDGET
    text = json.dumps(main["messages"])
    for leaked in ("timed out", "Timeout", "Error", "Summary of the earlier"):
        assert leaked not in text
    report = reports[-1]
    assert report.summarization_fallback is True
    assert report.compaction is not None and "summarizing" not in report.compaction.policy_name
    assert report.compaction.summary_turn_ids == ()


@pytest.mark.anyio
async def test_async_client_with_an_async_summarizer(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(async_sdk(), reports,
                  summarizer=AnthropicSummarizer(async_sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False)
    history = chat_history(10)
    response = await client.messages.create(**call(history))
    assert type(response) is Message
    summary_request, main = bodies(route)
    assert summary_request["model"] == SUMMARY_MODEL
    assert SUMMARY_TEXT in json.dumps(main["messages"])
    assert_sendable(main, history)
    assert reports[-1].compaction is not None
    assert reports[-1].compaction.summary_turn_ids
    async with client.messages.stream(**call(chat_history(11))) as stream:
        await stream.until_done()
    assert [body["model"] for body in bodies(route)][-1] == MODEL
    assert SUMMARY_TEXT in json.dumps(sent(route)["messages"])


def test_a_newest_message_over_the_window_is_clipped_and_sent(route: respx.Route) -> None:
    """Never stuck: the paste keeps its head and tail around a marker naming the original."""
    history = agent_history(3)
    history[-1]["content"].append({"type": "text", "text": "paste " * 7_000 + "END"})
    reports: list[Any] = []
    wrap(sdk(), reports).messages.create(**call(history))
    sent = json.loads(route.calls.last.request.content)
    last = json.dumps(sent["messages"][-1])
    assert "cutctx clipped this message" in last and "END" in last
    assert reports[-1].protection_relaxed > 0 or reports[-1].replacements


def test_with_strict_nothing_is_sent_when_the_newest_turns_cannot_fit(
        route: respx.Route) -> None:
    history = agent_history(3)  # a recent assistant message no policy may clip
    history += [{"role": "assistant", "content": f"{MARKER} " + "ramble " * 7_000},
                {"role": "user", "content": "Continue."}]
    client = wrap(sdk(), strict=True)
    with pytest.raises(BudgetUnsatisfiable) as caught:
        client.messages.create(**call(history))
    err = caught.value
    assert "budget" in str(err)
    assert err.details["max_tokens"] < err.details["untouchable_tokens"]
    assert MARKER not in str(err) and MARKER not in repr(err.details)
    assert route.call_count == 0


@pytest.mark.anyio
async def test_async_budget_and_window_errors_send_nothing(route: respx.Route) -> None:
    history = agent_history(3)
    history += [{"role": "assistant", "content": "ramble " * 7_000},
                {"role": "user", "content": "Continue."}]
    with pytest.raises(BudgetUnsatisfiable):
        await wrap(async_sdk(), strict=True).messages.create(**call(history))
    with pytest.raises(cutctx.ValidationError, match="acme-x"):
        await CompactingAnthropic(async_sdk()).messages.create(**call(SMALL, model="acme-x"))
    with pytest.raises(cutctx.ValidationError, match="acme-y"):
        async with CompactingAnthropic(async_sdk()).messages.stream(
                **call(SMALL, model="acme-y")):
            pass
    assert route.call_count == 0


def test_errors_from_the_sdk_pass_through_unchanged(api: respx.Router) -> None:
    api.post("/v1/messages").respond(
        400, json={"type": "error", "error": {"type": "invalid_request_error",
                                              "message": "bad request"}})
    with pytest.raises(anthropic.BadRequestError):
        wrap(sdk()).messages.create(**call(BIG))

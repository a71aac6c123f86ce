"""``CompactingOpenAI`` end to end: real ``openai`` clients, HTTP mocked with respx's httpcore2
mocker (``pytest-httpx2``), assertions on the JSON body the SDK actually sent."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
import respx
from openai import AsyncOpenAI, AsyncStream, OpenAI, Stream
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ParsedChatCompletion
from pydantic import BaseModel

import cutctx
from cutctx import BudgetUnsatisfiable, CompactionReport
from cutctx_adapters import SummarizationFailed
from cutctx_adapters.openai import CompactingOpenAI, OpenAISummarizer, chat
from tests.openai.chat_rules import check

BASE_URL = "https://api.openai.test/v1"
MODEL = "gpt-4o"
SUMMARY_MODEL = "gpt-4o-mini"
SUMMARY_TEXT = "The agent listed files and read logs; next it should patch parser.py."
MARKER = "MARKER-5c1d"  # in the history; must never reach an error or a report

@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- responses -----------------------------------------------------------------------------


def completion(content: str | None = "ok", model: str = MODEL) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


SSE_BODY = ("".join(f"data: {json.dumps(chunk)}\n\n" for chunk in (
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Hel"}),
    _chunk({"content": "lo"}),
    _chunk({}, "stop"),
)) + "data: [DONE]\n\n").encode()


class Answer(BaseModel):
    answer: str


def answer(request: httpx.Request) -> httpx.Response:
    """The mocked API: summaries for the summary model, SSE for streams, JSON otherwise."""
    body = json.loads(request.content)
    if body["model"] == SUMMARY_MODEL:
        return httpx.Response(200, json=completion(SUMMARY_TEXT, SUMMARY_MODEL))
    if body.get("stream"):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=SSE_BODY)
    if body.get("response_format"):
        return httpx.Response(200, json=completion('{"answer": "42"}'))
    return httpx.Response(200, json=completion())


@pytest.fixture
def api() -> Iterator[respx.Router]:
    """respx over httpcore2, the transport under the SDK's httpx2 (plain respx misses it).

    (``pytest-httpx2``'s ``api`` fixture does the same, but its ``httpx2`` marker for
    the base URL is not registered by the plugin, so it warns.)
    """
    with respx.mock(using="httpcore2", base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture
def route(api: respx.Router) -> respx.Route:
    return api.post("/chat/completions").mock(side_effect=answer)


def bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls]


def sent(route: respx.Route) -> dict[str, Any]:
    return json.loads(route.calls.last.request.content)


def main_bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [body for body in bodies(route) if body["model"] != SUMMARY_MODEL]


# --- clients and histories -----------------------------------------------------------------


def sdk() -> OpenAI:
    return OpenAI(api_key="test", base_url=BASE_URL, max_retries=0)


def async_sdk() -> AsyncOpenAI:
    return AsyncOpenAI(api_key="test", base_url=BASE_URL, max_retries=0)


WINDOW = 10_000
TRIGGER = 3_000
TARGET = 2_000


def wrap(client: Any, reports: list[Any] | None = None, **settings: Any) -> CompactingOpenAI[Any]:
    settings = {"window": WINDOW, "trigger": TRIGGER, "target": TARGET, **settings}
    on_call = reports.append if reports is not None else None
    return CompactingOpenAI(client, on_call=on_call, **settings)


def agent_history(rounds: int, size: int = 60) -> list[dict[str, Any]]:
    """An agent run: task, then rounds of two parallel tool calls and their two results."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix the failing test. {MARKER}"},
    ]
    for i in range(rounds):
        calls = [{"id": f"call_{i}_{k}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps({"arg": f"{i}-{k}"})}}
                 for k, name in enumerate(("read_file", "run_tests"))]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for k in range(2):
            messages.append({"role": "tool", "tool_call_id": f"call_{i}_{k}",
                             "content": f"result {i}.{k} {MARKER} " + "lorem ipsum " * size})
    messages.append({"role": "user", "content": "Continue."})
    return messages


def chat_history(rounds: int, size: int = 120) -> list[dict[str, Any]]:
    """Plain user/assistant talk: masking cannot help, so a summarizer gets asked."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(rounds):
        messages.append({"role": "user", "content": f"question {i} {MARKER} " + "why " * size})
        messages.append({"role": "assistant", "content": f"answer {i} " + "because " * size})
    messages.append({"role": "user", "content": "And finally?"})
    return messages


def tokens(messages: list[dict[str, Any]], tools: Any = None) -> int:
    return chat.count_tokens(messages, model=MODEL, tools=tools)


SMALL: list[Any] = agent_history(2)
BIG = agent_history(12)


def test_histories_sit_where_the_tests_need_them() -> None:
    assert tokens(SMALL) < TRIGGER < tokens(BIG) < WINDOW - 4096


# --- the wrapper ---------------------------------------------------------------------------


def test_below_the_trigger_the_request_is_sent_exactly_as_given(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    response = client.chat.completions.create(model=MODEL, messages=SMALL, temperature=0.2,
                                              user="u-1")
    assert type(response) is ChatCompletion
    assert response.choices[0].message.content == "ok"
    body = sent(route)
    assert body["messages"] == SMALL
    assert body["model"] == MODEL and body["temperature"] == 0.2 and body["user"] == "u-1"
    [report] = reports
    assert report.decision == "unchanged" and report.compaction is None
    assert report.tokens_in == report.tokens_sent == tokens(SMALL)
    assert client.last_report is report


def test_over_the_trigger_the_history_is_compacted_valid_and_reported(
        route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    response = client.chat.completions.create(model=MODEL, messages=BIG)
    assert type(response) is ChatCompletion
    messages = sent(route)["messages"]
    check(messages)
    assert tokens(messages) < tokens(BIG)
    assert tokens(messages) <= WINDOW - 4096
    assert messages[0] == BIG[0] and messages[-1] == BIG[-1]
    [report] = reports
    assert report.decision == "compacted"
    assert isinstance(report.compaction, CompactionReport)
    assert not report.compaction.budget_unmet
    assert report.format == "openai-chat" and report.model == MODEL
    assert report.prompt_budget == WINDOW - 4096
    assert (report.trigger_tokens, report.target_tokens) == (TRIGGER, TARGET)
    assert report.tokens_in == tokens(BIG)
    assert report.tokens_sent is not None and report.tokens_sent <= TRIGGER
    assert not report.summarization_fallback
    assert MARKER not in repr(report)


def test_compaction_is_sticky_until_the_trigger_is_crossed_again(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    history = agent_history(12)
    client.chat.completions.create(model=MODEL, messages=history)
    first = sent(route)["messages"]
    history += [{"role": "assistant", "content": "Looking."}, {"role": "user", "content": "Go."}]
    client.chat.completions.create(model=MODEL, messages=history)
    second = sent(route)["messages"]
    assert reports[-1].decision == "appended"
    assert second == first + history[-2:]  # the cached prefix is sent byte for byte
    assert reports[-1].reused_items == len(first)
    while reports[-1].decision != "recompacted":
        history += [*agent_history(1)[2:-1], {"role": "user", "content": "More."}]
        client.chat.completions.create(model=MODEL, messages=history)
        assert len(reports) < 20
    check(sent(route)["messages"])
    assert tokens(sent(route)["messages"]) <= TARGET + 200


def test_the_callers_list_and_dicts_are_never_mutated(route: respx.Route) -> None:
    client = wrap(sdk())
    history = agent_history(12)
    history[1]["content"] = [{"type": "text", "text": f"Fix it. {MARKER}"}]
    before = copy.deepcopy(history)
    response = client.chat.completions.create(model=MODEL, messages=history)
    assert history == before
    assert sent(route)["messages"] != history
    # Users append the SDK's own response objects; those are left alone too.
    history.append(response.choices[0].message)
    history.append({"role": "user", "content": "Next."})
    snapshot = response.choices[0].message.model_dump()
    client.chat.completions.create(model=MODEL, messages=history)
    assert history[:-2] == before
    assert response.choices[0].message.model_dump() == snapshot
    assert sent(route)["messages"][-2:] == [{"role": "assistant", "content": "ok"},
                                           {"role": "user", "content": "Next."}]


def test_any_iterable_of_messages_is_sent_in_full(route: respx.Route) -> None:
    """The SDK takes any iterable; a generator must not be read by compaction and sent empty."""
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    client.chat.completions.create(model=MODEL, messages=(m for m in SMALL))
    assert sent(route)["messages"] == SMALL and reports[-1].decision == "unchanged"
    client.chat.completions.create(model=MODEL, messages=tuple(agent_history(12)))
    assert reports[-1].decision == "compacted"
    check(sent(route)["messages"])
    client.chat.completions.create(model=MODEL, messages=iter(agent_history(13)))
    assert reports[-1].decision == "compacted"
    check(sent(route)["messages"])
    assert sent(route)["messages"][-1] == {"role": "user", "content": "Continue."}


def test_the_sdks_not_given_sentinels_are_ignored(route: respx.Route) -> None:
    reports: list[Any] = []
    wrap(sdk(), reports).chat.completions.create(
        model=MODEL, messages=BIG, max_tokens=openai.NOT_GIVEN,
        max_completion_tokens=openai.omit, tools=openai.omit)
    assert reports[-1].prompt_budget == WINDOW - 4096
    assert reports[-1].decision == "compacted"
    assert "tools" not in sent(route) and "max_tokens" not in sent(route)


def test_stream_true_returns_the_sdks_stream(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    stream = client.chat.completions.create(model=MODEL, messages=BIG, stream=True)
    assert isinstance(stream, Stream)
    chunks = list(stream)
    assert all(isinstance(chunk, ChatCompletionChunk) for chunk in chunks)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Hello"
    body = sent(route)
    assert body["stream"] is True
    check(body["messages"])
    assert tokens(body["messages"]) < tokens(BIG)
    assert reports[-1].decision == "compacted"


def test_the_stream_helper_sends_the_compacted_messages(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    with client.chat.completions.stream(model=MODEL, messages=BIG) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "content.delta" in events and "content.done" in events
    assert final.choices[0].message.content == "Hello"
    body = sent(route)
    assert body["stream"] is True
    check(body["messages"])
    assert tokens(body["messages"]) < tokens(BIG)
    assert reports[-1].decision == "compacted"


def test_parse_compacts_and_returns_a_parsed_completion(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    parsed = client.chat.completions.parse(model=MODEL, messages=BIG, response_format=Answer)
    assert isinstance(parsed, ParsedChatCompletion)
    assert parsed.choices[0].message.parsed == Answer(answer="42")
    body = sent(route)
    assert body["response_format"]["type"] == "json_schema"
    check(body["messages"])
    assert tokens(body["messages"]) < tokens(BIG)
    assert reports[-1].decision == "compacted"


@pytest.mark.anyio
async def test_async_create_stream_helper_and_parse(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(async_sdk(), reports)

    response = await client.chat.completions.create(model=MODEL, messages=agent_history(12))
    assert type(response) is ChatCompletion
    assert reports[-1].decision == "compacted"
    small = await client.chat.completions.create(model=MODEL, messages=SMALL)
    assert type(small) is ChatCompletion and sent(route)["messages"] == SMALL

    stream = await client.chat.completions.create(model=MODEL, messages=agent_history(13),
                                                  stream=True)
    assert isinstance(stream, AsyncStream)
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
    assert text == "Hello" and sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

    async with client.chat.completions.stream(model=MODEL, messages=agent_history(14)) as events:
        kinds = [event.type async for event in events]
    assert "content.done" in kinds and sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

    parsed = await client.chat.completions.parse(model=MODEL, messages=agent_history(15),
                                                 response_format=Answer)
    assert parsed.choices[0].message.parsed == Answer(answer="42")
    assert reports[-1].decision == "compacted"

    compacted = [body for body in bodies(route) if body["messages"] != SMALL]
    assert len(compacted) == 4
    for body in compacted:
        check(body["messages"])
        assert tokens(body["messages"]) < TRIGGER


@pytest.mark.parametrize("field", ["max_completion_tokens", "max_tokens"])
def test_the_reply_allowance_comes_out_of_the_budget(route: respx.Route, field: str) -> None:
    history = agent_history(6)
    size = tokens(history)
    reports: list[Any] = []
    # trigger/target as fractions of the budget: the allowance moves them.
    client = wrap(sdk(), reports, window=size + 1_000, trigger=1.0, target=0.8)
    client.chat.completions.create(model=MODEL, messages=history, **{field: 500})
    assert reports[-1].prompt_budget == size + 500
    assert reports[-1].decision == "unchanged" and sent(route)["messages"] == history
    assert sent(route)[field] == 500
    client.chat.completions.create(model=MODEL, messages=history, **{field: 2_000})
    assert reports[-1].prompt_budget == size - 1_000
    assert reports[-1].decision == "compacted"
    assert tokens(sent(route)["messages"]) <= size - 1_000


def test_without_an_allowance_the_reserve_is_used(route: respx.Route) -> None:
    reports: list[Any] = []
    wrap(sdk(), reports).chat.completions.create(model=MODEL, messages=SMALL)
    wrap(sdk(), reports, reserve=1_000).chat.completions.create(model=MODEL, messages=SMALL)
    wrap(sdk(), reports, reserve=1_000).chat.completions.create(
        model=MODEL, messages=SMALL, max_completion_tokens=None)
    assert [r.prompt_budget for r in reports] == [WINDOW - 4096, WINDOW - 1_000, WINDOW - 1_000]


def test_tool_definitions_count_toward_the_prompt(route: respx.Route) -> None:
    tools = [{"type": "function", "function": {
        "name": f"tool_{i}", "description": "Does a thing. " * 40,
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "A path to a file. " * 10}}}}}
        for i in range(3)]
    history = agent_history(8)
    assert tokens(history) < TRIGGER < tokens(history, tools)
    reports: list[Any] = []
    client = wrap(sdk(), reports)
    client.chat.completions.create(model=MODEL, messages=history)
    assert reports[-1].decision == "unchanged"
    client.chat.completions.create(model=MODEL, messages=history, tools=tools)
    assert reports[-1].decision == "compacted"
    assert reports[-1].tokens_in == tokens(history, tools)
    body = sent(route)
    assert body["tools"] == tools
    assert tokens(body["messages"], tools) < tokens(history, tools)
    check(body["messages"])


def test_the_window_comes_from_the_table_or_the_caller(route: respx.Route) -> None:
    reports: list[Any] = []
    CompactingOpenAI(sdk(), on_call=reports.append).chat.completions.create(
        model="gpt-4o-2024-08-06", messages=SMALL, max_completion_tokens=1_000)
    CompactingOpenAI(sdk(), on_call=reports.append).chat.completions.create(
        model="gpt-4", messages=SMALL, max_tokens=1_000)
    CompactingOpenAI(sdk(), on_call=reports.append, window=50_000).chat.completions.create(
        model="gpt-4", messages=SMALL, max_tokens=1_000)
    with pytest.warns(UserWarning):  # unknown to tiktoken: counted with o200k_base
        CompactingOpenAI(sdk(), on_call=reports.append,
                         windows={"acme-llm": 32_000}).chat.completions.create(
            model="acme-llm-7b", messages=SMALL, max_tokens=1_000)
    # GPT-5's window is 400K but it takes 272K in: the table's window is capped, a given one not
    CompactingOpenAI(sdk(), on_call=reports.append).chat.completions.create(
        model="gpt-5", messages=SMALL, max_completion_tokens=1_000)
    CompactingOpenAI(sdk(), on_call=reports.append, window=300_000).chat.completions.create(
        model="gpt-5", messages=SMALL, max_completion_tokens=1_000)
    assert [r.prompt_budget for r in reports] == [127_000, 7_192, 49_000, 31_000, 272_000,
                                                  299_000]
    assert route.call_count == 6


def test_an_unknown_model_without_a_window_fails_before_sending(route: respx.Route) -> None:
    client = CompactingOpenAI(sdk())
    with pytest.warns(UserWarning), pytest.raises(cutctx.ValidationError) as caught:
        client.chat.completions.create(model="acme-private-llm", messages=SMALL)
    assert "acme-private-llm" in str(caught.value)
    assert caught.value.details["model"] == "acme-private-llm"
    assert "window" in str(caught.value)
    assert route.call_count == 0


def test_every_other_attribute_delegates(api: respx.Router,
                                         route: respx.Route) -> None:
    inner = sdk()
    reports: list[Any] = []
    client = wrap(inner, reports)
    assert client.wrapped is inner
    assert client.api_key == "test"
    assert str(client.base_url) == BASE_URL + "/"
    assert client.models is inner.models
    assert client.chat.completions.with_raw_response is not None
    api.get("/models").respond(json={"object": "list", "data": [
        {"id": MODEL, "object": "model", "created": 1, "owned_by": "openai"}]})
    assert [m.id for m in client.models.list()] == [MODEL]

    faster = client.with_options(timeout=5)
    assert isinstance(faster, CompactingOpenAI)
    assert faster.timeout == 5 and client.timeout != 5
    faster.chat.completions.create(model=MODEL, messages=BIG)
    assert reports[-1].decision == "compacted"
    assert tokens(sent(route)["messages"]) < tokens(BIG)
    assert route.calls.last.request.extensions["timeout"]["read"] == 5


def test_a_summarizer_answers_first_then_the_summary_is_sent(route: respx.Route) -> None:
    reports: list[Any] = []
    summarizer = OpenAISummarizer(sdk(), model=SUMMARY_MODEL)
    client = wrap(sdk(), reports, summarizer=summarizer, keep_user_turns=False)
    history = chat_history(14)
    assert tokens(history) > TRIGGER
    client.chat.completions.create(model=MODEL, messages=history)
    summary_request, main = bodies(route)
    assert summary_request["model"] == SUMMARY_MODEL
    assert main["model"] == MODEL
    messages = main["messages"]
    check(messages)
    assert messages[0] == history[0] and messages[-1] == history[-1]
    summaries = [m for m in messages if SUMMARY_TEXT in str(m.get("content"))]
    assert len(summaries) == 1 and summaries[0]["role"] == "user"
    report = reports[-1]
    assert report.decision == "compacted" and report.compaction is not None
    assert "summarizing" in report.compaction.policy_name
    assert len(report.compaction.summary_turn_ids) == 1
    assert tokens(messages) < tokens(history)
    # The same span is not summarized twice: the view is reused as the history grows.
    history += [{"role": "assistant", "content": "Finally: yes."},
                {"role": "user", "content": "Thanks."}]
    client.chat.completions.create(model=MODEL, messages=history)
    assert len(bodies(route)) == 3 and reports[-1].decision == "appended"


def test_a_failed_summary_raises_and_sends_nothing(api: respx.Router) -> None:
    api.post("/chat/completions").mock(side_effect=lambda request: httpx.Response(
        500, json={"error": {"message": f"boom {MARKER}", "type": "server_error"}}))
    client = wrap(sdk(), summarizer=OpenAISummarizer(sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False)
    with pytest.raises(SummarizationFailed) as caught:
        client.chat.completions.create(model=MODEL, messages=chat_history(14))
    assert caught.value.details["cause"] == "InternalServerError"
    assert MARKER not in str(caught.value) and MARKER not in repr(caught.value.details)
    assert [json.loads(c.request.content)["model"] for c in api.calls] == [SUMMARY_MODEL]


def test_a_failed_summary_can_fall_back_to_masking_and_dropping(
        api: respx.Router) -> None:
    def failing_summaries(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == SUMMARY_MODEL:
            raise httpx2.ReadTimeout("timed out")
        return httpx.Response(200, json=completion())

    route = api.post("/chat/completions").mock(side_effect=failing_summaries)
    reports: list[Any] = []
    client = wrap(sdk(), reports, summarizer=OpenAISummarizer(sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False,
                  on_summary_error="fallback")
    history = chat_history(14)
    response = client.chat.completions.create(model=MODEL, messages=history)
    assert type(response) is ChatCompletion
    [main] = main_bodies(route)
    check(main["messages"])
    assert tokens(main["messages"]) <= WINDOW - 4096
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
                  summarizer=OpenAISummarizer(async_sdk(), model=SUMMARY_MODEL),
                  keep_user_turns=False)
    history = chat_history(14)
    response = await client.chat.completions.create(model=MODEL, messages=history)
    assert type(response) is ChatCompletion
    summary_request, main = bodies(route)
    assert summary_request["model"] == SUMMARY_MODEL
    assert any(SUMMARY_TEXT in str(m["content"]) for m in main["messages"])
    check(main["messages"])
    assert reports[-1].compaction is not None
    assert reports[-1].compaction.summary_turn_ids


def test_a_newest_message_over_the_window_is_clipped_and_sent(route: respx.Route) -> None:
    """Never stuck: the paste keeps its head and tail around a marker naming the original."""
    history = agent_history(3)
    history[-1] = {"role": "user", "content": "paste " * 7_000 + "END"}
    wrap(sdk()).chat.completions.create(model=MODEL, messages=history)
    sent = json.loads(route.calls.last.request.content)["messages"][-1]["content"]
    assert "cutctx clipped this message" in sent and sent.endswith("END")


def test_with_strict_nothing_is_sent_when_the_newest_turns_cannot_fit(
        route: respx.Route) -> None:
    history = agent_history(3)  # a recent assistant message no policy may clip
    history[-1:] = [{"role": "assistant", "content": f"{MARKER} " + "ramble " * 7_000},
                    {"role": "user", "content": "Continue."}]
    client = wrap(sdk(), strict=True)
    with pytest.raises(BudgetUnsatisfiable) as caught:
        client.chat.completions.create(model=MODEL, messages=history)
    err = caught.value
    assert "budget" in str(err)
    assert err.details["max_tokens"] < err.details["untouchable_tokens"]
    assert MARKER not in str(err) and MARKER not in repr(err.details)
    assert route.call_count == 0


@pytest.mark.anyio
async def test_async_budget_and_window_errors_send_nothing(route: respx.Route) -> None:
    history = agent_history(3)
    history[-1:] = [{"role": "assistant", "content": "ramble " * 7_000},
                    {"role": "user", "content": "Continue."}]
    with pytest.raises(BudgetUnsatisfiable):
        await wrap(async_sdk(), strict=True).chat.completions.create(model=MODEL,
                                                                     messages=history)
    with pytest.warns(UserWarning), pytest.raises(cutctx.ValidationError, match="acme-x"):
        await CompactingOpenAI(async_sdk()).chat.completions.create(model="acme-x",
                                                                    messages=SMALL)
    assert route.call_count == 0


def test_errors_from_the_sdk_pass_through_unchanged(api: respx.Router) -> None:
    api.post("/chat/completions").respond(
        400, json={"error": {"message": "bad request", "type": "invalid_request_error"}})
    with pytest.raises(openai.BadRequestError):
        wrap(sdk()).chat.completions.create(model=MODEL, messages=BIG)

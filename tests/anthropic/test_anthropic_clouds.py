"""``CompactingAnthropic`` over the cloud clients of the ``anthropic`` SDK: Bedrock, Vertex and
Foundry, sync and async, streams included; real clients, their HTTP mocked with respx, fake
credentials and regions from the environment (``tests/_support/clouds.py``), never the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from anthropic import (
    Anthropic,
    AnthropicBedrock,
    AnthropicFoundry,
    AnthropicVertex,
    AsyncAnthropicBedrock,
    AsyncAnthropicVertex,
    Stream,
)
from anthropic.types import Message

import cutctx
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from tests._support.clouds import (
    BEDROCK_URL,
    VERTEX_URL,
    aws_event_stream,
    fake_cloud_environment,
    sse_body,
)
from tests._support.http import mocked_http

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
SYSTEM = "You are a coding agent."
MAX_TOKENS = 1_024
WINDOW = 6_000


@pytest.fixture(autouse=True)
def _offline(tiktoken_cache: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cloud_environment(monkeypatch)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def reply(model: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 7, "output_tokens": 1, "cache_read_input_tokens": 3}}


def events(model: str) -> list[dict[str, Any]]:
    start = {**reply(model), "content": [], "stop_reason": None}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]


def history(rounds: int) -> list[dict[str, Any]]:
    """A task, then rounds of one tool call and its (long) result."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for i in range(rounds):
        out.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": {"n": i}}]})
        out.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}",
             "content": f"file {i} " + "lorem ipsum dolor " * 120}]})
    out[-1]["content"].append({"type": "text", "text": "Continue."})
    return out


BIG = history(14)


def tokens(items: list[Any]) -> int:
    return messages.count_tokens(items, system=SYSTEM, model=BEDROCK_MODEL)


def call(model: str, items: list[Any], **fields: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": MAX_TOKENS, "system": SYSTEM, "messages": items,
            **fields}


@pytest.fixture
def bedrock() -> Iterator[respx.Router]:
    with mocked_http(base_url=BEDROCK_URL, assert_all_called=False) as router:
        router.post(url__regex=r"/model/[^/]+/invoke$").mock(
            side_effect=lambda request: httpx.Response(200, json=reply(_model_in(request))))
        router.post(url__regex=r"/model/[^/]+/invoke-with-response-stream$").mock(
            side_effect=lambda request: httpx.Response(
                200, headers={"content-type": "application/vnd.amazon.eventstream"},
                content=aws_event_stream(events(_model_in(request)))))
        yield router


@pytest.fixture
def vertex() -> Iterator[respx.Router]:
    with mocked_http(base_url=VERTEX_URL, assert_all_called=False) as router:
        router.post(url__regex=r":rawPredict$").mock(
            side_effect=lambda request: httpx.Response(200, json=reply(VERTEX_MODEL)))
        router.post(url__regex=r":streamRawPredict$").mock(
            side_effect=lambda request: httpx.Response(
                200, headers={"content-type": "text/event-stream"},
                content=sse_body(events(VERTEX_MODEL))))
        yield router


def _model_in(request: httpx.Request) -> str:
    found = re.search(r"/model/([^/]+)/", request.url.raw_path.decode())
    assert found is not None
    return found.group(1).replace("%3A", ":")


def sent(router: respx.Router) -> tuple[str, dict[str, Any], httpx.Headers]:
    last = router.calls.last.request
    return last.url.path, json.loads(last.content), last.headers


def test_bedrock_compacts_with_the_window_of_the_model_its_id_names(
        bedrock: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicBedrock(max_retries=0))
    small = client.messages.create(**call(BEDROCK_MODEL, history(2)))
    assert type(small) is Message
    report = client.last_report
    assert report is not None and report.decision == "unchanged"
    assert report.model == BEDROCK_MODEL and report.prompt_budget == 200_000 - MAX_TOKENS
    path, body, headers = sent(bedrock)
    assert path.endswith(":0/invoke") and "model" not in body  # Bedrock: the id is in the URL
    assert body["messages"] == history(2) and body["system"] == SYSTEM
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDCUTCTXTEST/")


def test_bedrock_sends_what_the_session_compacted(bedrock: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicBedrock(max_retries=0), window=WINDOW, target=0.3)
    assert tokens(BIG) > WINDOW - MAX_TOKENS
    client.messages.create(**call(BEDROCK_MODEL, BIG))
    _, body, _ = sent(bedrock)
    report = client.last_report
    assert report is not None and report.decision == "compacted"
    messages.validate(body["messages"], system=body["system"])
    assert "masked by cutctx" in json.dumps(body["messages"])
    assert body["messages"][-1] == BIG[-1]
    assert tokens(body["messages"]) <= report.trigger_tokens  # type: ignore[operator]


def test_bedrock_streams_keep_the_sdks_stream_and_the_compacted_request(
        bedrock: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicBedrock(max_retries=0), window=WINDOW, target=0.3)
    stream = client.messages.create(**call(BEDROCK_MODEL, BIG), stream=True)
    assert isinstance(stream, Stream)
    kinds = [event.type for event in stream]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    path, body, _ = sent(bedrock)
    assert path.endswith("/invoke-with-response-stream") and "stream" not in body
    assert "masked by cutctx" in json.dumps(body["messages"])
    with client.messages.stream(**call(BEDROCK_MODEL, BIG)) as helper:
        assert helper.get_final_text() == "ok"
    assert sent(bedrock)[1]["messages"] == body["messages"]  # the same sticky view


def test_bedrocks_beta_messages_compact_with_the_same_session(bedrock: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicBedrock(max_retries=0), window=WINDOW, target=0.3)
    client.messages.create(**call(BEDROCK_MODEL, BIG))
    first = sent(bedrock)[1]["messages"]
    client.beta.messages.create(**call(BEDROCK_MODEL, BIG))
    assert sent(bedrock)[1]["messages"] == first
    assert client.last_report is not None and client.last_report.decision == "reused"


@pytest.mark.anyio
async def test_async_bedrock_compacts_and_streams(bedrock: respx.Router) -> None:
    client = CompactingAnthropic(AsyncAnthropicBedrock(max_retries=0), window=WINDOW,
                                 target=0.3)
    reply_ = await client.messages.create(**call(BEDROCK_MODEL, BIG))
    assert type(reply_) is Message
    first = sent(bedrock)[1]["messages"]
    assert "masked by cutctx" in json.dumps(first)
    async with client.messages.stream(**call(BEDROCK_MODEL, BIG)) as helper:
        assert await helper.get_final_text() == "ok"
    assert sent(bedrock)[1]["messages"] == first


def test_vertex_compacts_with_the_window_of_its_model(vertex: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicVertex(access_token="fake-token", max_retries=0))
    client.messages.create(**call(VERTEX_MODEL, history(2)))
    path, body, headers = sent(vertex)
    assert path == ("/v1/projects/cutctx-test-project/locations/us-east5/publishers/anthropic/"
                    f"models/{VERTEX_MODEL}:rawPredict")
    assert headers["authorization"] == "Bearer fake-token" and "model" not in body
    report = client.last_report
    assert report is not None and report.prompt_budget == 200_000 - MAX_TOKENS


def test_vertex_streams_send_the_compacted_request(vertex: respx.Router) -> None:
    client = CompactingAnthropic(AnthropicVertex(access_token="fake-token", max_retries=0),
                                 window=WINDOW, target=0.3)
    stream = client.messages.create(**call(VERTEX_MODEL, BIG), stream=True)
    assert isinstance(stream, Stream) and [event.type for event in stream][-1] == "message_stop"
    path, body, _ = sent(vertex)
    assert path.endswith(":streamRawPredict")
    assert "masked by cutctx" in json.dumps(body["messages"])
    messages.validate(body["messages"], system=body["system"])


@pytest.mark.anyio
async def test_async_vertex_compacts(vertex: respx.Router) -> None:
    client = CompactingAnthropic(AsyncAnthropicVertex(access_token="fake-token",
                                                      max_retries=0), window=WINDOW, target=0.3)
    await client.messages.create(**call(VERTEX_MODEL, BIG))
    assert "masked by cutctx" in json.dumps(sent(vertex)[1]["messages"])


def test_foundry_is_wrapped_and_its_deployment_name_needs_a_window() -> None:
    foundry = AnthropicFoundry(api_key="fake-key", base_url="https://cutctx-test.example/anthropic",
                               max_retries=0)
    assert isinstance(foundry, Anthropic)
    client = CompactingAnthropic(foundry)
    with pytest.raises(cutctx.ValidationError) as raised:
        client.messages.create(**call("prod-claude-deployment", history(2)))
    assert "window=" in str(raised.value)


def test_the_refusal_names_the_cloud_clients() -> None:
    with pytest.raises(cutctx.ValidationError) as raised:
        CompactingAnthropic(object())  # type: ignore[type-var]
    assert "anthropic.AnthropicBedrock" in str(raised.value)
    assert "anthropic.AsyncAnthropicVertex" in str(raised.value)

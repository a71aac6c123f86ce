"""The real openai and anthropic SDK clients through the proxy to the fake provider."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai

from cutctx_adapters import CompactionSettings
from tests.serve._fake import Fake, messages_reply
from tests.serve._histories import (
    SYSTEM,
    TOOLS_CHAT,
    TOOLS_MESSAGES,
    TOOLS_RESPONSES,
    chat_turn,
    messages_turn,
    responses_turn,
)
from tests.serve._served import Served
from tests.serve.conftest import ProxyFactory

SETTINGS = CompactionSettings(window=6000, reserve=500)


def _items(body: dict[str, Any], key: str) -> list[str]:
    return [json.dumps(item, sort_keys=True) for item in body[key]]


def _check_sent(fake: Fake, path: str, key: str, decisions: list[str]) -> None:
    """Every request valid and within the budget; an appended call's prefix is the previous
    request's items, byte for byte."""
    assert fake.invalid == []
    sent = [_items(request.json, key) for request in fake.of(path)]
    assert len(sent) == len(decisions)
    for before, after, decision in zip(sent, sent[1:], decisions[1:], strict=False):
        if decision == "appended":
            assert after[:len(before)] == before


def test_openai_chat_sdk_compacts_and_keeps_the_prefix(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    client = openai.OpenAI(api_key="sk-test-chat", base_url=f"{served.url}/v1", max_retries=0)
    history: list[Any] = [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": "Fix the failing test."}]
    decisions = []
    for turn in range(14):
        history += chat_turn(turn)
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history, tools=TOOLS_CHAT, max_tokens=400)
        decisions.append(raw.headers["x-cutctx-decision"])
        assert int(raw.headers["x-cutctx-tokens-sent"]) <= 5600
        content = raw.parse().choices[0].message.content
        assert content is not None and content.startswith("reply")
    assert "compacted" in decisions and "appended" in decisions
    _check_sent(state, "/v1/chat/completions", "messages", decisions)
    for request in state.of("/v1/chat/completions"):
        assert request.headers["authorization"] == "Bearer sk-test-chat"


def test_openai_chat_sdk_streams_through(fake: tuple[Fake, Served],
                                         proxy: ProxyFactory) -> None:
    served = proxy(SETTINGS)
    client = openai.OpenAI(api_key="sk-test", base_url=f"{served.url}/v1", max_retries=0)
    history: list[Any] = [{"role": "user", "content": "Hi"}]
    with client.chat.completions.with_streaming_response.create(
            model="gpt-4o", messages=history, stream=True,
            stream_options={"include_usage": True}) as response:
        assert response.headers["x-cutctx-decision"] == "unchanged"
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(chunk.choices[0].delta.content or "" for chunk in response.parse()
                       if chunk.choices)
    assert text.startswith("reply")


def test_openai_responses_sdk_compacts_streams_and_counts(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    client = openai.OpenAI(api_key="sk-test-resp", base_url=f"{served.url}/v1", max_retries=0)
    items: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
    decisions = []
    for turn in range(14):
        items += responses_turn(turn)
        raw = client.responses.with_raw_response.create(
            model="gpt-4o", input=items, instructions=SYSTEM, tools=TOOLS_RESPONSES,
            max_output_tokens=400)
        decisions.append(raw.headers["x-cutctx-decision"])
    assert "compacted" in decisions and "appended" in decisions
    _check_sent(state, "/v1/responses", "input", decisions)
    with client.responses.create(model="gpt-4o", input=items, instructions=SYSTEM,
                                 tools=TOOLS_RESPONSES, stream=True) as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] == "response.completed"
    count = client.responses.input_tokens.with_raw_response.count(
        model="gpt-4o", input=items, instructions=SYSTEM, tools=TOOLS_RESPONSES)
    counted = state.of("/v1/responses/input_tokens")[-1].json
    assert count.parse().input_tokens < 6000 and counted["input"] != items
    assert count.headers["x-cutctx-decision"] in ("appended", "reused", "compacted")


def test_anthropic_sdk_streams_compacts_counts_and_keeps_a_copy_of_the_reply(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=served.url, max_retries=0)
    history: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
    decisions = []
    for turn in range(14):
        history += messages_turn(turn)
        with client.messages.with_streaming_response.create(
                model="claude-sonnet-4-5", max_tokens=400, system=SYSTEM, messages=history,
                tools=TOOLS_MESSAGES, stream=True) as response:
            decisions.append(response.headers["x-cutctx-decision"])
            events = list(response.parse())
        assert events[0].type == "message_start" and events[-1].type == "message_stop"
    assert "compacted" in decisions and "appended" in decisions
    _check_sent(state, "/v1/messages", "messages", decisions)
    count = client.messages.count_tokens(model="claude-sonnet-4-5", system=SYSTEM,
                                         messages=history, tools=TOOLS_MESSAGES)
    assert count.input_tokens < 6000
    sent_headers = state.of("/v1/messages/count_tokens")[-1].headers
    assert sent_headers["authorization"] == "Bearer sk-ant-test"
    assert sent_headers["anthropic-version"]
    # the copy of the last streamed reply equals the reply as the fake built it
    proxy_state = served.app.state.proxy  # type: ignore[attr-defined]
    copies = [line.reply for conversation in proxy_state.conversations._held.values()
              for line in conversation.lineages._lines.values() if line.reply]
    last = state.of("/v1/messages")[-1]
    expected = messages_reply(last.json, state.received.index(last) + 1)
    assert copies and copies[-1] == ({"role": "assistant", "content": expected["content"]},)

"""anthropic.messages: conversion, validation, rendering, compaction and exact counts."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic
import pytest
import respx
from anthropic.types import Message

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    Role,
    SummarizationRequest,
    SummarizingPolicy,
    TranscriptTurn,
    ValidationError,
    default_chain,
)
from cutctx_adapters import DEFAULT_PROMPT_ID
from cutctx_adapters.anthropic import messages
from cutctx_adapters.anthropic._tokens import MESSAGE_TOKENS, TOOL_BLOCK_TOKENS
from tests._support.data import REQUESTS
from tests._support.http import mocked_api
from tests._support.plain import dicts
from tests.anthropic.test_anthropic_properties import assert_sendable, png

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

ROOT = Path(__file__).resolve().parents[2]
CODING_AGENT = ROOT / "examples" / "histories" / "coding_agent.anthropic.json"
CHARS = CharRatioEstimator()
BASE_URL = "https://api.anthropic.test"
SECRET = "SECRET-content-7f3a"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    request: dict[str, Any] = data.get("request", data)
    return request


def shared_requests() -> list[Path]:
    return sorted(REQUESTS.glob("anthropic_*.json"))


def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{len(turns)} earlier turns"


def sync_client() -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url=BASE_URL, max_retries=0)


def async_client() -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test", base_url=BASE_URL, max_retries=0)


api = mocked_api()


def parallel() -> dict[str, Any]:
    return load(REQUESTS / "anthropic_thinking_parallel_tools.json")


# --- conversion -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", shared_requests(), ids=lambda p: p.stem)
def test_all_keep_renders_the_request_exactly(path: Path) -> None:
    request = load(path)
    frozen = copy.deepcopy(request)
    conv = messages.to_transcript(request["messages"], system=request.get("system"),
                                  tools=request.get("tools"), thinking=request.get("thinking"))
    assert conv.render(conv.transcript) == (request.get("system"), request["messages"])
    assert request == frozen


def test_turns_of_the_parallel_tools_request() -> None:
    request = parallel()
    conv = messages.to_transcript(request["messages"], system=request["system"],
                                  estimator=CHARS)
    turns = {turn.turn_id: turn for turn in conv.transcript.turns}
    assert list(turns) == ["system.0", "m0", "m1", "m2.0", "m2.1", "m3", "m4", "m5", "m6.0"]
    assert turns["system.0"].role is Role.SYSTEM
    assert [turns[t].role for t in ("m2.0", "m2.1", "m6.0")] == [Role.TOOL] * 3
    # the parallel calls and both results are one exchange
    exchange = {turns[t].tool_call_id for t in ("m1", "m2.0", "m2.1")}
    assert len(exchange) == 1 and None not in exchange
    # the final tool loop opened with thinking travels with its request and latest exchange
    final = {turns[t].tool_call_id for t in ("m4", "m5", "m6.0")}
    assert len(final) == 1 and None not in final and final != exchange
    assert turns["m3"].tool_call_id is None and turns["m0"].tool_call_id is None
    assert not turns["m6.0"].pinned  # the newest turn is protected by recency, not pinned
    assert turns["m1"].metadata["cutctx.tool"] == "fx_rate, company_lookup"
    assert turns["m2.1"].metadata["cutctx.tool"] == "company_lookup"
    assert turns["m2.1"].content.startswith("[error] RegistryTimeout")
    assert "[document: supply-agreement-2026.txt]" in turns["m0"].content
    assert turns["m1"].content.startswith("[thinking]\n[redacted thinking]\nI'll look up")
    assert "EuYBCkQY" not in "".join(turn.content for turn in conv.transcript.turns)


def test_server_tools_stay_inside_their_assistant_message() -> None:
    """The server tool's result is a TOOL turn of its own (it can give way like a tool result),
    travelling with the rest of its message, which renders back as one message."""
    request = load(REQUESTS / "anthropic_server_tools.json")
    conv = messages.to_transcript(request["messages"], estimator=CHARS)
    turns = conv.transcript.turns
    assert conv.transcript.turn_ids() == ("m0", "m1.0", "m1.1", "m1.2", "m2")
    assert [turn.role for turn in turns[1:4]] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert len({turn.tool_call_id for turn in turns[1:4]}) == 1
    assert turns[1].metadata["cutctx.tool"] == "web_search"
    assert turns[2].metadata["cutctx.tool"] == "web_search"
    assert "[server tool call web_search:" in turns[1].content
    assert turns[2].content == ("Lisbon Marathon 2026 results "
                                "https://news.example.org/sport/lisbon-marathon-2026")
    assert "[search result: Internal events note]" in turns[4].content
    assert conv.render(conv.transcript)[1] == request["messages"]


def test_a_user_message_with_results_and_text_splits_and_its_text_is_never_masked() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run",
                                           "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 400},
            {"type": "text", "text": "Also, please hurry."}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    conv = messages.to_transcript(history, estimator=CHARS)
    turns = {turn.turn_id: turn for turn in conv.transcript.turns}
    assert turns["m2.0"].role is Role.TOOL and turns["m2.1"].role is Role.USER
    assert turns["m2.1"].tool_call_id is None  # not part of the exchange
    result = messages.compact(history, budget=60, estimator=CHARS, keep_recent=1,
                              policy=ObservationMaskingPolicy(0))
    assert result.report.masked_turn_ids == ("m2.0",)
    assert result.messages is not None
    assert dicts(result.messages)[2]["content"][1] == {"type": "text",
                                                       "text": "Also, please hurry."}
    dropped = messages.compact(history, budget=55, estimator=CHARS, keep_recent=1,
                               policy=DropOldestPolicy())
    assert dropped.messages is not None
    assert "Also, please hurry." in json.dumps(dropped.messages)
    assert_sendable(dropped.system, dropped.messages, history)


def test_turn_ids_are_stable_for_an_append_only_history() -> None:
    request = parallel()
    whole = messages.to_transcript(request["messages"], estimator=CHARS).transcript.turn_ids()
    for cut in (1, 3, 5, 7):
        part = messages.to_transcript(request["messages"][:cut], estimator=CHARS)
        assert whole[: len(part.transcript.turns)] == part.transcript.turn_ids()


def test_system_shapes_round_trip() -> None:
    history = [{"role": "user", "content": "hi"}]
    for system in (None, "", "rules", [], [{"type": "text", "text": "a"},
                                           {"type": "text", "text": "b", "extra": 1}]):
        conv = messages.to_transcript(history, system=system, estimator=CHARS)
        assert conv.render(conv.transcript) == (system, history)
    ids = messages.to_transcript(history, system=[{"type": "text", "text": "a"},
                                                  {"type": "text", "text": "b"}],
                                 estimator=CHARS).transcript.turn_ids()
    assert ids == ("system.0", "system.1", "m0")


def test_unknown_keys_and_blocks_pass_through() -> None:
    history = [
        {"role": "user", "content": [{"type": "future_block", "payload": {"x": [1, 2]}},
                                     {"type": "text", "text": "hi", "new_field": True}],
         "message_extra": "kept"},
        {"role": "assistant", "content": [{"type": "container_upload", "file_id": "f1"},
                                          {"type": "text", "text": "ok"}]},
    ]
    conv = messages.to_transcript(history, estimator=CHARS)
    assert conv.render(conv.transcript) == (None, history)
    assert conv.transcript.turns[0].content == "[future_block]\nhi"


# --- SDK objects ------------------------------------------------------------------------------


RESPONSE = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 20},
    "content": [
        {"type": "thinking", "thinking": "Check the rate.", "signature": "EuYBsig=="},
        {"type": "redacted_thinking", "data": "EmwKredacted=="},
        {"type": "text", "text": "Per the contract, the price is EUR 480,000.",
         "citations": [{"type": "char_location", "cited_text": "EUR 480,000",
                        "document_index": 0, "document_title": "contract",
                        "start_char_index": 10, "end_char_index": 21}]},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "EUR USD"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://fx.example", "title": "FX",
             "encrypted_content": "enc==", "page_age": None}]},
        {"type": "tool_use", "id": "toolu_1", "name": "fx_rate",
         "input": {"base": "EUR", "quote": "USD"}},
    ],
}


def sdk_history() -> list[Any]:
    response = Message.model_validate(RESPONSE)
    return [
        {"role": "user", "content": "What is the price in USD?"},
        {"role": "assistant", "content": response.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "1.08"}]},
    ]


def test_sdk_response_blocks_render_as_the_sdk_sends_them(api: respx.Router) -> None:
    history = sdk_history()
    conv = messages.to_transcript(history, estimator=CHARS)
    system, rendered = conv.render(conv.transcript)
    route = api.post(f"{BASE_URL}/v1/messages").respond(200, json={
        **RESPONSE, "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"})
    sync_client().messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=history)
    sent = json.loads(route.calls.last.request.content)["messages"]
    assert rendered == sent
    assert system is None
    assert rendered[1]["content"][0] == {"type": "thinking", "thinking": "Check the rate.",
                                         "signature": "EuYBsig=="}
    assert "citations" in rendered[1]["content"][2]


def test_a_whole_message_object_is_taken_as_its_role_and_content() -> None:
    response = Message.model_validate(RESPONSE)
    history: list[Any] = sdk_history()
    history[1] = response
    conv = messages.to_transcript(history, estimator=CHARS)
    _, rendered = conv.render(conv.transcript)
    assert rendered[1] == {"role": "assistant",
                           "content": [b.model_dump(mode="json", exclude_unset=True)
                                       for b in response.content]}


def test_sdk_objects_are_not_mutated() -> None:
    history = sdk_history()
    before = [copy.deepcopy(history[0]), [b.model_dump() for b in history[1]["content"]]]
    result = messages.compact(history, budget=0 + 10_000, estimator=CHARS)
    assert result.messages is not None
    assert history[0] == before[0]
    assert [b.model_dump() for b in history[1]["content"]] == before[1]


# --- validation -------------------------------------------------------------------------------


INVALID = {
    "anthropic_five_cache_breakpoints": (6, "content[0].cache_control",
                                         "too_many_cache_breakpoints"),
    "anthropic_missing_tool_result": (1, "tool_use.id", "unanswered_tool_call"),
    "anthropic_orphan_tool_result": (6, "tool_result.tool_use_id", "orphaned_tool_result"),
    "anthropic_text_before_tool_result": (2, "content[1]", "tool_result_not_first"),
    "anthropic_thinking_block_dropped": (5, "content[0].type", "thinking_not_first"),
    "anthropic_thinking_block_modified": (5, "content[0]", "thinking_modified"),
}


def test_every_invalid_file_is_covered() -> None:
    files = {p.stem for p in (REQUESTS / "invalid").glob("anthropic_*.json")}
    assert files == set(INVALID)


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_requests_raise_with_index_field_and_rule(name: str) -> None:
    request = load(REQUESTS / "invalid" / f"{name}.json")
    index, field, rule = INVALID[name]
    # The 5th marker counts only with the tool definitions; the edited thinking block shows
    # only against the original response (the API checks signatures we cannot).
    original = parallel()["messages"] if rule == "thinking_modified" else None
    with pytest.raises(ValidationError) as caught:
        messages.validate(request["messages"], system=request["system"],
                          tools=request["tools"], thinking=request["thinking"],
                          original=original)
    assert (caught.value.details["index"], caught.value.details["field"],
            caught.value.details["rule"]) == (index, field, rule)
    assert f"message {index}" in str(caught.value) and rule in str(caught.value)
    for text in ("Northwind", "EUR", "registry", "Retry"):
        assert text not in str(caught.value) and text not in json.dumps(caught.value.details)
    if rule != "thinking_modified":
        with pytest.raises(ValidationError):
            messages.compact(request["messages"], system=request["system"],
                             tools=request["tools"], thinking=request["thinking"],
                             budget=100_000, estimator=CHARS)


def test_what_one_request_cannot_show() -> None:
    request = load(REQUESTS / "invalid" / "anthropic_thinking_block_modified.json")
    messages.validate(request["messages"], system=request["system"], tools=request["tools"],
                      thinking=request["thinking"])  # no original: undetectable
    dropped = load(REQUESTS / "invalid" / "anthropic_thinking_block_dropped.json")
    messages.validate(dropped["messages"])  # thinking not declared: nothing to enforce
    five = load(REQUESTS / "invalid" / "anthropic_five_cache_breakpoints.json")
    messages.validate(five["messages"], system=five["system"])  # the 5th is on a tool


def _bad(content: Any, role: str = "user") -> list[dict[str, Any]]:
    return [{"role": role, "content": content}]


TOOL_USE = {"type": "tool_use", "id": "t1", "name": "run", "input": {}}


@pytest.mark.parametrize(("history", "index", "rule"), [
    ([{"role": "narrator", "content": SECRET}], 0, "unknown_role"),
    ([{"role": "user"}], 0, "missing_content"),
    (_bad(42), 0, "content_type"),
    (_bad(""), 0, "empty_content"),
    (_bad([{"text": SECRET}]), 0, "block_type"),
    (_bad([{"type": "text", "text": ""}]), 0, "empty_text"),
    (_bad([{"type": "text", "text": 5}]), 0, "empty_text"),
    (_bad([TOOL_USE]), 0, "block_role"),
    (_bad([{"type": "thinking", "thinking": SECRET, "signature": "s"}]), 0, "block_role"),
    ([{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                         "content": SECRET}]}], 1, "block_role"),
    ([{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "tool_use", "name": "run", "input": {}}]}],
     1, "missing_id"),
    ([{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{**TOOL_USE, "input": SECRET}]}], 1, "input_type"),
    ([{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": SECRET}]}],
     1, "missing_signature"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "is_error": "yes", "content": SECRET}]}],
     2, "is_error_type"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": {"text": SECRET}}]}], 2, "content_type"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "r"}]},
      {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "r"}]}], 3, "duplicated_call_id"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "assistant", "content": SECRET},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "r"}]}], 1, "unanswered_tool_call"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "r"},
                                   {"type": "tool_result", "tool_use_id": "t1",
                                    "content": SECRET}]}], 2, "duplicated_tool_result"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": [TOOL_USE]}],
     1, "unanswered_tool_call"),
    (["not a message"], 0, "message_type"),
])
def test_bad_input_names_index_and_rule_never_content(history: list[Any], index: int,
                                                      rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        messages.to_transcript(history, estimator=CHARS)
    assert caught.value.details["index"] == index
    assert caught.value.details["rule"] == rule
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value.details)


@pytest.mark.parametrize(("kwargs", "rule"), [
    ({"system": 5}, "system_type"),
    ({"system": [{"type": "image", "source": {}}]}, "system_block_type"),
    ({"system": [{"type": "text"}]}, "block_text"),
    ({"tools": "fx_rate"}, "tools_type"),
    ({"summary_role": "system"}, "summary_role"),
])
def test_bad_options(kwargs: dict[str, Any], rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        messages.to_transcript([{"role": "user", "content": "q"}], estimator=CHARS, **kwargs)
    assert caught.value.details["rule"] == rule


def test_messages_must_be_a_list() -> None:
    for value in ("hello", {"role": "user", "content": "x"}, 5):
        with pytest.raises(ValidationError):
            messages.validate(value)  # type: ignore[arg-type]


def test_a_final_assistant_message_may_be_empty_prefill() -> None:
    messages.validate([{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}])


# --- rendering compacted views ----------------------------------------------------------------


def test_masked_tool_results_keep_id_error_flag_and_marker() -> None:
    marker = {"type": "ephemeral"}
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "run", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "a"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 800},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
             "cache_control": marker,
             "content": [{"type": "text", "text": "Traceback " * 80},
                         {"type": "image", "source": {"type": "base64",
                                                      "media_type": "image/png",
                                                      "data": png(800, 600)}}]}]},
        {"role": "assistant", "content": "fixed"},
        {"role": "user", "content": "thanks"},
    ]
    result = messages.compact(history, budget=200, estimator=CHARS, keep_recent=1,
                              policy=ObservationMaskingPolicy(0))
    assert result.report.masked_turn_ids == ("m2.0", "m2.1")
    assert result.messages is not None
    first, second = dicts(result.messages)[2]["content"]
    assert first["tool_use_id"] == "t1" and "is_error" not in first
    assert second["tool_use_id"] == "t2" and second["is_error"] is True
    assert second["cache_control"] == marker
    assert first["content"].startswith("[tool result masked by cutctx]")
    assert second["content"].startswith("[tool result masked by cutctx]")
    assert_sendable(result.system, result.messages, history)
    # The image made the second result costly; its stub is priced by text and framing only.
    assert not result.plan.budget_unmet and result.tokens_after <= 200


@pytest.mark.parametrize("path", [*shared_requests(), CODING_AGENT], ids=lambda p: p.stem)
@pytest.mark.parametrize("policy_name", ["default", "mask", "drop", "summarize", "chain"])
def test_compacting_shared_histories_always_gives_sendable_requests(path: Path,
                                                                   policy_name: str) -> None:
    request = load(path)
    frozen = copy.deepcopy(request)
    policy = {"default": None, "mask": ObservationMaskingPolicy(0), "drop": DropOldestPolicy(),
              "summarize": SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=2),
              "chain": default_chain(prompt_id=DEFAULT_PROMPT_ID)}[policy_name]
    tools, thinking = request.get("tools"), request.get("thinking")
    total = messages.count_tokens(request["messages"], system=request.get("system"),
                                  tools=tools, estimator=CHARS)
    for fraction in (1.0, 0.8, 0.5, 0.3, 0.1, 0.0):
        for keep_recent in (0, 1, 4):
            try:
                result = messages.compact(request["messages"], system=request.get("system"),
                                          tools=tools, thinking=thinking,
                                          budget=int(total * fraction), policy=policy,
                                          summarizer=summarize, estimator=CHARS,
                                          keep_recent=keep_recent)
            except BudgetUnsatisfiable:
                continue
            assert result.messages is not None
            assert_sendable(result.system, result.messages, request["messages"], tools=tools,
                            thinking=thinking)
            assert result.tokens_after <= int(total * fraction) or result.plan.budget_unmet
            assert result.system == request.get("system")
    assert request == frozen


def test_an_assistant_message_left_first_gets_a_user_note() -> None:
    history = [{"role": "user", "content": "x" * 400}, {"role": "assistant", "content": "a"},
               {"role": "user", "content": "q"}]
    result = messages.compact(history, budget=40, estimator=CHARS, keep_recent=2,
                              keep_task=False)
    assert result.report.dropped_turn_ids == ("m0",)
    assert result.messages == [
        {"role": "user", "content": [{"type": "text", "text": messages.OMITTED_NOTE}]},
        {"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]


def test_a_summary_first_is_a_user_message_whatever_the_role() -> None:
    history = [{"role": "user", "content": f"question {n} " + "x" * 100} if n % 2 == 0 else
               {"role": "assistant", "content": f"answer {n} " + "y" * 100} for n in range(7)]
    result = messages.compact(history, budget=120, estimator=CHARS, keep_recent=1,
                              policy=SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=2),
                              summarizer=summarize, summary_role="assistant", keep_task=False)
    assert result.messages is not None
    assert result.report.summary_turn_ids
    assert dicts(result.messages)[0]["role"] == "user"
    assert dicts(result.messages)[0]["content"][0]["text"].startswith(messages.SUMMARY_HEADER)
    assert_sendable(result.system, result.messages, history)


def test_removal_merges_same_roles_keeping_the_latest_thinking_first() -> None:
    thinking = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    history = [
        {"role": "user", "content": "x" * 300},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier"}]},
        {"role": "user", "content": "y" * 300},
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "latest"}]},
        {"role": "user", "content": "z"},
    ]
    result = messages.compact(history, budget=70, estimator=CHARS, keep_recent=1,
                              pin=[1, 3], policy=DropOldestPolicy(), keep_task=False)
    assert result.report.dropped_turn_ids == ("m0", "m2")
    assert result.messages == [
        {"role": "user", "content": [{"type": "text", "text": messages.OMITTED_NOTE}]},
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "earlier"},
                                          {"type": "text", "text": "latest"}]},
        {"role": "user", "content": "z"},
    ]


def test_a_summary_inside_the_final_tool_loop_is_spoken_by_the_assistant() -> None:
    def use(call: str, think: bool = False) -> dict[str, Any]:
        lead = [{"type": "thinking", "thinking": "t", "signature": "s"}] if think else []
        return {"role": "assistant", "content": [*lead, {"type": "tool_use", "id": call,
                                                         "name": "run", "input": {}}]}

    def result(call: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                             "content": "r" * 200}]}

    history = [{"role": "user", "content": "task"}, use("t1", True), result("t1"),
               use("t2"), result("t2"), use("t3"), result("t3"), use("t4"), result("t4")]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    out = messages.compact(history, budget=150, estimator=CHARS, keep_recent=1,
                           thinking=thinking, summarizer=summarize,
                           policy=SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=2))
    assert out.messages is not None and out.report.summary_turn_ids
    assert dicts(out.messages)[1]["content"][0]["type"] == "thinking"
    summary = next(m for m in out.messages if isinstance(m["content"], list) and any(
        block.get("text", "").startswith(messages.SUMMARY_HEADER) for block in m["content"]))
    assert summary["role"] == "assistant"
    assert_sendable(out.system, out.messages, history, thinking=thinking)


def test_cache_markers_beyond_the_limit_are_stripped_oldest_first() -> None:
    from cutctx_adapters.anthropic._codec import _limit_breakpoints

    marker = {"type": "ephemeral"}
    system = [{"type": "text", "text": "s", "cache_control": marker}]
    out = [{"role": "user", "content": [{"type": "text", "text": str(n), "cache_control": marker}
                                        for n in range(4)]}]
    _limit_breakpoints(system, out, 3)
    assert "cache_control" not in system[0]
    assert ["cache_control" in b for b in out[0]["content"]] == [False, True, True, True]


def test_pins_by_index_and_predicate() -> None:
    history = [{"role": "user", "content": "x" * 200}, {"role": "assistant", "content": "a"},
               {"role": "user", "content": "y" * 200}, {"role": "assistant", "content": "b"},
               {"role": "user", "content": "q"}]
    by_index = messages.compact(history, budget=130, estimator=CHARS, keep_recent=1, pin=[0],
                                policy=DropOldestPolicy(), keep_task=False)
    assert "m0" in by_index.report.kept_turn_ids
    by_rule = messages.compact(history, budget=130, estimator=CHARS, keep_recent=1,
                               pin=lambda message, index: "y" in str(message["content"]),
                               policy=DropOldestPolicy(), keep_task=False)
    assert "m2" in by_rule.report.kept_turn_ids
    with pytest.raises(ValidationError):
        messages.to_transcript(history, estimator=CHARS, pin=[9])


# --- counting ---------------------------------------------------------------------------------


def test_estimated_count_adds_framing_and_tools() -> None:
    history = [{"role": "user", "content": "abcd"}]  # 1 token at 4 chars a token
    tool = {"name": "f", "input_schema": {"type": "object"}}
    base = messages.count_tokens(history, estimator=CHARS, calibration=1.0)
    assert base == MESSAGE_TOKENS + 1 + 4
    assert messages.count_tokens(history, estimator=CHARS, calibration=1.0, tools=[tool]) > (
        base + 346)
    mask_floor = MESSAGE_TOKENS + TOOL_BLOCK_TOKENS
    assert mask_floor == 12


def count_route(api: respx.Router, total: int) -> respx.Route:
    return api.post(f"{BASE_URL}/v1/messages/count_tokens").respond(
        200, json={"input_tokens": total})


def test_count_tokens_with_a_client_sends_one_request(api: respx.Router) -> None:
    request = parallel()
    route = count_route(api, 1234)
    total = messages.count_tokens(request["messages"], system=request["system"],
                                  tools=request["tools"], thinking=request["thinking"],
                                  model="claude-sonnet-4-5", client=sync_client())
    assert total == 1234 and route.call_count == 1
    body = json.loads(route.calls.last.request.content)
    assert body == {"model": "claude-sonnet-4-5", "messages": request["messages"],
                    "system": request["system"], "tools": request["tools"],
                    "thinking": request["thinking"]}


def test_exact_count_scales_turn_estimates_once_per_compaction(api: respx.Router) -> None:
    request = load(CODING_AGENT)
    route = count_route(api, 40_000)
    client = sync_client()
    options: dict[str, Any] = {"system": request["system"], "tools": request["tools"],
                               "thinking": request["thinking"], "keep_recent": 2}
    job = messages.plan(request["messages"], budget=20_000, exact_count=client, **options)
    assert route.call_count == 1
    assert job.conversion.transcript.token_estimate() == 40_000 - job.overhead
    result = messages.compact(request["messages"], budget=20_000, exact_count=client,
                              summarizer=summarize, **options)
    assert route.call_count == 2  # one per compaction decision, never one per message
    assert result.tokens_before == 40_000
    assert result.tokens_after <= 20_000 or result.plan.budget_unmet
    assert result.messages is not None
    assert_sendable(result.system, result.messages, request["messages"],
                    tools=request["tools"], thinking=request["thinking"])
    assert json.loads(route.calls.last.request.content)["messages"] == request["messages"]


def test_exact_count_is_not_sent_for_invalid_input(api: respx.Router) -> None:
    route = count_route(api, 10)
    with pytest.raises(ValidationError):
        messages.plan([{"role": "assistant", "content": [TOOL_USE]}], budget=5,
                      exact_count=sync_client())
    assert route.call_count == 0


def test_async_client_needs_the_async_path(api: respx.Router) -> None:
    route = count_route(api, 500)
    history = [{"role": "user", "content": "hello " * 50}]
    with pytest.raises(ValidationError) as caught:
        messages.plan(history, budget=100, exact_count=async_client())
    assert "aplan" in str(caught.value)
    assert route.call_count == 0

    async def run() -> tuple[int, int]:
        client = async_client()
        exact = await messages.acount_tokens(history, client=client)
        result = await messages.acompact(history, budget=1000, exact_count=client,
                                         estimator=CHARS)
        return exact, result.tokens_before

    assert asyncio.run(run()) == (500, 500)
    assert route.call_count == 2


def test_count_needs_a_model_and_a_count_method() -> None:
    history = [{"role": "user", "content": "q"}]
    with pytest.raises(ValidationError):
        messages.count_tokens(history, model=None, client=sync_client())
    with pytest.raises(ValidationError):
        messages.count_tokens(history, client=object())


# --- the session format -----------------------------------------------------------------------


def test_format_round_trips_a_request() -> None:
    request = parallel()
    fmt = messages.FORMAT
    conv = fmt.to_transcript(request["messages"], request["system"], CHARS, None, False)
    assert fmt.split(conv.render(conv.transcript)) == (request["system"], request["messages"])
    assert fmt.output_allowance(request) == 16_000
    assert fmt.overhead(request, CHARS) > 346


def test_module_doctest() -> None:
    import doctest

    assert doctest.testmod(messages).failed == 0

"""cutctx_adapters.openai.chat: Chat Completions messages <-> Transcript, and input validation."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from openai._utils import maybe_transform
from openai.types.chat import ChatCompletion, completion_create_params

from cutctx import (
    CharRatioEstimator,
    CompactionBudget,
    CompactionExecutor,
    ObservationMaskingPolicy,
    Role,
    ValidationError,
)
from cutctx_adapters.openai import chat
from tests._support.data import (
    INVALID_REQUESTS,
    REQUESTS,
    SWE_AGENT_SKIP,
    LoadMessages,
    load_messages,
    swe_agent_params,
    swe_agent_runs,
)
from tests._support.long_histories import LONG_HISTORIES, long_history_params
from tests.openai import chat_rules

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "histories"
CHARS = CharRatioEstimator()
MARKER = "SECRET-MARKER-7f3a"

PNG_1X1 = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
           "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
WAV_B64 = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
PDF_B64 = "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iago8PCAvVHlwZSAvUGFnZSA+PgplbmRvYmoK"


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city":"Oslo"}',
         **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}, **extra}


def asks(*calls: dict[str, Any], content: Any = None, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls), **extra}


def result(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def user(content: Any = "hello", **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **extra}


def sent_by_sdk(messages: list[Any]) -> list[dict[str, Any]]:
    """What openai-python puts in the request body for ``messages``."""
    body = maybe_transform({"model": "gpt-4o", "messages": messages},
                           completion_create_params.CompletionCreateParamsNonStreaming)
    assert isinstance(body, dict)
    sent: list[dict[str, Any]] = body["messages"]
    return sent


def response_message(message: Mapping[str, Any]) -> Any:
    """A ``ChatCompletionMessage`` as a user gets it: ``response.choices[0].message``."""
    response = ChatCompletion.model_validate({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": dict(message)}],
    })
    return response.choices[0].message


def round_trip(messages: list[Any], **options: Any) -> list[dict[str, Any]]:
    conv = chat.to_transcript(messages, **{"estimator": CHARS, **options})
    return conv.render(conv.transcript)


SHAPES: dict[str, list[dict[str, Any]]] = {
    "system": [{"role": "system", "content": "Be brief."}],
    "developer": [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]}],
    "system_with_name": [{"role": "system", "name": "example_user", "content": "Hi"}],
    "user_string": [user("What is the weather?")],
    "user_named": [user("hi", name="alice")],
    "user_parts": [user([
        {"type": "text", "text": "Look at this"},
        {"type": "image_url", "image_url": {"url": PNG_1X1, "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
        {"type": "file", "file": {"file_data": PDF_B64, "filename": "a.pdf"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ])],
    "assistant_text": [user(), {"role": "assistant", "content": "Hello!"}],
    "assistant_parts": [user(), {"role": "assistant", "content": [
        {"type": "text", "text": "Partly "}, {"type": "refusal", "refusal": "no."}]}],
    "assistant_refusal": [user(), {"role": "assistant", "content": None,
                                   "refusal": "I can't help with that."}],
    "assistant_audio": [user(), {"role": "assistant", "content": None,
                                 "audio": {"id": "audio_abc"}}],
    "parallel_tool_calls": [
        user(), asks(call("c1"), call("c2", "get_time", '{"tz":"UTC"}'), content="Checking."),
        result("c1", '{"temp": 3}'), result("c2", [{"type": "text", "text": "12:00"}]),
        {"role": "assistant", "content": "3 degrees at noon."},
    ],
    "custom_tool_call": [
        user(),
        asks({"id": "ct1", "type": "custom", "custom": {"name": "shell", "input": "ls -la"}}),
        result("ct1", "a.txt"),
    ],
    "legacy_function_call": [
        user(),
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": "{}"}},
        {"role": "function", "name": "get_weather", "content": "sunny"},
    ],
    "unknown_keys": [
        {"role": "system", "content": "s", "x_future": {"nested": [1, 2]}},
        user([{"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}},
              {"type": "future_part", "future_part": {"blob": "..."}, "extra": 1}]),
        asks(call("c1", x_call_extra=True), content=None, reasoning_content="thought",
             annotations=[], refusal=None),
        result("c1", "done", x_result_extra=None),
    ],
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_shape_round_trips_exactly(name: str) -> None:
    messages = SHAPES[name]
    assert round_trip(messages) == messages
    assert round_trip(messages, model="gpt-4o", estimator=None) == messages


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_round_trip_is_what_the_sdk_would_send(name: str) -> None:
    assert round_trip(SHAPES[name]) == sent_by_sdk(SHAPES[name])


def test_roles_map_to_engine_roles() -> None:
    messages = [
        {"role": "system", "content": "s"}, {"role": "developer", "content": "d"}, user(),
        asks(call("c1")), result("c1"),
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": ""}},
        {"role": "function", "name": "f", "content": "r"},
    ]
    conv = chat.to_transcript(messages, estimator=CHARS)
    assert [turn.role for turn in conv.transcript.turns] == [
        Role.SYSTEM, Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL]


def test_turn_content_is_text_with_placeholders_never_binary_data() -> None:
    conv = chat.to_transcript(SHAPES["user_parts"], estimator=CHARS)
    (turn,) = conv.transcript.turns
    assert turn.content.startswith("Look at this")
    for placeholder in ("[image_url]", "[input_audio]", "[file]"):
        assert placeholder in turn.content
    for data in (PNG_1X1[30:60], WAV_B64[10:40], PDF_B64[40:70], "file-abc123"):
        assert data not in turn.content


def test_tool_calls_and_refusals_are_readable_in_turn_text() -> None:
    conv = chat.to_transcript(SHAPES["parallel_tool_calls"] + SHAPES["assistant_refusal"][1:],
                              estimator=CHARS)
    turns = conv.transcript.turns
    assert "get_weather" in turns[1].content and '{"city":"Oslo"}' in turns[1].content
    assert "get_time" in turns[1].content and "Checking." in turns[1].content
    assert turns[3].content == "12:00"
    assert turns[-1].content == "I can't help with that."


# --- SDK objects ---------------------------------------------------------------------------

SDK_REPLY = {
    "role": "assistant", "content": None, "refusal": None, "annotations": [],
    "tool_calls": [call("call_a"), call("call_b", "get_time", '{"tz":"UTC"}')],
    "x_unknown_field": {"kept": True},
}


def sdk_history() -> list[Any]:
    message = response_message(SDK_REPLY)
    return [{"role": "system", "content": "s"}, user(), message,
            result("call_a", "rain"), result("call_b", "noon"),
            response_message({"role": "assistant", "content": "Rain at noon.", "refusal": None})]


def test_sdk_message_objects_render_as_the_sdk_sends_them() -> None:
    history = sdk_history()
    rendered = round_trip(history)
    assert rendered == sent_by_sdk(history)
    assert rendered[2] == history[2].model_dump(exclude_unset=True, mode="json")
    assert rendered[2]["x_unknown_field"] == {"kept": True}
    assert all(type(message) is dict for message in rendered)
    chat_rules.check(rendered)


def test_sdk_message_objects_and_dicts_get_the_same_turns() -> None:
    history = sdk_history()
    as_dicts = sent_by_sdk(history)
    objects = chat.to_transcript(history, estimator=CHARS).transcript
    plain = chat.to_transcript(as_dicts, estimator=CHARS).transcript
    assert objects == plain


def test_sdk_message_objects_are_never_mutated() -> None:
    history = sdk_history()
    before = [m if isinstance(m, dict) else m.model_dump() for m in copy.deepcopy(history)]
    result_ = chat.compact(history, budget=25, estimator=CHARS, keep_recent=1)
    assert result_.compacted
    after = [m if isinstance(m, dict) else m.model_dump() for m in history]
    assert after == before
    assert history[2].tool_calls[0].id == "call_a"


# --- lossless over agent histories: files, generated sessions, the SWE-agent runs -----------

REQUEST_FILE = REQUESTS / "openai_chat_parallel_tools.json"
FILES = [pytest.param(partial(load_messages, path), id=path.name)
         for path in [REQUEST_FILE, *sorted(EXAMPLES.glob("*.openai_chat.json"))]]


@pytest.mark.parametrize("history", [*FILES, *long_history_params(), *swe_agent_params()])
def test_all_keep_is_lossless_on_agent_histories(history: LoadMessages) -> None:
    messages = history()
    original = copy.deepcopy(messages)
    conv = chat.to_transcript(messages, model="gpt-4o")
    assert conv.render(conv.transcript) == original
    assert messages == original
    chat_rules.check(original)


@pytest.mark.skipif(not swe_agent_runs(), reason=SWE_AGENT_SKIP)
def test_swe_agent_runs_are_all_found() -> None:
    runs = [load_messages(path) for path in swe_agent_runs()]
    assert len(runs) >= 20
    styles = {any(m["role"] == "tool" for m in messages) for messages in runs}
    assert styles == {True, False}  # function calling, and tool output in user messages


def test_generated_histories_are_deterministic_long_and_in_both_styles() -> None:
    long, huge_newest = set(), set()
    for history in LONG_HISTORIES:
        messages = history.messages()
        assert messages == history.messages()
        style = any(m["role"] == "tool" for m in messages)  # else outputs are user messages
        if len(messages) >= 60 and sum(len(m["content"]) for m in messages) >= 90_000:
            long.add(style)
        if len(messages[-1]["content"]) >= 20_000:
            huge_newest.add(style)
    assert long == huge_newest == {True, False}


# --- ids and exchanges ---------------------------------------------------------------------

def test_turn_ids_are_stable_across_calls() -> None:
    messages = load_messages(REQUEST_FILE)
    first = chat.to_transcript(messages, estimator=CHARS).transcript
    again = chat.to_transcript(copy.deepcopy(messages), model="gpt-4o").transcript
    assert first.turn_ids() == again.turn_ids()
    assert [t.tool_call_id for t in first.turns] == [t.tool_call_id for t in again.turns]


def test_appending_messages_keeps_earlier_ids() -> None:
    messages = load_messages(REQUEST_FILE)
    longer = [*messages, asks(call("call_new")), result("call_new"), user("more")]
    short = chat.to_transcript(messages, estimator=CHARS).transcript
    long = chat.to_transcript(longer, estimator=CHARS).transcript
    assert long.turn_ids()[: len(short)] == short.turn_ids()
    assert long.turns[: len(short)] == short.turns
    assert len(set(long.turn_ids())) == len(longer)


def test_parallel_calls_and_their_results_form_one_exchange() -> None:
    conv = chat.to_transcript(load_messages(REQUEST_FILE), estimator=CHARS)
    correlation = [turn.tool_call_id for turn in conv.transcript.turns]
    # developer, user, assistant(2 calls), tool, tool, assistant, user, assistant(1), tool, ...
    assert correlation[2] is not None
    assert correlation[2] == correlation[3] == correlation[4]
    assert correlation[7] is not None and correlation[7] == correlation[8]
    assert correlation[7] != correlation[2]
    assert correlation[0] is correlation[1] is correlation[5] is correlation[9] is None


def test_legacy_function_call_and_result_form_one_exchange() -> None:
    conv = chat.to_transcript(SHAPES["legacy_function_call"], estimator=CHARS)
    turns = conv.transcript.turns
    assert turns[1].tool_call_id is not None and turns[1].tool_call_id == turns[2].tool_call_id


@pytest.mark.parametrize("history", [*long_history_params("function_calling"),
                                     *swe_agent_params("swe-agent-marshmallow-1867-4")])
def test_reused_call_ids_across_turns_are_accepted_as_separate_exchanges(
        history: LoadMessages) -> None:
    messages = history()
    call_ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(set(call_ids)) < len(call_ids)  # the history does reuse ids
    chat.validate(messages)
    turns = chat.to_transcript(messages, estimator=CHARS).transcript.turns
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            exchange = range(index, index + 1 + len(message["tool_calls"]))  # call, its results
            assert {turns[i].tool_call_id for i in exchange} == {turns[index].tool_call_id}
            others = [t.tool_call_id for i, t in enumerate(turns) if i not in exchange]
            assert turns[index].tool_call_id not in others


def test_reused_call_id_in_minimal_history() -> None:
    messages = [user(), asks(call("c1")), result("c1"), asks(call("c1")), result("c1", "again")]
    chat.validate(messages)
    assert round_trip(messages) == messages


def test_turn_metadata_names_tools() -> None:
    conv = chat.to_transcript(
        [*SHAPES["parallel_tool_calls"], *SHAPES["legacy_function_call"][1:],
         *SHAPES["custom_tool_call"][1:]], estimator=CHARS)
    names = [turn.metadata.get("cutctx.tool") for turn in conv.transcript.turns]
    assert names == [None, "get_weather, get_time", "get_weather", "get_time", None,
                     "get_weather", "get_weather", "shell", "shell"]


# --- rendering compacted views -------------------------------------------------------------

def masked_view(messages: list[Any]) -> tuple[list[dict[str, Any]], Any]:
    conv = chat.to_transcript(messages, estimator=CHARS)
    budget = CompactionBudget(0, 0)
    plan = ObservationMaskingPolicy(0).decide(conv.transcript, budget)
    view = CompactionExecutor().apply(conv.transcript, plan)
    return conv.render(view), plan


def test_masked_tool_messages_keep_their_tool_call_id_and_other_keys() -> None:
    messages = [user(), asks(call("c1"), call("c2")),
                result("c1", "x" * 2000, x_extra="kept"),
                result("c2", [{"type": "text", "text": "y" * 2000}])]
    rendered, plan = masked_view(messages)
    assert len(plan.actions) == 4
    assert rendered[2]["tool_call_id"] == "c1" and rendered[2]["x_extra"] == "kept"
    assert rendered[3]["tool_call_id"] == "c2"
    for message in rendered[2:]:
        assert isinstance(message["content"], str)
        assert message["content"].startswith("[tool result masked by cutctx]")
    assert rendered[:2] == messages[:2]
    chat_rules.check(rendered)


def test_masked_function_message_keeps_its_name() -> None:
    messages = [user(), {"role": "assistant", "content": None,
                         "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "z" * 2000}]
    rendered, _ = masked_view(messages)
    assert rendered[2]["name"] == "f" and rendered[2]["role"] == "function"
    assert rendered[2]["content"].startswith("[tool result masked by cutctx]")


def test_compaction_never_leaves_empty_tool_calls() -> None:
    messages = [{"role": "system", "content": "s"}, user("u" * 400),
                asks(call("c1"), call("c2"), content="a" * 400), result("c1", "r" * 400),
                result("c2", "r" * 400), user("latest")]
    out = chat.compact(messages, budget=60, estimator=CHARS, keep_recent=1,
                       keep_task=False).messages
    assert out is not None
    assert all(m.get("tool_calls") != [] for m in out)
    assert not any(m["role"] == "tool" for m in out)
    chat_rules.check(out)


# --- pins --------------------------------------------------------------------------------

PIN_HISTORY = [{"role": "system", "content": "s"}, user("first " * 50),
               asks(call("c1")), result("c1", "big " * 200),
               {"role": "assistant", "content": "answer " * 50}, user("next " * 50),
               {"role": "assistant", "content": "last"}]


@pytest.mark.parametrize("pin", [
    [1], [-6], lambda message, index: index == 1,
    lambda message, index: str(message["content"]).startswith("first"),
])
def test_pinned_message_is_never_touched(pin: Any) -> None:
    conv = chat.to_transcript(PIN_HISTORY, estimator=CHARS, pin=pin)
    assert [turn.pinned for turn in conv.transcript.turns] == [
        False, True, False, False, False, False, False]
    out = chat.compact(PIN_HISTORY, budget=120, estimator=CHARS, keep_recent=1, pin=pin)
    assert out.messages is not None and out.compacted
    assert PIN_HISTORY[1] in out.messages
    assert out.report.dropped_turn_ids


def test_pinned_tool_message_keeps_its_whole_exchange() -> None:
    out = chat.compact(PIN_HISTORY, budget=300, estimator=CHARS, keep_recent=1, pin=[3])
    assert out.messages is not None
    assert PIN_HISTORY[2] in out.messages and PIN_HISTORY[3] in out.messages
    chat_rules.check(out.messages)


def test_pin_predicate_sees_sdk_objects_as_plain_dicts() -> None:
    seen: list[Any] = []

    def pin(message: Mapping[str, Any], index: int) -> bool:
        seen.append(message)
        return False

    chat.to_transcript(sdk_history(), estimator=CHARS, pin=pin)
    assert all(isinstance(message, dict) for message in seen)
    assert seen[2]["tool_calls"][0]["id"] == "call_a"


@pytest.mark.parametrize("pin", [[7], [-8], ["1"], [True]])
def test_bad_pin_index_is_a_validation_error(pin: list[Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        chat.to_transcript(PIN_HISTORY, estimator=CHARS, pin=pin)
    assert caught.value.details["rule"] == "pin_index"


# --- bad input -----------------------------------------------------------------------------

BAD: dict[str, tuple[Callable[[], list[Any]], int, str]] = {  # rule: "a|b" accepts either
    "unknown_role": (lambda: [user(), {"role": "robot", "content": MARKER}], 1, "unknown_role"),
    "missing_role": (lambda: [{"content": MARKER}], 0, "unknown_role"),
    "orphaned_tool_message": (lambda: [user(MARKER), result("c1", MARKER)], 1,
                              "orphaned_tool_result"),
    "tool_message_answers_another_call": (
        lambda: [user(), asks(call("c1")), result("c2", MARKER)], 2, "orphaned_tool_result"),
    "tool_message_after_answered_exchange": (
        lambda: [user(), asks(call("c1")), result("c1"), user(MARKER), result("c1", MARKER)],
        4, "orphaned_tool_result|duplicated_tool_result"),
    "unanswered_tool_call": (lambda: [user(MARKER), asks(call("c1"), call("c2")), result("c1")],
                             1, "unanswered_tool_call"),
    "unanswered_at_end": (lambda: [user(), asks(call("c1", arguments=MARKER))], 1,
                          "unanswered_tool_call"),
    "answered_after_user_message": (
        lambda: [user(), asks(call("c1")), user(MARKER), result("c1", MARKER)], 1,
        "unanswered_tool_call"),
    "answered_after_assistant_message": (
        lambda: [user(), asks(call("c1")), {"role": "assistant", "content": MARKER},
                 result("c1")], 1, "unanswered_tool_call"),
    "duplicated_call_id_in_one_message": (
        lambda: [user(), asks(call("c1"), call("c1")), result("c1"), result("c1")], 1,
        "duplicated_call_id"),
    "missing_user_content": (lambda: [{"role": "user", "name": MARKER}], 0, "missing_content"),
    "missing_system_content": (lambda: [{"role": "system", "content": None}], 0,
                               "missing_content"),
    "missing_tool_content": (lambda: [user(), asks(call("c1")),
                                      {"role": "tool", "tool_call_id": "c1"}], 2,
                             "missing_content"),
    "assistant_without_anything": (lambda: [user(MARKER), {"role": "assistant"}], 1,
                                   "missing_content"),
    "missing_tool_call_id": (lambda: [user(), asks(call("c1")),
                                      {"role": "tool", "content": MARKER}], 2, "missing_id"),
    "empty_tool_call_id": (lambda: [user(), asks(call("c1")), result("", MARKER)], 2,
                           "missing_id"),
    "missing_call_id": (lambda: [user(), asks({"type": "function", "function": {
        "name": "f", "arguments": MARKER}})], 1, "missing_id"),
    "missing_function_name": (lambda: [user(), asks({"id": "c1", "type": "function",
                                                     "function": {"arguments": MARKER}})],
                              1, "missing_name"),
    "content_int": (lambda: [user(), {"role": "user", "content": 42}], 1, "content_type"),
    "content_dict": (lambda: [{"role": "user", "content": {"text": MARKER}}], 0,
                     "content_type"),
    "part_without_type": (lambda: [user([{"text": MARKER}])], 0, "part_type"),
    "text_part_without_text": (lambda: [user([{"type": "text", "value": MARKER}])], 0,
                               "part_text"),
    "tool_calls_not_a_list": (lambda: [user(), {"role": "assistant", "content": "x",
                                                "tool_calls": {"id": MARKER}}], 1,
                              "tool_calls_type"),
    "empty_tool_calls": (lambda: [user(), {"role": "assistant", "content": MARKER,
                                           "tool_calls": []}], 1, "tool_calls_type"),
    "tool_call_not_an_object": (lambda: [user(), asks(MARKER)],  # type: ignore[arg-type]
                                1, "tool_call_type"),
    "arguments_not_a_string": (
        lambda: [user(), asks(call("c1", arguments={"q": MARKER}))],  # type: ignore[arg-type]
        1, "arguments_type"),
    "message_not_a_dict": (lambda: [user(), MARKER], 1, "message_type"),
    "message_is_a_list": (lambda: [user(), [MARKER]], 1, "message_type"),
    "message_is_none": (lambda: [user(), None], 1, "message_type"),
    "function_without_call": (lambda: [user(), {"role": "function", "name": "f",
                                                "content": MARKER}], 1,
                              "orphaned_tool_result"),
    "function_without_name": (lambda: [user(), {"role": "function", "content": MARKER}], 1,
                              "missing_name"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_index_and_rule_without_content(case: str) -> None:
    build, index, rule = BAD[case]
    for entry in (chat.validate, lambda m: chat.to_transcript(m, estimator=CHARS),
                  lambda m: chat.count_tokens(m, estimator=CHARS),
                  lambda m: chat.compact(m, budget=10, estimator=CHARS)):
        with pytest.raises(ValidationError) as caught:
            entry(build())
        error = caught.value
        assert error.details["index"] == index, error.details
        assert error.details["rule"] in rule.split("|"), error.details
        assert error.details.get("field", "a message as a whole") != ""  # never an empty field
        assert "field ''" not in str(error)
        assert f"message {index}" in str(error)
        assert MARKER not in str(error) and MARKER not in json.dumps(error.to_dict(), default=str)


def test_non_json_value_in_a_message_names_the_index() -> None:
    with pytest.raises(ValidationError) as caught:
        chat.validate([user(), {"role": "user", "content": "x", "extra": {MARKER}}])
    assert caught.value.details["index"] == 1
    assert MARKER not in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        chat.validate([user(), object()])
    assert caught.value.details["index"] == 1


@pytest.mark.parametrize("messages", [{"role": "user", "content": MARKER}, MARKER, None, 3])
def test_messages_that_are_not_a_list_are_rejected(messages: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        chat.validate(messages)
    assert caught.value.details["rule"] == "messages_type"
    assert MARKER not in str(caught.value)


def test_unanswered_call_error_names_the_call() -> None:
    with pytest.raises(ValidationError) as caught:
        chat.validate([user(), asks(call("call_ZZZ")), user()])
    assert "call_ZZZ" in caught.value.details["call_id"]


INVALID_FILES = {
    "openai_chat_missing_tool_message.json": (2, "unanswered_tool_call"),
    "openai_chat_orphan_tool_message.json": (7, "orphaned_tool_result"),
}


@pytest.mark.parametrize("name", sorted(INVALID_FILES))
def test_invalid_shared_requests_are_rejected(name: str) -> None:
    path = INVALID_REQUESTS / name
    assert sorted(p.name for p in path.parent.glob("openai_chat_*.json")) == sorted(INVALID_FILES)
    messages = load_messages(path)
    index, rule = INVALID_FILES[name]
    with pytest.raises(ValidationError) as caught:
        chat.validate(messages)
    assert caught.value.details["index"] == index
    assert caught.value.details["rule"] == rule
    assert chat_rules.violations(messages)  # the independent checker agrees


def test_invalid_summary_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        chat.to_transcript([user()], estimator=CHARS, summary_role="tool")


# --- the independent checker itself -------------------------------------------------------

NOT_STRUCTURAL = {"missing_function_name", "arguments_not_a_string"}  # field-level rules


@pytest.mark.parametrize("case", sorted(set(BAD) - NOT_STRUCTURAL))
def test_chat_rules_flags_structural_cases(case: str) -> None:
    assert chat_rules.violations(BAD[case][0]()), case


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_chat_rules_accepts_valid_shapes(name: str) -> None:
    chat_rules.check(SHAPES[name])

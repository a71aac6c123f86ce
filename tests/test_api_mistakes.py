"""Mistakes the API can name: a whole response appended, options a command ignores, a model
assumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from cutctx import ValidationError
from cutctx_adapters.anthropic import messages
from cutctx_adapters.openai import chat, responses

HISTORY = [{"role": "user", "content": "What is 6 x 7?"}]
COMPLETION = ChatCompletion.model_validate({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "42"}}]})


@pytest.fixture(autouse=True)
def _offline(tiktoken_cache: Path) -> None:
    """Counting uses the seeded tiktoken cache."""


def test_a_whole_chat_completion_says_to_append_its_message() -> None:
    with pytest.raises(ValidationError) as caught:
        chat.compact([*HISTORY, COMPLETION], budget=1000)
    assert caught.value.details == {"index": 1, "rule": "response_not_message"}
    assert "field" not in str(caught.value)  # the message as a whole, no empty field named
    assert "response.choices[0].message" in str(caught.value)
    fixed = chat.compact([*HISTORY, COMPLETION.choices[0].message], budget=1000)
    assert fixed.messages[-1] == {"role": "assistant", "content": "42"}


def test_a_stream_chunk_says_to_append_the_final_message() -> None:
    chunk = ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": None}]})
    with pytest.raises(ValidationError, match="get_final_completion"):
        chat.validate([*HISTORY, chunk])


def test_a_whole_response_says_to_add_its_output_items() -> None:
    response = Response.model_validate({
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "42", "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": []})
    with pytest.raises(ValidationError) as caught:
        responses.compact([*HISTORY, response], budget=1000)
    assert caught.value.details["rule"] == "response_not_item"
    assert "input += response.output" in str(caught.value)
    fixed = responses.compact([*HISTORY, *response.output], budget=1000)
    assert len(fixed.input) == 2


def test_an_anthropic_message_appended_is_read_as_its_role_and_content() -> None:
    reply = Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "42"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})
    result = messages.compact([*HISTORY, reply], budget=1000)
    assert result.messages[-1] == {"role": "assistant",
                                   "content": [{"type": "text", "text": "42"}]}


def test_a_result_says_which_model_it_counted_for() -> None:
    assumed = chat.compact(HISTORY, budget=1000)
    assert assumed.model == chat.DEFAULT_MODEL == "gpt-4o"
    assert str(assumed).endswith("counted as gpt-4o")
    assert responses.compact("Hi", budget=1000).model == "gpt-5"
    assert messages.compact(HISTORY, budget=1000).model == messages.DEFAULT_MODEL


def test_count_refuses_the_planning_options_it_would_ignore(
        capsys: pytest.CaptureFixture[str]) -> None:
    from cutctx_adapters.cli import main

    history = Path(__file__).resolve().parents[1] / "examples" / "histories"
    path = history / "coding_agent.openai_chat.json"
    for option in (("--pin", "1"), ("--keep-recent", "2")):
        assert main(["count", str(path), *option]) == 2
        assert f"unrecognized arguments: {' '.join(option)}" in capsys.readouterr().err
    assert main(["inspect", str(path), "--pin", "1", "--keep-recent", "2", "--json"]) in (0, 1)


# --- misuse that used to pass (issue 39, item 23) -------------------------------------------

MODULES: dict[str, Any] = {"chat": chat, "responses": responses, "anthropic": messages}
LIST_FIELD = {"chat": "messages", "responses": "input", "anthropic": "messages"}


@pytest.mark.parametrize("name", list(MODULES))
def test_a_whole_request_given_as_the_history_says_to_pass_its_list(name: str) -> None:
    field = LIST_FIELD[name]
    with pytest.raises(ValidationError) as caught:
        MODULES[name].compact({field: HISTORY}, budget=1000)
    assert f"{field} must be a list of" in str(caught.value)
    assert f"got dict; that is a whole request: pass its list, request[{field!r}]" in str(
        caught.value)
    assert "message 0" not in str(caught.value) and "item 0" not in str(caught.value)
    assert caught.value.details == {"field": field, "rule": f"{field}_type", "type": "dict"}


@pytest.mark.parametrize("name", list(MODULES))
def test_an_entry_that_is_not_an_object_says_what_it_is_and_names_no_empty_field(
        name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        MODULES[name].compact([*HISTORY, 42], budget=1000)
    assert "got int" in str(caught.value) and "field" not in str(caught.value)
    assert caught.value.details["index"] == 1 and "field" not in caught.value.details


@pytest.mark.parametrize("pin", [[0, "x"], (0, 1.0), [True]])
def test_a_pin_that_is_not_an_index_is_refused_when_the_settings_are_made(pin: Any) -> None:
    from cutctx_adapters import CompactionSession, CompactionSettings

    for make in (lambda: CompactionSettings(pin=pin),
                 lambda: CompactionSession(chat.FORMAT, model="gpt-4o", pin=pin),
                 lambda: chat.compact(HISTORY, budget=1000, pin=pin)):
        with pytest.raises(ValidationError) as caught:
            make()
        assert caught.value.details["field"] == "pin"
        assert caught.value.details["rule"] == "pin_index"
        assert f"entry {len(pin) - 1} is a {type(pin[-1]).__name__}" in str(caught.value)


TOOLS: dict[str, tuple[list[Any], list[Any]]] = {
    "chat": ([{"name": "x"}, {"type": "function", "function": {"description": "no name"}}],
             [{"type": "function", "function": {"name": "read", "parameters": {}}},
              {"type": "custom", "custom": {"name": "patch"}}]),
    "responses": ([{"name": "x"}, {"type": "function", "parameters": {}},
                   {"type": "mcp", "server_url": "https://mcp.test"}],
                  [{"type": "function", "name": "read", "parameters": {}, "strict": True},
                   {"type": "web_search"}, {"type": "mcp", "server_label": "docs"}]),
    "anthropic": ([{"name": "x"}, {"input_schema": {"type": "object"}}, {"type": 5}],
                  [{"name": "read", "input_schema": {"type": "object"}},
                   {"type": "web_search_20250305", "name": "web_search"},
                   {"type": "custom", "name": "x", "input_schema": {"type": "object"}}]),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_a_tool_definition_without_what_the_format_requires_is_refused(name: str) -> None:
    wrong, right = TOOLS[name]
    for tool in [*wrong, "read_file"]:
        with pytest.raises(ValidationError) as caught:
            MODULES[name].compact(HISTORY, budget=1000, tools=[*right, tool])
        assert caught.value.details["index"] == len(right)
        assert caught.value.details["rule"] == "tool_definition"
        assert f"tool {len(right)}:" in str(caught.value)
    assert MODULES[name].compact(HISTORY, budget=2000, tools=right).report.turns_before == 1


def test_a_session_refuses_a_tool_definition_when_its_request_is_read() -> None:
    from cutctx_adapters import CompactionSession

    session = CompactionSession(chat.FORMAT, model="gpt-4o")
    with pytest.raises(ValidationError) as caught:
        session.prepare(messages=HISTORY, tools=[{"name": "x"}])
    assert caught.value.details["rule"] == "tool_definition"

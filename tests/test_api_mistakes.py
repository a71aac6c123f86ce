"""Mistakes the API can name: a whole response appended, options a command ignores, a model
assumed."""

from __future__ import annotations

from pathlib import Path

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
    assert caught.value.details == {"index": 1, "field": "", "rule": "response_not_message"}
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

"""Kept Anthropic messages render exactly as given (issue 15, item 4).

* Consecutive same-role messages the caller wrote stay separate, with and without compaction;
  only neighbours a removal or a summary made are merged (tool results first, thinking first).
* ``role: "system"`` messages (the SDK's ``SystemMessageParam``) are system turns: kept, in
  place, with the message they follow.
* Base64 ``data`` given as a ``pathlib.Path`` or a file object is read and encoded as the SDK
  does, without changing the caller's message or moving its file.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import struct
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from anthropic import Anthropic
from hypothesis import given, settings
from hypothesis import strategies as st

import cutctx
from cutctx import CharRatioEstimator, DropOldestPolicy
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from tests._support.http import mocked_api
from tests._support.plain import dicts

CHARS = CharRatioEstimator()
BASE_URL = "https://api.anthropic.test"
MODEL = "claude-sonnet-4-5"


def png_bytes(width: int = 40, height: int = 30) -> bytes:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    return header + struct.pack(">II", width, height) + b"\x08\x02\0\0\0" + b"\0" * 16


def result(call: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": text}


def use(call: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": call, "name": "run", "input": {"cmd": call}}]}


def round_trip(history: list[dict[str, Any]], system: Any = None) -> tuple[Any, Any]:
    conv = messages.to_transcript(history, system=system, estimator=CHARS)
    rendered: tuple[Any, Any] = conv.render(conv.transcript)
    return rendered


# --- same-role neighbours ----------------------------------------------------------------------

SAME_ROLE: dict[str, list[dict[str, Any]]] = {
    "results then a note": [
        {"role": "user", "content": "Run the tests."}, use("t1"),
        {"role": "user", "content": [result("t1", "3 failed")]},
        {"role": "user", "content": "Also check the linter."}],
    "two user messages": [
        {"role": "user", "content": "Hello."}, {"role": "user", "content": "Are you there?"}],
    "two assistant messages": [
        {"role": "user", "content": "Explain."},
        {"role": "assistant", "content": "First part."},
        {"role": "assistant", "content": [{"type": "text", "text": "Second part."}]},
        {"role": "user", "content": "Thanks."}],
}


@pytest.mark.parametrize("name", SAME_ROLE)
def test_same_role_neighbours_round_trip_as_given(name: str) -> None:
    history = SAME_ROLE[name]
    assert round_trip(history) == (None, history)


def test_same_role_neighbours_a_compaction_keeps_stay_as_given() -> None:
    history = [
        {"role": "user", "content": "Task: fix the build."},
        {"role": "assistant", "content": "Looking. " + "x" * 800},
        {"role": "user", "content": "Any news?"},
        use("t1"),
        {"role": "user", "content": [result("t1", "build ok")]},
        {"role": "user", "content": "Also run the linter."},
    ]
    out = messages.compact(history, budget=120, estimator=CHARS, keep_recent=3)
    assert out.messages is not None and out.report.dropped_turn_ids
    assert out.messages[-2:] == history[-2:]  # the results message and the note, separate
    messages.validate(out.messages)


def test_a_removal_merges_the_neighbours_it_makes() -> None:
    """Dropping the assistant turn between two user messages leaves them adjacent: they are
    merged (the API would combine them anyway), in order."""
    history = [
        {"role": "user", "content": "Task: fix the build."},
        {"role": "assistant", "content": "x" * 2_000},
        {"role": "user", "content": "Any news?"},
        {"role": "assistant", "content": "Soon."},
        {"role": "user", "content": "Thanks."},
    ]
    out = messages.compact(history, budget=60, estimator=CHARS, keep_recent=3,
                           policy=DropOldestPolicy(), pin=[0])
    assert out.messages is not None and out.report.dropped_turn_ids == ("m1",)
    assert out.messages[0] == {"role": "user", "content": [
        {"type": "text", "text": "Task: fix the build."}, {"type": "text", "text": "Any news?"}]}
    assert [m["role"] for m in out.messages] == ["user", "assistant", "user"]


# --- system messages ---------------------------------------------------------------------------

def with_system_messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Task: refactor the parser."},
        {"role": "assistant", "content": "On it. " + "y" * 1_500},
        {"role": "user", "content": "Use the new style guide from now on."},
        {"role": "system", "content": "Follow style guide v2: snake_case, 100 columns."},
        use("t1"),
        {"role": "user", "content": [result("t1", "z" * 1_500)]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Great."},
        {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
        {"role": "user", "content": "Summarize."},
    ]


def test_system_messages_round_trip_as_system_turns() -> None:
    history = with_system_messages()
    conv = messages.to_transcript(history, estimator=CHARS)
    roles = {turn.turn_id: turn.role for turn in conv.transcript.turns}
    assert roles["m3"] is cutctx.Role.SYSTEM and roles["m8"] is cutctx.Role.SYSTEM
    assert conv.render(conv.transcript) == (None, history)


@pytest.mark.parametrize("budget", [200, 400, 800, 2_000])
def test_system_messages_are_kept_in_place_with_the_message_they_follow(budget: int) -> None:
    history = with_system_messages()
    out = messages.compact(history, budget=budget, estimator=CHARS, keep_recent=1)
    assert out.messages is not None
    for index in (3, 8):  # what it follows is there, right before it (merged onto or not)
        position = dicts(out.messages).index(history[index])
        before = dicts(out.messages)[position - 1]["content"]
        tail = before if isinstance(before, str) else before[-1]["text"]
        assert tail == history[index - 1]["content"]
    messages.validate(out.messages)


def test_a_system_message_with_tool_blocks_is_refused_by_name() -> None:
    history = [{"role": "user", "content": "hi"},
               {"role": "system", "content": [{"type": "tool_use", "id": "x", "name": "n",
                                               "input": {}}]}]
    with pytest.raises(cutctx.ValidationError) as caught:
        messages.validate(history)
    assert caught.value.details["index"] == 1 and caught.value.details["rule"] == "block_role"


# --- base64 data from files ----------------------------------------------------------------------

def image_message(data: Any) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": data}},
        {"type": "text", "text": "What is in this picture?"}]}


def test_a_path_and_a_file_object_are_read_as_the_sdk_reads_them(tmp_path: Path) -> None:
    raw = png_bytes()
    path = tmp_path / "shot.png"
    path.write_bytes(raw)
    stream = io.BytesIO(b"ignored prefix" + raw)
    stream.seek(len(b"ignored prefix"))
    expected = base64.b64encode(raw).decode("ascii")
    for data in (path, stream):
        history = [image_message(data)]
        before = copy.copy(history[0]["content"][0]["source"])
        out = messages.compact(history, budget=10_000, estimator=CHARS)
        assert out.messages is not None
        assert dicts(out.messages)[0]["content"][0]["source"]["data"] == expected
        assert history[0]["content"][0]["source"] == before  # the caller's message unchanged
    assert stream.tell() == len(b"ignored prefix")  # the file put back where it stood


def test_an_unreadable_path_is_a_validation_error_without_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "secret-name.png"
    with pytest.raises(cutctx.ValidationError) as caught:
        messages.compact([image_message(missing)], budget=10_000, estimator=CHARS)
    assert caught.value.details["rule"] == "file_unreadable"
    assert caught.value.details["index"] == 0
    assert "secret-name" not in str(caught.value) and "secret-name" not in repr(
        caught.value.details)


@settings(max_examples=20, deadline=None)
@given(width=st.integers(1, 4_000), height=st.integers(1, 4_000), as_path=st.booleans())
def test_file_data_compacts_exactly_like_its_base64_text(tmp_path_factory: pytest.TempPathFactory,
                                                         width: int, height: int,
                                                         as_path: bool) -> None:
    raw = png_bytes(width, height)
    if as_path:
        path = tmp_path_factory.mktemp("img") / "image.png"
        path.write_bytes(raw)
        data: Any = path
    else:
        data = io.BytesIO(raw)
    text = base64.b64encode(raw).decode("ascii")
    history = [image_message(data), {"role": "assistant", "content": "A chart."},
               {"role": "user", "content": "And now?"}]
    encoded = [image_message(text), *history[1:]]
    for budget in (60, 5_000):
        outcomes: list[tuple[object, object]] = []
        for case in (history, encoded):
            try:
                done = messages.compact(case, budget=budget, estimator=CHARS, keep_recent=1)
                outcomes.append((done.system, done.messages))
            except cutctx.BudgetUnsatisfiable as refused:
                outcomes.append(("refused", refused.details))
        assert outcomes[0] == outcomes[1]


# --- through the real SDK client ------------------------------------------------------------------

api = mocked_api(BASE_URL)


def reply(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})


@pytest.mark.usefixtures("tiktoken_cache")
def test_the_wrapped_client_sends_system_messages_neighbours_and_files_as_given(
        api: respx.Router, tmp_path: Path) -> None:
    route = api.post("/v1/messages").mock(side_effect=reply)
    api.post("/v1/messages/count_tokens").respond(json={"input_tokens": 100})
    path = tmp_path / "shot.png"
    path.write_bytes(png_bytes())
    history: list[Any] = [*SAME_ROLE["results then a note"][:3],
                          {"role": "system", "content": "Be terse."},
                          image_message(path)]
    client = CompactingAnthropic(Anthropic(api_key="test", base_url=BASE_URL, max_retries=0),
                                 window=200_000)
    client.messages.create(model=MODEL, max_tokens=100, messages=history)
    sent = json.loads(route.calls.last.request.content)["messages"]
    assert sent[:4] == history[:4]
    assert sent[4]["content"][0]["source"]["data"] == base64.b64encode(
        png_bytes()).decode("ascii")
    assert isinstance(history[4]["content"][0]["source"]["data"], Path)


@pytest.mark.usefixtures("tiktoken_cache")
def test_a_message_response_appended_is_sent_as_its_role_and_content(
        api: respx.Router) -> None:
    """The wrapped client (a session) sends what ``compact`` does for an appended ``Message``:
    role and content only, not its id, model, usage or stop reason."""
    from anthropic.types import Message

    route = api.post("/v1/messages").mock(side_effect=reply)
    api.post("/v1/messages/count_tokens").respond(json={"input_tokens": 100})
    response = Message.model_validate(json.loads(reply(httpx.Request("POST", BASE_URL)).content))
    history: list[Any] = [{"role": "user", "content": "hello"}, response,
                          {"role": "user", "content": "and now?"}]
    client = CompactingAnthropic(Anthropic(api_key="test", base_url=BASE_URL, max_retries=0),
                                 window=200_000)
    client.messages.create(model=MODEL, max_tokens=100, messages=history)
    sent = json.loads(route.calls.last.request.content)["messages"]
    assert sent[1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    compacted = messages.compact(history, budget=10_000, estimator=CHARS)
    assert compacted.messages is not None and compacted.messages[1] == sent[1]

"""cutctx_adapters.openai.responses: Responses ``instructions`` + ``input`` <-> Transcript,
validation, estimation, compaction, and the ``CompactingOpenAI().responses`` wrapper."""

from __future__ import annotations

import asyncio
import copy
import doctest
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from openai import AsyncOpenAI, OpenAI
from openai._utils import maybe_transform
from openai.types.responses import Response, response_create_params

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SummarizationRequest,
    SummarizingPolicy,
    TranscriptTurn,
    ValidationError,
)
from cutctx_adapters import CompactionResult
from cutctx_adapters.openai import CompactingOpenAI, responses
from cutctx_adapters.openai import _responses_tokens as responses_tokens
from cutctx_adapters.openai._responses_tokens import (
    ENCRYPTED_CHARS_PER_TOKEN,
    ITEM_TOKENS,
    item_tokens,
    request_tools_tokens,
)
from cutctx_adapters.openai._tokens import (
    REPLY_PRIMING_TOKENS,
    TOOL_CALL_TOKENS,
    image_tokens,
    tools_tokens,
)
from cutctx_adapters.openai.chat import SUMMARY_HEADER
from cutctx_adapters.tiktoken import TiktokenEstimator
from tests._support.data import INVALID_REQUESTS, REQUESTS
from tests._support.http import mocked_api

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "histories"
           / "coding_agent.openai_responses.json")
BASE_URL = "https://api.openai.test/v1"
CHARS = CharRatioEstimator()
MARKER = "SECRET-MARKER-91be"
PNG_1X1 = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
           "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PDF = "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iago8PCAvVHlwZSAvUGFnZSA+PgplbmRvYmoK"
MASK_ONLY = PolicyChain([ObservationMaskingPolicy(0), DropOldestPolicy()])


# --- item builders -------------------------------------------------------------------------

def user(text: Any = "hello", **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def said(text: str = "Done.", item_id: str = "msg_1", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}], **extra}


def thought(item_id: str = "rs_1", summary: str | None = "Thinking.",
            sealed: str = "gAAAAAB" + "x" * 40) -> dict[str, Any]:
    parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
    return {"type": "reasoning", "id": item_id, "summary": parts, "encrypted_content": sealed}


def fc(call_id: str, name: str = "get_weather", arguments: Any = '{"city":"Oslo"}',
       **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed", **extra}


def out(call_id: str, output: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output, **extra}


def load_request(name: str) -> dict[str, Any]:
    return json.loads((REQUESTS / name).read_text())["request"]  # type: ignore[no-any-return]


REQUEST = load_request("openai_responses_reasoning_tools.json")
INVALID = {path.name: json.loads(path.read_text())
           for path in sorted(INVALID_REQUESTS.glob("openai_responses_*.json"))}


def round_trip(input_items: Any, instructions: str | None = None, **options: Any) -> Any:
    conv = responses.to_transcript(input_items, instructions=instructions,
                                   **{"estimator": CHARS, **options})
    return conv.render(conv.transcript)


def sent_by_sdk(input_items: Any) -> Any:
    """What openai-python puts in the request body for ``input``."""
    body = maybe_transform({"model": "gpt-5", "input": input_items},
                           response_create_params.ResponseCreateParamsNonStreaming)
    assert body is not None
    return body["input"]


SHAPES: dict[str, Any] = {
    "text_input": "What is the weather?",
    "easy_messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "system", "content": [{"type": "input_text", "text": "Rules."}]},
        user("Hi"),
        {"role": "assistant", "content": "Hello!", "phase": "final_answer"},
    ],
    "typed_input_message": [{"type": "message", "role": "user", "status": "completed", "content": [
        {"type": "input_text", "text": "Look", "prompt_cache_breakpoint": {"mode": "explicit"}},
        {"type": "input_image", "image_url": PNG_1X1, "detail": "high"},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
        {"type": "input_image", "file_id": "file-img", "detail": "auto"},
        {"type": "input_file", "file_data": PDF, "filename": "a.pdf"},
        {"type": "input_file", "file_id": "file-pdf"},
        {"type": "input_file", "file_url": "https://example.com/b.pdf"},
    ]}],
    "output_message": [user(), {
        "type": "message", "id": "msg_9", "role": "assistant", "status": "completed",
        "phase": "commentary", "content": [
            {"type": "output_text", "text": "See [1].", "logprobs": [], "annotations": [
                {"type": "url_citation", "url": "https://x.test", "title": "X",
                 "start_index": 4, "end_index": 7}]},
            {"type": "refusal", "refusal": "Not that."}]}],
    "function_calls": [user(), thought(), fc("c1"), fc("c2", "get_time", '{"tz":"UTC"}'),
                       out("c2", [{"type": "input_text", "text": "12:00"},
                                  {"type": "input_image", "image_url": PNG_1X1, "detail": "auto"}]),
                       out("c1", '{"temp": 3}', id="fco_1", status="completed"),
                       said("3 degrees at noon.")],
    "reasoning_with_content": [user(), {
        "type": "reasoning", "id": "rs_7", "status": "completed", "encrypted_content": None,
        "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
        "content": [{"type": "reasoning_text", "text": "raw thoughts"}]}, said()],
    "custom_tool": [user(), {"type": "custom_tool_call", "id": "ctc_1", "call_id": "ct1",
                             "name": "apply", "input": "*** Begin Patch"},
                    {"type": "custom_tool_call_output", "call_id": "ct1", "output": "applied"}],
    "built_in_tools": [
        user(), thought(),
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "lisbon weather", "sources": []}},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"],
         "results": [{"file_id": "f", "filename": "a.txt", "score": 0.5, "text": "hit"}]},
        {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "1+1",
         "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "2"}]},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed",
         "result": PNG_1X1.split(",", 1)[1]},
        said(),
    ],
    "computer_use": [user(), {"type": "computer_call", "id": "cu_1", "call_id": "cc1",
                              "status": "completed", "pending_safety_checks": [],
                              "action": {"type": "click", "button": "left", "x": 1, "y": 2}},
                     {"type": "computer_call_output", "call_id": "cc1", "output": {
                         "type": "computer_screenshot", "image_url": PNG_1X1},
                      "acknowledged_safety_checks": []}],
    "mcp": [user(),
            {"type": "mcp_list_tools", "id": "ml_1", "server_label": "docs", "tools": [
                {"name": "search", "input_schema": {"type": "object"}}]},
            {"type": "mcp_approval_request", "id": "mar_1", "server_label": "docs",
             "name": "search", "arguments": "{}"},
            {"type": "mcp_approval_response", "approval_request_id": "mar_1", "approve": True},
            {"type": "mcp_call", "id": "mc_1", "server_label": "docs", "name": "search",
             "arguments": "{}", "output": "found", "approval_request_id": "mar_1"},
            said()],
    "shells_and_patches": [
        user(),
        {"type": "local_shell_call", "id": "ls_1", "call_id": "lc1", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "local_shell_call_output", "id": "lc1", "output": '{"stdout": "a.txt"}'},
        {"type": "shell_call", "call_id": "sh1", "action": {"commands": ["pwd"]},
         "status": "completed"},
        {"type": "shell_call_output", "call_id": "sh1", "output": [
            {"stdout": "/repo", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        {"type": "apply_patch_call", "call_id": "ap1", "status": "completed",
         "operation": {"type": "update_file", "path": "a.py", "diff": "@@ -1 +1 @@"}},
        {"type": "apply_patch_call_output", "call_id": "ap1", "status": "completed",
         "output": "patched"},
    ],
    "newer_items": [
        {"type": "additional_tools", "role": "developer", "tools": []},
        {"type": "configuration_update", "reasoning": {"effort": "low"}},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" + "c" * 20},
        user(),
        {"type": "tool_search_call", "call_id": "ts1", "arguments": {"q": "x"},
         "execution": "client"},
        {"type": "tool_search_output", "call_id": "ts1", "tools": [], "execution": "client"},
        {"type": "program", "id": "pg_1", "call_id": "pg1", "code": "x()", "fingerprint": "fp"},
        fc("pc1", caller={"type": "program", "caller_id": "pg1"}),
        out("pc1", caller={"type": "program", "caller_id": "pg1"}),
        {"type": "program_output", "id": "po_1", "call_id": "pg1", "result": "3",
         "status": "completed"},
        {"type": "compaction_trigger"},
    ],
    "references_and_unknowns": [
        {"type": "item_reference", "id": "msg_old"},
        {"id": "rs_old"},
        user(x_future={"nested": [1, 2]}),
        {"type": "future_item", "id": "fi_1", "payload": {"a": [1, None, True]}},
        {**fc("c9", x_extra=None), "async": True},
        out("c9", "done", x_extra=1),
    ],
}


# --- round trips ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_shape_round_trips_exactly(name: str) -> None:
    items = SHAPES[name]
    assert round_trip(items) == (None, items)
    assert round_trip(items, "Be kind.") == ("Be kind.", items)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_round_trip_is_what_the_sdk_would_send(name: str) -> None:
    items = SHAPES[name]
    assert round_trip(items)[1] == sent_by_sdk(copy.deepcopy(items))


def test_the_shared_reasoning_request_round_trips() -> None:
    conv = responses.to_transcript(REQUEST["input"], instructions=REQUEST["instructions"],
                                   model="gpt-5")
    assert conv.render(conv.transcript) == (REQUEST["instructions"], REQUEST["input"])


def test_text_input_is_one_user_turn_and_renders_back_as_a_string() -> None:
    conv = responses.to_transcript("Hi there", instructions="Be brief.", estimator=CHARS)
    assert [(t.turn_id, t.role) for t in conv.transcript.turns] == [
        ("instructions", Role.SYSTEM), ("i0", Role.USER)]
    assert conv.render(conv.transcript) == ("Be brief.", "Hi there")


RESPONSE = {
    "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5",
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    "output": [
        {"type": "reasoning", "id": "rs_a", "summary": [
            {"type": "summary_text", "text": "Need weather."}], "encrypted_content": "gAAAA-enc"},
        {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "get_weather",
         "arguments": '{"city":"Oslo"}', "status": "completed"},
        {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "get_time",
         "arguments": "{}", "status": "completed", "async": False},
        {"type": "message", "id": "msg_a", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
    ],
}


def sdk_history() -> tuple[list[Any], Response]:
    """What users build: their input, plus ``response.output`` objects, plus tool outputs."""
    response = Response.model_validate(RESPONSE)
    history: list[Any] = [user("Weather in Oslo?")]
    history += response.output
    history += [out("call_a", "3 C"), out("call_b", "12:00"), user("Thanks.")]
    return history, response


def test_sdk_output_items_render_as_plain_dicts_of_what_the_api_returned() -> None:
    history, _ = sdk_history()
    _, rendered = round_trip(history)
    assert all(type(item) is dict for item in rendered)
    assert rendered[1:5] == RESPONSE["output"]  # by wire name: "async", not "async_"


api = mocked_api(BASE_URL)


@pytest.fixture
def route(api: respx.Router) -> respx.Route:
    return api.post("/responses").mock(return_value=httpx.Response(200, json=RESPONSE))


def test_sdk_output_items_reach_the_wire_as_rendered(route: respx.Route) -> None:
    history, _ = sdk_history()
    client = OpenAI(api_key="test", base_url=BASE_URL, max_retries=0)
    client.responses.create(model="gpt-5", input=history)
    on_the_wire = json.loads(route.calls.last.request.content)["input"]
    # openai 3.57 sends the pydantic field name ``async_``; the API's field, and ours, is
    # ``async``. Everything else is what the SDK sends.
    on_the_wire[3]["async"] = on_the_wire[3].pop("async_")
    assert round_trip(history)[1] == on_the_wire


def test_sdk_objects_and_dicts_give_the_same_turns() -> None:
    history, _ = sdk_history()
    plain = json.loads(json.dumps(round_trip(history)[1]))
    a = responses.to_transcript(history, estimator=CHARS).transcript
    b = responses.to_transcript(plain, estimator=CHARS).transcript
    assert a == b


def test_nothing_the_caller_passed_is_mutated() -> None:
    history, response = sdk_history()
    history += agent_input(3)[1:]
    dicts = [copy.deepcopy(item) for item in history if isinstance(item, dict)]
    objects = [item.model_dump() for item in history if not isinstance(item, dict)]
    responses.to_transcript(history, instructions="I.", estimator=CHARS)
    for options in ({"policy": MASK_ONLY}, {"summarizer": summarize}):
        result = responses.compact(history, instructions="I.", budget=200, estimator=CHARS,
                                   keep_recent=1, **options)
        assert result.compacted
    assert [item for item in history if isinstance(item, dict)] == dicts
    assert [item.model_dump() for item in history if not isinstance(item, dict)] == objects
    assert getattr(response.output[0], "encrypted_content", None) == "gAAAA-enc"


# --- turns, roles, ids and exchanges -------------------------------------------------------

def turns(items: Any, instructions: str | None = None, **options: Any) -> list[TranscriptTurn]:
    conv = responses.to_transcript(items, instructions=instructions,
                                   **{"estimator": CHARS, **options})
    return list(conv.transcript.turns)


def test_roles_map_to_engine_roles() -> None:
    roles = [t.role for t in turns(SHAPES["easy_messages"], "I.")]
    assert roles == [Role.SYSTEM, Role.SYSTEM, Role.SYSTEM, Role.USER, Role.ASSISTANT]
    by_kind = {t.turn_id: t.role for t in turns(SHAPES["shells_and_patches"])}
    assert by_kind == {"i0": Role.USER, "i1": Role.ASSISTANT, "i2": Role.TOOL,
                       "i3": Role.ASSISTANT, "i4": Role.TOOL, "i5": Role.ASSISTANT,
                       "i6": Role.TOOL}
    newer = {t.turn_id: t.role for t in turns(SHAPES["newer_items"])}
    assert [newer[f"i{n}"] for n in (0, 1, 10)] == [Role.SYSTEM] * 3
    assert newer["i9"] is Role.TOOL  # program_output: its result can hold a stub
    assert newer["i5"] is Role.USER  # tool_search_output: loaded tools cannot
    computer = turns(SHAPES["computer_use"])
    assert computer[2].role is Role.USER  # a screenshot cannot hold a stub: never masked


def test_turn_ids_are_positional_and_stable() -> None:
    items = REQUEST["input"]
    ids = [t.turn_id for t in turns(items, "I.")]
    assert ids == ["instructions", *[f"i{n}" for n in range(len(items))]]
    assert [t.turn_id for t in turns(items)] == ids[1:]
    longer = [t.turn_id for t in turns([*items, said("More.", "msg_x"), user("ok")], "I.")]
    assert longer[: len(ids)] == ids
    first = responses.to_transcript(items, estimator=CHARS).transcript
    assert responses.to_transcript(copy.deepcopy(items), estimator=CHARS).transcript == first


def test_reasoning_travels_with_its_calls_and_their_outputs() -> None:
    found = {t.turn_id: t.tool_call_id for t in turns(REQUEST["input"])}
    first = {found[f"i{n}"] for n in range(1, 6)}
    assert len(first) == 1 and None not in first
    assert found["i6"] == found["i7"] is not None and found["i6"] not in first
    assert found["i0"] is None and found["i8"] is None


def test_a_response_runs_until_the_next_caller_supplied_item() -> None:
    items = [user(), thought("rs_1"), said("a", "m1"), thought("rs_2"), fc("c1"), out("c1"),
             said("b", "m2"), user("again"), said("c", "m3")]
    ids = [t.tool_call_id for t in turns(items)]
    assert ids[1] == ids[2] == ids[3] == ids[4] == ids[5] is not None
    assert ids[6] is None and ids[8] is None  # no reasoning in that response: free to go


def test_ids_paired_by_the_api_travel_together() -> None:
    for name, linked in (("custom_tool", (1, 2)), ("computer_use", (1, 2)),
                         ("mcp", (2, 3, 4)), ("shells_and_patches", (1, 2)),
                         ("newer_items", (4, 5))):
        ids = [t.tool_call_id for t in turns(SHAPES[name])]
        assert len({ids[n] for n in linked}) == 1 and ids[linked[0]] is not None, name
    newer = [t.tool_call_id for t in turns(SHAPES["newer_items"])]
    assert newer[6] == newer[7] == newer[8] == newer[9] is not None  # a program and its calls


def test_turn_content_is_readable_text_never_binary_data() -> None:
    contents = [t.content for t in turns(SHAPES["typed_input_message"])]
    assert contents == ["Look\n[input_image]\n[input_image]\n[input_image]\n[input_file]\n"
                        "[input_file]\n[input_file]"]
    for name in SHAPES:
        for turn in turns(SHAPES[name]):
            assert "base64" not in turn.content and "iVBOR" not in turn.content, name
    call, answer = turns(REQUEST["input"])[2], turns(REQUEST["input"])[4]
    assert call.content == '[tool call get_weather: {"city":"Lisbon"}]'
    assert call.metadata["cutctx.tool"] == answer.metadata["cutctx.tool"] == "get_weather"
    assert turns(REQUEST["input"])[1].content.startswith("**Identifying the city**")
    assert turns(REQUEST["input"])[6].content == "[reasoning]"


def test_an_output_answering_a_referenced_call_is_accepted_and_linked() -> None:
    items = [user(), {"type": "item_reference", "id": "fc_stored"}, out("call_stored"),
             {"type": "mcp_approval_response", "approval_request_id": "mar_x", "approve": False}]
    ids = [t.tool_call_id for t in turns(items)]
    assert ids[1] == ids[2] == ids[3] is not None
    with pytest.raises(ValidationError):
        responses.validate([user(), out("call_stored")])


# --- validation ----------------------------------------------------------------------------

EXPECTED_INVALID = {
    "openai_responses_missing_function_call_output.json": (2, "unanswered_tool_call"),
    "openai_responses_orphan_function_call_output.json": (4, "orphaned_tool_result"),
    "openai_responses_reasoning_without_following_item.json": (
        6, "reasoning_without_following_item"),
}


def test_every_invalid_shared_request_is_covered() -> None:
    assert sorted(INVALID) == sorted(EXPECTED_INVALID)


@pytest.mark.parametrize("name", sorted(EXPECTED_INVALID))
def test_invalid_shared_requests_raise_with_index_and_rule(name: str) -> None:
    request = INVALID[name]["request"]
    index, rule = EXPECTED_INVALID[name]
    for call in (lambda: responses.validate(request["input"],
                                            instructions=request["instructions"]),
                 lambda: responses.to_transcript(request["input"], estimator=CHARS)):
        with pytest.raises(ValidationError) as caught:
            call()
        assert (caught.value.details["index"], caught.value.details["rule"]) == (index, rule)
        assert f"item {index}" in str(caught.value)


BAD: dict[str, tuple[Any, int, str]] = {
    "not_an_object": ([user(MARKER), MARKER], 1, "item_type"),
    "no_type_or_role": ([{"content": MARKER}], 0, "item_type"),
    "unknown_role": ([{"role": "tool", "content": MARKER}], 0, "unknown_role"),
    "missing_content": ([{"type": "message", "role": "user"}], 0, "missing_content"),
    "content_number": ([{"role": "user", "content": 3}], 0, "content_type"),
    "part_without_type": ([user([{"text": MARKER}])], 0, "part_type"),
    "text_part_without_text": ([user([{"type": "input_text", "txt": MARKER}])], 0, "part_text"),
    "call_without_call_id": ([user(), {**fc("c1"), "call_id": ""}, out("c1")], 1, "missing_id"),
    "call_without_name": ([user(), {**fc("c1"), "name": None}, out("c1")], 1, "missing_name"),
    "arguments_object": ([user(), fc("c1", arguments={"a": MARKER}), out("c1")],
                         1, "arguments_type"),
    "output_without_call_id": ([user(), fc("c1"), {"type": "function_call_output",
                                                   "output": MARKER}], 2, "missing_id"),
    "output_missing": ([user(), fc("c1"), {"type": "function_call_output", "call_id": "c1"}],
                       2, "missing_output"),
    "orphan_output": ([user(), out("c1", MARKER)], 1, "orphaned_tool_result"),
    "output_before_call": ([user(), out("c1"), fc("c1")], 1, "orphaned_tool_result"),
    "unanswered_call": ([user(), fc("c1"), fc("c2"), out("c2")], 1, "unanswered_tool_call"),
    "answered_twice": ([user(), fc("c1"), out("c1"), out("c1")], 3, "duplicated_tool_result"),
    "call_id_twice": ([user(), fc("c1"), out("c1"), {**fc("c1"), "id": "fc_x"}, out("c1")],
                      3, "duplicated_call_id"),
    "output_answers_another_kind": ([user(), {"type": "custom_tool_call", "call_id": "c1",
                                              "name": "n", "input": "i"}, out("c1")],
                                    2, "orphaned_tool_result"),
    "unanswered_computer_call": ([user(), {"type": "computer_call", "call_id": "cc",
                                           "action": {}}], 1, "unanswered_tool_call"),
    "duplicated_item_id": ([user(), said("a", "msg_1"), said("b", "msg_1")], 2,
                           "duplicated_item_id"),
    "reasoning_last": ([user(), thought()], 1, "reasoning_without_following_item"),
    "reasoning_before_output": ([user(), fc("c1"), thought(), out("c1")], 2,
                                "reasoning_without_following_item"),
    "only_reasoning_follows": ([user(), thought("rs_1"), thought("rs_2"), user()], 1,
                               "reasoning_without_following_item"),
    "summary_not_a_list": ([user(), {**thought(), "summary": MARKER}, said()], 1,
                           "summary_type"),
    "encrypted_not_a_string": ([user(), {**thought(), "encrypted_content": 5}, said()], 1,
                               "encrypted_content_type"),
    "orphan_approval": ([user(), {"type": "mcp_approval_response", "approval_request_id": "m",
                                  "approve": True}], 1, "orphaned_approval_response"),
    "reference_without_id": ([{"type": "item_reference"}], 0, "missing_id"),
    "screenshot_not_an_object": ([user(), {"type": "computer_call", "call_id": "cc",
                                           "action": {}},
                                  {"type": "computer_call_output", "call_id": "cc",
                                   "output": MARKER}], 2, "output_type"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_index_and_rule_without_content(case: str) -> None:
    items, index, rule = BAD[case]
    with pytest.raises(ValidationError) as caught:
        responses.validate(items)
    assert caught.value.details["index"] == index
    assert caught.value.details["rule"] == rule
    assert MARKER not in str(caught.value) and MARKER not in repr(caught.value.details)


@pytest.mark.parametrize("value", [{"role": "user", "content": MARKER}, None, 3, b"x"])
def test_input_that_is_neither_text_nor_a_list_is_rejected(value: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        responses.to_transcript(value)
    assert caught.value.details["rule"] == "input_type"
    assert MARKER not in str(caught.value)


def test_instructions_must_be_text() -> None:
    with pytest.raises(ValidationError) as caught:
        responses.validate("hi", instructions=[MARKER])  # type: ignore[arg-type]
    assert caught.value.details["field"] == "instructions"


def test_invalid_summary_role_is_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        responses.to_transcript("hi", summary_role="tool")
    assert caught.value.details["field"] == "summary_role"


# --- estimation ----------------------------------------------------------------------------

@pytest.mark.parametrize("module", [responses, responses_tokens], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module: Any) -> None:
    assert doctest.testmod(module).failed == 0


@pytest.fixture
def gpt5() -> TiktokenEstimator:
    return TiktokenEstimator("gpt-5")


def test_messages_count_like_chat_messages(gpt5: TiktokenEstimator) -> None:
    count = gpt5.estimate_tokens
    assert (item_tokens(user("tiktoken is great!"), gpt5) == 3 + count("user") +
         count("tiktoken is great!"))
    typed = said("Hello there.")
    assert item_tokens(typed, gpt5) == ITEM_TOKENS + count("assistant") + count("Hello there.")


def test_function_calls_count_name_and_arguments(gpt5: TiktokenEstimator) -> None:
    count = gpt5.estimate_tokens
    assert (item_tokens(fc("c1"), gpt5) == ITEM_TOKENS + TOOL_CALL_TOKENS +
         count("get_weather") + count('{"city":"Oslo"}'))
    assert item_tokens(out("c1", "sunny"), gpt5) == ITEM_TOKENS + count("sunny")


def test_reasoning_counts_its_summary_and_its_sealed_size(gpt5: TiktokenEstimator) -> None:
    sealed = "gAAAAAB" + "z" * 993
    item = thought("rs_1", "Weighing options.", sealed)
    assert (item_tokens(item, gpt5) == ITEM_TOKENS + gpt5.estimate_tokens("Weighing options.") +
         math.ceil(len(sealed) / ENCRYPTED_CHARS_PER_TOKEN))
    assert item_tokens(thought("rs_2", None, ""), gpt5) == ITEM_TOKENS


def test_images_use_the_chat_adapters_rules(gpt5: TiktokenEstimator) -> None:
    base = item_tokens(user([]), gpt5)
    small = user([{"type": "input_image", "image_url": PNG_1X1, "detail": "high"}])
    assert item_tokens(small, gpt5) - base == image_tokens(1, 1, "high", "gpt-5")
    remote = user([{"type": "input_image", "image_url": "https://x.test/a.png", "detail": "low"}])
    assert item_tokens(remote, gpt5) - base == image_tokens(512, 512, "low", "gpt-5")
    screenshot = SHAPES["computer_use"][2]
    assert item_tokens(screenshot, gpt5) == ITEM_TOKENS + image_tokens(1, 1, None, "gpt-5")


def test_image_payloads_are_never_counted_as_text(gpt5: TiktokenEstimator) -> None:
    huge = "data:image/png;base64," + "A" * 200_000
    item = user([{"type": "input_image", "image_url": huge, "detail": "high"}])
    assert item_tokens(item, gpt5) < 2_000
    generated = {"type": "image_generation_call", "id": "ig", "status": "completed",
                 "result": "A" * 200_000}
    assert item_tokens(generated, gpt5) < 2_000


def test_flat_function_tools_cost_what_chat_tools_cost(gpt5: TiktokenEstimator) -> None:
    flat = REQUEST["tools"]
    nested = [{"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
              for tool in flat]
    assert request_tools_tokens(flat, gpt5) == tools_tokens(nested, gpt5) > 0


def test_count_tokens_is_transcript_plus_priming_plus_tools() -> None:
    gpt5 = TiktokenEstimator("gpt-5")
    conv = responses.to_transcript(REQUEST["input"], instructions=REQUEST["instructions"],
                                   estimator=gpt5)
    total = responses.count_tokens(REQUEST["input"], instructions=REQUEST["instructions"],
                                   tools=REQUEST["tools"], estimator=gpt5)
    assert (total == conv.transcript.token_estimate() + REPLY_PRIMING_TOKENS +
         request_tools_tokens(REQUEST["tools"], gpt5))
    assert responses.count_tokens(REQUEST["input"], instructions=REQUEST["instructions"],
                                  tools=REQUEST["tools"]) == total


def test_a_custom_estimator_works_for_every_item() -> None:
    for name in SHAPES:
        assert responses.count_tokens(SHAPES[name], estimator=CHARS, tools=REQUEST["tools"]) > 0


# --- compaction ----------------------------------------------------------------------------

def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{len(turns)} earlier items about an agent task."


async def asummarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    await asyncio.sleep(0)
    return summarize(request, turns)


def agent_input(rounds: int = 6, size: int = 60) -> list[dict[str, Any]]:
    """A reasoning agent: a task, then rounds of reasoning + two parallel calls + outputs."""
    items: list[dict[str, Any]] = [user(f"Fix the failing test. {MARKER}")]
    for n in range(rounds):
        items.append(thought(f"rs_{n}", f"Step {n}.", "gAAAAAB" + "e" * 200))
        for k in range(2):
            items.append(fc(f"c{n}_{k}", "read_file", json.dumps({"path": f"m{n}_{k}.py"})))
        for k in range(2):
            items.append(out(f"c{n}_{k}", f"contents of m{n}_{k}.py " + "line " * size))
        if n % 2:
            items.append(said(f"Progress {n}.", f"msg_{n}"))
            items.append(user(f"Keep going {n}."))
    items.append(thought("rs_end", "Done.", "gAAAAAB" + "f" * 40))
    items.append(said("The fix is in m1_0.py.", "msg_end"))
    return items


AGENT = agent_input()
POLICIES: dict[str, dict[str, Any]] = {
    "mask_only": {"policy": MASK_ONLY},
    "drop_only": {"policy": DropOldestPolicy()},
    "default_without_summarizer": {},
    "default_chain": {"summarizer": summarize},
    "summarize_only": {"policy": SummarizingPolicy("p", min_span_turns=2),
                       "summarizer": summarize},
}


def sent_items(result: CompactionResult) -> list[dict[str, Any]]:
    assert isinstance(result.input, list)
    return result.input


def check_valid(result: CompactionResult, instructions: str | None) -> None:
    assert result.instructions == instructions
    responses.validate(sent_items(result), instructions=result.instructions)
    assert result.input == json.loads(json.dumps(result.input))


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("fraction", [1.0, 0.7, 0.4, 0.2])
def test_compaction_at_several_budgets_stays_valid(policy: str, fraction: float) -> None:
    total = responses.count_tokens(AGENT, instructions="Be careful.")
    result = responses.compact(AGENT, instructions="Be careful.", budget=int(total * fraction),
                               keep_recent=2, **POLICIES[policy])
    check_valid(result, "Be careful.")
    assert result.tokens_before == total
    sent = responses.count_tokens(sent_items(result), instructions="Be careful.")
    assert result.measured_tokens == sent
    if fraction == 1.0:
        assert not result.compacted and result.input == AGENT
    elif not result.plan.budget_unmet:
        assert result.tokens_after <= int(total * fraction)
        assert sent <= int(total * fraction)  # measured on what is sent, not just planned


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("budget", [2000, 600, 300, 150])
def test_the_shared_request_compacts_validly(policy: str, budget: int) -> None:
    keep_task = budget >= 2000  # the request's task alone is ~1,500 tokens
    if not keep_task:  # kept by default: clipped to fit, or refused by name where no clip fits
        args = {"instructions": REQUEST["instructions"], "tools": REQUEST["tools"],
                "budget": budget, "keep_recent": 1, **POLICIES[policy]}
        try:
            clipped = responses.compact(REQUEST["input"], **args)
        except BudgetUnsatisfiable as unfit:
            assert unfit.details["turn_ids"][0] == "i0"
        else:
            check_valid(clipped, REQUEST["instructions"])
            assert "i0" in {r.turn_id for r in clipped.replacements if r.kind == "clipped"}
            assert clipped.measured_tokens is not None and clipped.measured_tokens <= budget
        with pytest.raises(BudgetUnsatisfiable) as refused:
            responses.compact(REQUEST["input"], **args, strict=True)
        assert refused.value.details["turn_ids"][0] == "i0"
    result = responses.compact(REQUEST["input"], instructions=REQUEST["instructions"],
                               tools=REQUEST["tools"], budget=budget, keep_recent=1,
                               keep_task=keep_task, **POLICIES[policy])
    check_valid(result, REQUEST["instructions"])
    assert sent_items(result)[-1] == REQUEST["input"][-1]
    if not result.plan.budget_unmet:
        assert responses.count_tokens(sent_items(result), instructions=REQUEST["instructions"],
                                      tools=REQUEST["tools"]) <= budget


def test_masked_outputs_keep_call_id_and_every_other_key() -> None:
    result = responses.compact(AGENT, budget=responses.count_tokens(AGENT) - 100,
                               policy=MASK_ONLY, keep_recent=2)
    masked = [AGENT[int(turn_id[1:])] for turn_id in result.report.masked_turn_ids]
    assert masked and all(item["type"] == "function_call_output" for item in masked)
    sent = {item["call_id"]: item for item in sent_items(result)
            if item.get("type") == "function_call_output"}
    for original in masked:
        stubbed = sent[original["call_id"]]
        assert set(stubbed) == set(original)
        assert stubbed["output"].startswith("[tool result masked by cutctx]")


def test_other_outputs_mask_into_their_own_body_field() -> None:
    items = SHAPES["shells_and_patches"] + SHAPES["newer_items"][3:10]
    conv = responses.to_transcript(items, estimator=CHARS)
    codec = conv.codec
    shell = codec.render_masked(conv.part_for("i4"), "STUB")
    assert shell == {"type": "shell_call_output", "call_id": "sh1", "output": [
        {"stdout": "STUB", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
    assert codec.render_masked(conv.part_for("i2"), "STUB")["output"] == "STUB"
    assert codec.render_masked(conv.part_for("i13"), "STUB")["result"] == "STUB"
    with pytest.raises(ValidationError) as caught:
        codec.render_masked(conv.part_for("i1"), "STUB")
    assert caught.value.details["rule"] == "unmaskable_item"


def test_summaries_render_as_message_items_with_the_chosen_role() -> None:
    for role in ("user", "developer", "assistant"):
        result = responses.compact(AGENT, budget=responses.count_tokens(AGENT) // 3,
                                   summarizer=summarize, keep_recent=2, summary_role=role,
                                   policy=SummarizingPolicy("p", min_span_turns=2))
        check_valid(result, None)
        summaries = [item for item in sent_items(result)
                     if isinstance(item.get("content"), str)
                     and item["content"].startswith(SUMMARY_HEADER)]
        assert len(summaries) == 1
        assert summaries[0] == {"role": role, "content": SUMMARY_HEADER + summaries[0]["content"]
                                [len(SUMMARY_HEADER):]}
        assert "items about an agent task" in summaries[0]["content"]


def test_acompact_runs_async_summarizers() -> None:
    result = asyncio.run(responses.acompact(AGENT, budget=responses.count_tokens(AGENT) // 3,
                                            summarizer=asummarize, keep_recent=2,
                                            instructions="I."))
    check_valid(result, "I.")
    assert result.plan.summarization_requests


def test_pinned_items_are_never_touched() -> None:
    for pin in ([1], lambda item, index: item.get("id") == "rs_0"):
        result = responses.compact(AGENT, budget=responses.count_tokens(AGENT) // 3,
                                   pin=pin, keep_recent=2, policy=DropOldestPolicy())
        check_valid(result, None)
        assert AGENT[1] in sent_items(result)
        # ... and the rest of its response, which it cannot be sent without
        assert all(item in sent_items(result) for item in AGENT[2:6])


def test_text_input_survives_compaction_as_text() -> None:
    result = responses.compact("Hello", instructions="I." * 50, budget=10_000)
    assert result.input == "Hello" and result.instructions == "I." * 50


def test_a_budget_below_the_untouchable_turns_is_refused() -> None:
    from cutctx import BudgetUnsatisfiable
    with pytest.raises(BudgetUnsatisfiable):
        responses.compact(AGENT, instructions="x " * 500, budget=100, keep_recent=0)


@pytest.mark.skipif(not EXAMPLE.exists(), reason="example history not written yet")
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_bundled_coding_agent_example_compacts_validly(policy: str) -> None:
    data = json.loads(EXAMPLE.read_text())
    request = data.get("request", data)
    items, instructions = request["input"], request.get("instructions")
    assert round_trip(items, instructions) == (instructions, items)
    total = responses.count_tokens(items, instructions=instructions, tools=request.get("tools"))
    for fraction in (0.6, 0.3):
        result = responses.compact(items, instructions=instructions, tools=request.get("tools"),
                                   budget=int(total * fraction), keep_recent=2,
                                   **POLICIES[policy])
        check_valid(result, instructions)


# --- the compacting client -----------------------------------------------------------------

def wrapped(client: Any, reports: list[Any]) -> CompactingOpenAI[Any]:
    return CompactingOpenAI(client, window=8_000, trigger=2_000, target=1_200,
                            on_call=reports.append)


def test_the_client_compacts_input_before_sending(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrapped(OpenAI(api_key="test", base_url=BASE_URL, max_retries=0), reports)
    history = agent_input(12)
    response = client.responses.create(model="gpt-5", input=history, instructions="I.",
                                       tools=REQUEST["tools"], max_output_tokens=1000)
    assert isinstance(response, Response)
    body = json.loads(route.calls.last.request.content)
    assert body["instructions"] == "I." and body["tools"] == REQUEST["tools"]
    responses.validate(body["input"], instructions=body["instructions"])
    assert len(body["input"]) < len(history) and body["input"][-1] == history[-1]
    [report] = reports
    assert report.decision == "compacted" and report.format == "openai-responses"
    assert report.prompt_budget == 7_000 and report.tokens_sent <= report.trigger_tokens
    assert MARKER not in repr(report)


def test_the_async_client_compacts_input_before_sending(route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrapped(AsyncOpenAI(api_key="test", base_url=BASE_URL, max_retries=0), reports)
    history = agent_input(12)
    asyncio.run(client.responses.create(model="gpt-5", input=history))
    body = json.loads(route.calls.last.request.content)
    responses.validate(body["input"])
    assert len(body["input"]) < len(history)
    assert reports[-1].decision == "compacted"


@pytest.mark.parametrize("server_side", [{"previous_response_id": "resp_0"},
                                         {"conversation": "conv_1"}])
def test_server_held_history_is_sent_untouched(route: respx.Route,
                                               server_side: dict[str, Any]) -> None:
    reports: list[Any] = []
    client = wrapped(OpenAI(api_key="test", base_url=BASE_URL, max_retries=0), reports)
    history = agent_input(12)
    client.responses.create(model="gpt-5", input=history, **server_side)
    assert json.loads(route.calls.last.request.content)["input"] == history
    [report] = reports
    assert report.decision == "not_possible"
    assert next(iter(server_side)) in report.reason

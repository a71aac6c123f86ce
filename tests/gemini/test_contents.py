"""``gemini.contents``: every Part the SDK defines through convert, round trip, compaction at
several budgets and counting, as dicts (both spellings) and as SDK objects; bad input refused
by index and field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from cutctx import BudgetUnsatisfiable, ValidationError
from cutctx_adapters.gemini import contents
from tests.gemini.histories import MARKER, SIGNATURE, agent_history, camel, every_part, png
from tests.gemini.rules import check_request, current_turn

MODEL = "gemini-2.5-flash"


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


def sent_of(result: contents.ContentsResult) -> list[dict[str, Any]]:
    """``sent_of(result)`` as the plain list it is when given a list."""
    value: Any = result.contents
    assert isinstance(value, list)
    return value


def as_objects(history: list[dict[str, Any]]) -> list[types.Content]:
    return [types.Content.model_validate(content) for content in history]


def test_the_history_holds_every_field_of_part_and_content() -> None:
    found: set[str] = set()
    for content in every_part():
        for part in content["parts"]:
            found.update(types.Part.model_validate(part).model_dump(exclude_unset=True))
    assert found == set(types.Part.model_fields)
    assert set(types.Content.model_fields) == {"role", "parts"}


@pytest.mark.parametrize("spelling", ["snake", "wire"])
def test_dicts_round_trip_exactly(spelling: str) -> None:
    history = every_part() if spelling == "snake" else camel(every_part())
    conv = contents.to_transcript(history)
    assert conv.render(conv.transcript) == history


def test_sdk_objects_round_trip_to_what_the_sdk_reads_back() -> None:
    objects = as_objects(every_part())
    conv = contents.to_transcript(objects)
    rendered = conv.render(conv.transcript)
    assert [types.Content.model_validate(content) for content in rendered] == objects


def test_a_string_round_trips_as_the_string() -> None:
    conv = contents.to_transcript("Hello there")
    assert conv.render(conv.transcript) == "Hello there"
    assert contents.compact("Hello there", budget=1_000).contents == "Hello there"  # as given


def test_function_responses_and_server_results_are_turns_of_their_own() -> None:
    conv = contents.to_transcript(every_part())
    roles = {turn.turn_id: turn.role.value for turn in conv.transcript.turns}
    assert roles["c1.1"] == roles["c1.3"] == "tool"  # code result, search response
    assert roles["c2.0"] == roles["c2.1"] == "tool"  # the two function responses
    one = {turn.tool_call_id for turn in conv.transcript.turns
           if turn.turn_id.startswith(("c1", "c2"))}
    assert len(one) == 1  # the model turn and its responses: one exchange


def test_consecutive_model_contents_are_one_turn_with_their_responses() -> None:
    streamed = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"function_call": {"name": "a", "args": {}},
                                     "thought_signature": SIGNATURE}]},
        {"role": "model", "parts": [{"function_call": {"name": "b", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "a", "response": {}}},
                                   {"function_response": {"name": "b", "response": {}}}]},
    ]
    turns = contents.to_transcript(streamed).transcript.turns
    assert len({turn.tool_call_id for turn in turns[1:]}) == 1


@pytest.mark.parametrize("budget", [20_000, 6_000, 3_000, 1_200, 500])
@pytest.mark.parametrize("shape", ["snake", "wire", "objects"])
def test_compaction_keeps_every_rule_at_every_budget(budget: int, shape: str) -> None:
    plain = every_part() + agent_history(6)[1:]
    plain.insert(len(every_part()), {"role": "model", "parts": [{"text": "ok"}]})
    plain.insert(len(every_part()) + 1, {"role": "user", "parts": [{"text": "More."}]})
    history: Any = {"snake": plain, "wire": camel(plain), "objects": as_objects(plain)}[shape]
    before = copy.deepcopy(history)
    result = contents.compact(history, model=MODEL, budget=budget)
    sent = sent_of(result)
    assert history == before  # the caller's values are read, never written
    # the current turn stays whole wherever it fits beside the task (pinned)
    tail_fits = contents.count_tokens([plain[0], *current_turn(plain)], model=MODEL) < budget
    check_request(json.loads(json.dumps(sent)), plain, current_kept=tail_fits)
    if not result.budget_unmet:
        assert contents.count_tokens(sent, model=MODEL) <= budget
    assert result.measured_tokens == contents.count_tokens(sent, model=MODEL)


def test_a_masked_function_response_keeps_id_and_name_and_loses_its_media() -> None:
    history = agent_history(8)
    for content in history[2::2]:
        for part in content["parts"]:
            if "function_response" in part:
                part["function_response"]["parts"] = [
                    {"inline_data": {"mime_type": "image/png", "data": png(64, 64)}}]
    result = contents.compact(history, model=MODEL, budget=2_000)
    assert result.report.masked_turn_ids
    conv = result.conversion
    for turn_id in result.report.masked_turn_ids:
        index, sub = (int(n) for n in turn_id[1:].split("."))
        original = conv.parts[turn_id].payload["parts"][0]["function_response"]
        sent = next(content for content in sent_of(result)
                    if any(part.get("function_response", {}).get("id") == original["id"]
                           for part in content["parts"]))
        response = sent["parts"][sub]["function_response"]
        assert set(response) == {"id", "name", "response"}
        assert (response["id"], response["name"]) == (original["id"], original["name"])
        assert set(response["response"]) == {"output"}
        assert "lorem ipsum lorem" not in response["response"]["output"]  # a stub, no body
        del index


def test_a_clipped_function_response_keeps_its_images_and_names_the_cut() -> None:
    history = every_part() + [{"role": "model", "parts": [{"text": "ok"}]},
                              {"role": "user", "parts": [{"text": "next"}]}] * 3
    budget = contents.count_tokens(history, model=MODEL) - 100
    result = contents.compact(history, model=MODEL, budget=budget, max_result_tokens=400)
    assert "c2.0" in result.report.clipped_turn_ids
    response = sent_of(result)[2]["parts"][0]["function_response"]
    assert (response["id"], response["name"]) == ("fc1", "read_file")
    assert len(response["parts"]) == 2  # the image and the file, whole
    assert "sha256" in response["response"]["output"]


def test_signatures_stay_byte_identical_where_they_were() -> None:
    history = agent_history(12)
    result = contents.compact(history, model=MODEL, budget=2_500)
    signed = [part for content in sent_of(result) for part in content["parts"]
              if "thought_signature" in part]
    assert signed and all(part["thought_signature"] == SIGNATURE for part in signed)
    assert all("function_call" in part for part in signed)


def test_the_current_turn_is_untouched_while_it_fits() -> None:
    history = [*agent_history(3), {"role": "model", "parts": [{"text": "done"}]},
               {"role": "user", "parts": [{"text": "Next task."}]}, *agent_history(5)[1:]]
    tail = current_turn(history)
    budget = contents.count_tokens(tail, model=MODEL) + 300
    result = contents.compact(history, model=MODEL, budget=budget)
    assert sent_of(result)[-len(tail):] == tail
    assert not result.budget_unmet


def test_a_model_content_left_first_gets_the_note() -> None:
    history = [{"role": "user", "parts": [{"text": "a " * 400}]},
               {"role": "model", "parts": [{"text": "b " * 50}]},
               {"role": "user", "parts": [{"text": "c"}]}]
    result = contents.compact(history, model=MODEL, budget=150, keep_task=False)
    assert sent_of(result)[0] == {"role": "user",
                                  "parts": [{"text": contents.OMITTED_NOTE}]}
    assert contents.count_tokens(sent_of(result), model=MODEL) <= 150


def test_an_old_file_reference_gives_way_like_any_attachment() -> None:
    old = {"role": "user", "parts": [{"file_data": {"file_uri": "files/old",
                                                    "mime_type": "video/mp4"}}]}
    history = [{"role": "user", "parts": [{"text": "task"}]},
               {"role": "model", "parts": [{"text": "ok"}]}, old,
               {"role": "model", "parts": [{"text": "seen"}]},
               {"role": "user", "parts": [{"text": "and?"}]}]
    result = contents.compact(history, model=MODEL, budget=300)
    assert old not in sent_of(result)
    assert result.report.dropped_turn_ids or result.report.summarized_turn_ids


def test_config_is_counted_never_changed() -> None:
    config = types.GenerateContentConfig(
        system_instruction="You are terse. " * 50,
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
            name="read_file", description="Read a file. " * 20)])],
        tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.AUTO)),
        cached_content=None)
    before = config.model_copy(deep=True)
    history = agent_history(2)
    plain = contents.count_tokens(history, model=MODEL)
    assert contents.count_tokens(history, model=MODEL, config=config) > plain + 100
    result = contents.compact(history, model=MODEL, budget=plain, config=config)
    assert config == before
    assert result.measured_tokens is not None and result.measured_tokens <= plain


def test_images_cost_by_model_and_resolution() -> None:
    def image(level: str | None = None) -> list[dict[str, Any]]:
        part: dict[str, Any] = {"inline_data": {"mime_type": "image/png",
                                                "data": png(1600, 900)}}
        if level:
            part["media_resolution"] = {"level": level}
        return [{"role": "user", "parts": [part]}]

    older = contents.count_tokens(image(), model="gemini-2.5-flash")
    assert older == 3 * 2 * 258 + 4 + 4  # 768-px tiles, content and request framing
    assert contents.count_tokens(image(), model="gemini-3-pro") == 1120 + 8
    assert contents.count_tokens(image("MEDIA_RESOLUTION_LOW"), model="gemini-3-pro") == 288


def test_a_session_counts_images_by_its_model_rules() -> None:
    """A session counts through its own cache of the format's estimator: the model it counts
    for still picks the media rules (Gemini 2.5's tiles, not Gemini 3's flat price)."""
    from cutctx_adapters import CompactionSession

    history = [{"role": "user", "parts": [
        {"text": "What is on this screen?"},
        {"inline_data": {"mime_type": "image/png", "data": png(1600, 900)}}]}]
    session = CompactionSession(contents.FORMAT, model=MODEL, window=1_000_000)
    report = session.prepare(model=MODEL, contents=history).report
    assert report.tokens_in == contents.count_tokens(history, model=MODEL)


def test_count_is_the_same_for_every_spelling() -> None:
    history = every_part()
    counts = {contents.count_tokens(value, model=MODEL)
              for value in (history, camel(history), as_objects(history))}
    assert len(counts) == 1


def test_a_response_object_appended_is_read_as_its_content() -> None:
    response = types.GenerateContentResponse.model_validate({"candidates": [
        {"content": {"role": "model", "parts": [{"text": "hi", "thoughtSignature": SIGNATURE}]},
         "finish_reason": "STOP"}]})
    history: list[Any] = [{"role": "user", "parts": [{"text": "hello"}]}, response]
    conv = contents.to_transcript(history)
    rendered: Any = conv.render(conv.transcript)
    assert rendered[1] == {"role": "model", "parts": [
        {"text": "hi", "thoughtSignature": SIGNATURE}]}


def test_raw_bytes_are_read_as_the_sdk_sends_them() -> None:
    history: Any = [{"role": "user", "parts": [{"text": "x", "thought_signature": b"\x00\xff"},
                                          {"inline_data": {"mime_type": "image/png",
                                                           "data": b"\x89PNG"}}]}]
    rendered = sent_of(contents.compact(history, budget=5_000))
    assert types.Content.model_validate(rendered[0]) == types.Content.model_validate(history[0])
    assert isinstance(history[0]["parts"][0]["thought_signature"], bytes)  # not written


# --- bad input ---------------------------------------------------------------------------


def _error(history: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        contents.validate(history)
    assert MARKER not in str(caught.value) and MARKER not in repr(caught.value.details)
    return caught.value


def _call(name: str = "f", call_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": {"q": MARKER}}
    if call_id:
        body["id"] = call_id
    return {"function_call": body}


def _response(name: str = "f", call_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "response": {"output": MARKER}}
    if call_id:
        body["id"] = call_id
    return {"function_response": body}


USER = {"role": "user", "parts": [{"text": MARKER}]}
BAD = {
    "unanswered_function_call": [USER, {"role": "model", "parts": [_call(), _call("g")]},
                                 {"role": "user", "parts": [_response()]}, USER],
    "function_response_count": [USER, {"role": "model", "parts": [_call()]},
                                {"role": "user", "parts": [_response(), _response()]}],
    "orphaned_function_response": [USER, {"role": "user", "parts": [_response()]}],
    "function_response_id": [USER, {"role": "model", "parts": [_call("f", "a")]},
                             {"role": "user", "parts": [_response("f", "b")]}],
    "function_response_name": [USER, {"role": "model", "parts": [_call("f")]},
                               {"role": "user", "parts": [_response("g")]}],
    "part_role": [USER, {"role": "user", "parts": [_call()]}],
    "part_data": [{"role": "user", "parts": [{"text": MARKER, "inline_data": {"data": "AA"}}]}],
    "unknown_role": [{"role": "assistant", "parts": [{"text": MARKER}]}],
    "bare_part": [{"text": MARKER}],
    "empty_content": [{"role": "user", "parts": []}],
    "missing_name": [USER, {"role": "model", "parts": [{"function_call": {"args": {}}}]}],
    "args_type": [USER, {"role": "model", "parts": [{"function_call": {"name": "f",
                                                                       "args": [MARKER]}}]}],
    "parts_type": [{"role": "user", "parts": MARKER}],
    "part_type": [{"role": "user", "parts": [MARKER]}],
}


@pytest.mark.parametrize("rule", sorted(BAD))
def test_bad_input_is_refused_by_rule_index_and_field(rule: str) -> None:
    error = _error(BAD[rule])
    assert error.details["rule"] == rule
    assert isinstance(error.details["index"], int)
    assert error.details.get("field", "x")  # a field when one is at fault, never an empty one


def test_an_unanswered_call_at_the_end_is_refused() -> None:
    assert _error([USER, {"role": "model", "parts": [_call()]}]).details["index"] == 1


def test_contents_of_the_wrong_type_are_refused() -> None:
    assert _error({"role": "user"}).details["rule"] == "contents_type"
    assert _error([object()]).details["rule"] == "json_data"


# --- properties ----------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_part = st.one_of(
    st.builds(lambda t: {"text": t}, _text),
    st.builds(lambda t: {"text": t, "thought": True, "thought_signature": SIGNATURE}, _text),
    st.builds(lambda t: {"inline_data": {"mime_type": "image/png", "data": png(40, 30)},
                         "part_metadata": {"k": t}}, _text),
    st.builds(lambda t: {"file_data": {"file_uri": f"gs://b/{len(t)}",
                                       "mime_type": "application/pdf"}}, _text),
)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 8))):
        out.append({"role": "user", "parts": draw(st.lists(_part, min_size=1, max_size=3))})
        calls = draw(st.integers(0, 3))
        if calls:
            out.append({"role": "model", "parts": [
                {"function_call": {"id": f"t{turn}.{k}", "name": f"f{k}", "args": {"k": k}},
                 **({"thought_signature": SIGNATURE} if k == 0 else {})}
                for k in range(calls)]})
            out.append({"role": "user", "parts": [
                {"function_response": {"id": f"t{turn}.{k}", "name": f"f{k}",
                                       "response": {"output": draw(_text) * 20}}}
                for k in range(calls)]})
        out.append({"role": "model", "parts": draw(st.lists(_part, min_size=0, max_size=2))})
    return out


@given(histories())
def test_any_valid_history_round_trips_in_every_form(history: list[dict[str, Any]]) -> None:
    for value in (history, camel(history)):
        conv = contents.to_transcript(value)
        assert conv.render(conv.transcript) == value
    objects = as_objects(history)
    conv = contents.to_transcript(objects)
    assert as_objects(conv.render(conv.transcript)) == objects  # type: ignore[arg-type]


@given(histories(), st.integers(60, 4_000))
def test_any_compaction_is_a_valid_request_from_the_history(history: list[dict[str, Any]],
                                                            budget: int) -> None:
    try:
        result = contents.compact(history, model=MODEL, budget=budget)
    except Exception as exc:  # only a refusal naming the budget, never a crash
        assert type(exc).__name__ == "BudgetUnsatisfiable"
        return
    sent = sent_of(result)
    check_request(sent, history, current_kept=False)
    if not result.budget_unmet:
        assert contents.count_tokens(sent, model=MODEL) <= budget


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["role", "parts", "text", "function_call", "functionResponse", "name",
                         "id", "args", "response", "inline_data", "data", "thought_signature",
                         "tool_response", "code_execution_result", "output", "model", "user"]),
        inner, max_size=4),
    max_leaves=12)


@given(st.lists(_json, max_size=4) | _json)
def test_any_input_is_read_or_refused_with_a_validation_error(value: Any) -> None:
    try:
        contents.validate(value)
        contents.compact(value, model=MODEL, budget=2_000)
    except ValidationError as error:
        assert "rule" in error.details
    except BudgetUnsatisfiable:
        pass  # a valid history that cannot fit: refused by name, as the budget says


@given(histories(), st.integers(1, 30))
def test_reading_on_from_a_prefix_is_reading_the_whole(history: list[dict[str, Any]],
                                                       cut: int) -> None:
    from cutctx_adapters.gemini._reading import current_turn as turns_in_current
    from cutctx_adapters.gemini._reading import extended

    cut = min(cut, len(history) - 1)
    estimator = contents.FORMAT.estimator_for(MODEL)
    if cut < 1 or history[cut - 1]["role"] != "user":
        return
    whole = contents.FORMAT.to_transcript(history, None, estimator, None, True)
    grown = extended(contents.FORMAT.to_transcript(history[:cut], None, estimator, None, True),
                     history, cut, estimator, None, True)
    assert grown is not None
    assert grown.transcript == whole.transcript
    assert dict(grown.parts) == dict(whole.parts)
    assert turns_in_current(grown) == turns_in_current(whole)


def test_tools_the_sdk_declares_from_objects_are_counted_not_refused() -> None:
    def read_file(path: str) -> str:
        """Read a file from the repository and return its text."""
        return path

    class Session:
        """An MCP client session (the SDK lists its tools)."""

    history = agent_history(1)
    plain = contents.count_tokens(history, model=MODEL)
    counted = contents.count_tokens(history, model=MODEL,
                                    config={"tools": [read_file, Session()]})
    assert counted > plain + 2 * 64

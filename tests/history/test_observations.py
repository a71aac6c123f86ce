"""Observations (tool output sent as a user message) are tool results; what a person typed is
not; stubs remember identifiers; what gives way is chosen by what is kept (issue 25)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from openai import OpenAI

from cutctx import (
    OBSERVATION_KEY,
    REQUIREMENTS_PLACEHOLDER,
    CharRatioEstimator,
    CompactionBudget,
    CompactionExecutor,
    DeduplicateResultsPolicy,
    ObservationMaskingPolicy,
    Role,
    SpanSummarizingPolicy,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    Transcript,
    TranscriptTurn,
    UserLastDropPolicy,
    ValidationError,
)
from cutctx._digest import digest, identifier_ranges
from cutctx._references import later_references
from cutctx._replaced import KIND_KEY, is_person, is_result
from cutctx_adapters import CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.history._observations import output_shape
from cutctx_adapters.openai import CompactingOpenAI, chat, responses
from tests._support.http import mocked_http
from tests._support.long_histories import LONG_HISTORIES

CHARS = CharRatioEstimator()
STATE = "\n(Open file: /repo/src/app.py)\n(Current directory: /repo)\nbash-$"
TRACEBACK = ("Traceback (most recent call last):\n"
             '  File "/repo/src/app.py", line 1474, in serialize\n'
             "    return int(value.total_seconds() / base_unit)\n"
             "ZeroDivisionError: division by zero")
FILE_VIEW = ("[File: /repo/src/marshmallow/fields.py (1997 lines total)]\n"
             + "\n".join(f"{n}:    value = self.serialize_field(obj, attr_{n})"
                         for n in range(1470, 1530)) + STATE)
LISTING = "AUTHORS.rst\nCHANGELOG.rst\nREADME.rst\nsetup.py\nsrc/\ntests/\ntox.ini"
PERSON = ("Build the export job. Requirement: tag every file with REQ-1A2B3C.",
          "Use this instead, please:\n```python\ndef total(xs):\n    return sum(xs)\n```\n"
          "and keep the old name for the public function.",
          "Change of plan: do not use KEY-77 any more; use the key FIX-0042 instead.",
          "Continue.", "Good, go on.", "Why did you open setup.py? Please explain first.",
          "Finish up and report.")


def turn(turn_id: str, role: Role, content: str, *, observation: bool = False,
         call: str | None = None) -> TranscriptTurn:
    metadata = {OBSERVATION_KEY: "shape"} if observation else {}
    return TranscriptTurn(turn_id, role, content, CHARS.estimate_tokens(content), call,
                          metadata=metadata)


def agent(*outputs: str, observation: bool = True) -> Transcript:
    """SWE-agent style: a task, then per output the assistant's command and its output as a
    user message (marked as an observation unless ``observation`` is False), then a person's
    last message."""
    turns = [turn("s", Role.SYSTEM, "You are an agent."), turn("u", Role.USER, "Fix the bug.")]
    for number, output in enumerate(outputs):
        turns.append(turn(f"a{number}", Role.ASSISTANT, f"```\ncat step_{number}.log\n```"))
        turns.append(turn(f"o{number}", Role.USER, output, observation=observation))
    turns.append(turn("p", Role.USER, "Go on."))
    return Transcript(tuple(turns))


def view_of(transcript: Transcript, policy: Any, budget: int, protected: int = 1) -> Transcript:
    plan = policy.decide(transcript, CompactionBudget(budget, protected))
    summaries = {request.group_id: "summary" for request in plan.summarization_requests}
    return CompactionExecutor().apply(transcript, plan, summaries).transcript


def by_id(view: Transcript) -> dict[str, TranscriptTurn]:
    return {t.turn_id: t for t in view.turns}


LOG = "\n".join(f"[{n:04d}] worker batch ok in {n * 7 % 900}ms" for n in range(300))


# --- the engine: an observation is a tool result ----------------------------------------------

def test_an_observation_is_a_result_and_a_plain_user_turn_a_person() -> None:
    observed, typed = turn("o", Role.USER, "ls", observation=True), turn("p", Role.USER, "hi")
    assert is_result(observed) and not is_person(observed)
    assert is_person(typed) and not is_result(typed)
    assert is_result(turn("r", Role.TOOL, "x", call="c")) and not is_person(
        turn("a", Role.ASSISTANT, "x"))


def test_an_old_observation_is_masked_and_an_unmarked_user_message_is_not() -> None:
    policy = ToolResultMaskingPolicy(1, digest_tokens=24, digest="identifiers")
    marked = by_id(view_of(agent(LOG, LOG), policy, 400))
    assert marked["o0"].metadata[KIND_KEY] == "masked"
    assert marked["o0"].content.startswith("[tool result masked by cutctx] (original: ")
    assert KIND_KEY not in marked["o1"].metadata  # the newest result is spared
    unmarked = view_of(agent(LOG, LOG, observation=False), policy, 400)
    assert all(KIND_KEY not in t.metadata for t in unmarked.turns)


def test_an_observation_repeated_later_becomes_a_pointer_to_it() -> None:
    view = by_id(view_of(agent(LOG, "other", LOG), DeduplicateResultsPolicy(), 400))
    assert view["o0"].metadata[KIND_KEY] == "deduplicated"
    assert view["o0"].content.startswith(
        "[duplicate output: identical to a message with the same output, later in this "
        "conversation; original: ")
    assert view["o2"].content == LOG


def test_an_oversized_observation_is_clipped_as_output() -> None:
    view = by_id(view_of(agent(LOG, "ok"), ToolResultClipPolicy(200), 900))
    assert view["o0"].metadata[KIND_KEY] == "clipped"
    assert "[... cutctx clipped this output: " in view["o0"].content


def test_observations_are_dropped_with_the_first_pass_and_a_person_last() -> None:
    transcript = agent("x" * 400, "y" * 400, "z" * 400)
    view = by_id(view_of(transcript, UserLastDropPolicy(), 260))
    assert "o0" not in view and "a0" not in view  # the oldest step went, output and all
    assert "u" in view and "p" in view  # what a person typed stays


def test_a_span_passes_over_a_person_but_folds_observations() -> None:
    transcript = agent("x" * 400, "y" * 400, "z" * 400)
    plan = SpanSummarizingPolicy("cutctx/summary@2", user_turns_last=True).decide(
        transcript, CompactionBudget(300, 1))
    folded = {turn_id for request in plan.summarization_requests for turn_id in request.turn_ids}
    assert {"o0", "o1"} <= folded and "u" not in folded


def test_a_0_1_0_policy_ignores_the_observation_key() -> None:
    marked, unmarked = agent(LOG, LOG), agent(LOG, LOG, observation=False)
    budget = CompactionBudget(300, 1)
    assert (ObservationMaskingPolicy(1).decide(marked, budget).canonical_json()
            == ObservationMaskingPolicy(1).decide(unmarked, budget).canonical_json())


# --- stubs that remember identifiers -----------------------------------------------------------

def test_an_identifier_digest_says_which_file_which_line_which_error() -> None:
    kept = digest(TRACEBACK + STATE, 40, CHARS, "identifiers").split("\n")
    assert "ZeroDivisionError: division by zero" in kept
    assert "/repo/src/app.py" in kept and "1474" in kept


def test_an_identifier_digest_is_within_its_cap_in_order_and_names_each_once() -> None:
    ranges = identifier_ranges(FILE_VIEW, 48, CHARS)
    assert list(ranges) == sorted(ranges)
    texts = [FILE_VIEW[start:end] for start, end in ranges]
    assert len(texts) == len(set(texts))
    assert sum(CHARS.estimate_tokens(text) + 1 for text in texts) <= 48
    assert texts[0] == "/repo/src/marshmallow/fields.py"
    assert identifier_ranges(FILE_VIEW, 0, CHARS) == ()


def test_a_masked_result_keeps_the_identifiers_as_ranges_not_text() -> None:
    transcript = agent(TRACEBACK + "\n" + LOG, "ok")
    policy = ToolResultMaskingPolicy(1, digest_tokens=40, digest="identifiers")
    plan = policy.decide(transcript, CompactionBudget(200, 1))
    replacement = plan.action_for("o0").replacement
    assert replacement is not None and replacement.excerpt
    assert "ZeroDivisionError" not in replacement.content  # the plan holds no conversation
    view = by_id(CompactionExecutor().apply(transcript, plan).transcript)
    assert "ZeroDivisionError: division by zero" in view["o0"].content


def test_identifiers_of_a_clip_marker_are_not_digested() -> None:
    clipped = by_id(view_of(agent(LOG, "ok"), ToolResultClipPolicy(200), 900))["o0"].content
    texts = digest(clipped, 200, CHARS, "identifiers").split("\n")
    assert not any("sha256" in text or "cutctx" in text for text in texts)


# --- what gives way: by value -----------------------------------------------------------------

def referenced_later() -> Transcript:
    """Two old outputs; only the first is named again later (its file)."""
    return Transcript((
        turn("s", Role.SYSTEM, "You are an agent."), turn("u", Role.USER, "Fix the bug."),
        turn("a0", Role.ASSISTANT, "open"),
        turn("o0", Role.USER, "[File: src/keep_me.py]\n" + LOG, observation=True),
        turn("a1", Role.ASSISTANT, "run"),
        turn("o1", Role.USER, "[File: docs/notes.rst]\n" + LOG, observation=True),
        turn("a2", Role.ASSISTANT, "edit src/keep_me.py"),
        turn("o2", Role.USER, "ok", observation=True),
        turn("p", Role.USER, "Go on.")))


def test_later_references_count_what_later_turns_name() -> None:
    transcript = referenced_later()
    references = dict(zip(transcript.turn_ids(), later_references(transcript), strict=True))
    assert references["o0"] >= 1 and references["o1"] == 0 and references["a2"] == 0


def test_by_value_the_result_no_later_turn_refers_to_is_masked_first() -> None:
    transcript = referenced_later()
    need = transcript.token_estimate() - 500
    by_value = by_id(view_of(transcript, ToolResultMaskingPolicy(1, order="value"), need))
    by_age = by_id(view_of(transcript, ToolResultMaskingPolicy(1, order="oldest"), need))
    assert by_value["o1"].metadata.get(KIND_KEY) == "masked"
    assert KIND_KEY not in by_value["o0"].metadata
    assert by_age["o0"].metadata.get(KIND_KEY) == "masked"
    assert KIND_KEY not in by_age["o1"].metadata


def test_by_value_results_are_dropped_before_the_agents_own_steps() -> None:
    transcript = referenced_later()
    view = by_id(view_of(transcript, UserLastDropPolicy(order="value"), 700))
    assert "o1" not in view and "a1" in view  # an unreferenced output went, its command stayed
    plain = by_id(view_of(transcript, UserLastDropPolicy(), 700))
    assert "a0" not in plain  # by age: the oldest exchange first, whatever it holds


@pytest.mark.parametrize("make", [
    lambda: ToolResultMaskingPolicy(order="newest"), lambda: ToolResultMaskingPolicy(digest="all"),
    lambda: UserLastDropPolicy(order="random")])
def test_unknown_orders_and_styles_are_refused_by_name(make: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        make()
    assert caught.value.details["field"] in ("order", "digest")


# --- the adapters: telling them apart ---------------------------------------------------------

@pytest.mark.parametrize("text", [TRACEBACK, FILE_VIEW, LISTING, "344\n" + STATE, LOG,
                                  "diff --git a/x.py b/x.py\n@@ -1,2 +1,2 @@\n-a\n+b"])
def test_tool_output_reads_as_output(text: str) -> None:
    assert output_shape(text) is not None


@pytest.mark.parametrize("text", PERSON)
def test_what_a_person_types_does_not(text: str) -> None:
    assert output_shape(text) is None


def swe_agent_history() -> list[dict[str, Any]]:
    """A task, three commands with their output as user messages, and a person's message."""
    return [{"role": "system", "content": "You are an autonomous programmer."},
            {"role": "user", "content": "Fix the rounding issue in TimeDelta." + STATE},
            {"role": "assistant", "content": "Let's look.\n```\nls\n```"},
            {"role": "user", "content": LOG + STATE},
            {"role": "assistant", "content": "```\nopen src/marshmallow/fields.py 1474\n```"},
            {"role": "user", "content": FILE_VIEW},
            {"role": "assistant", "content": "```\npython reproduce.py\n```"},
            {"role": "user", "content": TRACEBACK + STATE},
            {"role": "assistant", "content": "Should I change the rounding?"},
            {"role": "user", "content": "Yes, round half to even, and keep the old format."}]


def marks(conversion: Any) -> dict[str, str | None]:
    return {t.turn_id: t.metadata.get(OBSERVATION_KEY) for t in conversion.transcript.turns
            if t.role is Role.USER}


def test_the_conversion_marks_outputs_after_an_assistant_message_and_never_the_task() -> None:
    assert marks(chat.to_transcript(swe_agent_history(), estimator=CHARS)) == {
        "m1": None, "m3": "prompt", "m5": "prompt", "m7": "traceback", "m9": None}


def test_after_tool_results_output_is_an_observation_and_prose_is_not() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    history = [{"role": "user", "content": "Fix it."},
               {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "c1", "content": "done"},
               {"role": "user", "content": TRACEBACK},
               {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]},
               {"role": "tool", "tool_call_id": "c2", "content": "done"},
               {"role": "user", "content": "Continue."}]
    assert marks(chat.to_transcript(history, estimator=CHARS)) == {
        "m0": None, "m3": "traceback", "m6": None}


def test_a_history_read_on_marks_what_reading_it_whole_marks() -> None:
    history = swe_agent_history()
    first = chat.to_transcript(history[:6], estimator=CHARS)
    assert chat.FORMAT.extend is not None
    grown = chat.FORMAT.extend(first, history, 6, CHARS, None, False)
    assert grown is not None
    assert marks(grown.conversion()) == marks(chat.to_transcript(history, estimator=CHARS))


def test_anthropic_messages_are_marked_the_same_way() -> None:
    history = swe_agent_history()
    conv = anthropic_messages.to_transcript(history[1:], system=history[0]["content"],
                                            estimator=CHARS)
    assert sorted(v for v in marks(conv).values() if v) == ["prompt", "prompt", "traceback"]


def test_responses_items_are_marked_the_same_way() -> None:
    history = swe_agent_history()
    conv = responses.to_transcript(history[1:], instructions=history[0]["content"],
                                   estimator=CHARS)
    assert sorted(v for v in marks(conv).values() if v) == ["prompt", "prompt", "traceback"]


@pytest.mark.parametrize("history", [h for h in LONG_HISTORIES if h.style == "user_observations"],
                         ids=lambda h: h.name)
def test_generated_agent_runs_have_every_output_marked(history: Any) -> None:
    conv = chat.to_transcript(history.messages(), estimator=CHARS)
    unmarked = [t for t in conv.transcript.turns
                if t.role is Role.USER and OBSERVATION_KEY not in t.metadata]
    assert all(t.content.startswith(("We're solving", "Here is a demonstration"))
               for t in unmarked)


def compacted(history: list[dict[str, Any]], **options: Any) -> dict[str, str]:
    budget = chat.count_tokens(history, estimator=CHARS) * 2 // 3
    result = chat.compact(history, budget=budget, keep_recent=2, keep_recent_results=1,
                          digest_tokens=32, max_result_share=1.0, estimator=CHARS, **options)
    return {r.turn_id: r.kind for r in result.replacements}


def test_compact_masks_old_outputs_and_never_what_a_person_typed() -> None:
    replaced = compacted(swe_agent_history())
    assert "m3" in replaced and set(replaced) <= {"m3", "m5"}  # outputs; m7 the newest


def test_observations_none_keeps_user_messages_as_user_turns() -> None:
    history = swe_agent_history()
    result = chat.compact(history, budget=chat.count_tokens(history) * 2 // 3, keep_recent=2,
                          keep_recent_results=1, digest_tokens=32, max_result_share=1.0,
                          observations="none")
    assert result.messages is not None
    for replaced in result.replacements:  # a person's message is shortened, never masked
        assert replaced.kind == "masked"   # as a tool result would be
        index = int(replaced.turn_id[1:])
        assert str(result.messages[index]["content"]).startswith(REQUIREMENTS_PLACEHOLDER)


def test_a_callable_names_the_observations_of_an_agents_own_convention() -> None:
    history = [{"role": "system", "content": "Agent."}, {"role": "user", "content": "Task."}]
    for step in range(4):
        history += [{"role": "assistant", "content": f"Action: run {step}"},
                    {"role": "user", "content": "Observation: " + "the search found a page "
                     "about the parser and its options, " * 80}]
    history += [{"role": "assistant", "content": "Done?"}, {"role": "user", "content": "Yes."}]

    def observed(message: Mapping[str, Any], index: int) -> bool:
        return str(message.get("content", "")).startswith("Observation:")

    auto = chat.to_transcript(history, estimator=CHARS)
    assert all(OBSERVATION_KEY not in t.metadata for t in auto.transcript.turns)  # prose-like
    masked = compacted(history, observations=observed)
    assert masked and set(masked) <= {"m3", "m5", "m7"}
    assert compacted(history, observations="after_assistant") == masked
    assert compacted(history) == {}  # nothing else is a result


def test_a_callable_that_fails_is_a_validation_error_naming_the_message() -> None:
    def broken(message: Mapping[str, Any], index: int) -> bool:
        raise KeyError("content")

    with pytest.raises(ValidationError) as caught:
        compacted(swe_agent_history(), observations=broken)
    assert caught.value.details["field"] == "observations"
    assert caught.value.details["index"] == 1
    with pytest.raises(ValidationError) as caught:
        compacted(swe_agent_history(), observations=lambda message, index: "yes")
    assert caught.value.details["field"] == "observations"


@pytest.mark.parametrize(("name", "value"), [("observations", "tools"), ("observations", 1),
                                             ("digest", "words"), ("give_way", "newest")])
def test_bad_settings_are_refused_when_made(name: str, value: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        CompactionSession(chat.FORMAT, model="gpt-4o", **{name: value})
    assert caught.value.details["field"] == name
    with pytest.raises(ValidationError):
        chat.compact(swe_agent_history(), budget=10_000, **{name: value})


# --- end to end: a wrapped client, sticky ----------------------------------------------------

BASE_URL = "https://api.openai.test/v1"


@pytest.fixture
def route(tiktoken_cache: Path) -> Iterator[respx.Route]:
    reply = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
             "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": "ok"}}]}
    with mocked_http(base_url=BASE_URL) as router:
        yield router.post("/chat/completions").mock(return_value=httpx.Response(200, json=reply))


def test_a_wrapped_client_replaces_outputs_not_people_and_keeps_the_prefix(
        route: respx.Route) -> None:
    client = CompactingOpenAI(OpenAI(api_key="test", base_url=BASE_URL, max_retries=0),
                              window=4_000, reserve=500, trigger=1_200, target=500,
                              digest_tokens=24)
    history = swe_agent_history()
    sent = []
    for end in (6, 8, 10):
        messages: list[Any] = history[:end]  # plain dicts, as an agent keeps them
        client.chat.completions.create(model="gpt-4o", messages=messages)
        sent.append(json.loads(route.calls.last.request.content)["messages"])
    last = sent[-1]
    assert last[-1] == history[-1] and last[1] == history[1]  # the person and the task
    replaced = [index for index, message in enumerate(last) if message != history[index]]
    assert replaced == [3, 5]  # the two old outputs, user messages replaced like results
    assert all("cutctx" in last[index]["content"] for index in replaced)
    for earlier, later in itertools.pairwise(sent):
        assert later[:len(earlier)] == earlier  # replaced once, then the same bytes: cached

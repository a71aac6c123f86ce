"""Sessions derive their view from the history alone, and their decisions are final.

* Two sessions that never talk send byte-identical requests for the same history, whichever of
  its earlier calls each one saw (issue 12: workers behind a load balancer); with summaries,
  when they share the store that holds them (a summary is model output: what the store holds
  is what a first call on a long history reads, issue 39).
* A stub always names an original's hash, and a turn once masked renders the same bytes on every
  later call until it is dropped or summarized (issue 15: no re-masking).
Property tests over agent sessions in all three formats.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutctx import (
    CharRatioEstimator,
    SummarizationRequest,
    TokenEstimator,
    TranscriptTurn,
    ValidationError,
)
from cutctx._canonical import sha256_text
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning._format import HistoryFormat
from cutctx_adapters.session import CompactionSession, Prepared
from cutctx_adapters.stores import MemoryStore
from cutctx_adapters.tiktoken import TiktokenEstimator
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run, send

WINDOW = 6_000
_HASH = re.compile(r"sha256:([0-9a-f]{64})")


def _chat_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: json.dumps(m) for m in request["messages"]
            if m.get("role") == "tool"}


def _responses_results(request: dict[str, Any]) -> dict[str, str]:
    items = request["input"]
    return {} if isinstance(items, str) else {
        i["call_id"]: json.dumps(i) for i in items if i.get("type") == "function_call_output"}


def _anthropic_results(request: dict[str, Any]) -> dict[str, str]:
    return {b["tool_use_id"]: json.dumps(b) for m in request["messages"]
            if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_result"}


FORMATS: dict[str, tuple[HistoryFormat, Callable[[int, int], AgentRun],
                         Callable[[dict[str, Any]], dict[str, str]]]] = {
    "chat": (chat.FORMAT, chat_run, _chat_results),
    "responses": (responses.FORMAT, responses_run, _responses_results),
    "anthropic": (anthropic_messages.FORMAT, anthropic_run, _anthropic_results),
}


def deterministic_summary(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return " / ".join(" ".join(turn.content.split()[:3]) for turn in turns)[
        : request.target_tokens * 3]


def make(fmt: HistoryFormat, summarize: bool = False, estimator: TokenEstimator | None = None,
         **options: Any) -> CompactionSession:
    return CompactionSession(fmt, model="gpt-4o", window=WINDOW, reserve=0,
                             estimator=estimator or CharRatioEstimator(),
                             summarizer=deterministic_summary if summarize else None, **options)


@pytest.fixture(params=["chars", "o200k"])
def estimator(request: pytest.FixtureRequest) -> TokenEstimator:
    if request.param == "chars":
        return CharRatioEstimator()
    request.getfixturevalue("tiktoken_cache")
    return TiktokenEstimator(encoding="o200k_base")


def body(prepared: Prepared) -> str:
    return json.dumps(prepared.request, sort_keys=True)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=6)
@given(seed=st.integers(0, 10_000), rounds=st.integers(20, 45), stride=st.integers(2, 7),
       summarize=st.booleans())
def test_views_do_not_depend_on_which_calls_a_process_saw(
        name: str, seed: int, rounds: int, stride: int, summarize: bool) -> None:
    fmt, build, _ = FORMATS[name]
    run = build(seed, rounds)
    calls = run.calls()
    store = MemoryStore()
    every = make(fmt, summarize, store=store)
    some = make(fmt, summarize, check_prefix="identity", store=store)
    last_only = make(fmt, summarize, store=store)
    seen_all = [send(every, fmt, run, items) for items in calls]
    seen_some = [send(some, fmt, run, items) for items in calls[::stride]]
    assert body(seen_some[-1]) == body(seen_all[(len(calls) - 1) // stride * stride])
    final_some = send(some, fmt, run, calls[-1])
    final_cold = send(last_only, fmt, run, calls[-1])
    assert body(final_some) == body(final_cold) == body(seen_all[-1])
    assert any(o.report.decision in ("compacted", "recompacted") for o in seen_all)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=6, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), rounds=st.integers(20, 45), summarize=st.booleans())
def test_stubs_name_originals_and_stay_byte_identical_until_removed(
        name: str, estimator: TokenEstimator, seed: int, rounds: int, summarize: bool) -> None:
    fmt, build, results_of = FORMATS[name]
    run = build(seed, rounds)
    calls = run.calls()
    full = fmt.to_transcript(run.items, run.side, estimator, None, False)
    originals = {sha256_text(turn.content) for turn in full.transcript.turns}
    session = make(fmt, summarize, estimator)
    final: dict[str, str] = {}
    clipped: dict[str, str] = {}
    masked = 0
    for items in calls:
        request = send(session, fmt, run, items).request
        text = json.dumps(request)
        assert set(_HASH.findall(text)) <= originals
        for result_id, rendered in results_of(request).items():
            if result_id in final:
                assert rendered == final[result_id]  # never masked again
            elif result_id in clipped and rendered != clipped[result_id]:
                # a clip may still be masked, and the stub names the same original
                assert _HASH.findall(rendered)[:1] == _HASH.findall(clipped[result_id])[:1]
                assert "masked by cutctx" in rendered
                final[result_id] = rendered
            elif "masked by cutctx" in rendered or "[duplicate tool result" in rendered:
                final[result_id] = rendered
                masked += 1
            elif "cutctx clipped" in rendered:
                clipped[result_id] = rendered
    assert masked > 0


def measured(fmt: HistoryFormat, request: dict[str, Any], estimator: TokenEstimator) -> int:
    """The request's prompt tokens, counted afresh by the format's own counter."""
    if fmt is chat.FORMAT:
        return chat.count_tokens(request["messages"], estimator=estimator)
    if fmt is responses.FORMAT:
        return responses.count_tokens(request["input"], instructions=request.get("instructions"),
                                      estimator=estimator)
    return anthropic_messages.count_tokens(request["messages"], system=request.get("system"),
                                           estimator=estimator)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), rounds=st.integers(10, 40), window=st.integers(1_500, 5_000),
       summarize=st.booleans())
def test_what_is_sent_fits_the_prompt_budget(name: str, seed: int, rounds: int, window: int,
                                             summarize: bool) -> None:
    fmt, build, _ = FORMATS[name]
    run = build(seed, rounds)
    estimator = CharRatioEstimator()
    session = CompactionSession(fmt, model="gpt-4o", window=window, reserve=0,
                                estimator=estimator,
                                summarizer=deterministic_summary if summarize else None)
    for items in run.calls():
        prepared = send(session, fmt, run, items)
        report = prepared.report
        assert report.tokens_sent is not None and report.prompt_budget is not None
        sent = measured(fmt, prepared.request, estimator)
        assert sent <= report.prompt_budget or report.budget_unmet, (sent, report)


def test_an_earlier_message_edited_in_place_is_read_again() -> None:
    """A call re-reads only what changed since the last one, but an edit made in place to an
    already-sent message (a redaction, say) is seen, never answered from the earlier copy."""
    run = chat_run(3, 12)
    calls = run.calls()
    session = make(chat.FORMAT)
    history = calls[-1]
    send(session, chat.FORMAT, run, history)
    task = next(m for m in history if m["role"] == "user")
    original = task["content"]
    task["content"] = "[redacted]"
    sent = send(session, chat.FORMAT, run, history)
    contents = json.dumps(sent.request["messages"])
    assert "[redacted]" in contents and original not in contents


def _edited(item: Any) -> Any:
    """A new item like ``item`` with its first text (content, text, output) changed."""
    out = copy.deepcopy(item)
    stack = [out]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key in ("content", "text", "output"):
                if isinstance(value.get(key), str):
                    value[key] += " (edited)"
                    return out
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return out


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), rounds=st.integers(8, 30), summarize=st.booleans(),
       steps=st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["as is", "replaced", "copied"]),
                                st.floats(0, 1)), min_size=1, max_size=10))
def test_checking_items_by_identity_sends_what_checking_contents_sends(
        name: str, seed: int, rounds: int, summarize: bool,
        steps: list[tuple[float, str, float]]) -> None:
    """A session that takes items it read before as unchanged while they are the same objects
    (``check_prefix="identity"``) sends, call after call, the bytes a session comparing their
    contents sends, whatever the caller does short of editing an item in place: append, roll
    back, branch, replace an earlier item with a new one, send fresh copies; and, while the
    calls only go forward, what a cold session sharing their store sends. (After a roll back
    the store may hold a summary the walk of a history already answered folded unwritten: a
    warm session keeps its answer, a cold one reads the stored summary: README, workers.)"""
    fmt, build, _ = FORMATS[name]
    run = build(seed, rounds)
    calls = run.calls()
    store = MemoryStore()  # the summaries they send are the ones the store holds
    by_identity = make(fmt, summarize, check_prefix="identity", store=store)
    by_content = make(fmt, summarize, store=store)
    forward, furthest = True, 0
    for where, change, at in steps:
        number = int(where * (len(calls) - 1))
        forward = forward and number >= furthest and change != "replaced"
        furthest = max(furthest, number)
        items = calls[number]
        if change == "replaced" and items:
            items = list(items)
            index = int(at * (len(items) - 1))
            items[index] = _edited(items[index])
        elif change == "copied":
            items = copy.deepcopy(items)
        try:
            expected = body(send(make(fmt, summarize, store=store), fmt, run, items))
        except ValidationError:  # an edit the format refuses: refused the same way
            for compactor in (by_identity, by_content):
                with pytest.raises(ValidationError):
                    send(compactor, fmt, run, items)
            continue
        sent = body(send(by_identity, fmt, run, items))
        assert sent == body(send(by_content, fmt, run, items))
        assert sent == expected or not forward


@pytest.mark.parametrize("name", FORMATS)
def test_what_prepare_returns_is_the_callers_to_change(name: str) -> None:
    """Mutating a returned request (its list, its items, its side value) changes nothing the
    session sends next (issue 18: sessions share no state with what they return)."""
    fmt, build, _ = FORMATS[name]
    run = build(7, 30)
    items = run.calls()[-1]
    session = make(fmt)
    first = send(session, fmt, run, items)
    before = body(first)
    history = first.request[fmt.list_key]
    if isinstance(history, list):
        history.append({"role": "user", "content": "injected"})
        for item in history:
            if isinstance(item, dict):
                item["content"] = "overwritten"
    side = first.request.get(fmt.side_key) if fmt.side_key else None
    if isinstance(side, list):
        side.append({"type": "text", "text": "injected"})
    second = send(session, fmt, run, items)
    assert body(second) == before


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), rounds=st.integers(15, 35),
       window=st.sampled_from([1_500, 2_500, 4_000]))
def test_anthropic_omitted_note_is_counted_in_the_budget(seed: int, rounds: int,
                                                         window: int) -> None:
    """Without the task pinned, a removal can leave an assistant turn first: the note put
    before it is counted, so what is sent still fits (issue 18 item 7)."""
    fmt = anthropic_messages.FORMAT
    run = anthropic_run(seed, rounds)
    estimator = CharRatioEstimator()
    session = CompactionSession(fmt, model="gpt-4o", window=window, reserve=0,
                                estimator=estimator, keep_task=False, keep_user_turns=False)
    for items in run.calls():
        prepared = send(session, fmt, run, items)
        sent = measured(fmt, prepared.request, estimator)
        budget = prepared.report.prompt_budget
        assert budget is not None and (sent <= budget or prepared.report.budget_unmet)


@pytest.mark.parametrize("name", ["chat", "responses", "anthropic"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), rounds=st.integers(3, 25), keep_task=st.booleans(),
       pin=st.sampled_from([None, [0], [3, 40], "callable"]))
def test_a_history_read_on_from_a_known_one_converts_as_a_whole(
        name: str, seed: int, rounds: int, keep_task: bool, pin: Any) -> None:
    """What a session reads of a growing history (only the appended messages) converts to
    exactly what converting the whole history gives: turns, parts, task, exchanges."""
    pins: Any = (lambda message, index: index % 7 == 3) if pin == "callable" else pin
    fmt, build, _ = FORMATS[name]
    run = build(seed, rounds)
    assert fmt.extend is not None
    calls = run.calls()
    def within(count: int) -> Any:  # as a session applies index pins to a growing history
        return pins if not isinstance(pins, list) else [i for i in pins if i < count]

    extended = 0
    for before, after in itertools.pairwise(calls):
        known = fmt.to_transcript(before, run.side, CharRatioEstimator(), within(len(before)),
                                  keep_task)
        whole = fmt.to_transcript(after, run.side, CharRatioEstimator(), within(len(after)),
                                  keep_task)
        grown = fmt.extend(known, after, len(before), CharRatioEstimator(), within(len(after)),
                           keep_task)
        # the known history may also end with the reply to it (an assistant message)
        replied = after[:len(before) + 1]
        try:  # (not a request of its own where the reply is a tool call)
            known_replied = fmt.to_transcript(replied, run.side, CharRatioEstimator(),
                                              within(len(replied)), keep_task)
        except ValidationError:
            grown_replied = None
        else:
            grown_replied = fmt.extend(known_replied, after, len(replied), CharRatioEstimator(),
                                       within(len(after)), keep_task)
        for grew in (grown, grown_replied):
            if grew is None:  # a call still open where the known history ends
                continue
            extended += 1
            assert grew.transcript == whole.transcript
            assert dict(grew.parts) == dict(whole.parts)
            assert grew.task_turn_id == whole.task_turn_id
    assert extended or len(calls) < 2


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), rounds=st.integers(20, 45), summarize=st.booleans())
def test_each_event_records_where_its_view_turns_stand_in_the_history(
        name: str, seed: int, rounds: int, summarize: bool) -> None:
    """An event finds its view's turns among those it planned over (not by scanning the whole
    history): the positions it records are those a scan of the history's conversion gives."""
    fmt, build, _ = FORMATS[name]
    run = build(seed, rounds)
    session = make(fmt, summarize)
    checked = 0
    for items in run.calls():
        send(session, fmt, run, items)
        for known in list(session._known._entries.values()):
            ledger = known.ledger
            conv = fmt.to_transcript(items[:ledger.covered_items], run.side,
                                     CharRatioEstimator(), None, True)
            where = {turn.turn_id: index for index, turn in enumerate(conv.transcript.turns)}
            assert ledger.positions == tuple(where.get(turn.turn_id) for turn in ledger.view)
            checked += 1
    assert checked


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("seed", [3, 11])
def test_a_history_seen_whole_is_converted_once_not_once_per_event(name: str, seed: int
                                                                   ) -> None:
    """A session seeing a long history for the first time (a new worker, a restart) compacts
    at each of its earlier points, reading each point's history on from the one before:
    no whole conversion per event, and what it sends is what a session that saw every call
    sends."""
    fmt, build, _ = FORMATS[name]
    run = build(seed, 45)
    whole: list[int] = []

    def counting(*args: Any) -> Any:
        whole.append(len(args[0]))
        return fmt.to_transcript(*args)

    counted = dataclasses.replace(fmt, to_transcript=counting)
    cold = send(make(counted), counted, run, run.calls()[-1])
    assert cold.report.events >= 3
    assert len(whole) <= 2  # the whole history, and the first point's (nothing to read on from)
    every = make(fmt)
    assert body(cold) == body([send(every, fmt, run, items) for items in run.calls()][-1])

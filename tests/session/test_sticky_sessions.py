"""Sticky compaction (issue 7): a history that extends a known one reuses the earlier view.

Between compaction events the list sent starts with the previous list sent, byte for byte; a span
is summarized once; a history that does not extend a known one is planned from scratch; state is
keyed by content, bounded, and safe under threads and asyncio. Nothing here is timed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import itertools
import json
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from openai import OpenAI
from openai.types.chat import ChatCompletion

import cutctx
from cutctx import SummarizationRequest, TokenEstimator, TranscriptTurn
from cutctx_adapters import SummarizationFailed
from cutctx_adapters.openai import CompactingOpenAI, chat
from cutctx_adapters.session import CallReport, CompactionSession, PrefixCheck, Prepared
from cutctx_adapters.stores import MemoryStore
from cutctx_adapters.tiktoken import TiktokenEstimator
from tests._support.http import mocked_http
from tests.openai.chat_rules import check

Messages = list[dict[str, Any]]
WINDOW = 4_000
TRIGGER = 3_000
TARGET = 1_600
BASE_URL = "https://api.openai.test/v1"
MODEL = "gpt-4o"

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
          "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
          "sierra", "tango", "uniform", "victor", "whiskey", "xray")


def _text(tag: str, i: int, words: int) -> str:
    return f"{tag} #{i}: " + " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(words))


def agent_run(tag: str, rounds: int, system: str | None = None) -> Messages:
    """An agent session: tool rounds and, every third round, an observation as a user message."""
    messages: Messages = [
        {"role": "system", "content": system or f"You are agent {tag}. Fix the bug."},
        {"role": "user", "content": _text(f"{tag} task", 0, 30)},
    ]
    for i in range(rounds):
        if i % 3 == 2:
            messages.append({"role": "assistant", "content": _text(f"{tag} thought", i, 25)})
            messages.append({"role": "user", "content": _text(f"{tag} observation", i, 60)})
            continue
        call_id = f"call_{tag}_{i}"
        messages.append({"role": "assistant", "content": _text(f"{tag} plan", i, 15),
                         "tool_calls": [{"id": call_id, "type": "function", "function": {
                             "name": "bash", "arguments": json.dumps({"cmd": f"ls {tag}/{i}"})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": _text(f"{tag} output", i, 70)})
    return messages


def calls_of(history: Messages) -> list[Messages]:
    """What the agent sends: the history before each assistant message."""
    return [history[:i] for i, m in enumerate(history) if m["role"] == "assistant"]


class CountingSummarizer:
    """Deterministic: the first words of each folded turn. Records every span it is asked for."""

    def __init__(self) -> None:
        self.spans: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    @staticmethod
    def text(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        lines = [f"{turn.role.value}: {' '.join(turn.content.split()[:6])}" for turn in turns]
        return "\n".join(lines)[: max(40, request.target_tokens * 4)]

    def record(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> None:
        span = (request.prompt_id, request.target_tokens,
                *((turn.role.value, turn.content) for turn in turns))
        with self._lock:
            self.spans.append(span)

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.record(request, turns)
        return self.text(request, turns)

    @property
    def calls(self) -> int:
        return len(self.spans)


class AsyncCountingSummarizer(CountingSummarizer):
    async def __call__(  # type: ignore[override]
            self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        await asyncio.sleep(0)
        self.record(request, turns)
        await asyncio.sleep(0)
        return self.text(request, turns)


def session(summarizer: Any = None, estimator: TokenEstimator | None = None,
            **settings: Any) -> CompactionSession:
    options: dict[str, Any] = {"window": WINDOW, "reserve": 0, "trigger": TRIGGER,
                               "target": TARGET, **settings}
    return CompactionSession(chat.FORMAT, model=MODEL,
                             estimator=estimator or cutctx.CharRatioEstimator(),
                             summarizer=summarizer, **options)


def dumps(messages: Sequence[Any]) -> str:
    return json.dumps(list(messages))


def sent(prepared: Prepared) -> Messages:
    messages: Messages = prepared.request["messages"]
    return messages


def replay(compactor: CompactionSession, requests: Sequence[Messages]) -> list[Prepared]:
    return [compactor.prepare(model=MODEL, messages=messages) for messages in requests]


def assert_sticky(outcomes: Sequence[Prepared]) -> None:
    """Between compactions each list sent starts with the previous one, byte for byte."""
    for before, after in itertools.pairwise(outcomes):
        if after.report.decision in ("compacted", "recompacted"):
            continue
        previous = sent(before)
        assert dumps(sent(after)[:len(previous)]) == dumps(previous)


@pytest.fixture(params=["chars", "tiktoken"])
def estimator(request: pytest.FixtureRequest) -> TokenEstimator:
    if request.param == "chars":
        return cutctx.CharRatioEstimator()
    request.getfixturevalue("tiktoken_cache")
    return TiktokenEstimator(MODEL)


HISTORY = agent_run("a", 60)
REQUESTS: list[list[Any]] = calls_of(HISTORY)


# --- (a) the prefix stays put between compaction events ------------------------------------


def test_history_fixture_crosses_the_trigger_several_times() -> None:
    total = chat.count_tokens(HISTORY, estimator=cutctx.CharRatioEstimator())
    assert total > 2 * TRIGGER


def test_between_compactions_the_prefix_sent_is_byte_identical(
        estimator: TokenEstimator) -> None:
    summarizer = CountingSummarizer()
    outcomes = replay(session(summarizer, estimator), REQUESTS)
    decisions = [o.report.decision for o in outcomes]

    first = decisions.index("compacted")
    assert set(decisions[:first]) == {"unchanged"}
    assert set(decisions[first + 1:]) == {"appended", "recompacted"}
    assert_sticky(outcomes)
    for index in range(first + 1, len(outcomes)):
        if decisions[index] == "appended":  # the previous list, then the new messages
            before, after = sent(outcomes[index - 1]), sent(outcomes[index])
            new = len(REQUESTS[index]) - len(REQUESTS[index - 1])
            assert after == before + REQUESTS[index][-new:]
            assert outcomes[index].report.reused_items == len(before)
    for outcome, messages in zip(outcomes, REQUESTS, strict=True):
        report = outcome.report
        check(sent(outcome))
        assert report.tokens_sent is not None and report.tokens_sent <= TRIGGER
        assert report.tokens_in == chat.count_tokens(messages, estimator=estimator)
        if report.decision in ("compacted", "recompacted"):
            # an event compacts to the target where the history passed the trigger; what was
            # appended after that point comes on top (the view is derived from the history alone)
            assert report.events >= 1
            assert report.compaction is not None
            assert "trigger" in report.reason
        else:
            assert report.compaction is None
    assert summarizer.calls > 0


def test_the_reasons_say_what_was_reused_and_why() -> None:
    outcomes = replay(session(CountingSummarizer()), REQUESTS)
    by_decision = {o.report.decision: o.report for o in outcomes}
    assert "no earlier view" in by_decision["unchanged"].reason
    assert "no earlier view" in by_decision["compacted"].reason
    assert f"> trigger {TRIGGER}" in by_decision["compacted"].reason
    assert "extends a known one by 2 item(s)" in by_decision["appended"].reason
    assert f"<= trigger {TRIGGER}" in by_decision["appended"].reason
    assert "extends a known one" in by_decision["recompacted"].reason
    assert f"compacted toward {TARGET}" in by_decision["recompacted"].reason


def test_compaction_events_are_bounded_by_growth_over_the_hysteresis_gap() -> None:
    outcomes = replay(session(CountingSummarizer()), REQUESTS)
    events = sum(o.report.decision in ("compacted", "recompacted") for o in outcomes)
    grown = (chat.count_tokens(REQUESTS[-1], estimator=cutctx.CharRatioEstimator())
             - chat.count_tokens(REQUESTS[0], estimator=cutctx.CharRatioEstimator()))
    assert 2 <= events <= grown / (TRIGGER - TARGET) + 1


def test_a_stateless_session_recuts_on_every_call_over_the_trigger() -> None:
    outcomes = replay(session(CountingSummarizer(), sticky=False), REQUESTS)
    decisions = [o.report.decision for o in outcomes]
    assert "appended" not in decisions and "recompacted" not in decisions
    first = decisions.index("compacted")
    assert decisions.count("compacted") > len(decisions[first:]) // 2
    assert outcomes[0].report.reused_items == 0


# --- (b) no summary is requested twice -----------------------------------------------------


def test_no_span_is_summarized_twice_and_a_resent_history_asks_nothing() -> None:
    summarizer = CountingSummarizer()
    compactor = session(summarizer)
    first = replay(compactor, REQUESTS)
    assert summarizer.calls > 1
    assert len(set(summarizer.spans)) == summarizer.calls
    calls = summarizer.calls

    again = replay(compactor, REQUESTS)
    assert summarizer.calls == calls
    for before, after in zip(first, again, strict=True):
        assert dumps(sent(after)) == dumps(sent(before))
        if before.report.decision != "unchanged":
            assert after.report.decision == "reused"
            assert "same history" in after.report.reason


class SlowSummarizer(CountingSummarizer):
    """Takes a while, so concurrent callers for the same span overlap."""

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        time.sleep(0.05)
        return super().__call__(request, turns)


def test_concurrent_threads_with_the_same_history_ask_for_each_span_once() -> None:
    summarizer = SlowSummarizer()
    compactor = session(summarizer)
    start = threading.Barrier(4)

    def run(_: int) -> str:
        start.wait()
        return dumps(sent(compactor.prepare(model=MODEL, messages=REQUESTS[-1])))

    with ThreadPoolExecutor(4) as pool:
        outputs = set(pool.map(run, range(4)))
    assert len(outputs) == 1
    assert summarizer.calls == len(set(summarizer.spans)) >= 1


def test_concurrent_tasks_with_the_same_history_ask_for_each_span_once() -> None:
    summarizer = AsyncCountingSummarizer()
    compactor = session(summarizer)

    async def main() -> list[Prepared]:
        return list(await asyncio.gather(*(
            compactor.aprepare(model=MODEL, messages=REQUESTS[-1]) for _ in range(4))))

    outcomes = asyncio.run(main())
    assert len({dumps(sent(o)) for o in outcomes}) == 1
    assert summarizer.calls == len(set(summarizer.spans)) >= 1


def test_after_a_failed_summary_in_flight_one_waiter_asks_again() -> None:
    class FailingOnce(AsyncCountingSummarizer):
        async def __call__(  # type: ignore[override]
                self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
            failed = not self.spans
            text = await super().__call__(request, turns)
            if failed:
                raise RuntimeError("the provider is down")
            return text

    summarizer = FailingOnce()
    compactor = session(summarizer)

    async def main() -> list[Prepared | BaseException]:
        return list(await asyncio.gather(*(
            compactor.aprepare(model=MODEL, messages=REQUESTS[-1]) for _ in range(3)),
            return_exceptions=True))

    outcomes = asyncio.run(main())
    assert isinstance(outcomes[0], SummarizationFailed)
    assert all(isinstance(o, Prepared) for o in outcomes[1:])
    asked = Counter(summarizer.spans)  # the failed span asked twice (taken over), others once
    assert asked[summarizer.spans[0]] == 2
    assert all(count == 1 for span, count in asked.items() if span != summarizer.spans[0])


def test_a_history_replanned_after_its_view_is_evicted_reuses_its_summaries() -> None:
    """A history replanned from scratch (its view evicted) reuses the summaries it needs."""
    summarizer = CountingSummarizer()
    compactor = session(summarizer, max_views=1)
    history = REQUESTS[-1]
    first = compactor.prepare(model=MODEL, messages=history)
    assert first.report.decision == "compacted" and summarizer.calls > 0
    compactor.prepare(model=MODEL, messages=agent_run("other", 40))  # evicts the first view
    calls = summarizer.calls
    again = compactor.prepare(model=MODEL, messages=history)
    assert again.report.decision == "compacted"  # planned anew, from scratch
    assert summarizer.calls == calls  # but its summaries came from the cache
    assert dumps(sent(again)) == dumps(sent(first))
    assert len(set(summarizer.spans)) == summarizer.calls


# --- (c) a history that does not extend a known one is planned from scratch -----------------


@pytest.fixture
def warmed() -> tuple[CompactionSession, list[Prepared], CountingSummarizer]:
    summarizer = CountingSummarizer()
    compactor = session(summarizer, store=MemoryStore())
    return compactor, replay(compactor, REQUESTS[:40]), summarizer


def fresh_plan(messages: Messages, like: CompactionSession) -> Prepared:
    """What a fresh session sharing ``like``'s store sends: a summary is model output, so
    sessions send the same summaries when they share the store that holds them (README,
    "Summaries need a store"); masks and drops need nothing shared."""
    return session(CountingSummarizer(), store=like.store).prepare(model=MODEL,
                                                                   messages=messages)


def test_an_edited_earlier_message_is_planned_from_scratch(
        warmed: tuple[CompactionSession, list[Prepared], CountingSummarizer]) -> None:
    compactor, _, _ = warmed
    edited = [dict(m) for m in REQUESTS[40]]
    edited[3] = {**edited[3], "content": edited[3]["content"] + " (edited)"}
    outcome = compactor.prepare(model=MODEL, messages=edited)
    assert outcome.report.decision == "compacted"
    assert "no earlier view" in outcome.report.reason
    assert dumps(sent(outcome)) == dumps(sent(fresh_plan(edited, compactor)))


def test_a_truncated_history_is_planned_from_scratch(
        warmed: tuple[CompactionSession, list[Prepared], CountingSummarizer]) -> None:
    compactor, outcomes, _ = warmed
    first = [o.report.decision for o in outcomes].index("compacted")
    shorter = REQUESTS[first][:-2]  # shorter than every history a view was kept for
    outcome = compactor.prepare(model=MODEL, messages=shorter)
    assert outcome.report.decision in ("unchanged", "compacted")
    assert dumps(sent(outcome)) == dumps(sent(fresh_plan(shorter, compactor)))


def test_a_history_rolled_back_to_an_earlier_call_reuses_that_calls_view(
        warmed: tuple[CompactionSession, list[Prepared], CountingSummarizer]) -> None:
    """Truncated, but to a history sent before: it extends (equals) a known one."""
    compactor, outcomes, _ = warmed
    index = next(i for i, o in enumerate(outcomes) if o.report.decision == "appended")
    outcome = compactor.prepare(model=MODEL, messages=REQUESTS[index])
    assert outcome.report.decision == "reused"
    assert dumps(sent(outcome)) == dumps(sent(outcomes[index]))


def test_a_different_system_prompt_is_planned_from_scratch(
        warmed: tuple[CompactionSession, list[Prepared], CountingSummarizer]) -> None:
    compactor, _, _ = warmed
    other = [{"role": "system", "content": "You are a different agent."}, *REQUESTS[40][1:]]
    outcome = compactor.prepare(model=MODEL, messages=other)
    assert outcome.report.decision == "compacted"
    assert sent(outcome)[0] == other[0]
    assert dumps(sent(outcome)) == dumps(sent(fresh_plan(other, compactor)))


def test_a_branch_from_a_known_history_extends_it(
        warmed: tuple[CompactionSession, list[Prepared], CountingSummarizer]) -> None:
    compactor, outcomes, _ = warmed
    branch = [*REQUESTS[39], {"role": "assistant", "content": "A different idea."},
              {"role": "user", "content": "Try it."}]
    outcome = compactor.prepare(model=MODEL, messages=branch)
    assert outcome.report.decision == "appended"
    assert dumps(sent(outcome)) == dumps([*sent(outcomes[39]), *branch[-2:]])


@pytest.mark.parametrize("pin", [[12], lambda message, index: index == 12],
                         ids=["index", "predicate"])
def test_pins_name_the_callers_positions_not_the_views(pin: Any) -> None:
    """A view drops and folds items, so the caller's index 12 is elsewhere in it."""
    compactor = session(CountingSummarizer(), pin=pin)
    requests = [r for r in REQUESTS if len(r) > 13]
    outcomes = replay(compactor, requests)
    assert {"appended", "recompacted"} <= {o.report.decision for o in outcomes}
    for outcome, messages in zip(outcomes, requests, strict=True):
        assert messages[12] in sent(outcome)
        assert sent(outcome).index(messages[12]) < 12 or outcome.report.decision == "unchanged"


# --- (d) keyed by content: dicts and SDK objects alike ---------------------------------------


def completion_of(message: dict[str, Any]) -> ChatCompletion:
    return ChatCompletion.model_validate({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    })


def as_sdk_objects(messages: Messages) -> list[Any]:
    return [completion_of(m).choices[0].message if m["role"] == "assistant" else m
            for m in messages]


def test_sdk_objects_and_dicts_with_the_same_content_are_the_same_history() -> None:
    compactor = session(CountingSummarizer(), store=MemoryStore())
    outcomes = replay(compactor, REQUESTS[:40])
    assert outcomes[-1].report.decision == "appended"
    mixed = as_sdk_objects(REQUESTS[39])
    assert any(not isinstance(m, dict) for m in mixed)
    again = compactor.prepare(model=MODEL, messages=mixed)
    assert sent(again) == sent(outcomes[-1])  # the same content, found by content ...
    if dumps(sent(again)) != dumps(sent(outcomes[-1])):  # keys in the SDK objects' order
        assert again.report.decision == "recompacted" and not again.report.events
        assert "with their keys in this history's order" in again.report.reason
    else:
        assert again.report.decision == "reused"
    fresh = session(CountingSummarizer(), store=compactor.store).prepare(model=MODEL,
                                                                         messages=mixed)
    assert dumps(sent(again)) == dumps(sent(fresh))  # ... sent as the history has it
    grown = compactor.prepare(model=MODEL, messages=as_sdk_objects(REQUESTS[40]))
    assert grown.report.decision in ("appended", "recompacted")
    if grown.report.decision == "appended":
        assert dumps(sent(grown)[:len(sent(again))]) == dumps(sent(again))


def test_a_history_first_seen_as_sdk_objects_is_extended_by_dicts() -> None:
    compactor = session(CountingSummarizer(), store=MemoryStore())
    objects = replay(compactor, [as_sdk_objects(r) for r in REQUESTS[:40]])
    dicts = compactor.prepare(model=MODEL, messages=REQUESTS[39])
    assert dicts.report.decision == ("reused" if dumps(sent(dicts)) == dumps(sent(objects[-1]))
                                     else "recompacted")
    assert sent(dicts) == sent(objects[-1])
    fresh = session(CountingSummarizer(), store=compactor.store).prepare(model=MODEL,
                                                                         messages=REQUESTS[39])
    assert dumps(sent(dicts)) == dumps(sent(fresh))
    assert all(isinstance(m, dict) for o in objects for m in sent(o)
               if o.report.decision != "unchanged")


# --- (e) bounded state -----------------------------------------------------------------------


def over_trigger(tag: str) -> Messages:
    return agent_run(tag, 30)


def test_max_views_evicts_the_least_recently_used_view() -> None:
    compactor = session(CountingSummarizer(), max_views=2)
    for tag in ("x", "y", "z"):
        assert (compactor.prepare(model=MODEL, messages=over_trigger(tag)).report.decision ==
             "compacted")
        assert compactor.stored_views <= 2
    assert compactor.stored_views == 2
    more = [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    assert (compactor.prepare(model=MODEL, messages=over_trigger("z") + more).report.decision
         == "appended")
    assert (compactor.prepare(model=MODEL, messages=over_trigger("x") + more).report.decision
            == "compacted")  # x was the least recently used: evicted
    assert compactor.stored_views == 2


def test_a_busy_conversation_does_not_evict_an_idle_ones_latest_view() -> None:
    """Each call keeps a view; the ones a conversation has grown past are evicted first."""
    compactor = session(CountingSummarizer(), max_views=3)
    idle = over_trigger("idle")
    assert compactor.prepare(model=MODEL, messages=idle).report.decision == "compacted"
    busy = calls_of(agent_run("busy", 60))
    decisions = [o.report.decision for o in replay(compactor, busy)]
    assert decisions.count("appended") > 3 * 3  # far more views made than max_views
    assert compactor.stored_views == 3
    more = [{"role": "assistant", "content": "back"}, {"role": "user", "content": "go on"}]
    assert compactor.prepare(model=MODEL, messages=idle + more).report.decision == "appended"


def test_max_view_bytes_bounds_what_is_kept() -> None:
    compactor = session(CountingSummarizer(), max_view_bytes=1)
    history = over_trigger("x")
    assert compactor.prepare(model=MODEL, messages=history).report.decision == "compacted"
    assert compactor.stored_views == 0
    more = [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    assert (compactor.prepare(model=MODEL, messages=history + more).report.decision ==
         "compacted")

    roomy = session(CountingSummarizer())
    roomy.prepare(model=MODEL, messages=history)
    one_view = roomy._known._bytes  # the size of one compacted view of this history
    bounded = session(CountingSummarizer(), max_view_bytes=int(one_view * 1.5))
    for tag in ("x", "y", "z"):
        bounded.prepare(model=MODEL, messages=over_trigger(tag))
        assert bounded.stored_views == 1


def test_an_uncompacted_history_keeps_no_view() -> None:
    compactor = session(CountingSummarizer())
    replay(compactor, REQUESTS[:5])
    assert compactor.stored_views == 0


# --- (f) threads and (g) asyncio -------------------------------------------------------------

CONVERSATIONS = {tag: calls_of(agent_run(tag, 45)) for tag in ("p", "q", "r", "s", "t", "u")}


Trace = list[tuple[str, str]]


def trace_of(outcome: Prepared) -> tuple[str, str]:
    return outcome.report.decision, dumps(sent(outcome))


def serial_outputs() -> tuple[dict[str, Trace], int]:
    summarizer = CountingSummarizer()
    compactor = session(summarizer)
    out = {tag: [trace_of(o) for o in replay(compactor, requests)]
           for tag, requests in CONVERSATIONS.items()}
    return out, summarizer.calls


@pytest.mark.parametrize("check_prefix", ["content", "identity"])
def test_threads_preparing_interleaved_conversations_match_a_serial_run(
        check_prefix: PrefixCheck) -> None:
    expected, expected_calls = serial_outputs()
    summarizer = CountingSummarizer()
    compactor = session(summarizer, check_prefix=check_prefix)
    start = threading.Barrier(len(CONVERSATIONS))

    def run(tag: str) -> Trace:
        start.wait()
        return [trace_of(compactor.prepare(model=MODEL, messages=messages))
                for messages in CONVERSATIONS[tag]]

    with ThreadPoolExecutor(len(CONVERSATIONS)) as pool:
        results = dict(zip(CONVERSATIONS, pool.map(run, CONVERSATIONS), strict=True))
    assert results == expected
    assert summarizer.calls == expected_calls
    assert len(set(summarizer.spans)) == summarizer.calls


def test_concurrent_aprepare_calls_match_a_serial_run() -> None:
    expected, expected_calls = serial_outputs()
    summarizer = AsyncCountingSummarizer()
    compactor = session(summarizer)

    async def run(tag: str) -> Trace:
        return [trace_of(await compactor.aprepare(model=MODEL, messages=messages))
                for messages in CONVERSATIONS[tag]]

    async def main() -> list[Trace]:
        return list(await asyncio.gather(*(run(tag) for tag in CONVERSATIONS)))

    results = dict(zip(CONVERSATIONS, asyncio.run(main()), strict=True))
    assert results == expected
    assert summarizer.calls == expected_calls
    assert len(set(summarizer.spans)) == summarizer.calls
    # The state is intact afterwards: every conversation still extends its own view.
    for tag, requests in CONVERSATIONS.items():
        more = [*requests[-1], {"role": "assistant", "content": "done"},
                {"role": "user", "content": f"{tag}: thanks"}]
        assert compactor.prepare(model=MODEL, messages=more).report.decision == "appended"


@pytest.mark.parametrize("check_prefix", ["content", "identity"])
def test_threads_preparing_the_same_conversation_match_a_serial_run(
        check_prefix: PrefixCheck) -> None:
    """Threads racing through the same calls of one conversation (the same list objects) all
    send what a serial run sends: views of shared state that two calls extend at once never see
    each other's items."""
    requests = CONVERSATIONS["p"]
    expected = [trace_of(o) for o in replay(session(check_prefix=check_prefix), requests)]
    compactor = session(check_prefix=check_prefix)
    start = threading.Barrier(6)

    def run(offset: int) -> Trace:
        start.wait()
        return [trace_of(compactor.prepare(model=MODEL, messages=messages))
                for messages in requests[offset % 3:]]

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(run, range(6)))
    for offset, traces in enumerate(results):
        assert [sent for _, sent in traces] == [sent for _, sent in expected[offset % 3:]]


@pytest.mark.parametrize("check_prefix", ["content", "identity"])
def test_interleaved_conversations_each_read_only_what_they_append(
        check_prefix: PrefixCheck) -> None:
    """One session (one wrapped client) serving several conversations at once converts each
    history whole once, then reads of every call only what it appends, and sends what a
    session of its own would; past ``max_views`` conversations, the least recent is read whole
    again."""
    whole: list[int] = []
    calling: list[int] = [0]  # the length of the history being prepared

    def counting(*args: Any) -> Any:
        if len(args[0]) == calling[0]:  # not a prefix converted for an earlier event point
            whole.append(len(args[0]))
        return chat.FORMAT.to_transcript(*args)

    fmt = dataclasses.replace(chat.FORMAT, to_transcript=counting)
    tags = ["p", "q", "r"]
    for max_views, rereads in ((8, 0), (2, 1)):
        whole.clear()
        shared = CompactionSession(fmt, model=MODEL, estimator=cutctx.CharRatioEstimator(),
                                   window=WINDOW, reserve=0, trigger=TRIGGER, target=TARGET,
                                   check_prefix=check_prefix, max_views=max_views)
        alone = {tag: session(check_prefix=check_prefix) for tag in tags}
        for step in range(len(CONVERSATIONS["p"])):
            for tag in tags:
                messages = [*CONVERSATIONS[tag][-1],
                            *({"role": "user", "content": f"{tag} {n}"} for n in range(step))]
                calling[0] = len(messages)
                got = shared.prepare(model=MODEL, messages=messages)
                assert dumps(sent(got)) == dumps(sent(alone[tag].prepare(model=MODEL,
                                                                        messages=messages)))
        firsts = len(tags)
        assert len(whole) == firsts + rereads * (len(CONVERSATIONS["p"]) - 1) * len(tags)


# --- (h) the session holds no caller objects -------------------------------------------------


def test_the_session_holds_no_response_objects() -> None:
    compactor = session(CountingSummarizer())
    response = completion_of({"role": "assistant", "content": "I will look at the logs."})
    history: list[Any] = [*REQUESTS[-1], response.choices[0].message,
                          {"role": "user", "content": "go on"}]
    refs: list[weakref.ref[Any]] = [weakref.ref(response),
                                    weakref.ref(response.choices[0].message)]
    prepared = compactor.prepare(model=MODEL, messages=history)
    assert prepared.report.decision == "compacted"
    assert compactor.stored_views == 1
    assert all(isinstance(m, dict) for m in sent(prepared))
    del response, history, prepared
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


def test_the_wrapper_sessions_hold_no_client(api: respx.Route) -> None:
    client = OpenAI(api_key="test", base_url=BASE_URL, max_retries=0)
    wrapper = CompactingOpenAI(client, window=WINDOW, reserve=0, trigger=TRIGGER, target=TARGET,
                               estimator=cutctx.CharRatioEstimator(),
                               summarizer=CountingSummarizer())
    wrapper.chat.completions.create(model=MODEL, messages=REQUESTS[-1])
    sessions = wrapper.sessions
    ref = weakref.ref(client)
    del client, wrapper
    gc.collect()
    assert ref() is None
    assert sessions["openai-chat"].stored_views == 1


# --- (i) through CompactingOpenAI, over HTTP -------------------------------------------------


def completion_json(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })


@pytest.fixture
def api(tiktoken_cache: Path) -> Iterator[respx.Route]:
    with mocked_http(base_url=BASE_URL, assert_all_called=False) as router:
        yield router.post("/chat/completions").mock(side_effect=completion_json)


@pytest.mark.parametrize("check_prefix", ["content", "identity"])
def test_the_wrapper_sends_a_stable_prefix_and_reports_why(api: respx.Route,
                                                           check_prefix: PrefixCheck) -> None:
    reports: list[CallReport] = []
    summarizer = CountingSummarizer()
    client = CompactingOpenAI(OpenAI(api_key="test", base_url=BASE_URL, max_retries=0),
                              window=WINDOW, reserve=0, trigger=TRIGGER, target=TARGET,
                              summarizer=summarizer, on_call=reports.append,
                              check_prefix=check_prefix)
    for messages in REQUESTS:
        response = client.chat.completions.create(model=MODEL, messages=messages)
        assert isinstance(response, ChatCompletion)
    bodies = [json.loads(call.request.content)["messages"] for call in api.calls]
    assert len(bodies) == len(reports) == len(REQUESTS)
    decisions = [report.decision for report in reports]
    assert {"unchanged", "compacted", "appended", "recompacted"} <= set(decisions)
    for index in range(1, len(bodies)):
        before, after, report = bodies[index - 1], bodies[index], reports[index]
        check(after)
        if report.decision in ("compacted", "recompacted"):
            assert "trigger" in report.reason and report.compaction is not None
            assert dumps(after[:len(before)]) != dumps(before)  # the one place the cache breaks
            continue
        assert dumps(after[:len(before)]) == dumps(before)
        if report.decision == "appended":
            assert report.reused_items == len(before)
            assert "extends a known one" in report.reason
    events = decisions.count("compacted") + decisions.count("recompacted")
    assert events < len(REQUESTS) // 5
    assert len(set(summarizer.spans)) == summarizer.calls


def test_each_call_is_decided_from_the_history_alone(api: respx.Route) -> None:
    """Two wrappers sharing nothing agree call by call: the state is a cache, not a driver."""
    outputs: list[list[str]] = []
    for _ in range(2):
        client = CompactingOpenAI(OpenAI(api_key="test", base_url=BASE_URL, max_retries=0),
                                  window=WINDOW, reserve=0, trigger=TRIGGER, target=TARGET,
                                  summarizer=CountingSummarizer())
        for messages in REQUESTS[:45]:
            client.chat.completions.create(model=MODEL, messages=messages)
        outputs.append([call.request.content.decode() for call in api.calls][-45:])
    assert outputs[0] == outputs[1]



def test_an_index_pin_beyond_a_short_history_pins_nothing_yet() -> None:
    """A session's history grows: pin=[12] is not an error while it has fewer messages."""
    session = CompactionSession(chat.FORMAT, window=100_000, pin=[12],
                                estimator=cutctx.CharRatioEstimator())
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    prepared = session.prepare(model="gpt-4o", messages=history)
    assert prepared.request["messages"] == history


# --- (f) settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(("setting", "field"), [
    ({"window": 0}, "window"),
    ({"window": "128k"}, "window"),
    ({"window": True}, "window"),
    ({"windows": {"acme": 0}}, "windows['acme']"),
    ({"windows": ["acme"]}, "windows"),
    ({"reserve": -1}, "reserve"),
    ({"keep_recent": 1.5}, "keep_recent"),
    ({"trigger": 1.5}, "trigger"),
    ({"target": "most"}, "target"),
    ({"max_views": -1}, "max_views"),
    ({"check_prefix": "fast"}, "check_prefix"),
])
def test_bad_settings_are_refused_when_the_session_or_client_is_made(
    setting: dict[str, Any], field: str,
) -> None:
    with pytest.raises(cutctx.ValidationError) as caught:
        CompactionSession(chat.FORMAT, **setting)
    assert caught.value.details["field"] == field
    with pytest.raises(cutctx.ValidationError):
        CompactingOpenAI(OpenAI(api_key="test"), **setting)

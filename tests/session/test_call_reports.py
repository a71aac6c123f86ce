"""What a session call tells: callbacks, one-line reports, logs, spans and its own figures."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cutctx import BudgetUnsatisfiable, SummarizationRequest, TranscriptTurn
from cutctx_adapters import CallReport, CompactionSession, CompactionSettings
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.reports import FATES
from cutctx_adapters.stores import MemoryStore
from tests._support.agents import chat_run
from tests.session.test_report_honesty import turn_ids

CANARY = "CANARY-7f3e"
"""In the history's task; must never reach a report, a log record or a span."""
SETTINGS = CompactionSettings(window=8000, reserve=0, trigger=6000, target=3000)


@pytest.fixture(autouse=True)
def _offline(tiktoken_cache: Path) -> None:
    """Counting uses the seeded tiktoken cache."""


def agent_calls(rounds: int = 60) -> list[list[dict[str, Any]]]:
    calls = chat_run(7, rounds).calls()
    for messages in calls:
        messages[1] = {**messages[1], "content": f"{CANARY} {messages[1]['content']}"}
    return calls


def run(session: CompactionSession, calls: Sequence[list[dict[str, Any]]]) -> list[CallReport]:
    return [session.prepare(model="gpt-4o", messages=messages).report for messages in calls]


class FirstWords:
    """A deterministic summarizer: the first words of each turn."""

    model = "summary-model"
    provider = "test"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.calls += 1
        words = (" ".join(turn.content.split()[:2]) for turn in turns)
        return " / ".join(words)[:request.target_tokens * 3]


# --- callbacks and the one-line report ------------------------------------------------------


def test_on_compaction_hears_only_of_changed_requests_on_call_of_every_call() -> None:
    heard: list[CallReport] = []
    every: list[CallReport] = []
    session = CompactionSession(chat.FORMAT, settings=SETTINGS.replace(
        on_compaction=heard.append, on_call=every.append))
    reports = run(session, agent_calls())
    assert every == reports
    assert heard == [report for report in reports
                     if report.decision in ("compacted", "recompacted")]
    assert 0 < len(heard) < len(reports) // 4


def test_a_request_that_cannot_be_compacted_is_heard_of_too() -> None:
    heard: list[CallReport] = []
    session = CompactionSession(responses.FORMAT, "gpt-5", on_compaction=heard.append)
    session.prepare(input=[{"role": "user", "content": "Hi"}], previous_response_id="resp_1")
    assert [report.decision for report in heard] == ["not_possible"]
    assert str(heard[0]).startswith("not possible: the request continues a server-held")


def test_a_report_is_one_content_free_line_and_a_dict_for_logs() -> None:
    reports = run(CompactionSession(chat.FORMAT, settings=SETTINGS), agent_calls())
    for report in reports:
        line = str(report)
        assert "\n" not in line and len(line) < 200 and CANARY not in line
        as_dict = report.to_dict()
        assert as_dict["summary"] == line and CANARY not in json.dumps(as_dict)
    compacted = next(report for report in reports if report.decision == "recompacted")
    assert str(compacted).startswith(
        f"recompacted {compacted.items_in} → {compacted.items_sent} messages, ")
    assert "prefix kept 0." in str(compacted) or "prefix kept 1.00" in str(compacted)
    assert str(reports[0]).startswith("unchanged: 2 messages")
    appended = next(report for report in reports if report.decision == "appended")
    assert str(appended).startswith("appended ") and "≤ trigger 6.0k" in str(appended)


def test_a_report_says_what_counted_when_no_model_was_given() -> None:
    session = CompactionSession(chat.FORMAT, window=8000)
    report = session.prepare(messages=[{"role": "user", "content": "Hi"}])
    assert report.report.counted_with == "o200k_base"
    assert str(report.report).endswith("no model given: counted with o200k_base")


# --- logging ----------------------------------------------------------------------------------


def test_one_info_record_per_compaction_and_nothing_for_unchanged_calls(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cutctx")
    reports = run(CompactionSession(chat.FORMAT, settings=SETTINGS), agent_calls())
    compactions = [report for report in reports
                   if report.decision in ("compacted", "recompacted")]
    records = [record for record in caplog.records if record.name == "cutctx"]
    assert [record.getMessage() for record in records] == [
        f"cutctx: {report}" for report in compactions]
    assert {record.levelno for record in records} == {logging.INFO}


# --- the call's own figures -------------------------------------------------------------------


def test_a_report_times_the_call_and_counts_summaries_and_store_hits() -> None:
    store, calls = MemoryStore(), agent_calls()
    summarizer = FirstWords()
    first = run(CompactionSession(chat.FORMAT, settings=SETTINGS.replace(
        summarizer=summarizer, store=store)), calls)
    made = [report for report in first if report.summarizer_calls]
    assert made and sum(report.summarizer_calls for report in first) == summarizer.calls
    for report in made:
        assert report.store_misses == report.summarizer_calls and report.store_hits == 0
        assert report.summary_input_tokens > report.summary_output_tokens > 0
        assert report.seconds >= report.summary_seconds >= report.store_seconds >= 0
        assert report.planning_seconds == pytest.approx(report.seconds - report.summary_seconds)
    again = run(CompactionSession(chat.FORMAT, settings=SETTINGS.replace(
        summarizer=summarizer, store=store)), calls)
    assert summarizer.calls == sum(report.summarizer_calls for report in first)
    assert sum(report.store_hits for report in again) == summarizer.calls
    assert all(report.summary_input_tokens == 0 for report in again)


# --- OpenTelemetry ----------------------------------------------------------------------------


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """A configured tracer provider exporting to memory (as an application would set one)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    yield exporter
    provider.shutdown()


def test_one_span_per_compaction_with_its_figures_and_no_content(
        spans: InMemorySpanExporter) -> None:
    summarizer = FirstWords()
    with trace.get_tracer_provider().get_tracer("agent").start_as_current_span("agent run"):
        reports = run(CompactionSession(chat.FORMAT, settings=SETTINGS.replace(
            summarizer=summarizer)), agent_calls())
    finished = spans.get_finished_spans()
    compactions = [span for span in finished if span.name == "cutctx.compaction"]
    reported = [report for report in reports if report.decision in ("compacted", "recompacted")]
    assert len(compactions) == len(reported)
    agent = next(span for span in finished if span.name == "agent run")
    for span, report in zip(compactions, reported, strict=True):
        attributes = span.attributes or {}
        assert span.parent is not None and span.parent.span_id == agent.context.span_id
        assert attributes["cutctx.tokens.before"] == report.tokens_in
        assert attributes["cutctx.tokens.after"] == report.tokens_sent
        assert attributes["cutctx.decision"] == report.decision
        assert attributes["gen_ai.request.model"] == "gpt-4o"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert report.compaction is not None
        assert attributes["cutctx.plan_hash"] == report.compaction.plan_hash
        assert report.turns is not None
        assert {fate: attributes[f"cutctx.turns.{fate}"] for fate in FATES} == (
            report.turns.counts())
    summaries = [span for span in finished if span.name == "chat summary-model"]
    assert len(summaries) == summarizer.calls > 0
    for span in summaries:
        attributes = span.attributes or {}
        assert attributes["gen_ai.operation.name"] == "chat"
        output = attributes["gen_ai.usage.output_tokens"]
        assert isinstance(output, int) and output > 0
        assert span.parent is not None and span.parent.span_id in {
            compaction.context.span_id for compaction in compactions}
    for span in finished:
        assert CANARY not in json.dumps(dict(span.attributes or {}))


def test_the_span_counts_each_turn_once_as_the_report_does(
        spans: InMemorySpanExporter) -> None:
    """A cold call on a long history runs several events: a result clipped by one and masked
    by the next is one masked turn, in the span as in ``report.turns``."""
    run = chat_run(5, 90)
    session = CompactionSession(chat.FORMAT, model="gpt-4o", window=8000,
                                max_result_tokens=300)
    report = session.prepare(model="gpt-4o", messages=run.items).report
    assert report.events > 1 and report.turns is not None
    twice = len(report.replacements) - len({r.turn_id for r in report.replacements})
    assert twice > 0  # the history has turns replaced by more than one event
    (span,) = [span for span in spans.get_finished_spans() if span.name == "cutctx.compaction"]
    attributes = span.attributes or {}
    counts = {fate: attributes[f"cutctx.turns.{fate}"] for fate in FATES}
    assert counts == report.turns.counts()
    assert sum(report.turns.counts().values()) == len(turn_ids(chat.FORMAT, run.items, None))


def test_no_span_without_a_configured_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())
    run(CompactionSession(chat.FORMAT, settings=SETTINGS), agent_calls(30))
    assert exporter.get_finished_spans() == ()
    processor.shutdown()


# --- a budget that cannot be met --------------------------------------------------------------


TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def test_the_budget_error_says_the_reserve_took_the_window() -> None:
    session = CompactionSession(chat.FORMAT, "gpt-4o", window=3000)
    with pytest.raises(BudgetUnsatisfiable) as caught:
        session.prepare(messages=agent_calls(10)[-1], tools=TOOLS)
    message = str(caught.value)
    assert "the window is 3000 (window=) and the reply reserve 4096 (reserve=)" in message
    assert "leaving 0 prompt tokens" in message and "tool definitions and framing take" in message
    assert "raise window= to at least" in message and "lower reserve=" in message
    assert caught.value.details["window"] == 3000 and caught.value.details["reserve"] == 4096
    assert CANARY not in message


def test_the_budget_error_names_the_turns_that_must_be_kept() -> None:
    system = {"role": "system", "content": "rule " * 8000}
    session = CompactionSession(chat.FORMAT, "gpt-4o", window=6000, reserve=1000)
    with pytest.raises(BudgetUnsatisfiable) as caught:
        session.prepare(messages=[system, {"role": "user", "content": "Hi"}],
                        max_completion_tokens=500)
    message = str(caught.value)
    assert "reply reserve 500 (the request's own reply limit)" in message
    assert "the turns that must be kept need" in message and "m0 (" in message
    assert "lower the request's max tokens" in message and "keep_recent=" in message
    needed = caught.value.details["needed_window"]
    assert needed > 6000
    fits = CompactionSession(chat.FORMAT, "gpt-4o", window=needed, reserve=1000)
    assert not fits.prepare(messages=[system, {"role": "user", "content": "Hi"}],
                            max_completion_tokens=500).report.budget_unmet

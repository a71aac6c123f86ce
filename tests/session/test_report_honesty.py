"""A call's report says what was sent (issue 39: 5, 6, 7, 8).

* ``appended`` only when the previous request is a byte prefix of this one, ``reused`` only when
  it is this one, ``unchanged`` only when the history goes as given; a view that renders
  differently is ``recompacted`` (with ``prefix_kept``), in every format.
* ``deferred`` only when what is sent is the history less what the provider's latest compaction
  covers: once cutctx compacted it (over the model's own limit), later calls say so.
* The six fates partition the history: what a provider's compaction covers is ``summarized``
  (the provider's compaction summarized it), and also listed in ``covered``.

The OpenTelemetry span's turn counts (8) are checked with the other spans, in
``test_call_reports``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cutctx import CompactionReport, SummarizationRequest, TranscriptTurn
from cutctx_adapters import CallReport, CompactionSession
from cutctx_adapters.anthropic import messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning import HistoryFormat
from cutctx_adapters.reports import FATES, TurnFates
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run, words
from tests.planning.test_server_compaction import anthropic_history, responses_history

CLAUDE = "claude-sonnet-4-5"


@pytest.fixture(autouse=True)
def _offline(tiktoken_cache: Path) -> None:
    """Counting uses the seeded tiktoken cache."""


def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """A deterministic summary: the ids of the turns it stands for."""
    return f"{len(turns)} turns: " + " ".join(turn.turn_id for turn in turns)[:200]


def thinking_loop(calls: int = 120, seed: int = 0) -> list[list[dict[str, Any]]]:
    """An Anthropic agent with thinking on: one tool call a turn, a user follow-up (with the
    tool result) every 30 calls; the requests it sends."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [{"role": "user", "content": "task: " + words(rng, 40)}]
    requests = []
    for n in range(calls):
        requests.append(list(items))
        items.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"step {n}", "signature": f"sig{n}"},
            {"type": "text", "text": "plan " + words(rng, rng.randint(3, 25))},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "bash", "input": {"n": n}}]})
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}",
             "content": words(rng, rng.choice((20, 60, 150, 400, 900)))}]
        if n % 30 == 29:
            results.append({"type": "text", "text": "follow-up: " + words(rng, 20)})
        items.append({"role": "user", "content": results})
    return requests


@dataclass(frozen=True)
class Call:
    """One call: the history given, what was sent and the report."""

    given: list[dict[str, Any]]
    sent: list[dict[str, Any]]
    report: CallReport


def replay(session: CompactionSession, requests: Sequence[list[dict[str, Any]]],
           **fields: Any) -> list[Call]:
    fmt = session.format
    out = []
    for items in requests:
        prepared = session.prepare({fmt.list_key: items, **fields})
        out.append(Call(items, prepared.request[fmt.list_key], prepared.report))
    return out


def side(fmt: HistoryFormat, run: AgentRun) -> dict[str, Any]:
    """The run's side value (system, instructions) as a request field."""
    return {} if fmt.side_key is None else {fmt.side_key: run.side}


def turn_ids(fmt: HistoryFormat, items: list[dict[str, Any]], side: Any) -> list[str]:
    conv = fmt.to_transcript(items, side, fmt.estimator_for(None), None, True)
    return [turn.turn_id for turn in conv.turns]


def assert_partition(fates: TurnFates, ids: Sequence[str]) -> None:
    """Every turn in exactly one of the six lists."""
    listed = [turn_id for fate in FATES for turn_id in getattr(fates, fate)]
    assert sorted(listed) == sorted(ids)


def assert_honest(calls: Sequence[Call]) -> None:
    """Each decision is true of what was sent (in a linear loop the known view is the
    previous call's)."""
    previous: list[dict[str, Any]] | None = None
    for call in calls:
        report, sent = call.report, call.sent
        if report.decision == "unchanged":
            assert sent == call.given
        elif report.decision == "appended":
            assert previous is not None and sent[:len(previous)] == previous
            assert len(sent) > len(previous) and report.reused_items == len(previous)
            assert report.prefix_kept == 1.0
        elif report.decision == "reused":
            assert sent == previous
        else:
            assert report.decision in ("compacted", "recompacted"), report.decision
            assert report.turns is not None
        previous = sent


RUNS = {"chat": (chat.FORMAT, chat_run), "responses": (responses.FORMAT, responses_run),
        "anthropic": (messages.FORMAT, anthropic_run)}


# --- 5: appended only over an unchanged prefix ------------------------------------------------


def test_a_view_rendered_differently_is_recompacted_not_appended() -> None:
    """The summary moves when a follow-up ends the thinking loop it was said in: the earlier
    request is no prefix of this one, so the call says ``recompacted`` and how little of the
    cached prefix held."""
    session = CompactionSession(messages.FORMAT, model=CLAUDE, window=8000, summarizer=summarize)
    calls = replay(session, thinking_loop(), system="sys", max_tokens=1000)
    assert_honest(calls)
    moved = [index for index, call in enumerate(calls) if call.report.decision == "recompacted"
             and not call.report.events]
    assert moved and set(moved) <= {30, 60, 90}  # (90 may coincide with an event instead)
    for index in moved:
        report = calls[index].report
        assert report.prefix_kept is not None and report.prefix_kept < 1
        assert "renders differently with what was appended" in report.reason
        assert str(report).startswith("recompacted ")
        assert report.turns is not None
        assert_partition(report.turns, turn_ids(messages.FORMAT, calls[index].given, "sys"))


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("summarized", [False, True])
def test_every_decision_is_true_of_what_was_sent(name: str, summarized: bool) -> None:
    fmt, make = RUNS[name]
    run = make(3, 70)
    session = CompactionSession(fmt, model="gpt-4o", window=8000,
                                summarizer=summarize if summarized else None)
    calls = replay(session, run.calls(), model="gpt-4o", **side(fmt, run))
    assert_honest(calls)
    assert {"compacted", "appended"} <= {call.report.decision for call in calls}
    for call in calls:
        if call.report.turns is not None:
            assert_partition(call.report.turns, turn_ids(fmt, call.given, run.side))


# --- 6: deferred only over the history as given -----------------------------------------------

DEFERRING = {
    "anthropic": (messages.FORMAT, anthropic_run, CLAUDE, {
        "context_management": {"edits": [{"type": "compact_20260112"}]}, "max_tokens": 1000}),
    "responses": (responses.FORMAT, responses_run, "gpt-5", {
        "context_management": [{"type": "compaction"}], "max_output_tokens": 1000}),
}


@pytest.mark.parametrize("name", sorted(DEFERRING))
def test_deferred_only_while_the_history_goes_as_given(name: str) -> None:
    """Over the model's own limit (a small ``windows`` entry here) cutctx compacts; later calls
    appending to its view say ``appended`` (or recompacted), never ``deferred``."""
    fmt, make, model, extra = DEFERRING[name]
    run = make(0, 80)
    session = CompactionSession(fmt, windows={model: 9000})
    calls = replay(session, run.calls(), model=model, **side(fmt, run), **extra)
    decisions = [call.report.decision for call in calls]
    first = decisions.index("compacted")
    assert set(decisions[:first]) == {"deferred"}
    assert "deferred" not in decisions[first:]
    assert "appended" in decisions[first:]
    for call in calls:
        if call.report.decision == "deferred":
            assert call.sent == call.given and call.report.turns is None
    assert_honest(calls[first:])
    appended = next(call.report for call in calls[first:] if call.report.decision == "appended")
    assert "server-side compaction is on" in appended.reason
    assert "cutctx's own compaction" in appended.reason


# --- 7: what a provider's compaction covers has a fate too ------------------------------------


def engine_fates(report: CompactionReport) -> TurnFates:
    """The engine report's six lists, as ``TurnFates``."""
    return TurnFates(report.kept_turn_ids, report.masked_turn_ids, report.clipped_turn_ids,
                     report.deduplicated_turn_ids, report.summarized_turn_ids,
                     report.dropped_turn_ids)


@pytest.mark.parametrize("share", [0.3, 0.6, 1.0])
def test_compact_reports_what_a_compaction_block_covers_as_summarized(share: float) -> None:
    history = anthropic_history(older=True)
    total = messages.count_tokens(history, model=CLAUDE)
    result = messages.compact(history, model=CLAUDE, budget=int(total * share), keep_recent=2)
    ids = turn_ids(messages.FORMAT, history, None)
    fates = engine_fates(result.report)
    assert result.covered and set(result.covered) <= set(fates.summarized)
    assert_partition(fates, ids)
    assert result.report.turns_before == len(ids)


@pytest.mark.parametrize("share", [0.3, 0.6])
def test_compact_reports_what_a_compaction_item_covers_as_summarized(share: float) -> None:
    items = responses_history(older=True)
    result = responses.compact(items, budget=int(responses.count_tokens(items) * share),
                               keep_recent=2)
    fates = engine_fates(result.report)
    assert result.covered and set(result.covered) <= set(fates.summarized)
    assert_partition(fates, turn_ids(responses.FORMAT, items, None))


def test_a_session_reports_covered_turns_as_summarized_call_after_call() -> None:
    """Left out by an earlier event, covered turns are still covered (and summarized) in the
    reports of the calls after it."""
    history: list[Any] = anthropic_history(before=4, after=0, size=60)
    session = CompactionSession(messages.FORMAT, model=CLAUDE, window=6_000, reserve=1_000)
    reports = []
    for n in range(40):
        history = [*history,
                   {"role": "assistant", "content": f"Answer {n}: " + "because " * 150},
                   {"role": "user", "content": f"Question {n}: why?"}]
        reports.append((list(history), session.prepare(messages=history).report))
    first_covered = set(reports[0][1].covered)
    assert first_covered
    changed = [(given, report) for given, report in reports
               if report.decision in ("compacted", "recompacted")]
    assert len(changed) > 2
    assert all(first_covered <= set(report.covered) for _, report in reports)
    for given, report in changed:
        assert report.turns is not None
        assert set(report.covered) <= set(report.turns.summarized)
        assert_partition(report.turns, turn_ids(messages.FORMAT, given, None))

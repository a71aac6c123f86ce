"""A first call on a long history writes each summary it sends once (issue 39, item 19).

The walk still finds every point where the history crossed the trigger (so any worker sends the
same bytes), but plans those events with each summary standing in at the most its plan allows:
no summarizer is called while it runs. Only the summaries its final view keeps are written, each
from the turns it folds — so the bundled 58-message history at window 8000 costs one summary,
not five in a row of which only the last was sent. A worker that saw every call still pays one
summary an event, and a fresh one sharing its store pays nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cutctx import SummarizationRequest, TranscriptTurn
from cutctx_adapters import CompactionSession
from cutctx_adapters.openai import chat
from cutctx_adapters.stores import MemoryStore

HISTORY: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[2] / "examples" / "histories"
     / "coding_agent.openai_chat.json").read_text(encoding="utf-8"))["messages"]


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


class Spans:
    """A deterministic summarizer that notes the turns of every span it is paid for."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, ...]] = []

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.spans.append(tuple(turn.turn_id for turn in turns))
        return " / ".join(" ".join(turn.content.split()[:4]) for turn in turns)[
            : request.target_tokens * 3]


class AsyncSpans(Spans):
    async def __call__(  # type: ignore[override]
            self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        await asyncio.sleep(0)
        return super().__call__(request, turns)


def _session(summarizer: Spans, store: MemoryStore | None = None) -> CompactionSession:
    return CompactionSession(chat.FORMAT, model="gpt-4o", window=8_000, summarizer=summarizer,
                             store=store)


def _summaries(messages: Sequence[dict[str, Any]]) -> int:
    return sum(str(m.get("content", "")).startswith("Summary of the earlier conversation")
               for m in messages)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_cold_start_pays_one_summary_per_summary_it_sends(asynchronous: bool) -> None:
    summarizer = AsyncSpans() if asynchronous else Spans()
    session = _session(summarizer)
    request = {"model": "gpt-4o", "messages": HISTORY}
    prepared = (asyncio.run(session.aprepare(request)) if asynchronous
                else session.prepare(request))
    report = prepared.report
    assert report.decision == "compacted" and report.events >= 3  # it crossed the trigger
    sent = prepared.request["messages"]
    assert len(summarizer.spans) == _summaries(sent) == 1  # was 5: one per event, in a row
    assert report.summarizer_calls == 1
    assert not report.budget_unmet and report.turns is not None
    assert set(summarizer.spans[0]) == set(report.turns.summarized)  # read whole, once
    assert not any(turn.startswith("summary:") for turn in summarizer.spans[0])


def test_a_worker_that_saw_every_call_and_a_cold_one_sharing_its_store_agree() -> None:
    calls = [HISTORY[:index] for index, message in enumerate(HISTORY)
             if message["role"] == "assistant" and index]
    calls.append(HISTORY)
    store = MemoryStore()
    warm_spans = Spans()
    warm = _session(warm_spans, store)
    events = 0
    for messages in calls:
        prepared = warm.prepare(model="gpt-4o", messages=messages)
        events += prepared.report.decision in ("compacted", "recompacted") and bool(
            prepared.report.compaction and prepared.report.compaction.summary_turn_ids)
    assert len(warm_spans.spans) == events  # one summary an event, as it always paid
    cold_spans = Spans()
    cold = _session(cold_spans, store).prepare(model="gpt-4o", messages=HISTORY)
    assert cold_spans.spans == []  # every summary it sends is in the shared store
    assert json.dumps(cold.request) == json.dumps(prepared.request)

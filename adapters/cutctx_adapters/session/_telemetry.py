"""What one session call measures and tells: time, summaries and the store; callbacks, a log
record and OpenTelemetry spans. Figures only, never content.

A call's figures gather in a ``CallStats`` held in a context variable for the call, so the
summaries it asks for (in threads or concurrent tasks) add to their own call's figures, whatever
else shares the session.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from cutctx import SummarizationRequest, TranscriptTurn

from ..reports import CHANGED, NOTIFIED, CallReport, SummaryRecord
from ..settings import CompactionSettings
from . import _otel

__all__ = ["Appends", "CallStats", "current", "observed", "tell", "told"]

LOGGER = logging.getLogger("cutctx")
"""One INFO record per compaction (the report's one line); nothing for unchanged calls."""


class CallStats:
    """The figures of one call, added to by its summaries (safe under threads and tasks)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.start_ns = time.time_ns()
        self.parent = _otel.current_context()
        """The OpenTelemetry context the call began in (its spans' parent)."""
        self.summaries: list[SummaryRecord] = []
        self.store_seconds = 0.0
        self._summary_seconds = 0.0
        self._in_flight = 0
        self._since = 0.0
        self._lock = threading.Lock()

    @contextmanager
    def summary(self) -> Iterator[None]:
        """Time a summary request; concurrent ones count once (wall time, not their sum)."""
        with self._lock:
            if not self._in_flight:
                self._since = time.perf_counter()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                if not self._in_flight:
                    self._summary_seconds += time.perf_counter() - self._since

    def record(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn],
               start_ns: int, output_tokens: int, produced: bool, producing_seconds: float,
               summarizer: object, error: BaseException | None = None) -> None:
        """Add one summary request: produced by the summarizer (``producing_seconds`` of it)
        or found in the store; the rest of its time was the store's."""
        end_ns = time.time_ns()
        model = getattr(summarizer, "model", None)
        provider = getattr(summarizer, "provider", None)
        entry = SummaryRecord(
            request.group_id, request.prompt_id, len(turns), request.target_tokens, start_ns,
            end_ns, produced, sum(turn.token_estimate for turn in turns) if produced else 0,
            output_tokens, model if isinstance(model, str) else None,
            provider if isinstance(provider, str) else None,
            None if error is None else type(error).__name__)
        with self._lock:
            self.summaries.append(entry)
            self.store_seconds += max(0.0, (end_ns - start_ns) / 1e9 - producing_seconds)

    def figures(self, report: CallReport) -> CallReport:
        """``report`` with what was measured."""
        seconds = time.perf_counter() - self.start
        summary_seconds = min(self._summary_seconds, seconds)
        produced = [entry for entry in self.summaries if entry.produced]
        return replace(
            report, seconds=seconds, planning_seconds=max(0.0, seconds - summary_seconds),
            summary_seconds=summary_seconds,
            store_seconds=min(self.store_seconds, summary_seconds),
            summarizer_calls=len(produced),
            summary_input_tokens=sum(entry.input_tokens for entry in produced),
            summary_output_tokens=sum(entry.output_tokens for entry in produced),
            store_hits=len(self.summaries) - len(produced), store_misses=len(produced))


class Appends:
    """A session's running share of calls that were pure appends (safe under threads)."""

    def __init__(self) -> None:
        self._calls = 0
        self._appends = 0
        self._lock = threading.Lock()

    def counted(self, report: CallReport) -> CallReport:
        """``report`` with the share, this call counted (a call that could not be compacted
        is not a call of the session's: it is not counted)."""
        with self._lock:
            if report.decision != "not_possible":
                self._calls += 1
                self._appends += report.decision not in CHANGED
            share = self._appends / self._calls if self._calls else None
        return replace(report, append_share=share)


_CURRENT: ContextVar[CallStats | None] = ContextVar("cutctx_call_stats", default=None)


def current() -> CallStats | None:
    """The figures of the call running in this context (None outside a session call)."""
    return _CURRENT.get()


@contextmanager
def observed() -> Iterator[CallStats]:
    """Gather a call's figures for the duration of the block."""
    stats = CallStats()
    token = _CURRENT.set(stats)
    try:
        yield stats
    finally:
        _CURRENT.reset(token)


def tell(settings: CompactionSettings, report: CallReport, stats: CallStats) -> CallReport:
    """The report with the call's figures, told to whoever listens: ``on_call`` always,
    ``on_compaction`` for a changed (or unchangeable) request, one log record per compaction
    and, with OpenTelemetry configured, a span per compaction and per summary request."""
    report = stats.figures(report)
    if report.decision in CHANGED:
        level = logging.WARNING if report.budget_unmet else logging.INFO
        if LOGGER.isEnabledFor(level):
            LOGGER.log(level, "cutctx: %s", report)
        _otel.record_compaction(report, stats.start_ns, stats.summaries, stats.parent)
    elif report.decision == "not_possible" and LOGGER.isEnabledFor(logging.DEBUG):
        LOGGER.debug("cutctx: %s", report)
    if settings.on_call is not None:
        settings.on_call(report)
    if settings.on_compaction is not None and report.decision in NOTIFIED:
        settings.on_compaction(report)
    return report


def told(settings: CompactionSettings, report: CallReport) -> CallReport:
    """A report made outside a session call (a hook passing a history through as it is), told
    to the settings' callbacks, the log and spans as a session call's is."""
    with observed() as stats:
        return tell(settings, report, stats)

"""Summaries a session has paid for, in a store shared by every session that should reuse them.

A summary is model output: it cannot be recomputed to the same text, so it is kept by its span's
content key, and asked for once among all the sessions sharing the store — threads, tasks,
processes or machines: the first to ask claims the span, the others wait for its text (up to a
timeout) instead of paying again. Only a summary that passes the checks it will be used under is
stored, and one read back is checked again: a refused one (too long, empty, not UTF-8 — written
by another version, say) counts as missing and is replaced, so it never poisons the span.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Iterator, Sequence
from typing import Any

from cutctx import SummarizationRequest, TokenEstimator, TranscriptTurn

from ..errors import SummarizationFailed
from ..fulfil import AnySummarizer, SummaryCheck
from ..history import span_key
from ..stores import Store, aproduce_once, peek, produce_once
from ._telemetry import current

__all__ = ["SharedSummaries"]

_NAMESPACE = "summary:"


class _Answer:
    """One request's summary as it goes through the store: what may be stored or used, and
    what the summarizer answered when that was not (for ``fulfil`` to refuse with its reason:
    empty, too long, an awaitable in the sync path)."""

    def __init__(self, request: SummarizationRequest, check: SummaryCheck) -> None:
        self.request = request
        self.check = check
        self.refused: Any = ""

    def usable(self, value: bytes) -> bool:
        """Whether a stored value may be used: UTF-8 text that passes the checks."""
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self._passes(text)

    def stored(self, answer: Any) -> bytes | None:
        """What is stored of the summarizer's answer: its UTF-8 if it passes (else nothing,
        and the answer is kept as ``refused``)."""
        if isinstance(answer, str) and self._passes(answer):
            try:
                return answer.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: usable here, not storable
                pass
        self.refused = answer
        return None

    def text(self, value: bytes | None) -> Any:
        """What ``fulfil`` gets: the stored (or produced) text, else the refused answer."""
        return self.refused if value is None else value.decode("utf-8")

    def _passes(self, text: str) -> bool:
        if not text.strip():
            return False
        try:
            self.check(self.request, text)
        except SummarizationFailed:
            return False
        return True


class SharedSummaries:
    """Wraps a summarizer so each span is produced once across everything sharing ``store``,
    and only summaries that pass ``check`` (the job's own) are stored or taken from it; each
    request adds its figures (time, store hit or miss, tokens) to its call's."""

    def __init__(self, store: Store, timeout: float) -> None:
        self.store = store
        self.timeout = timeout

    def peek(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn],
             check: SummaryCheck) -> str | None:
        """The stored summary of ``turns`` if there is a usable one (nothing is produced)."""
        answer = _Answer(request, check)
        value = peek(self.store, _NAMESPACE + span_key(request, turns), accept=answer.usable)
        return None if value is None else value.decode("utf-8")

    def sync(self, summarizer: AnySummarizer, check: SummaryCheck,
             estimator: TokenEstimator) -> AnySummarizer:
        def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> Any:
            answer = _Answer(request, check)
            with _Measured(request, turns, summarizer, estimator) as measured:
                def produce() -> bytes | None:
                    with measured.producing():
                        measured.text = summarizer(request, turns)
                    return answer.stored(measured.text)

                return answer.text(produce_once(
                    self.store, _NAMESPACE + span_key(request, turns), produce,
                    lease=self.timeout, timeout=self.timeout, accept=answer.usable))

        return summarize

    def asynchronous(self, summarizer: AnySummarizer, check: SummaryCheck,
                     estimator: TokenEstimator) -> AnySummarizer:
        async def summarize(request: SummarizationRequest,
                            turns: Sequence[TranscriptTurn]) -> Any:
            answer = _Answer(request, check)
            with _Measured(request, turns, summarizer, estimator) as measured:
                async def produce() -> bytes | None:
                    with measured.producing():
                        text: Any = summarizer(request, turns)
                        if inspect.isawaitable(text):
                            text = await text
                    measured.text = text
                    return answer.stored(text)

                return answer.text(await aproduce_once(
                    self.store, _NAMESPACE + span_key(request, turns), produce,
                    lease=self.timeout, timeout=self.timeout, accept=answer.usable))

        return summarize


class _Measured:
    """One summary request's figures, added to its call's ``CallStats`` (if any) at the end."""

    def __init__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn],
                 summarizer: AnySummarizer, estimator: TokenEstimator) -> None:
        self.request, self.turns, self.summarizer = request, turns, summarizer
        self.estimator = estimator
        self.stats = current()
        self.text: object = None
        self.produced = False
        self.producing_seconds = 0.0
        self._timing = contextlib.ExitStack()

    def __enter__(self) -> _Measured:
        self.start_ns = time.time_ns()
        if self.stats is not None:
            self._timing.enter_context(self.stats.summary())
        return self

    @contextlib.contextmanager
    def producing(self) -> Iterator[None]:
        self.produced = True
        start = time.perf_counter()
        try:
            yield
        finally:
            self.producing_seconds += time.perf_counter() - start

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        self._timing.close()
        if self.stats is not None:
            output = (self.estimator.estimate_tokens(self.text)
                      if self.produced and isinstance(self.text, str) else 0)
            self.stats.record(self.request, self.turns, self.start_ns, output, self.produced,
                              self.producing_seconds, self.summarizer, error)

"""Summaries a session has paid for, in a store shared by every session that should reuse them.

A summary is model output: it cannot be recomputed to the same text, so it is kept by its span's
content key, and asked for once among all the sessions sharing the store — threads, tasks,
processes or machines: the first to ask claims the span, the others wait for its text (up to a
timeout) instead of paying again.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from cutctx import SummarizationRequest, TokenEstimator, TranscriptTurn

from .._canonical_key import span_key
from ..fulfil import AnySummarizer
from ..stores import Store, aproduce_once, produce_once
from ._observe import current

__all__ = ["SharedSummaries"]

_NAMESPACE = "summary:"


def _encoded(text: object) -> bytes | None:
    """What is stored: a usable text's UTF-8 (nothing for an empty or non-text reply)."""
    return text.encode("utf-8") if isinstance(text, str) and text.strip() else None


def _decoded(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8")


class SharedSummaries:
    """Wraps a summarizer so each span is produced once across everything sharing ``store``;
    each request adds its figures (time, store hit or miss, tokens) to its call's."""

    def __init__(self, store: Store, timeout: float) -> None:
        self.store = store
        self.timeout = timeout

    def sync(self, summarizer: AnySummarizer, estimator: TokenEstimator) -> AnySummarizer:
        def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
            with _Measured(request, turns, summarizer, estimator) as measured:
                def produce() -> bytes | None:
                    with measured.producing():
                        measured.text = summarizer(request, turns)
                    return _encoded(measured.text)

                return _decoded(produce_once(
                    self.store, _NAMESPACE + span_key(request, turns), produce,
                    lease=self.timeout, timeout=self.timeout))

        return summarize

    def asynchronous(self, summarizer: AnySummarizer,
                     estimator: TokenEstimator) -> AnySummarizer:
        async def summarize(request: SummarizationRequest,
                            turns: Sequence[TranscriptTurn]) -> str:
            with _Measured(request, turns, summarizer, estimator) as measured:
                async def produce() -> bytes | None:
                    with measured.producing():
                        text: Any = summarizer(request, turns)
                        if hasattr(text, "__await__"):
                            text = await text
                    measured.text = text
                    return _encoded(text)

                return _decoded(await aproduce_once(
                    self.store, _NAMESPACE + span_key(request, turns), produce,
                    lease=self.timeout, timeout=self.timeout))

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

"""Summaries a session has paid for, in a store shared by every session that should reuse them.

A summary is model output: it cannot be recomputed to the same text, so it is kept by its span's
content key, and asked for once among all the sessions sharing the store — threads, tasks,
processes or machines: the first to ask claims the span, the others wait for its text (up to a
timeout) instead of paying again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cutctx import SummarizationRequest, TranscriptTurn

from .._canonical_key import span_key
from ..fulfil import AnySummarizer
from ..stores import Store, aproduce_once, produce_once

__all__ = ["SharedSummaries"]

_NAMESPACE = "summary:"


def _encoded(text: object) -> bytes | None:
    """What is stored: a usable text's UTF-8 (nothing for an empty or non-text reply)."""
    return text.encode("utf-8") if isinstance(text, str) and text.strip() else None


def _decoded(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8")


class SharedSummaries:
    """Wraps a summarizer so each span is produced once across everything sharing ``store``."""

    def __init__(self, store: Store, timeout: float) -> None:
        self.store = store
        self.timeout = timeout

    def sync(self, summarizer: AnySummarizer) -> AnySummarizer:
        def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
            return _decoded(produce_once(
                self.store, _NAMESPACE + span_key(request, turns),
                lambda: _encoded(summarizer(request, turns)),
                lease=self.timeout, timeout=self.timeout))

        return summarize

    def asynchronous(self, summarizer: AnySummarizer) -> AnySummarizer:
        async def summarize(request: SummarizationRequest,
                            turns: Sequence[TranscriptTurn]) -> str:
            async def produce() -> bytes | None:
                text: Any = summarizer(request, turns)
                if hasattr(text, "__await__"):
                    text = await text
                return _encoded(text)

            return _decoded(await aproduce_once(
                self.store, _NAMESPACE + span_key(request, turns), produce,
                lease=self.timeout, timeout=self.timeout))

        return summarize

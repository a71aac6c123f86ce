"""Producing the summaries a plan asks for, through a summarizer the caller supplies.

A summarizer is any callable ``(request, turns) -> str`` (or an async one). Failures never lose
history and never become summary text: they raise ``SummarizationFailed`` naming the group.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, TypeAlias, TypedDict, Unpack

from cutctx import (
    CompactionPlan,
    SummarizationRequest,
    Transcript,
    TranscriptTurn,
    ValidationError,
)

from .errors import SummarizationFailed, SummaryRejected
from .history import span_key

__all__ = ["AnySummarizer", "AsyncSummarizer", "FulfilOptions", "Summarizer", "SummaryCheck",
           "afulfil", "asummarize", "fulfil", "span_key", "summarize"]

Summarizer: TypeAlias = Callable[[SummarizationRequest, Sequence[TranscriptTurn]], str]
"""A function that writes one summary: given the plan's request (its prompt id and target
tokens) and the turns to fold, in order, it returns the summary text. It may call a model
(``OpenAISummarizer``, ``AnthropicSummarizer``) or not (tests, heuristics); an exception, an
empty text, anything but a ``str``, or a text far over ``request.target_tokens`` fails that
summary, never the history.

>>> def first_lines(request, turns):
...     return "\n".join(turn.content.splitlines()[0] for turn in turns)
"""
AsyncSummarizer: TypeAlias = Callable[
    [SummarizationRequest, Sequence[TranscriptTurn]], Awaitable[str]
]
"""A ``Summarizer`` to await (an async model client): ``afulfil``, ``aprepare`` and
``acompact`` request the summaries of one plan concurrently."""
AnySummarizer: TypeAlias = Callable[
    [SummarizationRequest, Sequence[TranscriptTurn]], str | Awaitable[str]
]
"""Either kind: what settings take (provider summarizers return a str or an awaitable, by
their client); the sync paths refuse an awaitable with ``SummarizationFailed``."""
SummaryCache: TypeAlias = MutableMapping[str, str]
SummaryCheck: TypeAlias = Callable[[SummarizationRequest, str], None]
"""Raises ``SummarizationFailed`` for a summary that must not be used (before it is cached)."""


def _turns_for(request: SummarizationRequest, transcript: Transcript) -> list[TranscriptTurn]:
    wanted = set(request.turn_ids)
    return [turn for turn in transcript.turns if turn.turn_id in wanted]


def _failure(request: SummarizationRequest, cause: BaseException | str,
             why: str = "", **details: str) -> SummarizationFailed:
    if isinstance(cause, SummaryRejected):
        name = cause.reason
    else:
        name = cause if isinstance(cause, str) else type(cause).__name__
    return SummarizationFailed(
        f"summarizing group {request.group_id} failed ({name}{why}); nothing was compacted",
        {"group_id": request.group_id, "turn_count": len(request.turn_ids),
         "prompt_id": request.prompt_id, "cause": name, **details},
    )


def _check_arguments(plan: Any, transcript: Any, cache: Any) -> None:
    """Wrong-typed arguments are refused by name, before any summarizer is called."""
    if not isinstance(plan, CompactionPlan):
        raise ValidationError(f"plan must be a CompactionPlan, got {type(plan).__name__}",
                              {"field": "plan"})
    if not isinstance(transcript, Transcript):
        raise ValidationError(
            f"transcript must be a Transcript, got {type(transcript).__name__}",
            {"field": "transcript"})
    if cache is not None and not isinstance(cache, MutableMapping):
        raise ValidationError(
            f"cache must be a mutable mapping (a dict, say), got {type(cache).__name__}",
            {"field": "cache"})


def _checked(request: SummarizationRequest, text: Any, check: SummaryCheck | None) -> str:
    if not isinstance(text, str):
        kind = type(text).__name__
        raise _failure(request, "SummaryNotText", f": the summarizer returned {kind}, not str",
                       returned=kind)
    if not text.strip():
        raise _failure(request, "EmptySummary")
    if check is not None:
        check(request, text)
    return text


class FulfilOptions(TypedDict, total=False):
    """What ``fulfil`` and ``afulfil`` take besides the plan: ``cache`` (keyed by span content)
    makes a span already summarized cost nothing; ``check`` vets each new summary (its length,
    say) before it is used or cached."""

    cache: SummaryCache | None
    check: SummaryCheck | None


def _looked_up(request: SummarizationRequest, transcript: Transcript,
               cache: SummaryCache | None) -> tuple[list[TranscriptTurn], str, str | None]:
    """The span's turns, its cache key, and its summary when the cache has one (one read: an
    entry evicted in between cannot be half-seen)."""
    turns = _turns_for(request, transcript)
    key = span_key(request, turns)
    return turns, key, None if cache is None else cache.get(key)


def _kept(cache: SummaryCache | None, key: str, text: str) -> str:
    if cache is not None:
        cache[key] = text
    return text


def fulfil(plan: CompactionPlan, transcript: Transcript, summarizer: AnySummarizer,
           **options: Unpack[FulfilOptions]) -> dict[str, str]:
    """The ``summaries`` mapping for ``CompactionExecutor.apply``, one request at a time
    (``FulfilOptions``: a cache, a check)."""
    cache, check = options.get("cache"), options.get("check")
    _check_arguments(plan, transcript, cache)
    summaries: dict[str, str] = {}
    for request in plan.summarization_requests:
        turns, key, cached = _looked_up(request, transcript, cache)
        summaries[request.group_id] = cached if cached is not None else _kept(
            cache, key, summarize(request, turns, summarizer, check))
    return summaries


async def afulfil(plan: CompactionPlan, transcript: Transcript, summarizer: AnySummarizer,
                  **options: Unpack[FulfilOptions]) -> dict[str, str]:
    """Like ``fulfil``, running independent requests concurrently; sync summarizers work too."""
    cache, check = options.get("cache"), options.get("check")
    _check_arguments(plan, transcript, cache)

    async def one(request: SummarizationRequest) -> tuple[str, str]:
        turns, key, cached = _looked_up(request, transcript, cache)
        if cached is not None:
            return request.group_id, cached
        return request.group_id, _kept(cache, key,
                                       await asummarize(request, turns, summarizer, check))

    results = await asyncio.gather(*(one(r) for r in plan.summarization_requests))
    return dict(results)


def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn],
              summarizer: AnySummarizer, check: SummaryCheck | None = None) -> str:
    """One summary of ``turns``, checked (``SummarizationFailed`` naming the group if the
    summarizer fails, answers nothing or awaits in this sync path, or ``check`` refuses it)."""
    try:
        text = summarizer(request, turns)
    except Exception as exc:
        raise _failure(request, exc) from exc
    if inspect.isawaitable(text):
        _close(text)
        raise _failure(request, "AsyncSummarizerInSyncPath")
    return _checked(request, text, check)


async def asummarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn],
                     summarizer: AnySummarizer, check: SummaryCheck | None = None) -> str:
    """``summarize``, awaiting an async summarizer."""
    try:
        text = summarizer(request, turns)
        if inspect.isawaitable(text):
            text = await text
    except Exception as exc:
        raise _failure(request, exc) from exc
    return _checked(request, text, check)


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()

"""What a wrapped call brings back feeds its session: the input the reply reports.

A reply is read at once (``usage``); a stream as it is read, at its first event that reports
input (Anthropic's ``message_start``, Responses' ``response.completed``, Chat's usage chunk with
``stream_options={"include_usage": True}``), once; a ``.stream()`` helper's stream likewise once
entered. The caller gets the SDK's own objects: a stream is still the SDK's stream, its items
passed through as they come (its iterator is wrapped in place; an SDK stream without one is
left unread). Raw-response views (``with_raw_response``) are not read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from ..counting import reported_input
from ..reports import CallReport
from ..session import CompactionSession

__all__ = ["WatchedManager", "afed", "fed"]


def fed(result: Any, report: CallReport, session: CompactionSession) -> Any:
    """``result`` (the SDK's return value), its reported input given to ``session``: now for a
    reply, as it is read for a stream, on entering for a ``.stream()`` helper."""
    if hasattr(result, "__next__"):
        _watch(result, report, session)
    elif hasattr(result, "__enter__") and not hasattr(result, "__aenter__"):
        return WatchedManager(result, report, session)
    elif reported_input(result) is not None:
        session.observe_usage(report, result)
    return result


async def afed(result: Any, report: CallReport, session: CompactionSession) -> Any:
    """``fed`` for async calls: the store awaited, an async stream watched."""
    if hasattr(result, "__anext__"):
        _awatch(result, report, session)
    elif reported_input(result) is not None:
        await session.aobserve_usage(report, result)
    return result


class WatchedManager:
    """A sync ``.stream()`` helper whose stream, once entered, feeds the session; every other
    attribute is the helper's own."""

    def __init__(self, manager: Any, report: CallReport, session: CompactionSession) -> None:
        self._manager = manager
        self._report = report
        self._session = session

    def __enter__(self) -> Any:
        stream = self._manager.__enter__()
        _watch(stream, self._report, self._session)
        return stream

    def __exit__(self, *exc: Any) -> Any:
        return self._manager.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


def watch_entered(stream: Any, report: CallReport, session: CompactionSession) -> Any:
    """An async helper's entered stream, watched (``_DeferredManager`` enters it)."""
    _awatch(stream, report, session)
    return stream


def _watch(stream: Any, report: CallReport, session: CompactionSession) -> None:
    iterator = _iterator_of(stream)
    if iterator is not None:
        stream.__dict__["_iterator"] = _watched(iterator, lambda item: session.observe_usage(
            report, item))


def _awatch(stream: Any, report: CallReport, session: CompactionSession) -> None:
    iterator = _iterator_of(stream)
    if iterator is not None:
        stream.__dict__["_iterator"] = _awatched(iterator, lambda item: session.aobserve_usage(
            report, item))


def _iterator_of(stream: Any) -> Any:
    """The iterator an SDK stream reads its items from (``_iterator``: both SDKs' streams and
    helpers), or None for a stream without one."""
    try:
        iterator = stream._iterator
    except AttributeError:
        return None
    return iterator if hasattr(stream, "__dict__") else None


def _watched(iterator: Iterator[Any], observe: Callable[[Any], object]) -> Iterator[Any]:
    seen = False
    for item in iterator:
        if not seen and reported_input(item) is not None:
            seen = True
            observe(item)
        yield item


async def _awatched(iterator: AsyncIterator[Any], observe: Callable[[Any], Awaitable[object]]
                    ) -> AsyncIterator[Any]:
    seen = False
    async for item in iterator:
        if not seen and reported_input(item) is not None:
            seen = True
            await observe(item)
        yield item

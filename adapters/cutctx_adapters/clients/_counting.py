"""Exact counts near the limits (``counter="provider"``): a wrapped call whose estimate lands
within ``NEAR`` of its trigger or budget asks the provider's count endpoint for the request it
is about to send, once per distinct request (kept in a small cache by its content), and corrects
the model's estimates by it; over the trigger, the request is prepared again with the corrected
counts. Any error or refusal of the endpoint leaves the estimate. ``_steps`` holds the flow once;
``prepare_counted`` and ``aprepare_counted`` differ only in awaiting.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping
from typing import Any

from .._steps import advanced, begun
from ..counting import near_limit, reported_input
from ..history import content_key, to_plain
from ..planning import given
from ..reports import Prepared
from ..session import CompactionSession

__all__ = ["ExactCounts", "aprepare_counted", "prepare_counted"]

Count = Callable[..., Any]
"""A provider's count endpoint, bound to the wrapped client (sync, or async returning an
awaitable): ``client.messages.count_tokens``, ``client.responses.input_tokens.count``."""
_SKIPPED = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


class ExactCounts:
    """The exact counts a wrapped resource was given, by request content (least recent go)."""

    def __init__(self, size: int = 256) -> None:
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self.asked = 0
        """How many times the endpoint was asked (for tests and benchmarks)."""

    def get(self, key: str | None) -> int | None:
        if key is None:
            return None
        with self._lock:
            found = self._counts.get(key)
            if found is not None:
                self._counts.move_to_end(key)
            return found

    def put(self, key: str | None, count: int) -> None:
        if key is None:
            return
        with self._lock:
            self._counts[key] = count
            self._counts.move_to_end(key)
            while len(self._counts) > self._size:
                self._counts.popitem(last=False)


_Steps = Generator[tuple[str, Any], Any, Prepared]
"""Yields ("prepare", None), ("count", fields) and ("observe", (report, count)); the answer of
each is sent back (a count: an int, or None when the endpoint failed)."""


def _steps(count: Count, counts: ExactCounts) -> _Steps:
    prepared: Prepared = yield ("prepare", None)
    report = prepared.report
    if not near_limit(report.tokens_sent, report.trigger_tokens, report.prompt_budget):
        return prepared
    fields = _count_fields(count, prepared.request)
    key = _key(fields)
    exact = counts.get(key)
    if exact is None:
        counts.asked += 1
        exact = reported_input((yield ("count", fields))) or None  # none, or 0: refused
        if exact is None:
            return prepared
        counts.put(key, exact)
    yield ("observe", (report, exact))
    if report.trigger_tokens is not None and exact > report.trigger_tokens:
        prepared = yield ("prepare", None)
    return prepared


def prepare_counted(session: CompactionSession, request: Mapping[str, Any], count: Count,
                    counts: ExactCounts) -> Prepared:
    """``session.prepare(request)``, checked against an exact count near the limits."""
    def answer(kind: str, value: Any) -> Any:
        if kind == "prepare":
            return session.prepare(request)
        if kind == "observe":
            return session.observe_usage(*value, exact=True)
        try:
            return count(**value)
        except Exception:  # any failure or refusal: the estimate stands
            return None

    steps = _steps(count, counts)
    step = begun(steps)
    while not isinstance(step, Prepared):
        step = advanced(steps, answer(*step))
    return step


async def aprepare_counted(session: CompactionSession, request: Mapping[str, Any],
                           count: Count, counts: ExactCounts) -> Prepared:
    """``prepare_counted`` awaiting the session, the endpoint and the store."""
    async def answer(kind: str, value: Any) -> Any:
        if kind == "prepare":
            return await session.aprepare(request)
        if kind == "observe":
            return await session.aobserve_usage(*value, exact=True)
        try:
            counted = count(**value)
            return await counted if inspect.isawaitable(counted) else counted
        except Exception:  # any failure or refusal: the estimate stands
            return None

    steps = _steps(count, counts)
    step = begun(steps)
    while not isinstance(step, Prepared):
        step = advanced(steps, await answer(*step))
    return step


def _count_fields(count: Count, request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's fields the endpoint takes (its keyword parameters, not the transport's)."""
    try:
        names = set(inspect.signature(count).parameters) - _SKIPPED
    except (TypeError, ValueError):
        return dict(request)
    return {name: value for name, value in request.items()
            if name in names and given(value) is not None}


def _key(fields: Mapping[str, Any]) -> str | None:
    """The content key of what is counted; None when it cannot be read as JSON."""
    try:
        return content_key(to_plain(dict(fields)))
    except Exception:
        return None

"""What every framework hook shares: its sessions, the caller's items found again, its reports.

A hook converts the framework's history into one cutctx format, lets a ``CompactionSession``
prepare it, and hands the framework back its own objects for every item sent unchanged: those
are found again by content (kept items keep their order), so only stubs, clips and summaries are
new. The replies a hook sees feed the session the input they report (``feed``), so its counts
follow the bill.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from ..counting import calibration_for, claude_estimator, is_claude, reported_input
from ..history import SUMMARY_HEADER
from ..planning import HistoryFormat
from ..reports import CallReport, Decision
from ..session import CompactionSession, told
from ..settings import CompactionSettings, SettingsKeywords

__all__ = ["HookSessions", "afeed", "feed", "item_shape", "kept_positions", "traced",
           "unchanged"]


class HookSessions:
    """The sticky sessions of one hook, all with its settings: one per format, and one more per
    Claude calibration (Anthropic models are counted with tiktoken times the Claude factor
    unless the settings name an estimator). ``last_report`` is the newest call's report."""

    def __init__(self, settings: CompactionSettings | None,
                 keywords: SettingsKeywords) -> None:
        self.settings = CompactionSettings.of(settings, **keywords)
        self._sessions: dict[tuple[str, float | None], CompactionSession] = {}
        self._lock = threading.Lock()
        self._sent: dict[Hashable, tuple[CompactionSession, CallReport]] = {}
        self.last_report: CallReport | None = None

    def session(self, format: HistoryFormat, model: str | None) -> CompactionSession:
        """The session for ``format`` and ``model`` (made on first use)."""
        claude = is_claude(model) and self.settings.estimator is None
        factor = calibration_for(model) if claude else None
        key = (format.name, factor)
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                settings = self.settings
                if factor is not None:
                    settings = settings.replace(estimator=claude_estimator(model))
                found = self._sessions[key] = CompactionSession(format, settings=settings)
            return found

    def told(self, decision: Decision, reason: str, format: HistoryFormat,
             model: str | None, items: int) -> CallReport:
        """A report the hook made itself (a history passed through as it is), told to the
        settings' callbacks as a session's are."""
        report = CallReport(decision, reason, format.name, model, items_in=items,
                            items_sent=items)
        return self.kept(told(self.settings, report))

    def kept(self, report: CallReport) -> CallReport:
        """Remember ``report`` as the newest."""
        self.last_report = report
        return report

    def remember(self, key: Hashable, session: CompactionSession, report: CallReport) -> None:
        """Keep which session sent the request ``key`` names, and its report, until its reply
        comes (``afeed_later``)."""
        with self._lock:
            if len(self._sent) >= 256:  # replies that never came (a failed request)
                self._sent.pop(next(iter(self._sent)))
            self._sent[key] = (session, report)

    async def afeed_later(self, key: Hashable, replies: Iterable[Any]) -> None:
        """Feed the replies of the request ``key`` names to the session that sent it."""
        with self._lock:
            sent = self._sent.pop(key, None)
        if sent is not None:
            await afeed(sent[0], sent[1], replies)


def _reporting(replies: Iterable[Any]) -> Any:
    """The first reply that reports its input, or None."""
    return next((reply for reply in replies if reported_input(reply) is not None), None)


def feed(session: CompactionSession, report: CallReport, replies: Iterable[Any]) -> None:
    """Give ``session`` the input the first of ``replies`` that reports one was billed for
    (the request ``report`` describes): later estimates for its model follow the bill."""
    reply = _reporting(replies)
    if reply is not None:
        session.observe_usage(report, reply)


async def afeed(session: CompactionSession, report: CallReport, replies: Iterable[Any]) -> None:
    """``feed``, awaiting the session's store."""
    reply = _reporting(replies)
    if reply is not None:
        await session.aobserve_usage(report, reply)


Shape = Callable[[Any], Hashable]
"""A cheap key of an item (its role, type, ids and sizes): equal items have equal shapes."""


def item_shape(item: Any) -> Hashable:
    """The shape of a plain item of any cutctx format."""
    if not isinstance(item, dict):
        return type(item).__name__
    return (item.get("role"), item.get("type"), item.get("tool_call_id"),
            item.get("call_id"), item.get("id"), _size(item.get("content")),
            _size(item.get("output")))


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list) else -1


def kept_positions(given: Sequence[Any], sent: Sequence[Any],
                   shape: Shape = item_shape) -> list[int | None]:
    """For each sent item, the position of the given item it is unchanged (None: the
    compaction made it, a stub, clip or summary). Kept items keep their order, so each is
    matched to the first equal given item after the previous match; two items equal in content
    are interchangeable on the wire, and the earlier is taken."""
    by_shape: dict[Hashable, list[int]] = {}
    for index, item in enumerate(given):
        by_shape.setdefault(shape(item), []).append(index)
    out: list[int | None] = []
    after = 0
    for item in sent:
        positions = by_shape.get(shape(item), [])
        found = None
        for index in positions[bisect_left(positions, after):]:
            if given[index] == item:
                found = index
                break
        out.append(found)
        if found is not None:
            after = found + 1
    return out


def unchanged(positions: Sequence[int | None], given: int) -> bool:
    """Whether what is sent is every given item, in order."""
    return len(positions) == given and all(
        position == index for index, position in enumerate(positions))



def traced(given: Sequence[dict[str, Any]], sent: Sequence[dict[str, Any]]
           ) -> list[tuple[int, bool] | None]:
    """Where each sent message comes from: ``(position, True)`` for a given message sent
    unchanged, ``(position, False)`` for a stub or clip of one (the first not yet taken with
    its role and ``tool_call_id`` between the unchanged messages around it), None for a
    summary. For formats of one message per turn (Chat Completions)."""
    positions = kept_positions(given, sent)
    upto = [len(given)] * (len(sent) + 1)  # the next unchanged position at or after each item
    for index in range(len(sent) - 1, -1, -1):
        found = positions[index]
        upto[index] = found if found is not None else upto[index + 1]
    out: list[tuple[int, bool] | None] = []
    taken: set[int] = set()
    after = 0
    for index, (item, position) in enumerate(zip(sent, positions, strict=True)):
        if position is not None:
            after = max(after, position + 1)
            out.append((position, True))
            continue
        replaced = None if _is_summary(item) else next(
            (candidate for candidate in range(after, upto[index])
             if candidate not in taken and given[candidate].get("role") == item.get("role")
             and given[candidate].get("tool_call_id") == item.get("tool_call_id")), None)
        if replaced is not None:
            taken.add(replaced)
        out.append(None if replaced is None else (replaced, False))
    return out


def _is_summary(item: dict[str, Any]) -> bool:
    content = item.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_HEADER)

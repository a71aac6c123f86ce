"""What every framework hook shares: its sessions, the caller's items found again, its reports.

A hook converts the framework's history into one cutctx format, lets a ``CompactionSession``
prepare it, and hands the framework back its own objects for every item sent unchanged: those
are found again by content (kept items keep their order), so only stubs, clips and summaries are
new.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from cutctx import TokenEstimator

from ..counting import (
    CalibratedEstimator,
    calibration_for,
    claude_estimator,
    estimator_for,
    is_claude,
)
from ..gemini.contents import CALIBRATION as GEMINI_CALIBRATION
from ..history import SUMMARY_HEADER
from ..planning import HistoryFormat
from ..reports import CallReport, Decision
from ..session import CompactionSession, told
from ..settings import CompactionSettings, SettingsKeywords

__all__ = ["HookSessions", "calibration_of", "is_gemini", "item_shape", "kept_positions",
           "traced", "unchanged"]


def is_gemini(model: str | None) -> bool:
    """Whether ``model`` names a Google Gemini model (its counts take Gemini's calibration)."""
    return bool(model) and "gemini" in str(model).lower()


def calibration_of(model: str | None) -> float | None:
    """The factor tiktoken counts for ``model`` take where it has no public tokenizer (Claude,
    Gemini); None for the models tiktoken counts as they are."""
    if is_claude(model):
        return calibration_for(model)
    if is_gemini(model):
        return GEMINI_CALIBRATION
    return None


def _calibrated(model: str | None, factor: float) -> TokenEstimator:
    """The estimator a calibrated session counts ``model`` with."""
    if is_claude(model):
        return claude_estimator(model)
    return CalibratedEstimator(estimator_for(None), factor)


class HookSessions:
    """The sticky sessions of one hook, all with its settings: one per format, and one more per
    calibration (Anthropic and Gemini models are counted with tiktoken times their factor
    unless the settings name an estimator). ``last_report`` is the newest call's report."""

    def __init__(self, settings: CompactionSettings | None,
                 keywords: SettingsKeywords) -> None:
        self.settings = CompactionSettings.of(settings, **keywords)
        self._sessions: dict[tuple[str, float | None], CompactionSession] = {}
        self._lock = threading.Lock()
        self.last_report: CallReport | None = None

    def session(self, format: HistoryFormat, model: str | None) -> CompactionSession:
        """The session for ``format`` and ``model`` (made on first use)."""
        factor = calibration_of(model) if self.settings.estimator is None else None
        key = (format.name, factor)
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                settings = self.settings
                if factor is not None:
                    settings = settings.replace(estimator=_calibrated(model, factor))
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

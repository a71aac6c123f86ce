"""What every framework hook shares: its sessions, the caller's messages found again, reports.

A hook converts the framework's history into one cutctx format (noting where each item came
from), lets a ``CompactionSession`` prepare it, and hands the framework back its own objects for
every message sent unchanged: the session says which given items each item sent comes from
(``Prepared.sources``), so a stub or a clip is a copy of its own message and only summaries are
new. The replies a hook sees feed the session the input they report (``feed``), so its counts
follow the bill.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cutctx import ValidationError

from ..counting import calibrated_estimator, check_model, reported_input, tokenizer_factor
from ..planning import HistoryFormat
from ..reports import CallReport, Decision, Source
from ..session import CompactionSession, told
from ..settings import CompactionSettings, SettingsKeywords

__all__ = ["HookSessions", "Kept", "Made", "Origin", "afeed", "chat_request", "feed", "parts_of",
           "regrouped", "untouched"]


class HookSessions:
    """The sticky sessions of one hook, all with its settings: one per format, and one more per
    calibration (Claude and Gemini models are counted with tiktoken times their factor unless
    the settings name an estimator). ``model``: the model name counts and the window
    are for when the hook's caller names one (every hook takes ``settings``, ``model`` and the
    settings' keywords alike). ``last_report`` is the newest call's report."""

    def __init__(self, settings: CompactionSettings | None, keywords: SettingsKeywords,
                 model: str | None = None) -> None:
        self.settings = CompactionSettings.of(settings, **keywords)
        self.model = check_model(model)
        self._sessions: dict[tuple[str, float | None], CompactionSession] = {}
        self._lock = threading.Lock()
        self._sent: dict[Hashable, tuple[CompactionSession, CallReport]] = {}
        self.last_report: CallReport | None = None

    def session(self, format: HistoryFormat, model: str | None) -> CompactionSession:
        """The session for ``format`` and ``model`` (made on first use)."""
        factor = tokenizer_factor(model) if self.settings.estimator is None else None
        key = (format.name, factor)
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                settings = self.settings
                if factor is not None:
                    settings = settings.replace(estimator=calibrated_estimator(model))
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


def chat_request(model: str | None, messages: list[dict[str, Any]], tools: list[Any],
                 max_tokens: Any = None) -> dict[str, Any]:
    """A framework call as the Chat Completions request a hook's session prepares: its model,
    messages and tools, and its reply allowance where the framework names a whole number."""
    request: dict[str, Any] = {"model": model, "messages": messages, "tools": tools}
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        request["max_completion_tokens"] = max_tokens
    return request


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


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a given item was read from: the framework's message (its position in the list;
    -1 for one outside it, such as the system prompt) and, for a message read as several items,
    which of its parts (None: the message as a whole)."""

    message: int
    part: int | None = None


@dataclass(frozen=True, slots=True)
class Kept:
    """A framework message sent, whole or in part: for each of its parts sent (None: the
    message as a whole), None where it went unchanged, else the item sent in its place (a
    stub, a clip)."""

    message: int
    parts: dict[int | None, dict[str, Any] | None]

    @property
    def unchanged(self) -> bool:
        """Every part sent is sent as given."""
        return all(item is None for item in self.parts.values())

    def whole(self, parts: Collection[int | None]) -> bool:
        """Whether the message went as it is: every one of the ``parts`` it was read as sent,
        unchanged."""
        return self.unchanged and len(self.parts) == len(parts)


@dataclass(frozen=True, slots=True)
class Made:
    """An item cutctx made (a summary), and the framework messages it stands for."""

    item: dict[str, Any]
    messages: tuple[int, ...]


def regrouped(sent: Sequence[dict[str, Any]], sources: Sequence[Source] | None,
              origins: Sequence[Origin]) -> list[Kept | Made]:
    """What is sent, as framework messages: each message once, where its first item is sent,
    with what became of its parts, and the summaries in between. Mapped by the session's own
    account of where each item comes from (``Prepared.sources``), never guessed by content;
    items from outside the list (``Origin.message`` -1) are the framework's to send. A session
    names none only where it sent the request as given (``not_possible``)."""
    if sources is None:
        if len(sent) != len(origins):
            raise ValidationError("the session named no sources for what it sent",
                                  {"field": "sources", "items": len(sent)})
        sources = [Source("kept", (position,)) for position in range(len(sent))]
    out: list[Kept | Made] = []
    kept: dict[int, Kept] = {}
    for item, source in zip(sent, sources, strict=True):
        if source.fate == "summarized":
            messages = {origins[position].message for position in source.positions}
            out.append(Made(item, tuple(sorted(index for index in messages if index >= 0))))
            continue
        origin = origins[source.positions[0]]
        if origin.message < 0:
            continue
        entry = kept.get(origin.message)
        if entry is None:
            entry = kept[origin.message] = Kept(origin.message, {})
            out.append(entry)
        entry.parts[origin.part] = None if source.fate == "kept" else item
    return out


def parts_of(origins: Sequence[Origin]) -> dict[int, set[int | None]]:
    """Per framework message, the parts it was read as (None: as a whole)."""
    parts: dict[int, set[int | None]] = {}
    for origin in origins:
        parts.setdefault(origin.message, set()).add(origin.part)
    return parts


def untouched(entries: Sequence[Kept | Made], origins: Sequence[Origin], messages: int
              ) -> bool:
    """Whether ``entries`` are all ``messages`` framework messages, in order, each with every
    part it was read as (``origins``), unchanged."""
    parts = parts_of(origins)
    return len(entries) == messages and all(
        isinstance(entry, Kept) and entry.message == index and entry.whole(parts[index])
        for index, entry in enumerate(entries))

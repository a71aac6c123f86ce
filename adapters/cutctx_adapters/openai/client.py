"""``CompactingOpenAI``: an ``OpenAI``/``AsyncOpenAI`` client whose history calls compact first.

``client.chat.completions.create/parse/stream`` and ``client.responses.create/parse/stream``
keep their signatures and return types; every other attribute is the wrapped client's own.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._session import CallReport, CompactionSession, HistoryFormat
from .._wrapper import CompactingResource, ReportCallback, is_async_client
from . import chat

__all__ = ["CompactingOpenAI"]

_CHAT_METHODS = ("create", "parse", "stream")
_RESPONSES_METHODS = ("create", "parse", "stream")


class _Chat:
    def __init__(self, chat_resource: Any, completions: CompactingResource) -> None:
        self._chat = chat_resource
        self.completions = completions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chat, name)


class CompactingOpenAI:
    """Wraps an ``OpenAI`` or ``AsyncOpenAI`` client; compaction settings are keywords.

    >>> # client = CompactingOpenAI(OpenAI(), summarizer=None, on_compaction=print)
    Settings: ``window``/``windows`` (context window, else the built-in table), ``trigger`` and
    ``target`` (fractions of the prompt budget or token counts), ``reserve`` (reply allowance
    when the request sets none), ``policy``, ``summarizer``, ``keep_recent``, ``pin``,
    ``sticky`` (reuse the previous view while a history only grows; default True).
    """

    def __init__(self, client: Any, *, on_compaction: ReportCallback | None = None,
                 **settings: Any) -> None:
        self._client = client
        self._on_compaction = on_compaction
        self._is_async = is_async_client(client)
        self.last_report: CallReport | None = None
        self.sessions: dict[str, CompactionSession] = {
            "openai-chat": CompactionSession(chat.FORMAT, **settings),
        }
        responses_format = _responses_format()
        if responses_format is not None:
            self.sessions["openai-responses"] = CompactionSession(responses_format, **settings)
        self._settings = settings

    def _notify(self, report: CallReport) -> None:
        self.last_report = report
        if self._on_compaction is not None:
            self._on_compaction(report)

    def _resource(self, resource: Any, format_name: str, methods: tuple[str, ...]) -> Any:
        session = self.sessions.get(format_name)
        if session is None:
            return resource
        return CompactingResource(resource, session, methods, is_async=self._is_async,
                                  notify=self._notify)

    @property
    def chat(self) -> Any:
        """``chat`` whose ``completions`` compact ``messages`` before sending."""
        real = self._client.chat
        return _Chat(real, self._resource(real.completions, "openai-chat", _CHAT_METHODS))

    @property
    def responses(self) -> Any:
        """``responses`` whose calls compact ``input`` before sending."""
        return self._resource(self._client.responses, "openai-responses", _RESPONSES_METHODS)

    @property
    def wrapped(self) -> Any:
        """The client this wraps."""
        return self._client

    def with_options(self, **options: Any) -> CompactingOpenAI:
        """The wrapped client's ``with_options``, still compacting (and sharing state)."""
        clone = CompactingOpenAI.__new__(CompactingOpenAI)
        clone.__dict__.update(self.__dict__)
        clone._client = self._client.with_options(**options)
        return clone

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def __repr__(self) -> str:
        return f"CompactingOpenAI({self._client!r})"


def _responses_format() -> HistoryFormat | None:
    try:
        module = importlib.import_module("cutctx_adapters.openai.responses")
    except ImportError:
        return None
    found = getattr(module, "FORMAT", None)
    return found if isinstance(found, HistoryFormat) else None



"""Wrapping SDK clients: the same calls, with the history compacted before it is sent.

A wrapped resource (``chat.completions``, ``responses``, ``messages``) intercepts the methods
that carry a history, runs its format's ``CompactionSession`` and calls the real method with the
result; everything else is the wrapped object's own attribute. For type checkers the wrapped
resources are the SDK's own types (``SdkView``), so calls keep the SDK's overloads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any, Generic, Self, TypeVar, Unpack, overload

from ..planning import HistoryFormat
from ..reports import CallReport, Prepared
from ..session import CompactionSession
from ..settings import CompactionSettings, ReportCallback, SettingsKeywords
from ._counting import Count, ExactCounts, aprepare_counted, prepare_counted
from ._feeding import afed, fed, watch_entered
from ._sdk import is_async_client

__all__ = [
    "CompactingClient",
    "CompactingResource",
    "Namespace",
    "ReportCallback",
    "SdkView",
]

ClientT = TypeVar("ClientT", covariant=True)
"""Covariant: a wrapper of a cloud client (``AnthropicBedrock``) types its views as the
SDK's, like a wrapper of any client in the union the view names."""
SyncClientT = TypeVar("SyncClientT")
AsyncClientT = TypeVar("AsyncClientT")
SyncT = TypeVar("SyncT")
AsyncT = TypeVar("AsyncT")
_RESPONSE_VIEWS = frozenset({"with_raw_response", "with_streaming_response"})


class CompactingResource:
    """An SDK resource whose history-carrying methods compact first; all else delegates."""

    def __init__(self, resource: Any, session: CompactionSession, methods: Collection[str], *,
                 is_async: bool, notify: ReportCallback, managers: bool = False,
                 count: Count | None = None, counts: ExactCounts | None = None) -> None:
        self._resource = resource
        self._session = session
        self._methods = frozenset(methods)
        self._is_async = is_async
        self._notify = notify
        self._managers = managers
        self._count = count
        """The provider's count endpoint (``counter="provider"``), None to count by estimate."""
        self._counts = counts if counts is not None else ExactCounts()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._resource, name)
        if name in _RESPONSE_VIEWS:
            # ``with_raw_response.create(...)`` and friends carry the same history.
            return CompactingResource(target, self._session, self._methods,
                                      is_async=self._is_async, notify=self._notify,
                                      managers=name == "with_streaming_response",
                                      count=self._count, counts=self._counts)
        if name not in self._methods or not callable(target):
            return target
        if not self._is_async:
            return self._sync_call(target)
        # ``inspect.unwrap``: the SDKs wrap some async methods in a plain-def argument checker
        # (openai's ``required_args`` on ``AsyncCompletions.create``, anthropic's on
        # ``AsyncMessages.create``) that hides the coroutine function behind ``__wrapped__``.
        # ``with_streaming_response`` methods wrap a coroutine function the same way but return
        # an async context manager: they are managers whatever ``unwrap`` finds.
        if not self._managers and inspect.iscoroutinefunction(inspect.unwrap(target)):
            return self._async_call(target)
        return self._async_manager(target)

    def _prepare(self, kwargs: dict[str, Any]) -> Prepared:
        if self._count is None:
            return self._session.prepare(kwargs)
        return prepare_counted(self._session, kwargs, self._count, self._counts)

    async def _aprepare(self, kwargs: dict[str, Any]) -> Prepared:
        if self._count is None:
            return await self._session.aprepare(kwargs)
        return await aprepare_counted(self._session, kwargs, self._count, self._counts)

    def _sync_call(self, target: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            prepared = self._prepare(kwargs)
            self._notify(prepared.report)
            return fed(target(*args, **prepared.request), prepared.report, self._session)

        return call

    def _async_call(self, target: Callable[..., Any]) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            prepared = await self._aprepare(kwargs)
            self._notify(prepared.report)
            return await afed(await target(*args, **prepared.request), prepared.report,
                              self._session)

        return call

    def _async_manager(self, target: Callable[..., Any]) -> Callable[..., Any]:
        """Async ``.stream()`` helpers return a context manager, not a coroutine: compact on
        entering it, so the summarizer can be awaited."""

        def call(*args: Any, **kwargs: Any) -> _DeferredManager:
            async def open_manager() -> tuple[Any, Callable[[Any], Any]]:
                prepared = await self._aprepare(kwargs)
                self._notify(prepared.report)
                return target(*args, **prepared.request), lambda stream: watch_entered(
                    stream, prepared.report, self._session)

            return _DeferredManager(open_manager)

        return call

    def __repr__(self) -> str:
        return f"<compacting {self._resource!r}>"


class _DeferredManager:
    """An async context manager built once compaction is done; what it enters is watched for
    the input the reply reports."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._manager: Any = None

    async def __aenter__(self) -> Any:
        self._manager, watch = await self._build()
        return watch(await self._manager.__aenter__())

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._manager.__aexit__(*exc)


class Namespace:
    """A client attribute that only groups resources (``chat``, ``beta``), with some of its
    members replaced by compacting ones; every other member is the real one's."""

    def __init__(self, real: Any, **members: Any) -> None:
        self._real = real
        self.__dict__.update(members)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return f"<compacting {self._real!r}>"


class SdkView(Generic[SyncClientT, AsyncClientT, SyncT, AsyncT]):
    """A wrapped client's attribute, typed as the SDK client's own: ``SyncT`` on a wrapped sync
    client, ``AsyncT`` on an async one, so calls through it keep the SDK's overloads (stream or
    not, parse) for type checkers. At run time it is what ``build(wrapper)`` returns."""

    def __init__(self, build: Callable[[Any], Any]) -> None:
        self._build = build

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: CompactingClient[SyncClientT], owner: type[Any]) -> SyncT: ...

    @overload
    def __get__(self, obj: CompactingClient[AsyncClientT], owner: type[Any]) -> AsyncT: ...

    def __get__(self, obj: Any, owner: type[Any]) -> Any:
        return self if obj is None else self._build(obj)


class CompactingClient(Generic[ClientT]):
    """What the provider wrappers share: the settings (checked when made), one sticky session
    per format, and delegation of everything else to the wrapped client."""

    def __init__(self, client: ClientT, formats: Collection[HistoryFormat], *,
                 settings: CompactionSettings | None = None,
                 counters: Mapping[str, Callable[[Any], Count | None]] | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        self._client = client
        self._is_async = is_async_client(client)
        self.settings = CompactionSettings.of(settings, **keywords)
        self.last_report: CallReport | None = None
        """The report of the latest call through this client (whatever its decision)."""
        self.sessions: dict[str, CompactionSession] = {
            fmt.name: CompactionSession(fmt, settings=self.settings) for fmt in formats
        }
        self._counters = dict(counters or {}) if self.settings.counter == "provider" else {}
        """Per format, the provider's count endpoint of a wrapped resource (``counter=
        "provider"``; None where the resource has none)."""
        self.exact_counts: dict[str, ExactCounts] = {fmt.name: ExactCounts() for fmt in formats}
        """Per format, the exact counts asked for (``counter="provider"``) and how often."""

    def _notify(self, report: CallReport) -> None:
        self.last_report = report

    def _compacting(self, resource: Any, format_name: str, methods: Collection[str], *,
                    is_async: bool | None = None) -> Any:
        """``resource`` compacting its ``methods``' histories in the format's session
        (``is_async``: its methods are awaited; by default as the wrapped client's are)."""
        counter = self._counters.get(format_name)
        return CompactingResource(resource, self.sessions[format_name], methods,
                                  is_async=self._is_async if is_async is None else is_async,
                                  notify=self._notify,
                                  count=None if counter is None else counter(resource),
                                  counts=self.exact_counts[format_name])

    @property
    def wrapped(self) -> ClientT:
        """The client this wraps."""
        return self._client

    def with_options(self, **options: Any) -> Self:
        """The wrapped client's ``with_options``, still compacting (and sharing its state)."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._client = self._client.with_options(**options)  # type: ignore[attr-defined]
        return clone

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._client!r})"

"""Sticky compaction: reuse the last compacted view while a history only grows.

Agents resend their whole history on every call, and providers serve the part of a request that
repeats the previous one from their prompt cache. So a call whose history *extends* one seen
before is answered with the earlier view, byte for byte, plus the new messages; compaction runs
again only when that goes over the trigger, and then down to the target. The prefix the provider
sees therefore changes only at compaction events. State is keyed by content, bounded, and safe
under threads and concurrent asyncio calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cutctx import (
    BudgetUnsatisfiable,
    CompactionPolicy,
    CompactionReport,
    SummarizationRequest,
    TokenEstimator,
    TranscriptTurn,
    ValidationError,
)

from ._canonical_key import content_bytes, content_key, span_key
from ._conversion import Conversion, PinSpec, copy_plain, to_plain
from ._estimators import chosen_estimator, estimator_for
from ._pipeline import (
    CompactionResult,
    Job,
    OnSummaryError,
    choose_policy,
    resolve_budget,
    start,
)
from ._pipeline import arun as _arun
from ._pipeline import run as _run
from ._windows import prompt_budget
from .fulfil import AnySummarizer

__all__ = [
    "CallReport",
    "CompactionSession",
    "Decision",
    "HistoryFormat",
    "Prepared",
    "given",
    "reply_allowance",
    "server_held",
]

Decision = Literal["unchanged", "reused", "appended", "compacted", "recompacted", "not_possible"]


def given(value: Any) -> Any:
    """``value``, or None for the SDKs' "not given" sentinels (``NOT_GIVEN``, ``omit``)."""
    return None if type(value).__name__ in ("NotGiven", "Omit") else value


def server_held(field: str) -> str:
    """The ``not_possible`` reason for a request whose ``field`` continues a history the
    provider holds: only the new items are sent, so there is nothing here to compact."""
    return (f"the request continues a server-held history ({field}); only the server can "
            "compact it")


def reply_allowance(*keys: str) -> Callable[[Mapping[str, Any]], int | None]:
    """A format's ``output_allowance``: the first of ``keys`` the request sets to an int."""

    def allowance(request: Mapping[str, Any]) -> int | None:
        for key in keys:
            value = given(request.get(key))
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    return allowance


@dataclass(frozen=True, slots=True)
class HistoryFormat:
    """How a request of one API carries its history: what a session needs from a format."""

    name: str
    list_key: str
    """The request field holding the list that grows by appending (messages, input)."""
    side_key: str | None
    """A request field converted with it (system, instructions), or None."""
    to_transcript: Callable[[Any, Any, TokenEstimator, PinSpec], Conversion[Any]]
    """(items, side value, estimator, pin) -> Conversion."""
    split: Callable[[Any], tuple[Any, list[dict[str, Any]]]]
    """Rendered output -> (side value, items)."""
    overhead: Callable[[Mapping[str, Any], TokenEstimator], int]
    """Prompt tokens outside the history: tool definitions, priming."""
    output_allowance: Callable[[Mapping[str, Any]], int | None]
    """Tokens the request reserves for the reply, if it says."""
    unsupported: Callable[[Mapping[str, Any]], str | None] = lambda request: None
    """Why a request's history cannot be compacted here (server-held history), or None."""
    estimator_for: Callable[[str | None], TokenEstimator] = estimator_for
    """The text estimator for a model (Anthropic: tiktoken, calibrated inside the format)."""
    planning: Callable[[Conversion[Any], TokenEstimator, int], Mapping[str, Any]] = (
        lambda conv, estimator, overhead: {})
    """Extra ``start`` keywords (stub estimator, ``stub_pad``, ``measure``), as the format's own
    ``plan`` passes them, so a session plans exactly like the functional API."""


@dataclass(frozen=True, slots=True)
class CallReport:
    """What happened to one request's history, and why; ids and figures only."""

    decision: Decision
    reason: str
    format: str
    model: str | None
    prompt_budget: int | None = None
    trigger_tokens: int | None = None
    target_tokens: int | None = None
    tokens_in: int | None = None
    """Estimated prompt tokens of the history as given."""
    tokens_sent: int | None = None
    """Estimated prompt tokens of what was sent."""
    reused_items: int = 0
    """Leading items sent exactly as in the previous view (the cached prefix)."""
    compaction: CompactionReport | None = None
    summarization_fallback: bool = False


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send, and the report of what was done to it."""

    request: dict[str, Any]
    report: CallReport

    @property
    def messages(self) -> Any:
        """The request's ``messages`` (Chat Completions, Anthropic), as to be sent."""
        return self.request.get("messages")

    @property
    def input(self) -> Any:
        """The request's ``input`` (Responses), as to be sent."""
        return self.request.get("input")

    @property
    def system(self) -> Any:
        """The request's ``system`` (Anthropic), as to be sent."""
        return self.request.get("system")

    @property
    def instructions(self) -> Any:
        """The request's ``instructions`` (Responses), as to be sent."""
        return self.request.get("instructions")


@dataclass(slots=True)
class _View:
    items: tuple[dict[str, Any], ...]
    side: Any
    size: int


class _ViewStore:
    """LRU of compacted views keyed by the chained hash of the history they answered."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._entries: OrderedDict[str, _View] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def longest_prefix(self, chain: Sequence[str]) -> tuple[int, _View] | None:
        with self._lock:
            for length in range(len(chain), 0, -1):
                view = self._entries.get(chain[length - 1])
                if view is not None:
                    self._entries.move_to_end(chain[length - 1])
                    return length, view
        return None

    def put(self, key: str, view: _View, supersedes: str | None = None) -> None:
        """Store ``view`` as the most recent; the view it grew from (``supersedes``) becomes the
        first to go, so a busy conversation's stale views never evict an idle one's latest."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if supersedes is not None and supersedes in self._entries:
                self._entries.move_to_end(supersedes, last=False)
            self._entries[key] = view
            self._bytes += view.size
            while self._entries and (len(self._entries) > self._max_entries
                                     or self._bytes > self._max_bytes):
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size

    def __len__(self) -> int:
        return len(self._entries)


class _LruDict(OrderedDict[str, str]):
    """A bounded, locked mapping for summaries keyed by span content."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self._limit = limit
        self._lock = threading.Lock()

    def __getitem__(self, key: str) -> str:
        with self._lock:
            value = super().__getitem__(key)
            self.move_to_end(key)
            return value

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            if not super().__contains__(key):
                return default
            self.move_to_end(key)
            return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        # fulfil asks ``key in cache`` and then reads it: count the question as a use, so
        # another thread's insert evicts the entry in between only if the cache is tiny.
        with self._lock:
            found = super().__contains__(key)
            if found:
                self.move_to_end(key)  # type: ignore[arg-type]
            return found

    def __setitem__(self, key: str, value: str) -> None:
        with self._lock:
            super().__setitem__(key, value)
            while len(self) > self._limit:
                self.popitem(last=False)


class _InFlight:
    """Summaries being produced, by span: a second caller for the same span (another thread, or
    another task) waits for the first one's text instead of asking the summarizer again."""

    def __init__(self, done: _LruDict) -> None:
        self._done = done
        self._lock = threading.Lock()
        self._flights: dict[str, tuple[Future[str | None], int]] = {}

    def _claim(self, key: str, *, blocking: bool) -> tuple[Future[str | None] | None, bool]:
        """(the flight, whether the caller owns it and must settle it). A blocking caller never
        waits for its own thread (its event loop may be the producer): (None, False), ask."""
        with self._lock:
            found = self._flights.get(key)
            if found is None:
                future: Future[str | None] = Future()
                self._flights[key] = (future, threading.get_ident())
                return future, True
            if blocking and found[1] == threading.get_ident():
                return None, False
            return found[0], False

    def _settle(self, key: str, future: Future[str | None], text: object) -> None:
        usable = text if isinstance(text, str) and text.strip() else None
        with self._lock:
            if usable is not None:
                self._done[key] = usable  # cached before the flight ends: no gap between them
            self._flights.pop(key, None)
        if not future.done():
            future.set_result(usable)  # None (a failure): each waiter asks for itself

    def sync(self, summarizer: AnySummarizer) -> AnySummarizer:
        def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> Any:
            key = span_key(request, turns)
            while True:  # after a failed flight, one waiter takes over and the others wait
                future, owns = self._claim(key, blocking=True)
                if future is None:
                    return summarizer(request, turns)
                if owns:
                    break
                shared = future.result()
                if shared is not None:
                    return shared
            text: object = None
            try:
                text = summarizer(request, turns)
            finally:
                self._settle(key, future, text)
            return text

        return summarize

    def asynchronous(self, summarizer: AnySummarizer) -> AnySummarizer:
        async def summarize(request: SummarizationRequest,
                            turns: Sequence[TranscriptTurn]) -> Any:
            key = span_key(request, turns)
            while True:  # after a failed flight, one waiter takes over and the others wait
                future, owns = self._claim(key, blocking=False)
                assert future is not None
                if owns:
                    break
                shared = await asyncio.shield(asyncio.wrap_future(future))
                if shared is not None:
                    return shared
            text: object = None
            try:
                text = summarizer(request, turns)
                if inspect.isawaitable(text):
                    text = await text
            finally:
                self._settle(key, future, text)
            return text

        return summarize


def _fraction_or_tokens(value: float | int, budget: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a fraction of the budget or a token count",
                              {"field": name})
    if isinstance(value, float) and 0 < value <= 1:
        return int(budget * value)
    if isinstance(value, int) and value >= 0:
        return min(value, budget)
    raise ValidationError(f"{name} must be a float in (0, 1] or an int >= 0", {"field": name})


def _whole(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an int >= {minimum}, got {type(value).__name__}",
                              {"field": name})
    if value < minimum:
        raise ValidationError(f"{name} must be an int >= {minimum}, got {value}",
                              {"field": name})


def _check_settings(session: CompactionSession) -> None:
    """Refuse bad settings when the session (or a wrapped client) is made, not on a call."""
    if session.window is not None:
        _whole(session.window, "window", 1)
    if session.windows is not None:
        if not isinstance(session.windows, Mapping):
            raise ValidationError("windows must map model-name prefixes to token counts",
                                  {"field": "windows"})
        for prefix, tokens in session.windows.items():
            if not isinstance(prefix, str) or not prefix:
                raise ValidationError("windows keys must be non-empty model-name prefixes",
                                      {"field": "windows"})
            _whole(tokens, f"windows[{prefix!r}]", 1)
    for name in ("reserve", "keep_recent", "keep_recent_results", "max_views", "max_view_bytes",
                 "summary_cache_size"):
        _whole(getattr(session, name), name, 0)
    for name in ("trigger", "target"):
        _fraction_or_tokens(getattr(session, name), 1, name)
    if session.estimator is not None:
        chosen_estimator(session.estimator, None)  # refuses one without estimate_tokens


def _chain(items: Sequence[dict[str, Any]], seed: str) -> list[str]:
    """Hash of every prefix: equal content gives equal keys, whatever objects carried it."""
    keys: list[str] = []
    running = seed.encode()
    for item in items:
        running = hashlib.sha256(running + content_bytes(item)).digest()
        keys.append(running.hex())
    return keys


def _size(items: Sequence[dict[str, Any]]) -> int:
    """Rough bytes held by a view: the length of its text values."""
    total = 0
    stack: list[Any] = list(items)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        else:
            total += 8
    return total


@dataclass(frozen=True, slots=True)
class _Plan:
    """One call's decision before any summarizer runs."""

    request: dict[str, Any]
    chain: list[str]
    decision: Decision
    reason: str
    report: CallReport
    job: Job | None = None
    reused: int = 0
    extends: str | None = None
    """Key of the known view this history extends, if any."""


@dataclass
class CompactionSession:
    """Compacts requests of one format, with hysteresis and (by default) sticky views.

    Budget = the model's context window − the reply allowance; nothing happens below
    ``trigger`` (fraction of the budget, or tokens); over it, compaction goes down to ``target``.
    """

    format: HistoryFormat
    model: str | None = None
    window: int | None = None
    windows: Mapping[str, int] | None = None
    trigger: float | int = 0.9
    target: float | int = 0.6
    reserve: int = 4096
    policy: CompactionPolicy | None = None
    summarizer: AnySummarizer | None = None
    keep_recent: int = 4
    keep_recent_results: int = 2
    pin: PinSpec = None
    on_summary_error: OnSummaryError = "raise"
    estimator: TokenEstimator | None = None
    sticky: bool = True
    max_views: int = 64
    max_view_bytes: int = 64 * 1024 * 1024
    summary_cache_size: int = 1024
    _views: _ViewStore = field(init=False, repr=False)
    _summaries: _LruDict = field(init=False, repr=False)
    _in_flight: _InFlight = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_settings(self)
        self._views = _ViewStore(self.max_views, self.max_view_bytes)
        self._summaries = _LruDict(self.summary_cache_size)
        self._in_flight = _InFlight(self._summaries)
        choose_policy(self.policy, self.summarizer)  # refuse a bad policy now, not mid-call

    def prepare(self, request: Mapping[str, Any] | None = None, **fields: Any) -> Prepared:
        """The request to send (history compacted if needed) and its report."""
        planned = self._plan({**(request or {}), **fields})
        if planned.job is None:
            return Prepared(planned.request, planned.report)
        summarizer = None if self.summarizer is None else self._in_flight.sync(self.summarizer)
        return self._finish(planned, _run(planned.job, summarizer, self._summaries))

    async def aprepare(self, request: Mapping[str, Any] | None = None,
                       **fields: Any) -> Prepared:
        """``prepare`` with an async summarizer (summaries requested concurrently)."""
        planned = self._plan({**(request or {}), **fields})
        if planned.job is None:
            return Prepared(planned.request, planned.report)
        summarizer = (None if self.summarizer is None
                      else self._in_flight.asynchronous(self.summarizer))
        return self._finish(planned, await _arun(planned.job, summarizer, self._summaries))

    def _pins_for(self, count: int) -> PinSpec:
        """Index pins as they apply to a history of ``count`` items: a session sees its history
        grow, so an index it does not reach yet pins nothing (instead of being an error)."""
        if self.pin is None or callable(self.pin):
            return self.pin
        return [index for index in self.pin
                if isinstance(index, int) and not isinstance(index, bool)
                and -count <= index < count]

    @property
    def stored_views(self) -> int:
        """How many compacted views the session holds."""
        return len(self._views)

    def _budget(self, request: Mapping[str, Any], model: str | None) -> int:
        allowance = self.format.output_allowance(request)
        budget = prompt_budget(model, self.reserve if allowance is None else allowance,
                               window=self.window, overrides=self.windows)
        if budget is None:
            raise ValidationError(
                f"unknown context window for model {model!r}: pass window= (or windows=)",
                {"model": model, "field": "window"})
        return budget

    def _plan(self, request: dict[str, Any]) -> _Plan:
        fmt = self.format
        model = request.get("model", self.model)
        if not isinstance(model, str | None):
            model = str(model)
        why_not = fmt.unsupported(request)
        if why_not is not None or fmt.list_key not in request:
            reason = why_not or f"the request has no {fmt.list_key!r}"
            return _Plan(request, [], "not_possible", reason,
                         CallReport("not_possible", reason, fmt.name, model))
        estimator = self.estimator or fmt.estimator_for(model)
        items = request[fmt.list_key]
        if isinstance(items, Iterator):
            # The SDKs take any iterable; a generator can be read only once, so read it here
            # and send what was read (it was the request's own dict, never the caller's).
            items = request[fmt.list_key] = list(items)
        side = given(request.get(fmt.side_key)) if fmt.side_key else None
        if isinstance(items, str):
            plain: list[dict[str, Any]] = []
            conv = fmt.to_transcript(items, side, estimator, self._pins_for(1))
        else:
            plain = [to_plain(item, where=f"{fmt.list_key}[{i}]") for i, item in enumerate(items)]
            conv = fmt.to_transcript(plain, side, estimator, self._pins_for(len(plain)))
        overhead = fmt.overhead(request, estimator)
        budget = self._budget(request, model)
        trigger = _fraction_or_tokens(self.trigger, budget, "trigger")
        target = _fraction_or_tokens(self.target, budget, "target")
        base = CallReport("unchanged", "", fmt.name, model, budget, trigger, target,
                          conv.transcript.token_estimate() + overhead)
        seed = content_key([fmt.name, to_plain(side)])
        chain = _chain(plain, seed) if self.sticky and plain else []
        found = self._views.longest_prefix(chain) if chain else None
        if found is not None:
            length, view = found
            candidate = [*view.items, *plain[length:]]
            conv = fmt.to_transcript(candidate, view.side, estimator, _pins_by_content(conv, plain))
            appended = len(plain) - length
            decision: Decision = "appended" if appended else "reused"
            reason = (f"history extends a known one by {appended} item(s); "
                      f"earlier view reused") if appended else "same history as a known one"
            reused = len(view.items)
        else:
            decision, reason, reused = "unchanged", "no earlier view of this history", 0
        total = conv.transcript.token_estimate() + overhead
        if total <= trigger:
            report = replace(base, decision=decision, tokens_sent=total, reused_items=reused,
                             reason=f"{reason}; {total} tokens <= trigger {trigger}")
            if found is not None:  # an uncompacted history needs no view: it is its own
                self._remember(chain, candidate, view.side, chain[length - 1])
                request = self._with(request, view.side, copy_plain(candidate))
            return _Plan(request, chain, decision, reason, report)
        goal = target
        try:
            job = self._start(conv, target, overhead, estimator)
        except BudgetUnsatisfiable:
            # The newest turns alone exceed the target: aim for the whole budget instead.
            goal = budget
            job = self._start(conv, budget, overhead, estimator)
        decision = "recompacted" if found is not None else "compacted"
        reason = f"{reason}; {total} tokens > trigger {trigger}, compacted toward {goal}"
        extends = chain[found[0] - 1] if found is not None else None
        return _Plan(request, chain, decision, reason, base, job, 0, extends)

    def _start(self, conv: Conversion[Any], goal: int, overhead: int,
               estimator: TokenEstimator) -> Job:
        options = {"estimator": estimator, **self.format.planning(conv, estimator, overhead)}
        return start(conv, resolve_budget(goal, overhead, self.keep_recent),
                     policy=self.policy, summarizer=self.summarizer, overhead=overhead,
                     result_fields=lambda rendered: {},
                     keep_recent_results=self.keep_recent_results,
                     on_summary_error=self.on_summary_error, **options)

    def _finish(self, planned: _Plan, result: CompactionResult) -> Prepared:
        fmt = self.format
        side, items = fmt.split(result.rendered)
        self._remember(planned.chain, items, side, planned.extends)
        request = self._with(planned.request, side, copy_plain(items))
        decision, reason = planned.decision, planned.reason
        if not result.compacted:  # over the trigger, but every turn was untouchable
            decision = "appended" if decision == "recompacted" else "unchanged"
            reason += "; nothing was removable, sent as is"
        report = replace(planned.report, decision=decision, reason=reason,
                          tokens_sent=_sent_tokens(result), compaction=result.report,
                          reused_items=_common_prefix(planned.request, request, fmt.list_key),
                          summarization_fallback=result.summarization_fallback)
        return Prepared(request, report)

    def _with(self, request: Mapping[str, Any], side: Any, items: Any) -> dict[str, Any]:
        out = dict(request)
        out[self.format.list_key] = items
        key = self.format.side_key
        # A "not given" sentinel stays as given (the SDK omits it); never replaced by None.
        if key is not None and (side is not None or given(request.get(key)) is not None):
            out[key] = side
        return out

    def _remember(self, chain: list[str], items: Sequence[dict[str, Any]], side: Any,
                  extends: str | None = None) -> None:
        """Keep ``items`` (already our own copies, never handed out) as the view for ``chain``."""
        if chain:
            snapshot = tuple(items)
            self._views.put(chain[-1], _View(snapshot, side, _size(snapshot)), extends)


def _pins_by_content(conv: Conversion[Any], plain: Sequence[dict[str, Any]]) -> PinSpec:
    """The items ``conv`` (the caller's history) pins, as a predicate for a view plus new items.

    Pins name the caller's positions (or see them), which a view does not keep; a pinned item
    is kept verbatim in every view, so it is found again by its content."""
    indexes = {conv.parts[turn.turn_id].index for turn in conv.transcript.turns if turn.pinned}
    keys = {content_key(plain[i]) for i in indexes if 0 <= i < len(plain)}
    if not keys:
        return None
    return lambda item, _index: content_key(item) in keys


def _common_prefix(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> int:
    old, new = before.get(key), after.get(key)
    if not isinstance(old, list) or not isinstance(new, list):
        return 0
    count = 0
    for a, b in zip(old, new, strict=False):
        if to_plain(a) != b:
            break
        count += 1
    return count


def _sent_tokens(result: CompactionResult) -> int:
    """The measured size of what is sent when the format measures it, else the plan's figure."""
    return result.tokens_after if result.measured_tokens is None else result.measured_tokens

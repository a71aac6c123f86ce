"""Sticky compaction: a history that only grows keeps the view its earlier compactions made.

Agents resend their whole history on every call, and providers serve the part of a request that
repeats the previous one from their prompt cache. So the view sent changes only at compaction
events, and where those happen is derived from the history itself: at every point where it could
end as a request (no tool call left open), the view so far plus what was appended is measured, and
over the trigger it is compacted down to the target. Every process that sees the same history (and
settings) therefore sends the same bytes, whichever earlier calls it happened to see; remembered
state only saves the work. Decisions are final: a stub is never masked again, a dropped turn never
comes back. State is keyed by content, bounded, and safe under threads and asyncio.
"""

from __future__ import annotations

import asyncio
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Unpack

from cutctx import (
    BudgetUnsatisfiable,
    CompactionPolicy,
    SummarizationRequest,
    TokenEstimator,
    TranscriptTurn,
    ValidationError,
)

from .._steps import advanced, begun
from ..counting import Calibration, CountCache, calibration_of, check_model, prompt_budget
from ..errors import SummarizationFailed
from ..fulfil import AnySummarizer, SummaryCheck, asummarize, summarize
from ..history import (
    Conversion,
    Growing,
    GrownList,
    ObservationRule,
    PinSpec,
    content_bytes,
    content_key,
    copy_plain,
    covered_turns,
    to_plain,
)
from ..history import uncovered as _uncovered
from ..planning import (
    CompactionResult,
    DigestStyle,
    GiveWay,
    HistoryFormat,
    Job,
    OnSummaryError,
    Replacement,
    given,
    keeping_prefix,
    length_check,
    no_worse,
    planned,
    resolve_budget,
    start,
    summary_check,
)
from ..planning import arun as _arun
from ..planning import run as _run
from ..reports import CHANGED, CallReport, Decision, Prepared, TurnFates
from ..settings import (
    CompactionSettings,
    Counter,
    PrefixCheck,
    ReportCallback,
    Setting,
    SettingsKeywords,
    call_budget,
    check_default_trigger,
    fraction_or_tokens,
    kind_of,
)
from ..stores import MemoryStore, Store
from ._explain import explained
from ._hysteresis import aimed
from ._known import Known, KnownHistories, chain_keys, text_size
from ._ledger import (
    EMPTY,
    Ledger,
    closed_boundaries,
    fates_of,
    positions_of,
    project,
    running_sums,
    sources_of,
    summary_members,
)
from ._recent import Recent, RecentHistories, sent_alike
from ._summaries import SharedSummaries
from ._telemetry import Appends, observed, tell
from ._usage import UsageRecords
from ._writing import Pending, ToWrite, is_summary, to_write, with_stand_ins, with_texts

__all__ = ["CompactionSession", "PrefixCheck"]

_MODELS = 8
"""Models whose counts a session remembers at once (the least recent goes)."""


@dataclass(frozen=True, slots=True)
class _Call:
    """One request, read and converted, before any compaction event."""

    request: dict[str, Any]
    model: str | None
    items: GrownList[dict[str, Any]]
    side: Any
    conv: Growing[Any]
    estimator: TokenEstimator
    overhead: int
    budget: int
    trigger: int
    target: int
    chain: GrownList[str]
    known: Known | None
    known_items: int
    """Items of the history the known state answered (0 when none was found)."""
    boundaries: GrownList[tuple[int, int]]
    """``closed_boundaries(conv)``: where the history could end as a request."""
    sums: GrownList[int]
    """Running token sums of ``conv``'s turns (0 first)."""
    read_from: tuple[int, Growing[Any]] | None = None
    """The conversion of a prefix ``conv`` was read on from, and its items: where the walk
    reads on from to convert an earlier point's history."""
    deferred: str | None = None
    """Why this request is left to the provider's own compaction (``defer_to_server``): then
    the budget is the model's own, and nothing is summarized."""


_Sent = tuple[Any, int, tuple[str, ...], Sequence[TranscriptTurn]]
"""What a call sends: the rendering, its prompt tokens, the turns a provider's compaction
covers that it leaves out, and the view's turns it was rendered from."""


@dataclass(frozen=True, slots=True)
class _Walked:
    """The ledger after walking a call's history, and what its events did."""

    ledger: Ledger
    events: int
    last: CompactionResult | None
    replacements: tuple[Replacement, ...]
    over: int = 0
    """Tokens of the view at the last event, when it passed the trigger."""
    tokens: int = 0
    """Prompt tokens of the view for the whole history: measured at the last event, plus the
    estimates of the turns appended since (the figure every trigger check used)."""
    fell_back: bool = False
    """An event planned again without its summaries (a summary failed): what it left is not
    what the history and the store say, so it is sent but not remembered."""
    pending: Pending = field(default_factory=dict)
    """The summaries this walk's events planned, still standing in (``_writing``)."""


class CompactionSession:
    """Compacts requests of one format, with hysteresis and (by default) sticky views.

    Budget = the model's context window − the reply allowance. Nothing happens while a request
    fits under ``trigger`` (default: the budget, less the format's margin for estimate error);
    over it, compaction goes down to ``target`` (a fraction of the budget, or tokens). Settings
    are a ``CompactionSettings`` value (``settings=``) and/or its fields as keywords (over it),
    checked here, not on the first call; each is also readable as an attribute
    (``session.window``). ``model``: for requests that name none.
    """

    window = Setting[int | None]()
    windows = Setting[Mapping[str, int] | None]()
    trigger = Setting[float | int | None]()
    target = Setting[float | int]()
    reserve = Setting[int]()
    policy = Setting[CompactionPolicy | None]()
    summarizer = Setting[AnySummarizer | None]()
    keep_recent = Setting[int]()
    keep_recent_results = Setting[int]()
    pin = Setting[PinSpec]()
    on_summary_error = Setting[OnSummaryError]()
    estimator = Setting[TokenEstimator | None]()
    counter = Setting[Counter]()
    sticky = Setting[bool]()
    max_views = Setting[int]()
    max_view_bytes = Setting[int]()
    summary_cache_size = Setting[int]()
    keep_task = Setting[bool]()
    keep_user_turns = Setting[bool]()
    digest_tokens = Setting[int]()
    max_result_tokens = Setting[int | None]()
    max_result_share = Setting[float]()
    strict = Setting[bool]()
    store = Setting[Store | None]()
    summary_timeout = Setting[float]()
    check_prefix = Setting[PrefixCheck]()
    defer_to_server = Setting[bool]()
    on_compaction = Setting[ReportCallback | None]()
    on_call = Setting[ReportCallback | None]()
    observations = Setting[ObservationRule]()
    digest = Setting[DigestStyle]()
    give_way = Setting[GiveWay]()

    def __init__(self, format: HistoryFormat, model: str | None = None, *,
                 settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        if not isinstance(format, HistoryFormat):
            raise ValidationError(
                "format must be a HistoryFormat (cutctx_adapters.openai.chat.FORMAT, "
                f"openai.responses.FORMAT or anthropic.messages.FORMAT), got {kind_of(format)}",
                {"field": "format", "rule": "format_type"})
        self.format = format
        self.model = check_model(model)
        self.settings = CompactionSettings.of(settings, **keywords)
        if self.trigger is None:  # the default trigger leaves this format's margin
            check_default_trigger(self.target, format.safety_margin)
        self._known = KnownHistories(self.max_views, self.max_view_bytes)
        self._recents = RecentHistories(self.max_views, self.max_view_bytes)
        store = self.store if self.store is not None else MemoryStore(
            max_entries=max(1, self.summary_cache_size))
        self._summaries = SharedSummaries(store, self.summary_timeout)
        self._usage = UsageRecords(self.store)
        self._counters: dict[str | None, CountCache] = {}
        self._counters_lock = threading.Lock()
        self._appends = Appends()

    def __repr__(self) -> str:
        return f"CompactionSession({self.format.name!r}, model={self.model!r})"

    @property
    def stored_views(self) -> int:
        """How many compacted views the session holds."""
        return len(self._known)

    def observe_usage(self, report: CallReport, usage: Any, *, exact: bool = False
                      ) -> Calibration | None:
        """Learn from the input a reply reports (``usage``: the reply, its usage, a stream event
        carrying it, or an int) for the request ``report`` was made for: later estimates for
        its model are corrected by the ratio to this call's estimate (``calibration`` in later
        reports; shared through the store). ``exact``: an exact count, taken whole. Returns
        the model's calibration after it (None when ``usage`` reports no input)."""
        return self._usage.observe(report, usage, exact=exact)

    async def aobserve_usage(self, report: CallReport, usage: Any, *, exact: bool = False
                             ) -> Calibration | None:
        """``observe_usage``, awaiting the store."""
        return await self._usage.aobserve(report, usage, exact=exact)

    # --- the two entry points: the same steps, awaited or not ---------------------------------

    def prepare(self, request: Mapping[str, Any] | None = None, *, budget: int | None = None,
                **fields: Any) -> Prepared:
        """The request to send (history compacted if needed) and its report. ``budget``: this
        call's prompt budget in tokens, in place of the window less the reply's allowance (a
        host whose budget changes from call to call keeps one live session; ``trigger`` and
        ``target`` are taken of it)."""
        merged = {**(request or {}), **fields}
        budget = call_budget(budget)
        self._usage.load(self.format.name, merged.get("model", self.model))
        with observed() as stats, self._explaining(merged):
            prepared = self._prepare(merged, budget)
        report = self._appends.counted(prepared.report)
        return replace(prepared, report=tell(self.settings, report, stats))

    async def aprepare(self, request: Mapping[str, Any] | None = None, *,
                       budget: int | None = None, **fields: Any) -> Prepared:
        """``prepare`` with an async summarizer (summaries requested concurrently)."""
        merged = {**(request or {}), **fields}
        budget = call_budget(budget)
        await self._usage.aload(self.format.name, merged.get("model", self.model))
        with observed() as stats, self._explaining(merged):
            prepared = await self._aprepare(merged, budget)
        report = self._appends.counted(prepared.report)
        return replace(prepared, report=tell(self.settings, report, stats))

    @contextmanager
    def _explaining(self, request: Mapping[str, Any]) -> Iterator[None]:
        """A budget that cannot be met is re-raised saying what used it and what to change."""
        try:
            yield
        except BudgetUnsatisfiable as error:
            raise explained(error, self.format, self.settings, request, self.model) from error

    def _prepare(self, request: dict[str, Any], budget: int | None = None) -> Prepared:
        call = self._read(request, budget)
        if isinstance(call, Prepared):
            return call
        wrap = self._summaries.sync
        walked = self._walked(call)
        try:
            todo, summarizer, check = self._to_write(call, walked, wrap)
            texts = {item.turn_id: summarize(item.request, item.turns, summarizer, check)
                     for item in todo}
        except SummarizationFailed as failure:
            walked, texts = self._without_summaries(call, failure), {}
        walked, view = self._settled(call, walked, texts)
        extra = self._over_budget_job(call, walked, view)
        result = None if extra is None else _run(extra, self._shared(call, extra, wrap))
        return self._prepared(call, walked, view, result)

    async def _aprepare(self, request: dict[str, Any], budget: int | None = None) -> Prepared:
        call = self._read(request, budget)
        if isinstance(call, Prepared):
            return call
        wrap = self._summaries.asynchronous
        walked = self._walked(call)
        try:
            todo, summarizer, check = self._to_write(call, walked, wrap)
            written = await asyncio.gather(*(
                asummarize(item.request, item.turns, summarizer, check) for item in todo))
            texts = {item.turn_id: text for item, text in zip(todo, written, strict=True)}
        except SummarizationFailed as failure:
            walked, texts = self._without_summaries(call, failure), {}
        walked, view = self._settled(call, walked, texts)
        extra = self._over_budget_job(call, walked, view)
        result = None if extra is None else await _arun(extra, self._shared(call, extra, wrap))
        return self._prepared(call, walked, view, result)

    def _walked(self, call: _Call, *, summarize: bool = True) -> _Walked:
        """The walk, each event applied with its summaries standing in (no summarizer is called
        while it runs: what it keeps is written after)."""
        steps = self._walk(call, summarize=summarize)
        step = begun(steps)
        while isinstance(step, Job):
            step = advanced(steps, planned(step))
        return step

    def _to_write(self, call: _Call, walked: _Walked,
                  wrap: Callable[[AnySummarizer, SummaryCheck, TokenEstimator], AnySummarizer]
                  ) -> tuple[list[ToWrite], AnySummarizer, SummaryCheck]:
        """The summaries the walk's final view keeps that still stand in, the session's
        summarizer through its store (``wrap``: the sync or async way) and their check."""
        check = length_check(call.estimator)

        def peek(request: SummarizationRequest, turns: tuple[TranscriptTurn, ...]
                 ) -> str | None:
            return self._summaries.peek(request, turns, check)

        todo = (to_write(walked.ledger.view, walked.pending, _known_texts(call), peek)
                if walked.pending else [])
        if not todo or self.summarizer is None:  # (a walk plans summaries only with one)
            return [], _no_summarizer, check
        return todo, wrap(self.summarizer, check, call.estimator), check

    def _without_summaries(self, call: _Call, failure: SummarizationFailed) -> _Walked:
        """A summary failed: the walk again without summarizing, sent but not remembered
        (``on_summary_error="fallback"``; else the failure is raised)."""
        if self.on_summary_error != "fallback":
            raise failure
        walked = self._walked(call, summarize=False)
        last = None if walked.last is None else replace(walked.last,
                                                        summarization_fallback=True)
        return replace(walked, last=last, fell_back=True)

    def _shared(self, call: _Call, job: Job,
                wrap: Callable[[AnySummarizer, SummaryCheck, TokenEstimator], AnySummarizer]
                ) -> AnySummarizer | None:
        """The session's summarizer through its store (``wrap``: the sync or async way), storing
        and taking from it only summaries that pass ``job``'s checks, its figures counted with
        the call's estimator; none for a call left to the server."""
        if self.summarizer is None or call.deferred is not None:
            return None
        return wrap(self.summarizer, summary_check(job), call.estimator)

    # --- reading a request -------------------------------------------------------------------

    def _read(self, request: dict[str, Any], given_budget: int | None = None
              ) -> _Call | Prepared:
        fmt = self.format
        model = request.get("model", self.model)
        model = given(model)
        if model is not None and not isinstance(model, str):
            raise ValidationError("model must be a str", {"field": "model"})
        why_not = fmt.unsupported(request)
        if why_not is not None or fmt.list_key not in request:
            reason = why_not or f"the request has no {fmt.list_key!r}"
            return Prepared(request, CallReport("not_possible", reason, fmt.name, model))
        estimator = self._usage.estimator(self.estimator or self._counter(model), fmt.name,
                                          model)
        raw = request[fmt.list_key]
        if isinstance(raw, Iterator):
            # The SDKs take any iterable; a generator can be read only once, so read it here
            # and send what was read (it was the request's own dict, never the caller's).
            raw = request[fmt.list_key] = list(raw)
        side = given(request.get(fmt.side_key)) if fmt.side_key else None
        recent, reused, read_from = None, 0, None
        if isinstance(raw, str):
            items: GrownList[dict[str, Any]] = GrownList()
            conv = Growing.of(fmt.to_transcript(raw, side, estimator, self._pins_for(1),
                                                self.keep_task))
            boundaries = GrownList(closed_boundaries(conv))
            sums = running_sums(conv, 0, GrownList([0]))
        else:
            if raw is None or isinstance(raw, bytes | Mapping) or not isinstance(raw, Sequence):
                raise ValidationError(f"{fmt.list_key} must be a list",
                                      {"field": fmt.list_key, "rule": "list_type"})
            reuse = self._recents.find(raw, self.check_prefix)
            recent, reused = reuse.recent, reuse.count
            items = (GrownList() if recent is None else recent.plain.prefix(reused)).extended(
                to_plain(fmt.read_item(item, i), where=f"{fmt.list_key}[{i}]", index=i)
                for i, item in enumerate(raw[reused:], start=reused))
            reading = (to_plain(side), estimator, self.pin, self.keep_task)
            continued = (recent if recent is not None and _reads_on(recent, reused, reading)
                         else None)
            conv, boundaries, sums = self._convert(items, side, estimator, continued)
            read_from = None if continued is None else (reused, continued.conv)
        fmt.check_request(request, conv)
        overhead = fmt.overhead(request, estimator)
        server = fmt.server_compaction(request)
        deferred = server if self.defer_to_server else None
        budget = (self._budget(request, model, own=deferred is not None)
                  if given_budget is None else given_budget)
        if deferred is not None:  # the server compacts: only the model's own limit holds
            trigger = target = int(budget * (1 - fmt.safety_margin))
        else:
            trigger = (int(budget * (1 - fmt.safety_margin)) if self.trigger is None
                       else fraction_or_tokens(self.trigger, budget, "trigger"))
            target = min(fraction_or_tokens(self.target, budget, "target"), trigger)
        chain: GrownList[str] = GrownList()
        found = None
        seed = None
        if self.sticky and items:
            seed = content_key([fmt.name, to_plain(side), model, budget, trigger, target,
                                overhead, deferred is not None, *self._usage.seed(estimator)])
            if recent is not None and recent.seed == seed:
                hashed = min(reused, len(recent.chain))
                chain = recent.chain.prefix(hashed).extended(chain_keys(
                    items[hashed:], seed, recent.chain[hashed - 1] if hashed else None))
            else:
                chain = GrownList(chain_keys(items, seed))
            found = self._known.longest_prefix(chain)
        if items:
            self._recents.put(Recent(reuse.held, items, reading, conv, boundaries, sums, seed,
                                     chain, reuse.objects, reuse.size_of(items)), reuse)
        return _Call(request, model, items, side, conv, estimator, overhead, budget, trigger,
                     target, chain, None if found is None else found[1],
                     0 if found is None else found[0], boundaries, sums, read_from, deferred)

    def _counter(self, model: str | None) -> CountCache:
        """The format's estimator for ``model``, its counts remembered for this session (within
        ``max_view_bytes`` of text): a process keeps no text of a session."""
        with self._counters_lock:
            found = self._counters.get(model)
            if found is None:
                if len(self._counters) >= _MODELS:
                    del self._counters[next(iter(self._counters))]
                found = self._counters[model] = CountCache(self.format.estimator_for(model),
                                                           self.max_view_bytes)
            return found

    def _convert(self, items: GrownList[dict[str, Any]], side: Any, estimator: TokenEstimator,
                 continued: Recent | None
                 ) -> tuple[Growing[Any], GrownList[tuple[int, int]], GrownList[int]]:
        """The conversion of ``items`` (with its closed boundaries and running sums): reading
        only what follows the history read before that this one ``continued``, where the format
        can; the whole list otherwise."""
        fmt, pins = self.format, self._pins_for(len(items))
        if continued is not None and fmt.extend is not None:
            conv = fmt.extend(continued.conv, items, len(continued.plain), estimator, pins,
                              self.keep_task)
            if conv is not None:
                known = len(continued.conv.turns)
                return (conv, continued.boundaries.extended(closed_boundaries(conv, known)),
                        running_sums(conv, known, continued.sums))
        conv = Growing.of(fmt.to_transcript(items[:], side, estimator, pins, self.keep_task))
        return conv, GrownList(closed_boundaries(conv)), running_sums(conv, 0, GrownList([0]))

    def _pins_for(self, count: int) -> PinSpec:
        """Index pins as they apply to a history of ``count`` items: a session sees its history
        grow, so an index it does not reach yet pins nothing (instead of being an error)."""
        if self.pin is None or callable(self.pin):
            return self.pin
        return [index for index in self.pin
                if isinstance(index, int) and not isinstance(index, bool)
                and -count <= index < count]

    def _budget(self, request: Mapping[str, Any], model: str | None, *, own: bool = False
                ) -> int:
        """The prompt budget: the window less the reply allowance. ``own``: the model's own
        window (``windows``, else the built-in table), ``window`` only for an unknown model."""
        allowance = self.format.output_allowance(request)
        allowance = self.reserve if allowance is None else allowance
        budget = prompt_budget(model, allowance, overrides=self.windows) if own else None
        if budget is None:
            budget = prompt_budget(model, allowance, window=self.window, overrides=self.windows)
        if budget is None:
            raise ValidationError(
                f"unknown context window for model {model!r}: pass window= (or windows=)",
                {"model": model, "field": "window"})
        return budget

    # --- the walk: compaction events where the history itself says ---------------------------

    def _walk(self, call: _Call, *, summarize: bool = True
              ) -> Generator[Job, CompactionResult, _Walked]:
        """Measure the view at every point the history could end; compact where it is over the
        trigger. Resumes after the known state's history: points before it were walked then.
        Summaries stand in at their planned size (``_writing``)."""
        ledger = call.known.ledger if call.known is not None else EMPTY
        sums = call.sums
        points: Sequence[tuple[int, int]] = call.boundaries
        if not self.sticky:
            points = points[-1:]
        points = points[bisect_right(points, (call.known_items, len(sums))):]
        events, last, over, fell_back = 0, None, 0, False
        replaced: list[Replacement] = []
        pending: dict[str, tuple[SummarizationRequest, tuple[TranscriptTurn, ...]]] = {}
        read: tuple[int, Conversion[Any] | Growing[Any]] | None = call.read_from
        for items, count in points:
            if items <= call.known_items:
                continue
            base = call.overhead if ledger.empty else ledger.tokens
            total = base + sums[count] - sums[ledger.covered_turns]
            if total <= call.trigger:
                continue
            conv = self._prefix(call, items, read)
            if conv is None:
                continue
            read = (items, conv)
            at = bisect_left(call.boundaries, (items, count))
            since = count - (call.boundaries[at - 1][1] if at else 0)
            goal = aimed(call.boundaries, sums, at, call.trigger, call.target)
            try:
                job = self._event(conv, ledger, call, goal, since, summarize=summarize)
            except BudgetUnsatisfiable:
                if items == len(call.items) or not call.items:
                    raise
                continue  # at an earlier point only: later points may still fit
            result = yield job
            tokens = (result.measured_tokens if result.measured_tokens is not None
                      else result.tokens_after)
            ledger = Ledger(result.view.turns, items, count, tokens,
                            positions_of(result.view.turns, conv, ledger),
                            _members(result, ledger), (*ledger.by_provider, *result.covered),
                            ledger.compacted or result.rewritten)
            events, last, over = events + 1, result, total
            fell_back = fell_back or result.summarization_fallback
            replaced.extend(result.replacements)
            for request in result.plan.summarization_requests:
                folded = set(request.turn_ids)
                pending[request.summary_turn_id] = (request, tuple(
                    turn for turn in result.conversion.transcript.turns
                    if turn.turn_id in folded))
        base = call.overhead if ledger.empty else ledger.tokens + ledger.unwritten
        tokens = base + sums[-1] - sums[ledger.covered_turns]
        return _Walked(ledger, events, last, tuple(replaced), over, tokens, fell_back, pending)

    def _prefix(self, call: _Call, items: int,
                read: tuple[int, Conversion[Any] | Growing[Any]] | None
                ) -> Conversion[Any] | Growing[Any] | None:
        """The history as it was after ``items`` items (None if that was not a valid request):
        read on from the longest prefix converted before (``read``: its items and conversion)
        where the format can, so the events of a history seen whole for the first time cost
        the history once, not once each."""
        if items >= len(call.items):
            return call.conv
        fmt, pins = self.format, self._pins_for(items)
        if read is not None and fmt.extend is not None and read[0] < items:
            try:
                grown = fmt.extend(read[1], call.items.prefix(items), read[0], call.estimator,
                                   pins, self.keep_task)
            except ValidationError:
                grown = None  # told apart below, by the whole prefix
            if grown is not None:
                return grown
        try:
            return fmt.to_transcript(call.items[:items], call.side, call.estimator, pins,
                                     self.keep_task)
        except ValidationError:
            return None

    def _event(self, conv: Conversion[Any] | Growing[Any], ledger: Ledger, call: _Call,
               goal: int, since: int, *, summarize: bool = True) -> Job:
        """Plan one compaction event over the history as earlier events left it (its summaries
        at their planned size): toward the target, or ``goal`` below it (``_hysteresis.aimed``)
        where that takes no further step (``planning.no_worse``), protection bending as it must
        to reach it (unless ``strict``: a compaction landing near the budget would only
        run again on the next call), keeping as much of the view sent before as it can (the
        ``since`` newest turns are new to it: ``planning.keeping_prefix``); when that plan does
        not fit even the budget, for the whole budget. A session's view is never less fitting
        than stateless ``compact``'s."""
        projected = with_stand_ins(project(conv, ledger), call.estimator)
        try:
            job = self._start(projected, call.target, call, strict=self.strict,
                              summarize=summarize)
            lower = (self._tried(projected, goal, call, summarize) if goal < call.target
                     else None)
            if (lower is not None and not lower.plan.summarization_requests
                    and no_worse(lower, job)):
                job = lower  # aiming lower takes no further step, nor squeezes a summary
            else:
                goal = call.target
            if job.plan.tokens_after_estimate + call.overhead <= call.budget:
                if not self.sticky:
                    return job
                turns = len(projected.transcript.turns)
                limit = turns - max(since, self.keep_recent)
                return keeping_prefix(job, projected, limit, lambda frozen: self._tried(
                    frozen, goal, call, summarize))[0]
        except BudgetUnsatisfiable:
            pass
        return self._start(projected, call.budget, call, strict=self.strict,
                           summarize=summarize)

    def _tried(self, conv: Conversion[Any], goal: int, call: _Call, summarize: bool
               ) -> Job | None:
        """``_start``'s job, or None where no plan can be made."""
        try:
            return self._start(conv, goal, call, strict=self.strict, summarize=summarize)
        except BudgetUnsatisfiable:
            return None

    def _start(self, conv: Conversion[Any], goal: int, call: _Call, *, strict: bool,
               summarize: bool = True) -> Job:
        options = (self.settings if strict == self.strict
                   else self.settings.chain_options(strict=strict))
        planning = {"estimator": call.estimator,
                    **self.format.planning(conv, call.estimator, call.overhead)}
        conv = self.format.protect(conv, call.budget - call.overhead)
        return start(conv, resolve_budget(goal, call.overhead, self.keep_recent),
                     policy=self.policy,
                     summarizer=(self.summarizer if summarize and call.deferred is None
                                 else None),
                     overhead=call.overhead, result_fields=lambda rendered: {},
                     options=options, drop_covered=self.format.boundary_first,
                     deferred=call.deferred, **planning)

    # --- what is sent -------------------------------------------------------------------------

    def _over_budget_job(self, call: _Call, walked: _Walked, view: _Sent) -> Job | None:
        """A one-off compaction of this call alone when what the walk left measures over the
        budget (estimates of turns appended since the last event ran short); it is not
        remembered, so the view every process derives from the history stays the same. A view
        an event made for this very history is sent as it is, as the first call sent it."""
        if view[1] <= call.budget or walked.ledger.covered_items == len(call.items):
            return None
        try:
            return self._start(project(call.conv, walked.ledger), call.budget, call,
                               strict=self.strict)
        except BudgetUnsatisfiable:
            return None

    def _settled(self, call: _Call, walked: _Walked, texts: Mapping[str, str]
                 ) -> tuple[_Walked, _Sent]:
        """The walked view with its summaries' texts in place of their stand-ins (``texts``,
        and those of earlier calls), rendered, and its prompt tokens measured again: the
        ledger remembers how far the texts are from their planned size (``unwritten``)."""
        ledger = walked.ledger
        if not walked.events or not any(is_summary(turn) for turn in ledger.view):
            return walked, self._view(call, walked)
        ledger = replace(ledger, view=with_texts(ledger.view, {**_known_texts(call), **texts}))
        walked = replace(walked, ledger=ledger)
        rendered, tokens, covered, turns = self._view(call, walked, written=True)
        measure = self.format.planning(project(call.conv, ledger), call.estimator,
                                       call.overhead).get("measure")
        measured = tokens if measure is None else measure(rendered)
        ledger = replace(ledger, unwritten=measured - tokens)
        return (replace(walked, ledger=ledger, tokens=measured),
                (rendered, measured, covered, turns))

    def _view(self, call: _Call, walked: _Walked, *, written: bool = False) -> _Sent:
        """The rendering of the walked view, its prompt tokens (as the walk counted them), the
        turns a provider's compaction covers that it leaves out (events' included), and the
        view's turns. ``written``: its summaries' texts are in the ledger, not in the last
        event's rendering."""
        ledger, last = walked.ledger, walked.last
        if last is not None and ledger.covered_items == len(call.items) and call.items:
            if not written:
                return last.rendered, walked.tokens, ledger.by_provider, last.view.turns
            projected = project(call.conv, ledger)
            return (projected.render(projected.transcript), walked.tokens, ledger.by_provider,
                    projected.transcript.turns)
        projected = project(call.conv, ledger)
        covered: tuple[str, ...] = ()
        tokens = walked.tokens
        if call.deferred is not None or self.format.boundary_first:
            covered = covered_turns(projected)
            tokens -= sum(turn.token_estimate for turn in projected.transcript.turns
                          if turn.turn_id in covered)
            projected = _uncovered(projected, covered)
        turns = projected.transcript.turns
        return (projected.render(projected.transcript), tokens, (*ledger.by_provider, *covered),
                turns)

    def _prepared(self, call: _Call, walked: _Walked, view: _Sent,
                  one_off: CompactionResult | None) -> Prepared:
        fmt = self.format
        rendered, tokens, covered, turns = view
        members = dict(walked.ledger.members)
        if one_off is not None:
            rendered, covered = one_off.rendered, (*walked.ledger.by_provider, *one_off.covered)
            tokens = (one_off.measured_tokens if one_off.measured_tokens is not None
                      else one_off.tokens_after)
            turns = one_off.view.turns
            members.update(summary_members(one_off.plan.summarization_requests, members))
        side, items = fmt.split(rendered)
        sent = tuple(items)  # this history's own, key order included: as a fresh worker sends
        if call.chain and not walked.ledger.empty and not walked.fell_back:
            known = Known(walked.ledger, sent, text_size([*sent, *walked_texts(walked.ledger)]))
            supersedes = call.chain[call.known_items - 1] if call.known_items else None
            self._known.put(call.chain[-1], known, supersedes)
        request = self._with(call.request, copy_plain(side), copy_plain(list(sent)))
        reused = _common_prefix(call.known.sent if call.known is not None else None, sent)
        decision, reason = self._decision(call, walked, tokens, one_off, covered, sent, reused)
        last = one_off or walked.last
        report = CallReport(
            decision, reason, fmt.name, call.model, call.budget, call.trigger, call.target,
            call.sums[-1] + call.overhead, tokens, reused,
            None if last is None else last.report,
            last is not None and last.summarization_fallback, walked.events + bool(one_off),
            call.conv.task_turn_id, 0 if last is None else last.protection_relaxed,
            walked.replacements + (one_off.replacements if one_off is not None else ()),
            tokens > call.budget, covered, **_figures(call, sent, reused),
            goal_tokens=None if last is None else last.prompt_budget,
            turns=(_turn_fates(call, walked, one_off, covered) if decision in CHANGED
                   else None))
        sources = (sources_of(turns, call.conv.parts, members)
                   if fmt.one_item_per_turn and isinstance(items, list) else None)
        return Prepared(request, report, sources)

    def _decision(self, call: _Call, walked: _Walked, tokens: int,
                  one_off: CompactionResult | None, covered: tuple[str, ...],
                  sent: tuple[dict[str, Any], ...], reused: int) -> tuple[Decision, str]:
        """What the call did, as true of what is sent: ``appended`` only when the previous
        request is a byte prefix of this one (``reused``: its items resent unchanged),
        ``deferred`` only when what is sent is the history less what the provider's latest
        compaction covers."""
        known = call.known
        appended = len(call.items) - call.known_items
        if known is None:
            seen = "no earlier view of this history"
        elif appended:
            seen = f"history extends a known one by {appended} item(s)"
        else:
            seen = "same history as a known one"
        if covered:
            seen += f"; {len(covered)} turn(s) the latest provider compaction covers left out"
        rewritten = walked.ledger.compacted or (one_off is not None and one_off.rewritten)
        if call.deferred is not None and not rewritten:
            return "deferred", (f"{seen}; {call.deferred}: left to the server while within "
                                f"the model's own limit; {tokens} tokens <= {call.trigger}")
        if call.deferred is not None:
            seen += (f"; {call.deferred}, but the history went over the model's own limit: "
                     "the view is cutctx's own compaction, fitted without summaries")
        earlier = known is not None and not known.ledger.empty
        if walked.events:
            goal = walked.last.prompt_budget if walked.last else call.target
            return ("recompacted" if earlier else "compacted"), (
                f"{seen}; {walked.over} tokens > trigger {call.trigger}, compacted toward "
                f"{goal} ({walked.events} event(s)); {tokens} tokens sent")
        if one_off is not None:
            return ("recompacted" if earlier else "compacted"), (
                f"{seen}; the view measured over the budget {call.budget}: compacted for this "
                f"call alone (not remembered); {tokens} tokens sent")
        within = f"{tokens} tokens <= trigger {call.trigger}"
        if known is None:  # a view of the history changed only by leaving out what is covered
            return ("compacted" if covered else "unchanged"), f"{seen}; {within}"
        if reused < len(known.sent):
            return "recompacted", f"{seen}; {_changed(known.sent, sent, reused)}; {within}"
        return ("appended" if appended else "reused"), f"{seen}; earlier view reused; {within}"

    def _with(self, request: Mapping[str, Any], side: Any, items: Any) -> dict[str, Any]:
        out = dict(request)
        out[self.format.list_key] = items
        key = self.format.side_key
        # A "not given" sentinel stays as given (the SDK omits it); never replaced by None.
        if key is not None and (side is not None or given(request.get(key)) is not None):
            out[key] = side
        return out


def _figures(call: _Call, sent: Sequence[dict[str, Any]], reused: int) -> dict[str, Any]:
    """The report's item counts, the share of the previous view sent again (``reused``: its
    items resent unchanged), and what the counts are for."""
    before = call.known.sent if call.known is not None else None
    kept = None if not before else reused / len(before)
    estimator = call.estimator
    counted_with = call.model or getattr(estimator, "encoding_name", None) or type(
        estimator).__name__
    return {"items_in": len(call.items), "items_sent": len(sent), "prefix_kept": kept,
            "counted_with": counted_with, "calibration": calibration_of(estimator)}


def _changed(before: Sequence[dict[str, Any]], sent: Sequence[dict[str, Any]],
             reused: int) -> str:
    """Why the view sent before (``before``) is no byte prefix of ``sent`` (only its first
    ``reused`` items are), though no event compacted anything: the history's keys are in
    another order than the earlier view's (what is sent keeps the history's own), or the view
    renders differently with what was appended."""
    if content_bytes(list(before)) == content_bytes(list(sent[:len(before)])):
        why = "the earlier view's items with their keys in this history's order"
    else:
        why = "the earlier view renders differently with what was appended"
    return f"{why}: {reused} of its {len(before)} item(s) resent unchanged"


def _reads_on(recent: Recent, reused: int, reading: tuple[Any, ...]) -> bool:
    """Whether a history whose first ``reused`` items are ``recent``'s continues all of it, read
    the same way (the same side, estimator, pin setting and task pinning): ``recent``'s
    conversion can be read on from."""
    side, estimator, pin, keep_task = reading
    return (0 < reused == len(recent.plain) and recent.reading[1] is estimator
            and recent.reading[2] is pin and recent.reading[3] == keep_task
            and recent.reading[0] == side)


def _no_summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """Stands where no summary is to be written (never called)."""
    raise AssertionError("no summary was to be written")


def _known_texts(call: _Call) -> dict[str, str]:
    """The texts of the summaries the known state's view holds (written by earlier calls)."""
    if call.known is None:
        return {}
    return {turn.turn_id: turn.content for turn in call.known.ledger.view if is_summary(turn)}


def _members(result: CompactionResult, before: Ledger) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The summaries of ``result``'s view and the history's turns each stands for."""
    earlier = dict(before.members)
    made = summary_members(result.plan.summarization_requests, earlier)
    in_view = {turn.turn_id for turn in result.view.turns}
    return tuple((summary, ids) for summary, ids in {**earlier, **made}.items()
                 if summary in in_view)


def _turn_fates(call: _Call, walked: _Walked, one_off: CompactionResult | None,
                covered: tuple[str, ...]) -> TurnFates:
    """The fate of every turn of the call's history in what is sent (``covered``: left out,
    as a provider's compaction covers them)."""
    ledger = walked.ledger
    members = dict(ledger.members)
    if one_off is not None:
        members.update(summary_members(one_off.plan.summarization_requests, members))
        view: Sequence[Any] = one_off.view.turns
    else:
        view = project(call.conv, ledger).transcript.turns
    return fates_of(call.conv.turns, view, members, covered)


def walked_texts(ledger: Ledger) -> list[str]:
    """The texts a ledger holds (for the memory bound)."""
    return [turn.content for turn in ledger.view]


def _common_prefix(before: Sequence[dict[str, Any]] | None, after: Sequence[dict[str, Any]]
                   ) -> int:
    """Leading items of ``after`` sent exactly as those of ``before`` (the previous view)."""
    if before is None:
        return 0
    count = 0
    for a, b in zip(before, after, strict=False):
        if not sent_alike(a, b):
            break
        count += 1
    return count

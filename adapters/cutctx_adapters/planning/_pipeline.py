"""convert → estimate → plan → fulfil → apply → render, shared by every format, sync and async.

A format module builds a ``Job`` (its conversion, the budget, the plan); ``run``/``arun`` fulfil
and finish it. The two differ only in awaiting the summarizer. A summary is model output, so it is
checked like input before it replaces a single turn: its length against its target, and the whole
rendered request against the budget.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from cutctx import (
    REPLACEMENT_KINDS,
    Action,
    BudgetUnsatisfiable,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    CompactionPolicy,
    CompactionReport,
    Role,
    SummarizationRequest,
    TokenEstimator,
    Transcript,
    ValidationError,
)

from .._steps import advanced, begun
from ..errors import SummarizationFailed
from ..fulfil import AnySummarizer, SummaryCache, afulfil, fulfil
from ..history import BOUNDARY_KIND, KIND_KEY, Conversion, covered_turns, uncovered
from ..prompts import SUMMARY_TOLERANCE, allowed_tokens
from ._fitting import Fitted, decide_fitting
from ._policy import OnSummaryError, PolicyOptions, choose_policy, with_observations
from ._results import CompactionResult, FormatResult, Replacement, narrowed

__all__ = [
    "Job",
    "acompacted",
    "arun",
    "compacted",
    "length_check",
    "planned",
    "resolve_budget",
    "run",
    "stand_in",
    "start",
    "stub_estimator",
    "summary_check",
    "with_room_for_note",
]



R = TypeVar("R", bound=FormatResult)


@dataclass(frozen=True, slots=True)
class _PaddedEstimator:
    """Estimates a mask stub as the whole masked message: text tokens plus the largest
    non-content overhead (role, ids, framing) of any tool turn, so plans never undercount.
    Equal to another over the same estimator and pad: the plans of one history under several
    pins then share the stubs found once (``TextFacts.replacements``)."""

    estimator: TokenEstimator
    pad: int

    def estimate_tokens(self, text: str) -> int:
        return self.estimator.estimate_tokens(text) + self.pad


def stub_estimator(transcript: Transcript, estimator: TokenEstimator,
                   pad: int | None = None) -> TokenEstimator:
    """The estimator masking should use for a converted history (see ``_PaddedEstimator``).

    A format whose tool turns carry non-text cost (images in Anthropic tool results) passes the
    ``pad`` a masked turn really keeps (its framing), instead of the largest difference seen.
    """
    if pad is not None:
        return _PaddedEstimator(estimator, pad)
    pad = 0
    for turn in transcript.turns:
        if turn.role is Role.TOOL and KIND_KEY not in turn.metadata:
            pad = max(pad, turn.token_estimate - estimator.estimate_tokens(turn.content))
    return _PaddedEstimator(estimator, pad + 1)


def resolve_budget(budget: int | CompactionBudget, overhead: int,
                   keep_recent: int) -> CompactionBudget:
    """An int is the whole prompt's allowance: the transcript gets it minus the overhead.

    The newest turn is always protected (a request needs one message), and an allowance the
    overhead alone (tool definitions, framing) exceeds is refused, naming the overhead.
    """
    if isinstance(budget, CompactionBudget):
        if budget.protected_recent_turns:
            return budget
        return CompactionBudget(budget.max_tokens, 1)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValidationError("budget must be an int >= 0 or a cutctx.CompactionBudget",
                              {"field": "budget"})
    if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
        raise ValidationError("keep_recent must be an int >= 0", {"field": "keep_recent"})
    if overhead > budget:
        raise BudgetUnsatisfiable(
            f"the request's fixed overhead (tool definitions, framing) needs {overhead} tokens "
            f"but the budget is {budget}",
            {"untouchable_tokens": overhead, "max_tokens": budget, "untouchable_turn_count": 0,
             "protected_recent_turns": keep_recent, "overhead_tokens": overhead})
    return CompactionBudget(budget - overhead, max(1, keep_recent))


Fit = Callable[[CompactionPolicy, CompactionBudget], Fitted]
"""Plans a history for a budget with a policy, escalating as ``decide_fitting`` does."""


@dataclass(frozen=True, slots=True)
class Job:
    """One compaction, planned and waiting for its summaries."""

    conversion: Conversion[Any]
    budget: CompactionBudget
    """The budget the plan was made for (protection relaxed, if it had to be)."""
    plan: CompactionPlan
    overhead: int
    result_fields: Callable[[Any], Mapping[str, Any]]
    estimator: TokenEstimator
    """Counts a summary's text on the plan's scale."""
    on_summary_error: OnSummaryError = "raise"
    fallback_policy: CompactionPolicy | None = None
    """The same policies without summarizing: used when a summary fails or does not fit."""
    policy: CompactionPolicy | None = None
    measure: Callable[[Any], int] | None = None
    """Prompt tokens of a rendered history (overhead included), to check the plan's claim."""
    limit: int | None = None
    """The prompt allowance the rendered request must fit (the budget plus the overhead)."""
    protection_relaxed: int = 0
    fit: Fit | None = None
    """Plans again (tighter, or without summaries) the way this plan was made."""
    requested: CompactionBudget | None = None
    """The budget asked for, before any protection gave way."""
    results_relaxed: int = 0
    last_resort: tuple[str, ...] = ()
    """Turns clipped as a last resort (the newest, the task)."""
    covered: tuple[str, ...] = ()
    """Turns left out before planning: the provider's latest compaction covers them."""
    whole: Conversion[Any] | None = None
    """The history's own conversion, when ``conversion`` leaves out what ``covered`` names."""
    deferred: str | None = None
    """Why compaction is left to the provider (see ``CompactionResult.deferred``)."""
    summarizer: AnySummarizer | None = None
    """The summarizer the plan was made with (None when it summarizes nothing)."""


def start(
    conversion: Conversion[Any],
    budget: CompactionBudget,
    *,
    policy: CompactionPolicy | None,
    summarizer: AnySummarizer | None,
    estimator: TokenEstimator,
    overhead: int,
    result_fields: Callable[[Any], Mapping[str, Any]],
    options: PolicyOptions | None = None,
    stub_pad: int | None = None,
    measure: Callable[[Any], int] | None = None,
    drop_covered: bool = False,
    deferred: str | None = None,
) -> Job:
    """Plan a compaction of a converted history (choosing the default policy if none given).

    ``stub_pad``: tokens a masked tool turn keeps beyond its stub text (see ``stub_estimator``).
    What the provider's latest compaction covers gives way first: it is left out before
    planning when the history is over the budget, or always with ``drop_covered`` (a format
    that needs its compaction first, or a request ``deferred`` to the provider's compaction).
    """
    whole = conversion
    covered = covered_turns(conversion)
    if covered and (drop_covered or deferred is not None
                    or conversion.transcript.token_estimate() > budget.max_tokens):
        conversion = uncovered(conversion, covered)
    else:
        covered = ()
    options = options or PolicyOptions()
    conversion = with_observations(conversion, options.observations)
    stubs = stub_estimator(conversion.transcript, estimator, stub_pad)
    chosen = choose_policy(policy, summarizer, options, stubs)
    spared = options.keep_recent_results if policy is None else 0

    def fit(chosen: CompactionPolicy, goal: CompactionBudget) -> Fitted:
        relaxed = None
        if spared and policy is None:
            summarizing = summarizer if chosen is not fallback else None
            unspared = options.chain_options(keep_recent_results=0)
            relaxed = (choose_policy(None, summarizing, unspared, stubs), spared)
        return decide_fitting(chosen, conversion.transcript, goal, stubs,
                              strict=options.strict, task_turn_id=conversion.task_turn_id,
                              relaxed=relaxed)

    fallback = choose_policy(None, None, options, stubs) if summarizer is not None else None
    fitted = fit(chosen, budget)
    return Job(conversion, fitted.budget, fitted.plan, overhead, result_fields, estimator,
               options.on_summary_error, fallback, chosen, measure,
               fitted.budget.max_tokens + overhead, fitted.protection_relaxed, fit, budget,
               fitted.results_relaxed, fitted.clipped, covered,
               whole if covered else None, deferred, summarizer)


def replacements(before: Transcript, view: Transcript) -> tuple[Replacement, ...]:
    """The turns ``view`` keeps with a new body, in order, with their sizes."""
    original = {turn.turn_id: turn for turn in before.turns}
    out: list[Replacement] = []
    for turn in view.turns:
        kind = turn.metadata.get(KIND_KEY)
        if kind not in REPLACEMENT_KINDS:
            continue
        source = original.get(turn.turn_id)
        if (source is not None and source.metadata.get(KIND_KEY) == kind
                and source.content == turn.content):
            continue  # replaced earlier: already reported then
        tokens = turn.metadata.get("cutctx.original_tokens")
        out.append(Replacement(turn.turn_id, str(kind),
                               int(tokens) if tokens else (source.token_estimate if source
                                                           else turn.token_estimate),
                               turn.token_estimate))
    return tuple(out)


def _finish(job: Job, summaries: Mapping[str, str], fallback: bool = False) -> CompactionResult:
    view = CompactionExecutor().apply(job.conversion.transcript, job.plan, summaries)
    rendered = job.conversion.render(view)
    measured = None if job.measure is None else job.measure(rendered)
    report = view.report
    if measured is not None and job.limit is not None:
        # Fit is judged on what is sent: the measured request, not the plan's estimate.
        report = replace(report, budget_unmet=measured > job.limit)
    replaced = replacements(job.conversion.transcript, view.transcript)
    result = CompactionResult(
        plan=job.plan,
        report=_with_covered(report, job.whole, job.covered),
        view=view.transcript,
        conversion=job.whole or job.conversion,
        overhead_tokens=job.overhead,
        summarization_fallback=fallback,
        rendered=rendered,
        measured_tokens=measured,
        prompt_budget=job.limit,
        protection_relaxed=job.protection_relaxed,
        replacements=replaced,
        results_relaxed=job.results_relaxed,
        last_resort=job.last_resort,
        task_turn_id=job.conversion.task_turn_id,
        covered=job.covered,
        **job.result_fields(rendered),
    )
    if job.deferred is not None and not result.rewritten:
        return replace(result, deferred=job.deferred)
    return result


def _with_covered(report: CompactionReport, whole: Conversion[Any] | None,
                  covered: tuple[str, ...]) -> CompactionReport:
    """``report`` over the whole history (``whole``): the turns left out because the
    provider's compaction ``covered`` them are summarized (by that compaction), so the six
    lists still hold every turn once."""
    if whole is None or not covered:
        return report
    summarized = {*report.summarized_turn_ids, *covered}
    return replace(report, turns_before=report.turns_before + len(covered),
                   summarized_turn_ids=tuple(turn.turn_id for turn in whole.transcript.turns
                                             if turn.turn_id in summarized))


def _required_summarizer(job: Job, summarizer: AnySummarizer | None) -> AnySummarizer:
    """The summarizer a plan that asks for summaries needs (refused by name when none)."""
    if summarizer is None:
        raise ValidationError("the plan asks for summaries but no summarizer was given",
                              {"group_ids": [r.group_id for r in job.plan.summarization_requests]})
    return summarizer


def length_check(estimator: TokenEstimator) -> Callable[[SummarizationRequest, str], None]:
    """Refuses (``SummarizationFailed``) a summary much longer than its plan allowed (it would
    not fit where it goes), counted with ``estimator``."""
    return functools.partial(_refuse_long, estimator)


def _refuse_long(estimator: TokenEstimator, request: SummarizationRequest, text: str) -> None:
    tokens = estimator.estimate_tokens(text)
    allowed = allowed_tokens(request.target_tokens)
    if tokens > allowed:
        raise SummarizationFailed(
            f"the summary for group {request.group_id} has {tokens} tokens but its plan allowed "
            f"{request.target_tokens} (+{SUMMARY_TOLERANCE:.0%}); it was not used",
            {"group_id": request.group_id, "turn_count": len(request.turn_ids),
             "prompt_id": request.prompt_id, "cause": "summary_too_long",
             "summary_tokens": tokens, "target_tokens": request.target_tokens})


def _replanned(job: Job, policy: CompactionPolicy, budget: CompactionBudget) -> Job | None:
    """The job planned again with ``policy`` for ``budget``, the way it was planned (None if
    no plan can be made)."""
    if job.fit is None:
        return None
    try:
        fitted = job.fit(policy, budget)
    except BudgetUnsatisfiable:
        return None
    return replace(job, plan=fitted.plan, budget=fitted.budget, policy=policy,
                   protection_relaxed=fitted.protection_relaxed,
                   results_relaxed=fitted.results_relaxed, last_resort=fitted.clipped)


def _without_summaries(job: Job) -> Job | None:
    """The job planned again by its policies minus summarizing (None if it has no such)."""
    if job.fallback_policy is None:
        return None
    plain = _replanned(job, job.fallback_policy, job.requested or job.budget)
    if plain is None or plain.plan.summarization_requests:
        return None
    return plain


_TIGHTENINGS = 3
"""Re-plans allowed when the rendered request measures over the budget the plan claimed."""


def _excess(job: Job, result: CompactionResult) -> int:
    """How far the rendered request is over the allowance although the plan said it fits.

    Estimates can undercount what rendering adds (a summary's framing, a caller's masking
    policy pricing stubs as bare text), so the output is measured, not trusted."""
    if result.measured_tokens is None or job.limit is None or result.plan.budget_unmet:
        return 0
    return max(0, result.measured_tokens - job.limit)


def _tightened(job: Job, excess: int) -> Job | None:
    """The same job planned again for a budget ``excess`` below what its plan used (not below
    its budget: a plan may land under its budget, and the measured request still be over)."""
    goal = min(job.budget.max_tokens, job.plan.tokens_after_estimate) - excess
    if job.policy is None or goal < 0:
        return None
    asked = job.requested or job.budget
    tighter = _replanned(job, job.policy, CompactionBudget(goal, asked.protected_recent_turns))
    if tighter is None:
        return None
    return replace(tighter, limit=job.limit)


def _summaries_failed(job: Job, failure: SummarizationFailed) -> Job:
    """The job to run instead of one whose summary failed, or the failure itself."""
    if job.on_summary_error != "fallback":
        raise failure
    replanned = _without_summaries(job)
    if replanned is None:
        raise failure
    return replanned


Outcome = Mapping[str, str] | SummarizationFailed
"""What a driver sends back for a job's summaries: the texts, or why there are none."""


def _steps(job: Job) -> Generator[Job, Outcome, CompactionResult]:
    """The control flow ``run`` and ``arun`` share: it yields each job whose summaries it needs
    and receives them (or the failure), tightens a plan whose rendering measures over, and never
    returns a request over the budget with summaries when one without them fits."""
    fallback = False
    result: CompactionResult | None = None
    for _ in range(_TIGHTENINGS + 1):
        if result is not None:
            excess = _excess(job, result)
            tighter = _tightened(job, excess) if excess else None
            if tighter is None:
                break
            job = tighter
        summaries: Mapping[str, str] = {}
        if job.plan.summarization_requests:
            outcome = yield job
            if isinstance(outcome, SummarizationFailed):
                job, fallback = _summaries_failed(job, outcome), True
            else:
                summaries = outcome
        result = _finish(job, summaries, fallback)
    assert result is not None
    if result.measured_over and result.plan.summarization_requests:
        plain = _without_summaries(job)
        if plain is not None:
            alternative = _finish(plain, {}, fallback=True)
            if not alternative.budget_unmet:
                return alternative
    return result


def summary_check(job: Job) -> Callable[[SummarizationRequest, str], None]:
    """How ``job`` vets a summary before it is used (or stored): ``SummarizationFailed`` if not."""
    return length_check(job.estimator)


def stand_in(target_tokens: int, estimator: TokenEstimator) -> str:
    """A summary's place-holding text, as long as a summary planned at ``target_tokens`` may
    be (``allowed_tokens``, by ``estimator``): what is measured where the text is not written
    yet — the same for every worker, and never less than the text that will stand there."""
    tokens = allowed_tokens(target_tokens)
    words = max(1, tokens)
    for _ in range(3):
        text = " ".join(["summary"] * words)
        counted = estimator.estimate_tokens(text)
        if counted == tokens or counted <= 0:
            break
        words = max(1, round(words * tokens / counted))
    return " ".join(["summary"] * words)


def planned(job: Job) -> CompactionResult:
    """``job`` applied with every summary it asks for standing in at the most its plan allows
    (``stand_in``): what a session's walk measures, so where it compacts never depends on a
    model's words; the summaries the walk keeps are written once it ends."""
    steps = _steps(job)
    wanted = begun(steps)
    while isinstance(wanted, Job):
        wanted = advanced(steps, {request.group_id: stand_in(request.target_tokens,
                                                              wanted.estimator)
                                   for request in wanted.plan.summarization_requests})
    return wanted


def run(job: Job, summarizer: AnySummarizer | None = None,
        cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (synchronously) and apply a planned job; re-plan tighter if the output is over."""
    steps = _steps(job)
    wanted = begun(steps)
    while isinstance(wanted, Job):
        wanted = advanced(steps, _fulfilled(wanted, summarizer, cache))
    return wanted


async def arun(job: Job, summarizer: AnySummarizer | None = None,
               cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (concurrently, awaiting async summarizers) and apply; as ``run`` otherwise."""
    steps = _steps(job)
    wanted = begun(steps)
    while isinstance(wanted, Job):
        wanted = advanced(steps, await _afulfilled(wanted, summarizer, cache))
    return wanted


def _fulfilled(job: Job, summarizer: AnySummarizer | None, cache: SummaryCache | None
               ) -> Outcome:
    """The summaries ``job`` asks for, or why there are none."""
    given = _required_summarizer(job, summarizer)
    try:
        return fulfil(job.plan, job.conversion.transcript, given, cache=cache,
                      check=summary_check(job))
    except SummarizationFailed as failure:
        return failure


async def _afulfilled(job: Job, summarizer: AnySummarizer | None, cache: SummaryCache | None
                      ) -> Outcome:
    given = _required_summarizer(job, summarizer)
    try:
        return await afulfil(job.plan, job.conversion.transcript, given, cache=cache,
                             check=summary_check(job))
    except SummarizationFailed as failure:
        return failure


def compacted(plan: Callable[..., Job], history: Any, options: Mapping[str, Any],
              kind: type[R], default_model: str) -> R:
    """A format's ``compact``: its ``plan`` of ``history`` with ``options`` (all but the
    ``summary_cache``), fulfilled and applied, as the format's own result class."""
    planning = {name: value for name, value in options.items() if name != "summary_cache"}
    job = plan(history, **planning)
    result = run(job, job.summarizer, options.get("summary_cache"))
    return narrowed(result, kind, planning.get("model", default_model))


async def acompacted(plan: Callable[..., Job | Awaitable[Job]], history: Any,
                     options: Mapping[str, Any], kind: type[R], default_model: str) -> R:
    """``compacted``, awaiting the plan (when it is a coroutine) and the summaries."""
    planning = {name: value for name, value in options.items() if name != "summary_cache"}
    job = plan(history, **planning)
    if inspect.isawaitable(job):
        job = await job
    result = await arun(job, job.summarizer, options.get("summary_cache"))
    return narrowed(result, kind, planning.get("model", default_model))


def leaves_assistant_first(job: Job, conversion: Conversion[Any]) -> bool:
    """Whether ``job``'s plan drops the leading user message(s) of a history that opened with
    one and keeps an assistant's first (a provider's compaction opens the request instead, when
    there is one: nothing goes before it)."""
    if not getattr(conversion.codec, "starts_with_user", False):
        return False
    parts = conversion.parts
    if any(parts[action.turn_id].kind == BOUNDARY_KIND for action in job.plan.actions):
        return False
    for action in job.plan.actions:
        part = parts[action.turn_id]
        if part.role is Role.SYSTEM or action.action is Action.DROP:
            continue
        return action.action is not Action.SUMMARIZE and part.role is Role.ASSISTANT
    return False


def with_room_for_note(begin: Callable[[int], Job], conversion: Conversion[Any],
                       note_tokens: Callable[[], int]) -> Job:
    """``begin(0)``'s job; planned again with ``note_tokens()`` more overhead when it leaves an
    assistant's message first, which the rendering opens with a user note (the note then
    counts, so the request as sent stays within the budget)."""
    job = begin(0)
    if leaves_assistant_first(job, conversion):
        return begin(note_tokens())
    return job

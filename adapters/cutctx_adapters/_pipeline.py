"""convert → estimate → plan → fulfil → apply → render, shared by every format, sync and async.

A format module builds a ``Job`` (its conversion, the budget, the plan); ``run``/``arun`` fulfil
and finish it. The two differ only in awaiting the summarizer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cutctx import (
    Action,
    BudgetUnsatisfiable,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    CompactionPolicy,
    CompactionReport,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SummarizingPolicy,
    TokenEstimator,
    Transcript,
    ValidationError,
)

from ._conversion import Conversion
from .errors import SummarizationFailed
from .fulfil import AnySummarizer, SummaryCache, afulfil, fulfil
from .prompts import DEFAULT_PROMPT_ID

__all__ = [
    "CompactionResult",
    "Job",
    "OnSummaryError",
    "arun",
    "choose_policy",
    "resolve_budget",
    "run",
    "start",
    "stub_estimator",
]

OnSummaryError = Literal["raise", "fallback"]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction produced: the ready-to-send history, the plan and the report.

    ``messages`` is set for Chat and Anthropic histories, ``system`` for Anthropic, and
    ``instructions``/``input`` for Responses (``input`` stays a string if it was one and was
    kept). ``summarization_fallback`` is True when a failed summarizer made the adapters
    re-plan without summaries (the report's policy name shows it).
    """

    plan: CompactionPlan
    report: CompactionReport
    view: Transcript
    conversion: Conversion[Any] = field(repr=False)
    overhead_tokens: int = 0
    messages: list[dict[str, Any]] | None = None
    system: Any = None
    instructions: Any = None
    input: str | list[dict[str, Any]] | None = None
    summarization_fallback: bool = False
    rendered: Any = field(default=None, repr=False)
    """The format's own rendering (what ``conversion.render(view)`` returned)."""
    measured_tokens: int | None = None
    """Prompt tokens of the rendered request, counted afresh (not the plan's estimate)."""
    prompt_budget: int | None = None
    """The allowance the request had to fit (history budget plus overhead)."""

    @property
    def budget_unmet(self) -> bool:
        """The plan could not meet the budget, or the rendered request measures over it."""
        over = (self.measured_tokens is not None and self.prompt_budget is not None
                and self.measured_tokens > self.prompt_budget)
        return self.plan.budget_unmet or over

    @property
    def compacted(self) -> bool:
        """Whether anything was masked, summarized or dropped."""
        return any(action.action is not Action.KEEP for action in self.plan.actions)

    @property
    def tokens_before(self) -> int:
        """Estimated prompt tokens of the original request (history + overhead)."""
        return self.plan.tokens_before + self.overhead_tokens

    @property
    def tokens_after(self) -> int:
        """Estimated prompt tokens of the compacted request (history + overhead)."""
        return self.plan.tokens_after_estimate + self.overhead_tokens


def choose_policy(
    policy: CompactionPolicy | None,
    summarizer: object | None,
    *,
    keep_recent_results: int = 2,
    stub_estimator: TokenEstimator | None = None,
) -> CompactionPolicy:
    """The caller's policy, else: mask then drop without a summarizer, the default chain with."""
    if summarizer is not None and not callable(summarizer):
        raise ValidationError("summarizer must be callable: (request, turns) -> summary text",
                              {"field": "summarizer"})
    if policy is not None:
        if not callable(getattr(policy, "decide", None)):
            raise ValidationError("policy must have a decide(transcript, budget) method",
                                  {"field": "policy"})
        return policy
    masking = ObservationMaskingPolicy(keep_recent_results, estimator=stub_estimator)
    if summarizer is None:
        return PolicyChain([masking, DropOldestPolicy()])
    prompt_id = getattr(summarizer, "prompt_id", None) or DEFAULT_PROMPT_ID
    return PolicyChain([masking, SummarizingPolicy(prompt_id), DropOldestPolicy()])


class _PaddedEstimator:
    """Estimates a mask stub as the whole masked message: text tokens plus the largest
    non-content overhead (role, ids, framing) of any tool turn, so plans never undercount."""

    def __init__(self, estimator: TokenEstimator, pad: int) -> None:
        self._estimator = estimator
        self.pad = pad

    def estimate_tokens(self, text: str) -> int:
        return self._estimator.estimate_tokens(text) + self.pad


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
        if turn.role is Role.TOOL:
            pad = max(pad, turn.token_estimate - estimator.estimate_tokens(turn.content))
    return _PaddedEstimator(estimator, pad + 1)


def resolve_budget(budget: int | CompactionBudget, overhead: int,
                   keep_recent: int) -> CompactionBudget:
    """An int is the whole prompt's allowance: the transcript gets it minus the overhead."""
    if isinstance(budget, CompactionBudget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValidationError("budget must be an int >= 0 or a cutctx.CompactionBudget",
                              {"field": "budget"})
    return CompactionBudget(max(0, budget - overhead), keep_recent)


@dataclass(frozen=True, slots=True)
class Job:
    """One compaction, planned and waiting for its summaries."""

    conversion: Conversion[Any]
    budget: CompactionBudget
    plan: CompactionPlan
    overhead: int
    result_fields: Callable[[Any], Mapping[str, Any]]
    on_summary_error: OnSummaryError = "raise"
    fallback_policy: CompactionPolicy | None = None
    policy: CompactionPolicy | None = None
    measure: Callable[[Any], int] | None = None
    """Prompt tokens of a rendered history (overhead included), to check the plan's claim."""
    limit: int | None = None
    """The prompt allowance the rendered request must fit (the budget plus the overhead)."""


def start(
    conversion: Conversion[Any],
    budget: CompactionBudget,
    *,
    policy: CompactionPolicy | None,
    summarizer: object | None,
    estimator: TokenEstimator,
    overhead: int,
    result_fields: Callable[[Any], Mapping[str, Any]],
    keep_recent_results: int = 2,
    on_summary_error: OnSummaryError = "raise",
    stub_pad: int | None = None,
    measure: Callable[[Any], int] | None = None,
) -> Job:
    """Plan a compaction of a converted history (choosing the default policy if none given).

    ``stub_pad``: tokens a masked tool turn keeps beyond its stub text (see ``stub_estimator``).
    """
    if on_summary_error not in ("raise", "fallback"):
        raise ValidationError("on_summary_error must be 'raise' or 'fallback'",
                              {"field": "on_summary_error"})
    stubs = stub_estimator(conversion.transcript, estimator, stub_pad)
    chosen = choose_policy(policy, summarizer, keep_recent_results=keep_recent_results,
                           stub_estimator=stubs)
    plan = chosen.decide(conversion.transcript, budget)
    fallback = None
    if on_summary_error == "fallback":
        fallback = choose_policy(None, None, keep_recent_results=keep_recent_results,
                                 stub_estimator=stubs)
    return Job(conversion, budget, plan, overhead, result_fields, on_summary_error, fallback,
               chosen, measure, budget.max_tokens + overhead)


def _finish(job: Job, summaries: Mapping[str, str], fallback: bool = False) -> CompactionResult:
    view = CompactionExecutor().apply(job.conversion.transcript, job.plan, summaries)
    rendered = job.conversion.render(view)
    return CompactionResult(
        plan=job.plan,
        report=view.report,
        view=view.transcript,
        conversion=job.conversion,
        overhead_tokens=job.overhead,
        summarization_fallback=fallback,
        rendered=rendered,
        measured_tokens=None if job.measure is None else job.measure(rendered),
        prompt_budget=job.limit,
        **job.result_fields(rendered),
    )


def _needs_summaries(job: Job, summarizer: object | None) -> bool:
    if not job.plan.summarization_requests:
        return False
    if summarizer is None:
        raise ValidationError("the plan asks for summaries but no summarizer was given",
                              {"group_ids": [r.group_id for r in job.plan.summarization_requests]})
    return True


def _replanned(job: Job) -> Job:
    assert job.fallback_policy is not None
    plan = job.fallback_policy.decide(job.conversion.transcript, job.budget)
    return replace(job, plan=plan)


_TIGHTENINGS = 3
"""Re-plans allowed when the rendered request measures over the budget the plan claimed."""


def _excess(job: Job, result: CompactionResult) -> int:
    """How far the rendered request is over the allowance although the plan said it fits.

    Estimates can undercount what rendering adds (a summary's framing, a caller's masking
    policy pricing stubs as bare text), so the output is measured, not trusted."""
    if result.measured_tokens is None or job.limit is None or result.plan.budget_unmet:
        return 0
    return max(0, result.measured_tokens - job.limit)


def _tightened(job: Job, result: CompactionResult, excess: int) -> Job | None:
    """The same job planned again for a budget smaller by ``excess``, if that is possible."""
    policy = job.fallback_policy if result.summarization_fallback else job.policy
    goal = job.budget.max_tokens - excess
    if policy is None or goal < 0:
        return None
    budget = CompactionBudget(goal, job.budget.protected_recent_turns)
    try:
        plan = policy.decide(job.conversion.transcript, budget)
    except BudgetUnsatisfiable:
        return None
    return replace(job, plan=plan, budget=budget, policy=policy)


def _run_once(job: Job, summarizer: AnySummarizer | None,
              cache: SummaryCache | None) -> CompactionResult:
    if not _needs_summaries(job, summarizer):
        return _finish(job, {})
    assert summarizer is not None
    try:
        summaries = fulfil(job.plan, job.conversion.transcript, summarizer, cache=cache)
    except SummarizationFailed:
        if job.fallback_policy is None:
            raise
        return _finish(_replanned(job), {}, fallback=True)
    return _finish(job, summaries)


async def _arun_once(job: Job, summarizer: AnySummarizer | None,
                     cache: SummaryCache | None) -> CompactionResult:
    if not _needs_summaries(job, summarizer):
        return _finish(job, {})
    assert summarizer is not None
    try:
        summaries = await afulfil(job.plan, job.conversion.transcript, summarizer, cache=cache)
    except SummarizationFailed:
        if job.fallback_policy is None:
            raise
        return _finish(_replanned(job), {}, fallback=True)
    return _finish(job, summaries)


def run(job: Job, summarizer: AnySummarizer | None = None,
        cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (synchronously) and apply a planned job; re-plan tighter if the output is over."""
    result = _run_once(job, summarizer, cache)
    for _ in range(_TIGHTENINGS):
        excess = _excess(job, result)
        tighter = _tightened(job, result, excess) if excess else None
        if tighter is None:
            break
        job, result = tighter, _run_once(tighter, summarizer, cache)
    return result


async def arun(job: Job, summarizer: AnySummarizer | None = None,
               cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (concurrently, awaiting async summarizers) and apply; as ``run`` otherwise."""
    result = await _arun_once(job, summarizer, cache)
    for _ in range(_TIGHTENINGS):
        excess = _excess(job, result)
        tighter = _tightened(job, result, excess) if excess else None
        if tighter is None:
            break
        job, result = tighter, await _arun_once(tighter, summarizer, cache)
    return result

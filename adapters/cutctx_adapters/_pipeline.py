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
    return Job(conversion, budget, plan, overhead, result_fields, on_summary_error, fallback)


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


def run(job: Job, summarizer: AnySummarizer | None = None,
        cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (synchronously) and apply a planned job."""
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


async def arun(job: Job, summarizer: AnySummarizer | None = None,
               cache: SummaryCache | None = None) -> CompactionResult:
    """Fulfil (concurrently, awaiting async summarizers) and apply a planned job."""
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

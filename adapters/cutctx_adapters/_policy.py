"""Which policies the adapters run, with which settings: the chain that loses least first.

Without a policy of the caller's, the adapters escalate: deduplicate repeated tool results, clip
oversized ones, mask old ones (keeping a digest), summarize the oldest span just large enough
(with a summarizer), and only then drop the oldest exchanges — user messages last of all; then
give back, newest first, what that took beyond the budget (``FillingPolicy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cutctx import (
    CompactionPolicy,
    DeduplicateResultsPolicy,
    DropOldestPolicy,
    FillingPolicy,
    PolicyChain,
    SpanSummarizingPolicy,
    TokenEstimator,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    UserLastDropPolicy,
    ValidationError,
)

from .prompts import DEFAULT_PROMPT_ID

__all__ = [
    "DEFAULT_DIGEST_TOKENS",
    "OnSummaryError",
    "PolicyOptions",
    "choose_policy",
]

OnSummaryError = Literal["raise", "fallback"]
DEFAULT_DIGEST_TOKENS = 48
"""Tokens a masked tool result keeps of what it said (first line, errors, codes, last line)."""


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    """Settings of the adapters' default chain and of how hard compaction may try to fit.

    * ``keep_recent_results``: newest tool results never masked.
    * ``keep_task``: the first user message (an agent's task) is pinned.
    * ``keep_user_turns``: user messages are summarized or dropped only after everything else.
    * ``digest_tokens``: what a masked tool result keeps of its text (0: the bare hashed stub).
    * ``max_result_tokens`` / ``max_result_share``: a tool result over this many tokens (or this
      share of the budget) is clipped to its head and tail before anything is masked.
    * ``on_summary_error``: ``"raise"`` a failed or unusable summary, or ``"fallback"`` to a plan
      without summaries.
    * ``strict``: refuse (``BudgetUnsatisfiable``) instead of relaxing ``keep_recent`` and
      clipping the newest results when the protected turns alone do not fit.
    """

    keep_recent_results: int = 2
    keep_task: bool = True
    keep_user_turns: bool = True
    digest_tokens: int = DEFAULT_DIGEST_TOKENS
    max_result_tokens: int | None = None
    max_result_share: float = 0.25
    on_summary_error: OnSummaryError = "raise"
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("keep_task", "keep_user_turns", "strict"):
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"{name} must be True or False", {"field": name})
        for name in ("keep_recent_results", "digest_tokens"):
            _whole(getattr(self, name), name, 0)
        if self.max_result_tokens is not None:
            _whole(self.max_result_tokens, "max_result_tokens", 1)
        share = self.max_result_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValidationError("max_result_share must be a fraction in (0, 1]",
                                  {"field": "max_result_share"})
        if self.on_summary_error not in ("raise", "fallback"):
            raise ValidationError("on_summary_error must be 'raise' or 'fallback'",
                                  {"field": "on_summary_error"})


def _whole(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{name} must be an int >= {minimum}", {"field": name})


def choose_policy(
    policy: CompactionPolicy | None,
    summarizer: object | None,
    options: PolicyOptions | None = None,
    stub_estimator: TokenEstimator | None = None,
) -> CompactionPolicy:
    """The caller's policy, else the adapters' chain (summarizing only with a summarizer)."""
    if summarizer is not None and not callable(summarizer):
        raise ValidationError("summarizer must be callable: (request, turns) -> summary text",
                              {"field": "summarizer"})
    if policy is not None:
        if not callable(getattr(policy, "decide", None)):
            raise ValidationError("policy must have a decide(transcript, budget) method",
                                  {"field": "policy"})
        return policy
    options = options or PolicyOptions()
    members: list[CompactionPolicy] = [
        DeduplicateResultsPolicy(estimator=stub_estimator),
        ToolResultClipPolicy(options.max_result_tokens,
                             max_result_fraction=options.max_result_share,
                             estimator=stub_estimator),
        ToolResultMaskingPolicy(options.keep_recent_results, digest_tokens=options.digest_tokens,
                                estimator=stub_estimator),
    ]
    if summarizer is not None:
        prompt_id = getattr(summarizer, "prompt_id", None) or DEFAULT_PROMPT_ID
        members.append(SpanSummarizingPolicy(prompt_id, user_turns_last=options.keep_user_turns))
    members.append(UserLastDropPolicy() if options.keep_user_turns else DropOldestPolicy())
    return FillingPolicy(PolicyChain(members), estimator=stub_estimator,
                         max_result_fraction=options.max_result_share,
                         max_result_tokens=options.max_result_tokens)

"""Which policies the adapters run, with which settings: the chain that loses least first.

Without a policy of the caller's, the adapters escalate: deduplicate repeated tool results, clip
oversized ones, mask old ones (keeping a digest of what they name; those no later turn refers
back to first), summarize the oldest span just large enough (with a summarizer), and only then
drop the oldest exchanges — what a person typed last of all; then give back, newest first, what
that took beyond the budget (``FillingPolicy``). Tool results include observations: tool output
an agent loop sends back as a user message (``_observations``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from cutctx import (
    DIGEST_STYLES,
    GIVE_WAY_ORDERS,
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
    UserMessageClipPolicy,
    ValidationError,
)

from ..history import Conversion, ObservationRule, check_rule, marked
from ..prompts import DEFAULT_PROMPT_ID

__all__ = [
    "DEFAULT_DIGEST_TOKENS",
    "OPTION_NAMES",
    "REQUIREMENT_TOKENS",
    "DigestStyle",
    "GiveWay",
    "OnSummaryError",
    "PolicyOptions",
    "choose_policy",
    "with_observations",
]

Out = TypeVar("Out")
OnSummaryError = Literal["raise", "fallback"]
DigestStyle = Literal["identifiers", "lines"]
"""What a stub's digest keeps (``digest``): what the result names, or its salient lines."""
GiveWay = Literal["value", "oldest"]
"""Which tool results are masked and dropped first (``give_way``)."""
DEFAULT_DIGEST_TOKENS = 48
"""Tokens a masked tool result keeps of what it said (what it names: errors, paths, symbols)."""
REQUIREMENT_TOKENS = 64
"""Tokens a person's message that must give way keeps of what it required (its prohibitions,
obligations, decisions and instructions, verbatim)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyOptions:
    """The adapters' default chain's options, and how hard compaction may try to fit: defined
    and checked here, once (``CompactionSettings`` has them as its own fields)."""

    keep_recent_results: int = 2
    """Newest tool results never masked."""
    keep_task: bool = True
    """The first user message (an agent's task) is pinned."""
    keep_user_turns: bool = True
    """User messages are summarized or dropped only after everything else."""
    digest_tokens: int = DEFAULT_DIGEST_TOKENS
    """What a masked tool result keeps of its text (0: the bare hashed stub)."""
    max_result_tokens: int | None = None
    """A tool result over this many tokens is clipped to its head and tail before anything is
    masked (None: ``max_result_share`` of the budget)."""
    max_result_share: float = 0.25
    """A tool result over this share of the budget is clipped (unless ``max_result_tokens``)."""
    on_summary_error: OnSummaryError = "raise"
    """``"raise"`` a failed or unusable summary, or ``"fallback"`` to a plan without summaries."""
    strict: bool = False
    """Refuse (``BudgetUnsatisfiable``) instead of relaxing ``keep_recent`` and clipping the
    newest results when the protected turns alone do not fit."""
    observations: ObservationRule = "auto"
    """Which user messages carry tool output (an agent loop's observations) and are treated as
    tool results: ``"auto"`` (right after the assistant's action and shaped like output),
    ``"after_assistant"``, ``"none"``, or a callable ``(message, index) -> bool``."""
    digest: DigestStyle = "identifiers"
    """What a masked result's digest keeps: what it names (``"identifiers"``: error types,
    codes, paths, symbols, numbers) or its salient lines (``"lines"``)."""
    give_way: GiveWay = "value"
    """Which results are masked and dropped first: ``"value"`` (those no later turn refers back
    to, and results before the agent's own steps) or ``"oldest"``."""

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
        check_rule(self.observations)
        for name, allowed in (("digest", DIGEST_STYLES), ("give_way", GIVE_WAY_ORDERS)):
            if getattr(self, name) not in allowed:
                raise ValidationError(f"{name} must be one of {', '.join(map(repr, allowed))}",
                                      {"field": name})

    def chain_options(self, **changes: Any) -> PolicyOptions:
        """These options alone (a settings value's too), with ``changes`` over them."""
        values = {name: getattr(self, name) for name in OPTION_NAMES}
        return PolicyOptions(**{**values, **changes})


OPTION_NAMES: tuple[str, ...] = tuple(PolicyOptions.__dataclass_fields__)
"""The chain's options, in their order."""


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
    people = options.keep_user_turns
    share = options.max_result_share if options.max_result_tokens is None else None
    members: list[CompactionPolicy] = [
        DeduplicateResultsPolicy(estimator=stub_estimator),
        ToolResultClipPolicy(options.max_result_tokens,
                             max_result_fraction=share,
                             estimator=stub_estimator),
        UserMessageClipPolicy(options.max_result_tokens,
                              max_result_fraction=share,
                              estimator=stub_estimator),
        ToolResultMaskingPolicy(options.keep_recent_results, digest_tokens=options.digest_tokens,
                                digest=options.digest, order=options.give_way,
                                estimator=stub_estimator),
    ]
    if summarizer is not None:
        prompt_id = getattr(summarizer, "prompt_id", None) or DEFAULT_PROMPT_ID
        members.append(SpanSummarizingPolicy(prompt_id, user_turns_last=people))
    members.append(UserLastDropPolicy(order=options.give_way, estimator=stub_estimator,
                                      requirement_tokens=REQUIREMENT_TOKENS) if people
                   else DropOldestPolicy())
    return FillingPolicy(PolicyChain(members), estimator=stub_estimator,
                         max_result_fraction=share,
                         max_result_tokens=options.max_result_tokens, people_first=people)


def with_observations(conversion: Conversion[Out], rule: ObservationRule) -> Conversion[Out]:
    """``conversion`` with its user turns marked as observations by ``rule`` (itself under
    ``"auto"``: the conversion marked them as it read each message)."""
    def message_of(turn_id: str) -> tuple[Mapping[str, Any], int]:
        part = conversion.parts[turn_id]
        return part.payload, part.index

    transcript = marked(conversion.transcript, rule, message_of)
    if transcript is conversion.transcript:
        return conversion
    return Conversion(transcript, conversion.parts, conversion.codec, conversion.task_turn_id,
                      conversion.reading)

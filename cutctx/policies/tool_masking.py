"""Mask old tool results to a hashed stub that keeps a digest of what they said; never twice."""

from __future__ import annotations

from .._checks import require_int, require_text
from .._digest import digest_ranges
from .._replaced import KIND_KEY, original_figures, replaced_text
from ..estimator import TokenEstimator
from ..types import (
    Action,
    CompactionBudget,
    CompactionPlan,
    Transcript,
    TranscriptTurn,
    TurnReplacement,
)
from ._replacing import chosen_estimator, replace_tool_results, tool_positions
from .masking import DEFAULT_PLACEHOLDER

__all__ = ["ToolResultMaskingPolicy"]


class ToolResultMaskingPolicy:
    """``ObservationMaskingPolicy``'s stubs, for the adapters' chain: a masked (or deduplicated)
    result is final and never masked again; a clipped one may be, and its stub then names the
    original. ``digest_tokens`` > 0 keeps a digest of the result (first line, error and result
    lines, codes, last line) within that many tokens, named in the plan as ranges of the
    result's text (the executor copies them). The hash is of the text's UTF-8 bytes.

    >>> ToolResultMaskingPolicy().name
    'tool_result_masking'
    """

    name = "tool_result_masking"
    version = "1.0.0"

    def __init__(self, keep_recent_results: int = 2, placeholder: str = DEFAULT_PLACEHOLDER, *,
                 digest_tokens: int = 0, estimator: TokenEstimator | None = None) -> None:
        self.keep_recent_results = require_int(keep_recent_results, "keep_recent_results")
        self.placeholder = require_text(placeholder, "placeholder")
        self.digest_tokens = require_int(digest_tokens, "digest_tokens")
        self.estimator, self._default_estimator = chosen_estimator(estimator)

    def stub_for(self, turn: TranscriptTurn) -> str:
        """The stub that replaces ``turn`` (before its digest): its original's size and hash."""
        tokens, sha = original_figures(turn, quoted=False)
        return f"{self.placeholder} (original: {tokens} tokens, sha256:{sha})"

    def replacement_for(self, turn: TranscriptTurn) -> TurnReplacement:
        """The stub and the digest's ranges, estimated as the executor will write them."""
        excerpt = (digest_ranges(turn.content, self.digest_tokens, self.estimator)
                   if self.digest_tokens else ())
        draft = TurnReplacement._checked(self.stub_for(turn), 0, excerpt)
        text = replaced_text(Action.MASK, turn.content, draft)
        return TurnReplacement._checked(draft.content, self.estimator.estimate_tokens(text),
                                        excerpt)

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        tools = tool_positions(transcript)
        spared = self.keep_recent_results
        return replace_tool_results(
            transcript, budget, lambda _position, turn: self.replacement_for(turn),
            action=Action.MASK, candidates=tools[: len(tools) - spared] if spared else tools,
            may_replace=lambda turn: turn.metadata.get(KIND_KEY) in (None, "clipped"),
            policy_name=self.name, policy_version=self.version, estimator=self.estimator,
            default_estimator=self._default_estimator)

    def __repr__(self) -> str:
        return (f"ToolResultMaskingPolicy(keep_recent_results={self.keep_recent_results}, "
                f"placeholder={self.placeholder!r}, digest_tokens={self.digest_tokens}, "
                f"estimator={self.estimator!r})")

"""Mask old tool results to a hashed stub that keeps a digest of what they said; never twice."""

from __future__ import annotations

from .._checks import require_int, require_text
from .._digest import digest
from .._replaced import KIND_KEY, original_figures
from ..estimator import TokenEstimator
from ..types import CompactionBudget, CompactionPlan, Transcript, TranscriptTurn
from ._replacing import chosen_estimator, replace_tool_results
from .masking import DEFAULT_PLACEHOLDER

__all__ = ["ToolResultMaskingPolicy"]


class ToolResultMaskingPolicy:
    """``ObservationMaskingPolicy``'s stubs, for the adapters' chain: a masked (or deduplicated)
    result is final and never masked again; a clipped one may be, and its stub then names the
    original. ``digest_tokens`` > 0 appends a digest of the result (first line, error and result
    lines, codes, last line) within that many tokens; 0 gives exactly 0.1.0's stub.

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
        """The text that replaces ``turn``: its original's size and hash, then its digest."""
        tokens, sha = original_figures(turn)
        stub = f"{self.placeholder} (original: {tokens} tokens, sha256:{sha})"
        if not self.digest_tokens:
            return stub
        lines = digest(turn.content, self.digest_tokens, self.estimator)
        return f"{stub}\n{lines}" if lines else stub

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        def body(_position: int, turn: TranscriptTurn) -> tuple[str, int] | None:
            stub = self.stub_for(turn)
            return stub, self.estimator.estimate_tokens(stub)

        return replace_tool_results(
            transcript, budget, body, kind="masked", spare_recent=self.keep_recent_results,
            may_replace=lambda turn: turn.metadata.get(KIND_KEY) in (None, "clipped"),
            policy_name=self.name, policy_version=self.version, estimator=self.estimator,
            default_estimator=self._default_estimator)

    def __repr__(self) -> str:
        return (f"ToolResultMaskingPolicy(keep_recent_results={self.keep_recent_results}, "
                f"placeholder={self.placeholder!r}, digest_tokens={self.digest_tokens}, "
                f"estimator={self.estimator!r})")

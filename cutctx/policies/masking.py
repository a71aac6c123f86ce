"""Replace old tool results with a short, content-free stub (observation masking)."""

from __future__ import annotations

from math import ceil

from .._canonical import sha256_of
from .._checks import require_int, require_text
from ..actions import Action, TurnAction, TurnReplacement
from ..errors import ValidationError
from ..estimator import CharRatioEstimator, TokenEstimator
from ..plan import CompactionPlan, build_plan, opening
from ..transcript import CompactionBudget, Role, Transcript, TranscriptTurn

__all__ = ["DEFAULT_PLACEHOLDER", "ObservationMaskingPolicy"]

DEFAULT_PLACEHOLDER = "[tool result masked by cutctx]"


class ObservationMaskingPolicy:
    """Masks TOOL turns oldest first, sparing the newest ``keep_recent_results`` of them.

    A turn is masked only when its stub is estimated strictly smaller than the turn.
    """

    name = "observation_masking"
    version = "1.0.0"

    def __init__(
        self,
        keep_recent_results: int = 2,
        placeholder: str = DEFAULT_PLACEHOLDER,
        *,
        estimator: TokenEstimator | None = None,
    ) -> None:
        self.keep_recent_results = require_int(keep_recent_results, "keep_recent_results")
        self.placeholder = require_text(placeholder, "placeholder")
        if estimator is not None and not callable(getattr(estimator, "estimate_tokens", None)):
            raise ValidationError("estimator must have an estimate_tokens(text) method",
                                  {"field": "estimator"})
        self._default_estimator = estimator is None
        self.estimator: TokenEstimator = CharRatioEstimator() if estimator is None else estimator

    def stub_for(self, turn: TranscriptTurn) -> str:
        """The text that replaces a masked turn: placeholder, original size and hash."""
        return (f"{self.placeholder} (original: {turn.token_estimate} tokens, "
                f"sha256:{sha256_of(turn.content)})")

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure, actions = opening(transcript, budget)
        turns = transcript.turns
        tool = Role.TOOL
        tool_positions = [p for p, turn in enumerate(turns) if turn.role is tool]
        spared = self.keep_recent_results
        candidates = tool_positions[: len(tool_positions) - spared] if spared else tool_positions
        total = transcript.token_estimate()
        max_tokens = budget.max_tokens
        untouchable = structure.untouchable
        stub_for = self.stub_for
        estimate_tokens = self.estimator.estimate_tokens
        # The stub and estimate written out here when they are this class's own (the loop runs
        # once per masked result: thousands of times at 10k turns).
        own_stub = type(self).stub_for is ObservationMaskingPolicy.stub_for
        head = f"{self.placeholder} (original: "
        estimator = self.estimator
        per_token = (estimator.chars_per_token if type(estimator) is CharRatioEstimator
                     else None)
        stubbed = False
        mask, checked, trusted = Action.MASK, TurnReplacement._checked, TurnAction._trusted
        for position in candidates:
            if total <= max_tokens:
                break
            if untouchable[position]:
                continue
            turn = turns[position]
            stub = (f"{head}{turn.token_estimate} tokens, sha256:{sha256_of(turn.content)})"
                    if own_stub else stub_for(turn))
            estimate = (ceil(len(stub) / per_token) if per_token is not None
                        else estimate_tokens(stub))
            if estimate < turn.token_estimate:
                stubbed = True
                actions[position] = trusted(turn.turn_id, mask, None, checked(stub, estimate))
                total -= turn.token_estimate - estimate
        ratio = None
        if stubbed and self._default_estimator and isinstance(self.estimator, CharRatioEstimator):
            ratio = self.estimator.chars_per_token
        return build_plan(transcript, budget, actions, (), policy_name=self.name,
                          policy_version=self.version, estimator_ratio=ratio,
                          tokens_after=total)

    def __repr__(self) -> str:
        return (f"ObservationMaskingPolicy(keep_recent_results={self.keep_recent_results}, "
                f"placeholder={self.placeholder!r}, estimator={self.estimator!r})")

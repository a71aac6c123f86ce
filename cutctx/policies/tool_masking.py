"""Mask old tool results to a hashed stub that keeps a digest of what they said; never twice."""

from __future__ import annotations

from .._checks import require_int, require_text
from .._digest import (
    DIGEST_STYLES,
    Found,
    TextFacts,
    digest_ranges,
    identifier_ranges,
    text_facts,
)
from .._references import GIVE_WAY_ORDERS, later_references
from .._replaced import KIND_KEY, original_figures, replaced_text
from ..actions import REPLACEMENT_KIND, Action, Excerpt, TurnReplacement
from ..errors import ValidationError
from ..estimator import TokenEstimator
from ..plan import CompactionPlan
from ..transcript import CompactionBudget, Transcript, TranscriptTurn
from ._replacing import chosen_estimator, replace_tool_results, result_positions
from .masking import DEFAULT_PLACEHOLDER

__all__ = ["ToolResultMaskingPolicy"]

CLIPPED = REPLACEMENT_KIND[Action.CLIP]


class ToolResultMaskingPolicy:
    """``ObservationMaskingPolicy``'s stubs, for the adapters' chain: a masked (or deduplicated)
    result is final and never masked again; a clipped one may be, and its stub then names the
    original. Tool results are TOOL turns and observations (``cutctx.observation``).
    ``digest_tokens`` > 0 keeps a digest of the result within that many tokens, named in the
    plan as ranges of the result's text (the executor copies them): ``digest="lines"`` its
    first line, error and result lines, codes and last line; ``"identifiers"`` what it names
    (error types, paths, symbols, numbers). ``order``: which results give way first
    (``GIVE_WAY_ORDERS``: ``value`` masks first those no later turn refers back to). The hash
    is of the text's UTF-8 bytes.

    >>> ToolResultMaskingPolicy().name
    'tool_result_masking'
    """

    name = "tool_result_masking"
    version = "1.0.0"

    def __init__(self, keep_recent_results: int = 2, placeholder: str = DEFAULT_PLACEHOLDER, *,
                 digest_tokens: int = 0, digest: str = "lines", order: str = "oldest",
                 estimator: TokenEstimator | None = None) -> None:
        self.keep_recent_results = require_int(keep_recent_results, "keep_recent_results")
        self.placeholder = require_text(placeholder, "placeholder")
        self.digest_tokens = require_int(digest_tokens, "digest_tokens")
        if digest not in DIGEST_STYLES:
            raise ValidationError(f"digest must be one of {', '.join(DIGEST_STYLES)}",
                                  {"field": "digest"})
        if order not in GIVE_WAY_ORDERS:
            raise ValidationError(f"order must be one of {', '.join(GIVE_WAY_ORDERS)}",
                                  {"field": "order"})
        self.digest = digest
        self.order = order
        self.estimator, self._default_estimator = chosen_estimator(estimator)

    def stub_for(self, turn: TranscriptTurn) -> str:
        """The stub that replaces ``turn`` (before its digest): its original's size and hash."""
        tokens, sha = original_figures(turn, quoted=False)
        return f"{self.placeholder} (original: {tokens} tokens, sha256:{sha})"

    def replacement_for(self, turn: TranscriptTurn,
                        known: dict[str, Found] | None = None) -> TurnReplacement:
        """The stub and the digest's ranges, estimated as the executor will write them
        (``known``: identifiers found before in the caller's texts, read and added to)."""
        if not self.digest_tokens:
            excerpt: Excerpt = ()
        elif self.digest == "identifiers":
            excerpt = identifier_ranges(turn.content, self.digest_tokens, self.estimator, known)
        else:
            excerpt = digest_ranges(turn.content, self.digest_tokens, self.estimator)
        draft = TurnReplacement._checked(self.stub_for(turn), 0, excerpt)
        text = replaced_text(Action.MASK, turn.content, draft)
        return TurnReplacement._checked(draft.content, self.estimator.estimate_tokens(text),
                                        excerpt)

    def candidates(self, transcript: Transcript, budget: CompactionBudget) -> list[int]:
        """Positions of the results that may be masked, in the order they give way (by value
        only where it matters: when masking them all would take more than the budget needs)."""
        results = result_positions(transcript)
        spared = self.keep_recent_results
        candidates = results[: len(results) - spared] if spared else results
        if self.order == "value" and _more_than_needed(transcript, budget, candidates):
            references = later_references(transcript)
            candidates.sort(key=lambda position: (references[position] > 0, position))
        return candidates

    def _remembered(self, turn: TranscriptTurn, facts: TextFacts) -> TurnReplacement:
        """``replacement_for(turn)``, found once per turn and options in ``facts`` (a session
        plans one history under several pins: the same turns, masked alike)."""
        key = (id(turn), self.placeholder, self.digest_tokens, self.digest, self.estimator)
        try:
            entry = facts.replacements.get(key)
        except TypeError:  # an estimator that cannot be hashed: found again each time
            return self.replacement_for(turn, facts.identifiers)
        if entry is not None and entry[0] is turn:
            return entry[1]
        replacement = self.replacement_for(turn, facts.identifiers)
        facts.replacements[key] = (turn, replacement)
        return replacement

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        facts = text_facts(transcript)
        return replace_tool_results(
            transcript, budget, lambda _position, turn: self._remembered(turn, facts),
            action=Action.MASK, candidates=self.candidates(transcript, budget),
            may_replace=lambda turn: turn.metadata.get(KIND_KEY) in (None, CLIPPED),
            policy_name=self.name, policy_version=self.version, estimator=self.estimator,
            default_estimator=self._default_estimator)

    def __repr__(self) -> str:
        return (f"ToolResultMaskingPolicy(keep_recent_results={self.keep_recent_results}, "
                f"placeholder={self.placeholder!r}, digest_tokens={self.digest_tokens}, "
                f"digest={self.digest!r}, order={self.order!r}, estimator={self.estimator!r})")


def _more_than_needed(transcript: Transcript, budget: CompactionBudget,
                      candidates: list[int]) -> bool:
    """Whether the candidates hold more than the transcript is over the budget (so some of
    them stay whole, and which ones matters)."""
    over = transcript.token_estimate() - budget.max_tokens
    turns = transcript.turns
    return over > 0 and sum(turns[p].token_estimate for p in candidates) > over

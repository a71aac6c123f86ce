"""Clip oversized tool results to their head and tail (before anything is masked)."""

from __future__ import annotations

import math

from .._checks import require_int
from .._clipping import atoms_of, plan_clip
from .._replaced import KIND_KEY, is_person, original_figures, text_sha256
from .._structure import require_inputs
from ..actions import REPLACEMENT_KIND, Action, TurnReplacement
from ..errors import ValidationError
from ..estimator import TokenEstimator
from ..plan import CompactionPlan
from ..transcript import CompactionBudget, Role, Transcript, TranscriptTurn
from ._replacing import chosen_estimator, replace_tool_results, result_positions
from .dedupe import DeduplicateResultsPolicy, later_copies

__all__ = ["MIN_CLIP_TOKENS", "ToolResultClipPolicy", "UserMessageClipPolicy", "subject_of"]

CLIPPED = REPLACEMENT_KIND[Action.CLIP]

MIN_CLIP_TOKENS = 128
"""The least a share of the budget clips a result to: a marker takes about 50 tokens."""


def subject_of(turn: TranscriptTurn) -> str:
    """What a clip's marker calls ``turn``: a tool result, an output (an observation), or a
    message (what a person typed)."""
    if turn.role is Role.TOOL:
        return "tool result"
    return "message" if is_person(turn) else "output"


class ToolResultClipPolicy:
    """Tool results (observations too) over a cap keep their head and tail around a marker;
    the largest first, while over budget. The cap is ``max_result_tokens``, or
    ``max_result_fraction`` of the budget, whichever is smaller (at least one must be set). A
    result protected only for being recent is clipped too: protection keeps a result's head and
    tail, not its whole size, so one huge new result gives way before anything older does. A
    clip wider than the cap (one an earlier plan widened into room it had) is clipped again to
    the cap. A result over the cap with an identical later copy becomes a pointer to that copy
    instead (as ``DeduplicateResultsPolicy`` writes it): lossless before lossy.

    >>> ToolResultClipPolicy(2_000).cap(CompactionBudget(100_000))
    2000
    """

    name = "clip_tool_results"
    version = "1.0.0"

    def __init__(self, max_result_tokens: int | None = None, *,
                 max_result_fraction: float | None = 0.25,
                 estimator: TokenEstimator | None = None) -> None:
        if max_result_tokens is not None:
            require_int(max_result_tokens, "max_result_tokens", minimum=1)
        if max_result_fraction is not None and (
                isinstance(max_result_fraction, bool)
                or not isinstance(max_result_fraction, int | float)
                or not math.isfinite(max_result_fraction) or not 0 < max_result_fraction <= 1):
            raise ValidationError("max_result_fraction must be a fraction in (0, 1]",
                                  {"field": "max_result_fraction"})
        if max_result_tokens is None and max_result_fraction is None:
            raise ValidationError("set max_result_tokens or max_result_fraction",
                                  {"field": "max_result_tokens"})
        self.max_result_tokens = max_result_tokens
        self.max_result_fraction = max_result_fraction
        self.estimator, self._default_estimator = chosen_estimator(estimator)
        self._pointers = DeduplicateResultsPolicy(estimator=estimator)

    def cap(self, budget: CompactionBudget) -> int:
        """The largest a tool result may stay, for this budget: never less than
        ``MIN_CLIP_TOKENS`` (within the budget), so a small budget still holds a clip that says
        something beside its marker, rather than a result giving way whole."""
        caps = [] if self.max_result_tokens is None else [self.max_result_tokens]
        if self.max_result_fraction is not None:
            share = max(1, math.floor(budget.max_tokens * self.max_result_fraction))
            caps.append(max(share, min(MIN_CLIP_TOKENS, budget.max_tokens)))
        return min(caps)

    def positions(self, transcript: Transcript) -> list[int]:
        """Where the turns this policy clips stand: the tool results, oldest first."""
        return result_positions(transcript)

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        require_inputs(transcript, budget)
        cap = self.cap(budget)
        turns = transcript.turns
        over = [p for p in self.positions(transcript) if turns[p].token_estimate > cap]
        over.sort(key=lambda p: (-turns[p].token_estimate, p))  # the largest gives way first
        copies = later_copies(transcript) if over else {}

        def body(position: int, turn: TranscriptTurn) -> TurnReplacement | None:
            later = copies.get(position)
            if later is not None:  # lossless first: a pointer to its copy (clipped if need be)
                return self._pointers.pointer(turn, turns[later])
            subject = subject_of(turn)
            if turn.metadata.get(KIND_KEY) == CLIPPED:  # a wider clip, clipped to its share
                tokens, sha = original_figures(turn, quoted=False)
                clip = plan_clip(turn.content, turn.token_estimate, cap, self.estimator,
                                 original_tokens=tokens, original_sha256=sha, subject=subject)
            else:
                clip = plan_clip(turn.content, turn.token_estimate, cap, self.estimator,
                                 original_sha256=text_sha256(turn), subject=subject,
                                 atoms=atoms_of(turn.metadata, len(turn.content)))
            return None if clip is None else clip.replacement()

        return replace_tool_results(
            transcript, budget, body, action=Action.CLIP, candidates=over, recent_too=True,
            may_replace=lambda turn: turn.metadata.get(KIND_KEY) in (None, CLIPPED),
            policy_name=self.name, policy_version=self.version, estimator=self.estimator,
            default_estimator=self._default_estimator)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.max_result_tokens!r}, max_result_fraction="
                f"{self.max_result_fraction!r}, estimator={self.estimator!r})")


class UserMessageClipPolicy(ToolResultClipPolicy):
    """``ToolResultClipPolicy`` for what a person typed: a message over the same cap (a pasted
    log, a file dropped into the chat) keeps its head, tail and salient lines around a marker
    (``cutctx clipped this message``), so it costs its share like a tool result, not the rest
    of the conversation. A turn kept exactly as given (the pinned task) is never clipped here.

    >>> UserMessageClipPolicy(max_result_fraction=0.25).name
    'clip_user_messages'
    """

    name = "clip_user_messages"
    version = "1.0.0"

    def positions(self, transcript: Transcript) -> list[int]:
        return [p for p, turn in enumerate(transcript.turns) if is_person(turn)]

"""Replace a tool result repeated later (a file re-read, a command re-run) by a pointer to it."""

from __future__ import annotations

from .._replaced import CONTENT_KEY, REF_LABEL_KEY, is_final, is_result, original_figures
from .._structure import require_inputs
from ..actions import Action, TurnReplacement
from ..estimator import TokenEstimator
from ..plan import CompactionPlan
from ..transcript import CompactionBudget, Role, Transcript, TranscriptTurn
from ._replacing import chosen_estimator, replace_tool_results

__all__ = ["DeduplicateResultsPolicy", "later_copies"]


def _identity(turn: TranscriptTurn) -> str:
    """What two results must share to be the same: the caller's hash of the whole body when it
    gave one (results with images have only placeholder text), else the text itself (a TOOL
    turn and an observation never match: one could not stand for the other)."""
    key = turn.metadata.get(CONTENT_KEY)
    kind = "tool:" if turn.role is Role.TOOL else "observation:"
    return kind + ("key:" + key if key is not None else "text:" + turn.content)


def later_copies(transcript: Transcript) -> dict[int, int]:
    """Each tool result's position -> the position of its newest identical copy, for the
    results that have one (final turns, stubs and clips, are neither)."""
    identities = [(position, _identity(turn)) for position, turn in enumerate(transcript.turns)
                  if is_result(turn) and not is_final(turn)]
    latest = {identity: position for position, identity in identities}
    return {position: latest[identity] for position, identity in identities
            if latest[identity] > position}


class DeduplicateResultsPolicy:
    """A tool result identical to a later one becomes a short stub naming that later result;
    oldest first, while over budget, recent results too. Nothing is lost: the later copy stays
    in the view, whole or clipped to its share (a chain turns the stub into a mask stub if a
    later member takes the copy away).

    >>> DeduplicateResultsPolicy().name
    'deduplicate_tool_results'
    """

    name = "deduplicate_tool_results"
    version = "1.0.0"

    def __init__(self, *, estimator: TokenEstimator | None = None) -> None:
        self.estimator, self._default_estimator = chosen_estimator(estimator)

    @staticmethod
    def stub_for(turn: TranscriptTurn, later: TranscriptTurn | str) -> str:
        """The text that replaces a result identical to ``later``: named as a model can find
        it (``cutctx.ref``, set by the adapters: its tool call), else by turn id; an
        observation (tool output in a user message) as the later message with the same
        output."""
        if isinstance(later, str):
            label = f"turn {later}"
        elif later.role is Role.USER and REF_LABEL_KEY not in later.metadata:
            label = "a message with the same output"
        else:
            label = later.metadata.get(REF_LABEL_KEY) or f"turn {later.turn_id}"
        tokens, sha = original_figures(turn, quoted=False)
        subject = "tool result" if turn.role is Role.TOOL else "output"
        return (f"[duplicate {subject}: identical to {label}, later in this conversation; "
                f"original: {tokens} tokens, sha256:{sha}]")

    def pointer(self, turn: TranscriptTurn, later: TranscriptTurn) -> TurnReplacement:
        """The body of ``turn`` deduplicated against its identical ``later`` copy."""
        stub = self.stub_for(turn, later)
        return TurnReplacement._checked(stub, self.estimator.estimate_tokens(stub),
                                        refers_to=later.turn_id)

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        require_inputs(transcript, budget)
        turns = transcript.turns
        copies = later_copies(transcript)

        def body(position: int, turn: TranscriptTurn) -> TurnReplacement | None:
            later = copies.get(position)
            return None if later is None else self.pointer(turn, turns[later])

        # A pointer loses nothing, so a result protected only for being recent may become one.
        return replace_tool_results(
            transcript, budget, body, action=Action.DEDUPLICATE, recent_too=True,
            policy_name=self.name, policy_version=self.version, estimator=self.estimator,
            default_estimator=self._default_estimator)

    def __repr__(self) -> str:
        return f"DeduplicateResultsPolicy(estimator={self.estimator!r})"

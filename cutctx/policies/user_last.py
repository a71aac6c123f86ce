"""Drop whole exchanges oldest first, user messages only after everything else."""

from __future__ import annotations

from .._checks import require_int
from .._references import GIVE_WAY_ORDERS, later_references
from .._replaced import KIND_KEY, is_person, is_result, original_figures, replaced_text
from .._requirements import requirement_ranges
from .._structure import Structure
from ..actions import (
    REPLACEMENT_KIND,
    SUMMARY_TURN_ID_PREFIX,
    Action,
    TurnAction,
    TurnReplacement,
)
from ..errors import ValidationError
from ..estimator import TokenEstimator
from ..plan import CompactionPlan, build_plan, opening
from ..transcript import CompactionBudget, Transcript, TranscriptTurn
from ._replacing import chosen_estimator

__all__ = ["REQUIREMENTS_PLACEHOLDER", "UserLastDropPolicy"]

REQUIREMENTS_PLACEHOLDER = "[user message shortened by cutctx to its requirements]"
_MASKED, _CLIPPED = REPLACEMENT_KIND[Action.MASK], REPLACEMENT_KIND[Action.CLIP]
_PERSON, _STUB = 4, 5
"""The passes of a person's exchange: shortened to its requirements (or dropped), then the
shortened ones dropped."""


class UserLastDropPolicy:
    """``DropOldestPolicy`` in passes, each oldest first and only while still over: the
    removable exchanges holding neither a user turn nor a summary (old assistant text, tool
    exchanges), then the summaries, then the exchanges with user turns. User messages are short
    and carry the requirements and corrections; a summary is old history already compressed.
    A user turn marked as an observation (``cutctx.observation``: tool output sent as a user
    message) is no person's message: it goes with the first pass.

    ``order="value"`` splits the first pass by what is kept: exchanges made only of tool
    results that no later turn refers back to go first, then those results that one does, then
    the agent's own steps (its messages and tool-call exchanges).

    ``requirement_tokens`` > 0: a person's message that must give way is first shortened to
    the sentences stating what the person required (prohibitions, obligations, decisions,
    instructions, with the names and numbers they bind), verbatim, within that many tokens — a
    MASK whose stub keeps those sentences as its excerpt; a message stating none is dropped.
    Only then, oldest first and while still over, are the shortened ones dropped.

    >>> UserLastDropPolicy().name
    'drop_oldest_user_last'
    """

    name = "drop_oldest_user_last"
    version = "1.0.0"

    def __init__(self, *, order: str = "oldest", requirement_tokens: int = 0,
                 estimator: TokenEstimator | None = None) -> None:
        if order not in GIVE_WAY_ORDERS:
            raise ValidationError(f"order must be one of {', '.join(GIVE_WAY_ORDERS)}",
                                  {"field": "order"})
        self.order = order
        self.requirement_tokens = require_int(requirement_tokens, "requirement_tokens")
        self.estimator, _ = chosen_estimator(estimator)

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure, actions = opening(transcript, budget)
        turns = transcript.turns
        total = transcript.token_estimate()
        if total > budget.max_tokens:
            rank = self._ranks(transcript, structure)
            for current in sorted({*rank, *((_STUB,) if _PERSON in rank else ())}):
                for index, members in enumerate(structure.exchanges):
                    if total <= budget.max_tokens:
                        break
                    if rank[index] != current or not structure.removable_exchange[index]:
                        continue
                    if current == _PERSON and len(members) == 1 and self.requirement_tokens:
                        shortened = self._shortened(turns[members[0]])
                        if shortened is not None:  # as short as its requirements: a stub
                            actions[members[0]] = shortened
                            total -= (turns[members[0]].token_estimate
                                      - _kept_tokens(shortened, turns[members[0]]))
                            rank[index] = _STUB
                            continue
                    for position in members:  # (a stub made in pass 4 costs its estimate)
                        total -= _kept_tokens(actions[position], turns[position])
                        actions[position] = TurnAction._trusted(turns[position].turn_id,
                                                                Action.DROP)
        return build_plan(transcript, budget, actions, (), policy_name=self.name,
                          policy_version=self.version, tokens_after=total)

    def _shortened(self, turn: TranscriptTurn) -> TurnAction | None:
        """``turn`` (a person's message) as short as the requirements it states: masked to
        them, or kept as it is when that is no longer (a short message, or one shortened by
        an earlier plan); None when it states none."""
        if not is_person(turn) or turn.metadata.get(KIND_KEY) not in (None, _CLIPPED):
            return None
        excerpt = requirement_ranges(turn.content, self.requirement_tokens, self.estimator)
        if not excerpt:
            return None
        tokens, sha = original_figures(turn, quoted=False)
        draft = TurnReplacement._checked(
            f"{REQUIREMENTS_PLACEHOLDER} (original: {tokens} tokens, sha256:{sha})", 0, excerpt)
        estimate = self.estimator.estimate_tokens(replaced_text(Action.MASK, turn.content, draft))
        if estimate >= turn.token_estimate:
            return TurnAction._trusted(turn.turn_id, Action.KEEP)
        return TurnAction._trusted(turn.turn_id, Action.MASK, replacement=(
            TurnReplacement._checked(draft.content, estimate, excerpt)))

    def _ranks(self, transcript: Transcript, structure: Structure) -> list[int]:
        """Per exchange, the pass it goes in: 0-2 plain exchanges (one pass unless ``value``),
        3 summaries, 4 anything with a message a person typed (dropped last; shortened first,
        then dropped in 5, with ``requirement_tokens``), 5 a person's message already
        shortened by an earlier plan."""
        turns = transcript.turns
        references = later_references(transcript) if self.order == "value" else None
        out: list[int] = []
        for members in structure.exchanges:
            if any(is_person(turns[p]) for p in members):
                final = all(turns[p].metadata.get(KIND_KEY) == _MASKED for p in members)
                out.append(_STUB if final and self.requirement_tokens else _PERSON)
            elif any(turns[p].turn_id.startswith(SUMMARY_TURN_ID_PREFIX) for p in members):
                out.append(3)
            elif references is None:
                out.append(0)
            elif all(is_result(turns[p]) for p in members):
                out.append(1 if any(references[p] for p in members) else 0)
            else:
                out.append(2)
        return out

    def __repr__(self) -> str:
        return (f"UserLastDropPolicy(order={self.order!r}, requirement_tokens="
                f"{self.requirement_tokens}, estimator={self.estimator!r})")


def _kept_tokens(action: TurnAction, turn: TranscriptTurn) -> int:
    """What ``action`` keeps of ``turn``: its replacement's estimate, or the whole turn."""
    return turn.token_estimate if action.replacement is None else action.replacement.token_estimate

"""Summarize the oldest span just large enough to reach the budget, in whole exchanges."""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import require_int, require_ratio, require_text
from .._replaced import is_person
from .._structure import Structure, turn_id_set
from ..actions import SUMMARY_TURN_ID_PREFIX, Action, SummarizationRequest, TurnAction
from ..errors import ValidationError
from ..plan import CompactionPlan, build_plan, opening
from ..transcript import CompactionBudget, Transcript
from .summarizing import group_id_for, summary_spans

__all__ = ["SpanSummarizingPolicy"]


@dataclass(frozen=True, slots=True)
class _Fold:
    """One span to summarize: its positions, size, ids, group and the summary's size."""

    positions: tuple[int, ...]
    tokens: int
    turn_ids: tuple[str, ...]
    group_id: str
    target: int


def _saved(folds: list[_Fold]) -> int:
    return sum(fold.tokens - fold.target for fold in folds)


class SpanSummarizingPolicy:
    """Folds only as much of the oldest removable history as the budget needs.

    0.1.0's ``SummarizingPolicy`` folds the whole oldest span, so a small overshoot summarizes
    almost everything. This one takes the oldest span's whole exchanges in order until the saving
    (span tokens - target) covers what is over, then stops; a span too small to cover it is taken
    whole and the next one continues (one request each). When every span folded at
    ``target_ratio`` is still not enough, the summaries are asked to be shorter (at least
    ``min_target_tokens``) rather than leave the rest to a drop. With ``user_turns_last``, user
    turns (not observations: ``is_person``) are folded last: a span passes over them (they
    stay, verbatim, after its summary) unless that cannot reach the goal, when the spans take
    them in too — a summary that keeps a user's requirements loses less than dropping them.

    >>> SpanSummarizingPolicy("cutctx/summary@1").name
    'span_summarizing'
    """

    name = "span_summarizing"
    version = "1.0.0"

    def __init__(self, prompt_id: str, target_ratio: float = 0.2, min_span_turns: int = 4, *,
                 user_turns_last: bool = False, min_target_tokens: int = 64) -> None:
        self.prompt_id = require_text(prompt_id, "prompt_id")
        self.target_ratio = require_ratio(target_ratio, "target_ratio")
        self.min_span_turns = require_int(min_span_turns, "min_span_turns", minimum=1)
        if not isinstance(user_turns_last, bool):
            raise ValidationError("user_turns_last must be True or False",
                                  {"field": "user_turns_last"})
        self.user_turns_last = user_turns_last
        self.min_target_tokens = require_int(min_target_tokens, "min_target_tokens", minimum=1)

    def _target(self, tokens: int) -> int:
        return max(1, round(tokens * self.target_ratio))

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        structure, actions = opening(transcript, budget)
        turns = transcript.turns
        need = transcript.token_estimate() - budget.max_tokens
        folds: list[_Fold] = []
        if need > 0:
            folds = self._folds(structure, transcript, need, self.user_turns_last)
            if self.user_turns_last and _saved(folds) < need:
                # Passing over user turns cannot reach the goal: a summary that takes them in
                # (the prompt keeps their requirements verbatim) loses less than a drop.
                wider = self._folds(structure, transcript, need, False)
                if _saved(wider) > _saved(folds):
                    folds = wider
        requests: list[SummarizationRequest] = []
        for fold in folds:
            for position in fold.positions:
                actions[position] = TurnAction._trusted(turns[position].turn_id,
                                                        Action.SUMMARIZE,
                                                        summary_group=fold.group_id)
            requests.append(SummarizationRequest(fold.group_id, fold.turn_ids, fold.target,
                                                 self.prompt_id))
        return build_plan(transcript, budget, actions, requests, policy_name=self.name,
                          policy_version=self.version)

    def _folds(self, structure: Structure, transcript: Transcript, need: int,
               users_last: bool) -> list[_Fold]:
        """The spans to fold (oldest first, just enough) and their summaries' sizes."""
        turns = transcript.turns
        passed_over = None
        if users_last:
            def passed_over(position: int) -> bool:
                return is_person(turns[position])
        taken_ids = turn_id_set(transcript)
        chosen_spans: list[tuple[list[int], int, tuple[str, ...], str]] = []
        left = need
        for span in summary_spans(structure, passed_over):
            if left <= 0:
                break
            chosen = self._just_enough(span, structure, transcript, left)
            if chosen is None:
                continue
            tokens = sum(turns[p].token_estimate for p in chosen)
            turn_ids = tuple(turns[p].turn_id for p in chosen)
            group_id = group_id_for(turn_ids)
            if SUMMARY_TURN_ID_PREFIX + group_id in taken_ids:
                continue
            chosen_spans.append((chosen, tokens, turn_ids, group_id))
            left -= tokens - self._target(tokens)
        targets = self._targets([tokens for _, tokens, _, _ in chosen_spans], left)
        return [_Fold(tuple(chosen), tokens, turn_ids, group_id, target)
                for (chosen, tokens, turn_ids, group_id), target
                in zip(chosen_spans, targets, strict=True)]

    def _targets(self, sizes: list[int], short: int) -> list[int]:
        """Each fold's summary size: ``target_ratio`` of it; when folding every span at that
        ratio still leaves the plan ``short`` tokens over, the targets shrink together (down to
        ``min_target_tokens`` each) so that summaries, not drops, make it fit."""
        targets = [self._target(size) for size in sizes]
        total = sum(targets)
        if short <= 0 or not targets:
            return targets
        allowed = max(total - short, self.min_target_tokens * len(targets))
        if allowed >= total:
            return targets
        scaled = [max(self.min_target_tokens, target * allowed // total) for target in targets]
        return [min(target, size - 1) if size > 1 else target
                for target, size in zip(scaled, sizes, strict=True)]

    def _just_enough(self, span: list[int], structure: Structure, transcript: Transcript,
                     need: int) -> list[int] | None:
        """The shortest prefix of ``span`` ending on a whole exchange with at least
        ``min_span_turns`` turns whose saving covers ``need`` (else the whole span), or None
        if even the whole span is too short or saves nothing."""
        if len(span) < self.min_span_turns:
            return None
        turns = transcript.turns
        tokens = 0
        reach = -1  # the last member position of every exchange begun so far
        for count, position in enumerate(span, start=1):
            tokens += turns[position].token_estimate
            reach = max(reach, *structure.exchanges[structure.exchange_of[position]])
            whole = reach <= position
            if whole and count >= self.min_span_turns and tokens - self._target(tokens) >= need:
                return span[:count]
        if self._target(tokens) >= tokens:
            return None
        return span

    def __repr__(self) -> str:
        return (f"SpanSummarizingPolicy({self.prompt_id!r}, target_ratio={self.target_ratio}, "
                f"min_span_turns={self.min_span_turns}, user_turns_last={self.user_turns_last}, "
                f"min_target_tokens={self.min_target_tokens})")

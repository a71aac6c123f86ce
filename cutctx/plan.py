"""A plan: a decision for every turn, validated against its transcript and budget when built.

``build_plan`` derives a plan's totals and verdict from its actions; ``CompactionPolicy`` is what
decides one. Nothing is done to a transcript until the executor applies a plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from json.encoder import encode_basestring
from typing import Any, Protocol, runtime_checkable

from ._canonical import dumps_normalized, sha256_text
from ._invariants import validate_plan
from ._structure import Structure, require_satisfiable
from .actions import Action, SummarizationRequest, TurnAction, keep_actions
from .errors import ValidationError
from .transcript import CompactionBudget, Transcript

__all__ = ["CompactionPlan", "CompactionPolicy", "build_plan", "keep_all", "opening"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """A validated decision for every turn: nothing is done until it is applied."""

    actions: tuple[TurnAction, ...]
    summarization_requests: tuple[SummarizationRequest, ...] = ()
    tokens_before: int
    tokens_after_estimate: int
    policy_name: str
    policy_version: str
    estimator_ratio: float | None = None
    budget_unmet: bool = False
    transcript: InitVar[Transcript]
    budget: InitVar[CompactionBudget]
    _canonical: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self, transcript: Transcript, budget: CompactionBudget) -> None:
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "summarization_requests", tuple(self.summarization_requests))
        validate_plan(self, transcript, budget)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_name": self.policy_name,
            "policy_version": self.policy_version,
            "tokens_before": self.tokens_before,
            "tokens_after_estimate": self.tokens_after_estimate,
            "estimator_ratio": _plain_ratio(self.estimator_ratio),
            "budget_unmet": self.budget_unmet,
            "actions": [action.to_dict() for action in self.actions],
            "summarization_requests": [r.to_dict() for r in self.summarization_requests],
        }

    def canonical_json(self) -> str:
        """The plan's canonical JSON (computed once; the plan is immutable)."""
        if not self._canonical:
            self._canonical.append(_plan_json(self))
        return self._canonical[0]

    def plan_hash(self) -> str:
        """Hex sha256 of the canonical JSON: what audit logs record."""
        return sha256_text(self.canonical_json())

    def action_for(self, turn_id: str) -> TurnAction:
        """The action for one turn id."""
        for action in self.actions:
            if action.turn_id == turn_id:
                return action
        raise ValidationError("no action for turn id", {"turn_id": turn_id})


_VALUES = {action: action.value for action in Action}
_KEEP_HEAD = '{"action":"keep","replacement":null,"summary_group":null,"turn_id":'


def _plan_json(plan: CompactionPlan) -> str:
    """``canonical_json(plan.to_dict())``, written out directly: the plan's shape is fixed, so
    keys are emitted in sorted order without building and sorting 10k small dicts.
    ``tests/test_engine_formats.py`` checks it against the generic form."""
    quote = encode_basestring
    actions: list[str] = []
    append = actions.append
    keep = Action.KEEP
    for action in plan.actions:
        kind = action.action
        replacement = action.replacement
        if kind is keep and replacement is None and action.summary_group is None:
            append(_KEEP_HEAD + quote(action.turn_id) + "}")  # most of a plan
            continue
        if replacement is None:
            body = "null"
        elif not replacement.excerpt and replacement.refers_to is None:  # 0.1.0's form
            body = (f'{{"content":{quote(replacement.content)},'
                    f'"token_estimate":{int(replacement.token_estimate)}}}')
        else:
            body = dumps_normalized(replacement.to_dict())
        group = "null" if action.summary_group is None else quote(action.summary_group)
        append(f'{{"action":"{_VALUES[kind]}","replacement":{body},'
               f'"summary_group":{group},"turn_id":{quote(action.turn_id)}}}')
    requests = [
        f'{{"group_id":{quote(r.group_id)},"prompt_id":{quote(r.prompt_id)},'
        f'"target_tokens":{int(r.target_tokens)},'
        f'"turn_ids":[{",".join(quote(i) for i in r.turn_ids)}]}}'
        for r in plan.summarization_requests
    ]
    head = dumps_normalized({
        "budget_unmet": plan.budget_unmet,
        "estimator_ratio": _plain_ratio(plan.estimator_ratio),
        "policy_name": plan.policy_name,
        "policy_version": plan.policy_version,
    })
    return (f'{{"actions":[{",".join(actions)}],{head[1:-1]},'
            f'"summarization_requests":[{",".join(requests)}],'
            f'"tokens_after_estimate":{int(plan.tokens_after_estimate)},'
            f'"tokens_before":{int(plan.tokens_before)}}}')


def _plain_ratio(ratio: float | None) -> float | None:
    if ratio is None:
        return None
    return 0.0 if ratio == 0 else float(ratio)


def build_plan(
    transcript: Transcript,
    budget: CompactionBudget,
    actions: Sequence[TurnAction],
    requests: Sequence[SummarizationRequest],
    *,
    policy_name: str,
    policy_version: str,
    estimator_ratio: float | None = None,
    tokens_after: int | None = None,
) -> CompactionPlan:
    """A plan whose totals and verdict are derived from its actions (then validated).

    A policy that kept a running total passes it as ``tokens_after`` to save a pass over the
    turns; the plan's validation recomputes it independently either way.
    """
    if tokens_after is None:
        tokens_after = sum(request.target_tokens for request in requests)
        keep = Action.KEEP
        for action, turn in zip(actions, transcript.turns, strict=False):
            if action.action is keep:
                tokens_after += turn.token_estimate
            elif action.replacement is not None:
                tokens_after += action.replacement.token_estimate
    return CompactionPlan(
        actions=tuple(actions),
        summarization_requests=tuple(requests),
        tokens_before=transcript.token_estimate(),
        tokens_after_estimate=tokens_after,
        policy_name=policy_name,
        policy_version=policy_version,
        estimator_ratio=estimator_ratio,
        budget_unmet=tokens_after > budget.max_tokens,
        transcript=transcript,
        budget=budget,
    )


def keep_all(transcript: Transcript) -> list[TurnAction]:
    """A KEEP action for every turn: a fresh list over actions made once per transcript (they
    are immutable, so every policy and chain member deciding over it can share them)."""
    keep: tuple[TurnAction, ...] | None = transcript._derived.get(("keep", None))
    if keep is None:
        keep = transcript._derived[("keep", None)] = keep_actions(transcript.turns)
    return list(keep)


@runtime_checkable
class CompactionPolicy(Protocol):
    """Decides a plan for a transcript under a budget."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan: ...


def opening(transcript: Transcript, budget: CompactionBudget
            ) -> tuple[Structure, list[TurnAction]]:
    """Where a policy's ``decide`` starts: the transcript's structure under ``budget``, checked
    satisfiable (``BudgetUnsatisfiable`` when the untouchable turns alone exceed it), and a KEEP
    action for every turn."""
    structure = Structure.of(transcript, budget)
    require_satisfiable(budget, structure)
    return structure, keep_all(transcript)

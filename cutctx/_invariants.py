"""The one place that decides whether a plan is valid for a transcript and budget.

Every ``CompactionPlan`` passes through ``validate_plan`` when it is constructed; rules are checked
in the contract's order and a violation names the rule, with ids (never content) in details.
"""

from __future__ import annotations

import math
from operator import is_
from typing import Protocol

from ._structure import Structure, require_satisfiable, turn_id_set
from .actions import (
    REPLACING_ACTIONS,
    SUMMARY_TURN_ID_PREFIX,
    Action,
    SummarizationRequest,
    TurnAction,
)
from .errors import ValidationError
from .transcript import CompactionBudget, Role, Transcript

__all__ = ["PlanFields", "validate_plan", "validated_for"]


class PlanFields(Protocol):
    """What the invariants read of a plan: its actions, requests, figures and verdict."""

    @property
    def actions(self) -> tuple[TurnAction, ...]: ...
    @property
    def summarization_requests(self) -> tuple[SummarizationRequest, ...]: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after_estimate(self) -> int: ...
    @property
    def policy_name(self) -> str: ...
    @property
    def policy_version(self) -> str: ...
    @property
    def estimator_ratio(self) -> float | None: ...
    @property
    def budget_unmet(self) -> bool: ...

_REMOVED = (Action.DROP, Action.SUMMARIZE)
_RECENT_ACTIONS = frozenset({Action.CLIP, Action.DEDUPLICATE})
"""What may replace a turn protected only for being recent: its head and tail, or a pointer to
an identical later copy (which loses nothing)."""


def _fail(rule: str, message: str, **details: object) -> ValidationError:
    return ValidationError(f"invariant {rule}: {message}", {"rule": rule, **details})


def validate_plan(plan: PlanFields, transcript: Transcript, budget: CompactionBudget) -> None:
    """Check invariants 0–6 of the contract, in order."""
    if not isinstance(transcript, Transcript) or not isinstance(budget, CompactionBudget):
        raise ValidationError("a plan needs the Transcript and CompactionBudget it was made for")
    _check_fields(plan)
    if _validated_before(plan, transcript, budget):
        return
    structure = Structure.of(transcript, budget)
    saved = _one_pass(plan, transcript, structure, budget)
    if saved is not None:
        require_satisfiable(budget, structure, saved)
        transcript._derived[_VALIDATED] = (plan.actions, plan.summarization_requests,
                                           plan.tokens_before, plan.tokens_after_estimate,
                                           plan.budget_unmet, budget)
        return
    # Something is wrong: check rule by rule, in the contract's order, to name the first broken.
    check_rule_by_rule(plan, transcript, budget, structure)


_VALIDATED = ("validated", None)
"""Key of the last plan that passed for a transcript (in its derived facts): its actions,
requests, figures and budget."""


def _validated_before(plan: PlanFields, transcript: Transcript,
                      budget: CompactionBudget) -> bool:
    """Whether ``plan`` is, part for part, the last plan found valid for this transcript and an
    equal budget: the very same action values (immutable), equal requests and figures. A chain
    builds its plan from its member's actions; this spares checking them a second time."""
    known = transcript._derived.get(_VALIDATED)
    if known is None:
        return False
    actions, requests, before, after, unmet, known_budget = known
    return (known_budget == budget and plan.tokens_before == before
            and plan.tokens_after_estimate == after and plan.budget_unmet is unmet
            and plan.summarization_requests == requests and len(plan.actions) == len(actions)
            and (plan.actions is actions or all(map(is_, plan.actions, actions))))


def validated_for(actions: tuple[TurnAction, ...], transcript: Transcript) -> bool:
    """Whether ``actions`` are those of the last plan found valid for ``transcript`` (so they
    name its turns, in order)."""
    known = transcript._derived.get(_VALIDATED)
    return known is not None and known[0] is actions


def check_rule_by_rule(
    plan: PlanFields, transcript: Transcript, budget: CompactionBudget, structure: Structure
) -> None:
    """The item types, then invariants 0-6 one at a time: raises for the first one broken."""
    _check_items(plan)
    require_satisfiable(budget, structure, _clipped_savings(plan, transcript, structure))
    _check_total(plan.actions, transcript)
    _check_untouchable_kept(plan.actions, structure)
    _check_exchanges(plan.actions, transcript, structure)
    _check_groups(plan.actions, plan.summarization_requests, transcript)
    _check_arithmetic(plan, transcript)
    _check_excerpts(plan.actions, transcript)
    if plan.budget_unmet != (plan.tokens_after_estimate > budget.max_tokens):
        raise _fail("honest_verdict", "budget_unmet must equal tokens_after > max_tokens",
                    tokens_after_estimate=plan.tokens_after_estimate,
                    max_tokens=budget.max_tokens, budget_unmet=plan.budget_unmet)


def _passes_all(
    plan: PlanFields, transcript: Transcript, structure: Structure, budget: CompactionBudget
) -> bool:
    """Whether the plan keeps rules 1-6, decided in one pass over the turns.

    Plans are built on every decide (a chain builds several), so the valid case must be cheap;
    a False answer only sends the plan through the rule-by-rule checks, which say what is wrong.
    """
    return _one_pass(plan, transcript, structure, budget) is not None


def _one_pass(
    plan: PlanFields, transcript: Transcript, structure: Structure, budget: CompactionBudget
) -> int | None:
    """``_passes_all``'s pass, which also adds up what the plan's clips of untouchable (recent)
    turns take off them (``_clipped_savings``): that sum, or None if a rule is broken."""
    actions = plan.actions
    turns = transcript.turns
    if len(actions) != len(turns):
        return None
    keep, recent, system, action_type = Action.KEEP, _RECENT_ACTIONS, Role.SYSTEM, TurnAction
    after = saved = 0
    removes = False
    groups: dict[str, list[str]] = {}
    for action, turn, untouchable in zip(actions, turns, structure.untouchable, strict=True):
        if type(action) is not action_type or action.turn_id != turn.turn_id:
            return None
        if action.summary_group is not None:
            groups.setdefault(action.summary_group, []).append(action.turn_id)
        kind = action.action
        if kind is keep:
            after += turn.token_estimate
            continue
        replacement = action.replacement
        if untouchable:
            if kind not in recent or turn.role is system or turn.pinned:
                return None
            if replacement is not None:
                saved += max(0, turn.token_estimate - replacement.token_estimate)
        if kind in REPLACING_ACTIONS:
            if replacement is None or (replacement.excerpt
                                       and replacement.excerpt[-1][1] > len(turn.content)):
                return None
            after += replacement.token_estimate
        else:
            removes = True
    # Only a plan that removes turns can split an exchange (a stub or clip keeps its turn).
    if removes and structure.shared_exchanges and not _exchanges_whole(actions, structure):
        return None
    if groups or plan.summarization_requests:
        if not _requests_match(plan.summarization_requests, groups, transcript):
            return None
        after += sum(request.target_tokens for request in plan.summarization_requests)
    if (plan.tokens_before == transcript.token_estimate()
            and plan.tokens_after_estimate == after
            and plan.budget_unmet == (after > budget.max_tokens)):
        return saved
    return None


def _clipped_savings(plan: PlanFields, transcript: Transcript,
                     structure: Structure) -> int:
    """Tokens the plan's clips and pointers of untouchable (recent) turns take off them; 0 for
    a plan that keeps them all (every 0.1.0 plan), so satisfiability is 0.1.0's."""
    saved = 0
    recent = _RECENT_ACTIONS
    for action, turn, untouchable in zip(plan.actions, transcript.turns, structure.untouchable,
                                         strict=False):
        if (untouchable and action.action in recent and action.replacement is not None
                and action.turn_id == turn.turn_id):
            saved += max(0, turn.token_estimate - action.replacement.token_estimate)
    return saved


def _exchanges_whole(actions: tuple[TurnAction, ...], structure: Structure) -> bool:
    for group in structure.shared_exchanges:
        first = actions[group[0]]
        if first.action in _REMOVED:
            if any(actions[p].action is not first.action
                   or actions[p].summary_group != first.summary_group for p in group):
                return False
        elif any(actions[p].action in _REMOVED for p in group):
            return False
    return True


def _requests_match(
    requests: tuple[SummarizationRequest, ...], groups: dict[str, list[str]],
    transcript: Transcript,
) -> bool:
    """Rule 4 for well-typed requests; ``groups`` is in order of each group's earliest turn."""
    if len(requests) != len(groups):
        return False
    existing = turn_id_set(transcript)
    for request, (group_id, turn_ids) in zip(requests, groups.items(), strict=True):
        if (type(request) is not SummarizationRequest or request.group_id != group_id
                or request.turn_ids != tuple(turn_ids)
                or SUMMARY_TURN_ID_PREFIX + group_id in existing):
            return False
    return True


def _check_fields(plan: PlanFields) -> None:
    for name in ("tokens_before", "tokens_after_estimate"):
        value = getattr(plan, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError(f"{name} must be an int >= 0", {"field": name})
    for name in ("policy_name", "policy_version"):
        if not isinstance(getattr(plan, name), str) or not getattr(plan, name):
            raise ValidationError(f"{name} must be a non-empty str", {"field": name})
    ratio = plan.estimator_ratio
    if ratio is not None and (
        isinstance(ratio, bool) or not isinstance(ratio, int | float) or not math.isfinite(ratio)
    ):
        raise ValidationError("estimator_ratio must be None or a finite number",
                              {"field": "estimator_ratio"})
    if not isinstance(plan.budget_unmet, bool):
        raise ValidationError("budget_unmet must be a bool", {"field": "budget_unmet"})


def _check_items(plan: PlanFields) -> None:
    for action in plan.actions:
        if not isinstance(action, TurnAction):
            raise ValidationError("actions must be TurnAction values", {"field": "actions"})
    for request in plan.summarization_requests:
        if not isinstance(request, SummarizationRequest):
            raise ValidationError("summarization_requests must be SummarizationRequest values",
                                  {"field": "summarization_requests"})


def _check_total(actions: tuple[TurnAction, ...], transcript: Transcript) -> None:
    turns = transcript.turns
    if len(actions) == len(turns) and all(
        action.turn_id == turn.turn_id for action, turn in zip(actions, turns, strict=True)
    ):
        return
    planned = [action.turn_id for action in actions]
    known = set(transcript.turn_ids())
    counted = set(planned)
    raise _fail(
        "total", "actions must name every turn exactly once, in transcript order",
        unknown_turn_ids=[i for i in planned if i not in known],
        unplanned_turn_ids=[i for i in transcript.turn_ids() if i not in counted],
        duplicate_turn_ids=sorted({i for i in planned if planned.count(i) > 1})
        if len(counted) != len(planned) else [],
    )


def _check_untouchable_kept(actions: tuple[TurnAction, ...], structure: Structure) -> None:
    bad = [
        action.turn_id
        for action, untouchable, whole in zip(actions, structure.untouchable, structure.whole,
                                              strict=True)
        if untouchable and action.action is not Action.KEEP
        and (whole or action.action not in _RECENT_ACTIONS)
    ]
    if bad:
        raise _fail("untouchable_kept", "untouchable turns must be KEEP (a turn protected only "
                    "for being recent may be CLIP or DEDUPLICATE)", turn_ids=bad[:10])


def _check_exchanges(
    actions: tuple[TurnAction, ...], transcript: Transcript, structure: Structure
) -> None:
    for group in structure.shared_exchanges:
        first = actions[group[0]]
        removed = first.action in _REMOVED
        for position in group[1:]:
            other = actions[position]
            if removed:
                same = other.action is first.action and other.summary_group == first.summary_group
            else:
                same = other.action not in _REMOVED
            if not same:
                raise _fail(
                    "exchanges_travel_together",
                    "a tool exchange must be retained whole or removed whole by one action",
                    tool_call_id=transcript.turns[group[0]].tool_call_id,
                    turn_ids=[actions[p].turn_id for p in group],
                )


def _check_groups(
    actions: tuple[TurnAction, ...],
    requests: tuple[SummarizationRequest, ...],
    transcript: Transcript,
) -> None:
    by_group: dict[str, list[str]] = {}
    first_position: dict[str, int] = {}
    for position, action in enumerate(actions):
        if action.summary_group is not None:
            by_group.setdefault(action.summary_group, []).append(action.turn_id)
            first_position.setdefault(action.summary_group, position)
    request_ids = [request.group_id for request in requests]
    if len(set(request_ids)) != len(request_ids):
        raise _fail("groups_match_requests", "group ids must be distinct",
                    group_ids=request_ids)
    if set(request_ids) != set(by_group):
        raise _fail(
            "groups_match_requests", "the groups named by actions must equal the requests",
            requests_without_turns=[g for g in request_ids if g not in by_group],
            groups_without_request=[g for g in by_group if g not in set(request_ids)],
        )
    existing = turn_id_set(transcript)
    for request in requests:
        if tuple(by_group[request.group_id]) != request.turn_ids:
            raise _fail("groups_match_requests",
                        "a request's turn_ids must equal its group's turns in transcript order",
                        group_id=request.group_id)
        if SUMMARY_TURN_ID_PREFIX + request.group_id in existing:
            raise _fail("groups_match_requests", "summary turn id collides with a turn id",
                        group_id=request.group_id)
    positions = [first_position[g] for g in request_ids]
    if positions != sorted(positions):
        raise _fail("groups_match_requests",
                    "requests must be ordered by their group's earliest turn",
                    group_ids=request_ids)


def _check_arithmetic(plan: PlanFields, transcript: Transcript) -> None:
    before = transcript.token_estimate()
    if plan.tokens_before != before:
        raise _fail("arithmetic", "tokens_before must equal the transcript total",
                    tokens_before=plan.tokens_before, transcript_tokens=before)
    after = sum(r.target_tokens for r in plan.summarization_requests)
    for action, turn in zip(plan.actions, transcript.turns, strict=True):
        if action.action is Action.KEEP:
            after += turn.token_estimate
        elif action.action in REPLACING_ACTIONS and action.replacement is not None:
            after += action.replacement.token_estimate
    if plan.tokens_after_estimate != after:
        raise _fail("arithmetic", "tokens_after_estimate must equal what the plan retains",
                    tokens_after_estimate=plan.tokens_after_estimate, expected=after)


def _check_excerpts(actions: tuple[TurnAction, ...], transcript: Transcript) -> None:
    for action, turn in zip(actions, transcript.turns, strict=True):
        replacement = action.replacement
        if (replacement is not None and replacement.excerpt
                and replacement.excerpt[-1][1] > len(turn.content)):
            raise _fail("excerpt_in_turn", "a replacement's excerpt must lie within its turn's "
                        "content", turn_id=turn.turn_id)

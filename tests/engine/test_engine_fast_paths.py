"""The engine's fast paths give exactly what their plain forms give.

Two shortcuts carry the 10k-turn speed: stub hashes quote text with bulk byte operations instead
of the JSON encoder, and a plan is validated in one pass before (only on failure) the rule-by-rule
checks name what is wrong. Each is checked here against the form it replaces, on generated input.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cutctx import (
    Action,
    CompactionError,
    CompactionPlan,
    Role,
    SummarizationRequest,
    Transcript,
    TranscriptTurn,
    TurnAction,
    TurnReplacement,
    ValidationError,
)
from cutctx._canonical import _quoted_utf8, canonical_json, sha256_of
from cutctx._invariants import _passes_all, check_rule_by_rule
from cutctx._structure import Structure
from tests.engine.test_engine_properties import PROPERTY_SETTINGS, Case, cases, decide

# --------------------------------------------------------------------------------------------
# quoting for stub hashes
# --------------------------------------------------------------------------------------------

every_control = st.text(alphabet=st.characters(max_codepoint=0x1F), max_size=8)
texts = st.one_of(
    st.text(),
    st.text(alphabet='ab"\\\n\t\r é✓🚀\x7f\u2028', max_size=60),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=20), every_control, st.text(max_size=20)),
)


@PROPERTY_SETTINGS
@given(texts)
@example("plain")
@example('quote " backslash \\ newline \n tab \t return \r')
@example("\x00\x01\x08\x0b\x0c\x1f")
@example("non-ASCII é — ✓ 🚀 \u2028 \x7f")
def test_quoting_matches_the_json_encoder(text: str) -> None:
    assert _quoted_utf8(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")


@PROPERTY_SETTINGS
@given(texts)
def test_a_strings_hash_is_the_hash_of_its_canonical_json(text: str) -> None:
    expected = hashlib.sha256(canonical_json(text).encode("utf-8")).hexdigest()
    assert sha256_of(text) == expected


def test_a_lone_surrogate_is_refused_by_name_not_by_a_codec_error() -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        sha256_of("ok \ud800 not ok")


# --------------------------------------------------------------------------------------------
# one-pass plan validation
# --------------------------------------------------------------------------------------------


def unchecked_fields(plan: CompactionPlan) -> dict[str, Any]:
    return {name: getattr(plan, name) for name in (
        "actions", "summarization_requests", "tokens_before", "tokens_after_estimate",
        "policy_name", "policy_version", "estimator_ratio", "budget_unmet")}


def unchecked_plan(values: dict[str, Any]) -> CompactionPlan:
    """A plan with these fields, built without validation (to probe the checks)."""
    made = object.__new__(CompactionPlan)
    for name, value in values.items():
        object.__setattr__(made, name, value)
    object.__setattr__(made, "_canonical", [])
    return made


def rule_checks_pass(case: Case, plan: CompactionPlan) -> bool:
    structure = Structure.of(case.transcript, case.budget)
    try:
        check_rule_by_rule(plan, case.transcript, case.budget, structure)
    except CompactionError:
        return False
    return True


def one_pass_passes(case: Case, plan: CompactionPlan) -> bool:
    structure = Structure.of(case.transcript, case.budget)
    return _passes_all(plan, case.transcript, structure, case.budget)


def _replacement_for(kind: Action, turn_id: str, tokens: int) -> TurnReplacement | None:
    if kind is Action.MASK:
        return TurnReplacement("stub", tokens)
    if kind is Action.CLIP:
        return TurnReplacement("marker", tokens, ((0, 0), (0, 0)))
    if kind is Action.DEDUPLICATE:
        return TurnReplacement("pointer", tokens, refers_to=turn_id)
    return None


@st.composite
def broken_plans(draw: st.DrawFn) -> tuple[Case, dict[str, Any]] | None:
    """A decided plan's fields with one part changed, the arithmetic sometimes made consistent
    again so that the later rules get exercised too."""
    case = draw(cases())
    plan = decide(case)
    if plan is None or not plan.actions:
        return None
    actions = list(plan.actions)
    requests = list(plan.summarization_requests)
    groups = [r.group_id for r in requests] + ["span-new"]
    shared = [p for group in Structure.of(case.transcript, case.budget).shared_exchanges
              for p in group]
    in_shared = bool(shared) and draw(st.booleans())
    position = draw(st.sampled_from(shared) if in_shared else st.integers(0, len(actions) - 1))
    turn_id = actions[position].turn_id
    change = draw(st.sampled_from(
        ("kind", "kind", "kind", "remove", "duplicate", "swap", "drop_request", "add_request",
         "reorder_requests", "target", "before", "after", "verdict")))
    if change == "kind":
        kind = draw(st.sampled_from(list(Action)))
        actions[position] = TurnAction(
            turn_id, kind,
            summary_group=draw(st.sampled_from(groups)) if kind is Action.SUMMARIZE else None,
            replacement=_replacement_for(kind, turn_id, draw(st.integers(0, 50))))
    elif change == "remove":
        del actions[position]
    elif change == "duplicate":
        actions.insert(position, actions[position])
    elif change == "swap" and len(actions) > 1:
        other = draw(st.integers(0, len(actions) - 1))
        actions[position], actions[other] = actions[other], actions[position]
    elif change == "drop_request" and requests:
        del requests[draw(st.integers(0, len(requests) - 1))]
    elif change == "add_request":
        requests.append(SummarizationRequest("span-new", (turn_id,), 1, "p"))
    elif change == "reorder_requests":
        requests.reverse()
    elif change == "target" and requests:
        requests[0] = replace(requests[0], target_tokens=requests[0].target_tokens + 1)
    fields: dict[str, Any] = {"actions": tuple(actions),
                              "summarization_requests": tuple(requests)}
    if change == "before":
        fields["tokens_before"] = plan.tokens_before + 1
    elif change == "after":
        fields["tokens_after_estimate"] = plan.tokens_after_estimate + 1
    elif change == "verdict":
        fields["budget_unmet"] = not plan.budget_unmet
    elif draw(st.booleans()):  # make the totals agree with the changed actions again
        after = sum(r.target_tokens for r in requests)
        for action, turn in zip(actions, case.transcript.turns, strict=False):
            if action.action is Action.KEEP:
                after += turn.token_estimate
            elif action.replacement is not None:
                after += action.replacement.token_estimate
        fields["tokens_after_estimate"] = after
        fields["budget_unmet"] = after > case.budget.max_tokens
    return case, {**unchecked_fields(plan), **fields}


@PROPERTY_SETTINGS
@given(cases())
def test_every_decided_plan_takes_the_one_pass_path(case: Case) -> None:
    plan = decide(case)
    if plan is not None:
        assert one_pass_passes(case, plan)


@PROPERTY_SETTINGS
@given(broken_plans())
def test_the_one_pass_check_agrees_with_the_rule_checks(
    drawn: tuple[Case, dict[str, Any]] | None,
) -> None:
    if drawn is None:
        return
    case, fields = drawn
    plan = unchecked_plan(fields)
    assert one_pass_passes(case, plan) == rule_checks_pass(case, plan)


# --------------------------------------------------------------------------------------------
# Transcript.extended: checks only what it appends, and agrees with building the whole
# --------------------------------------------------------------------------------------------

growths = st.lists(st.tuples(st.integers(min_value=0, max_value=8),
                             st.lists(st.sampled_from("abcdefghij"), max_size=3)),
                   max_size=12)


@PROPERTY_SETTINGS
@given(growths)
def test_extending_any_earlier_transcript_agrees_with_building_it(
        steps: list[tuple[int, list[str]]]) -> None:
    """Each step extends one of the transcripts made so far (the latest, or an earlier one: a
    branch) by turns with the given ids: refused exactly when ``Transcript`` refuses the same
    turns built at once, and otherwise equal to it."""
    made = [Transcript()]
    for pick, ids in steps:
        base = made[pick % len(made)]
        more = [TranscriptTurn(f"t{turn_id}", Role.USER, "x", 1) for turn_id in ids]
        try:
            whole: Transcript | None = Transcript((*base.turns, *more))
        except ValidationError:
            whole = None
        try:
            grown: Transcript | None = base.extended(more)
        except ValidationError:
            grown = None
        assert (grown is None) == (whole is None)
        if grown is not None:
            assert grown == whole
            made.append(grown)

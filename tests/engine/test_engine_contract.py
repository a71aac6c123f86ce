"""Example tests that read like the contract (core.md): shape, invariants, errors, executor,
configuration checks and value semantics."""

from __future__ import annotations

import copy
import dataclasses
import doctest
import math
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import cutctx
from cutctx import (
    EMPTY_METADATA,
    SUMMARY_TURN_ID_PREFIX,
    Action,
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactedTranscript,
    CompactionBudget,
    CompactionError,
    CompactionExecutor,
    CompactionPlan,
    CompactionPolicy,
    CompactionReport,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PlanTranscriptMismatch,
    PolicyChain,
    Role,
    SummarizationRequest,
    SummarizingPolicy,
    SummaryMissing,
    TokenEstimator,
    Transcript,
    TranscriptTurn,
    TurnAction,
    TurnReplacement,
    ValidationError,
    default_chain,
)

T = TranscriptTurn
KEEP, MASK, SUMMARIZE, DROP = Action.KEEP, Action.MASK, Action.SUMMARIZE, Action.DROP


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def keep(turn_id: str) -> TurnAction:
    return TurnAction(turn_id, KEEP)


def drop(turn_id: str) -> TurnAction:
    return TurnAction(turn_id, DROP)


def summarize(turn_id: str, group: str) -> TurnAction:
    return TurnAction(turn_id, SUMMARIZE, summary_group=group)


def mask(turn_id: str, content: str = "[masked]", estimate: int = 2) -> TurnAction:
    return TurnAction(turn_id, MASK, replacement=TurnReplacement(content, estimate))


def retained_tokens(
    transcript: Transcript,
    actions: Sequence[TurnAction],
    requests: Sequence[SummarizationRequest],
) -> int:
    estimate = {turn.turn_id: turn.token_estimate for turn in transcript.turns}
    total = sum(request.target_tokens for request in requests)
    for action in actions:
        if action.action is KEEP:
            total += estimate.get(action.turn_id, 0)
        elif action.replacement is not None:
            total += action.replacement.token_estimate
    return total


def make_plan(
    transcript: Transcript,
    budget: CompactionBudget,
    actions: Sequence[TurnAction],
    requests: Sequence[SummarizationRequest] = (),
    **overrides: Any,
) -> CompactionPlan:
    """A hand-built plan whose figures are right unless overridden."""
    after = retained_tokens(transcript, actions, requests)
    fields: dict[str, Any] = {
        "actions": tuple(actions),
        "summarization_requests": tuple(requests),
        "tokens_before": transcript.token_estimate(),
        "tokens_after_estimate": after,
        "policy_name": "hand",
        "policy_version": "1.0.0",
        "estimator_ratio": None,
        "budget_unmet": after > budget.max_tokens,
    }
    fields.update(overrides)
    return CompactionPlan(**fields, transcript=transcript, budget=budget)


# s SYSTEM · a USER · x ASSISTANT(c1) · y TOOL(c1) · z TOOL(c1) · b USER · p USER pinned · q USER
TRANSCRIPT = Transcript((
    T("s", Role.SYSTEM, "rules", 10),
    T("a", Role.USER, "old question", 30),
    T("x", Role.ASSISTANT, "calling", 20, "c1"),
    T("y", Role.TOOL, "result one", 200, "c1"),
    T("z", Role.TOOL, "result two", 100, "c1"),
    T("b", Role.USER, "follow-up", 40),
    T("p", Role.USER, "pinned fact", 5, pinned=True),
    T("q", Role.USER, "latest", 5),
))
BUDGET = CompactionBudget(1000, protected_recent_turns=1)
IDS = TRANSCRIPT.turn_ids()


def all_keep(ids: Sequence[str] = IDS) -> list[TurnAction]:
    return [keep(turn_id) for turn_id in ids]


def with_action(action: TurnAction, base: Sequence[TurnAction] | None = None) -> list[TurnAction]:
    actions = list(all_keep() if base is None else base)
    actions[IDS.index(action.turn_id)] = action
    return actions


def assert_rule(rule: str, build: Callable[[], object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.details["rule"] == rule
    assert rule in str(caught.value)
    return caught.value


# --------------------------------------------------------------------------------------------
# the shape: plan -> fulfil -> apply
# --------------------------------------------------------------------------------------------

CORE_EXAMPLE = """
>>> from cutctx import CompactionBudget, CompactionExecutor, DropOldestPolicy
>>> from cutctx import Role, Transcript, TranscriptTurn
>>> transcript = Transcript((
...     TranscriptTurn("s", Role.SYSTEM, "rules", 10),
...     TranscriptTurn("a", Role.USER, "old question", 40),
...     TranscriptTurn("b", Role.ASSISTANT, "old answer", 40),
... ))
>>> plan = DropOldestPolicy().decide(transcript, CompactionBudget(60, protected_recent_turns=1))
>>> plan.tokens_before, plan.tokens_after_estimate, plan.budget_unmet
(90, 50, False)
>>> view = CompactionExecutor().apply(transcript, plan)
>>> view.transcript.turn_ids()
('s', 'b')
>>> transcript.turn_ids()
('s', 'a', 'b')
"""


def test_core_md_example_runs_as_a_doctest() -> None:
    test = doctest.DocTestParser().get_doctest(CORE_EXAMPLE, {}, "core.md", "core.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted == 8
    assert result.failed == 0


def test_plan_fulfil_apply_with_a_summary() -> None:
    transcript = Transcript((
        T("s", Role.SYSTEM, "rules", 5),
        *(T(f"u{i}", Role.USER, f"question {i}", 50) for i in range(4)),
        T("q", Role.USER, "now", 5),
    ))
    budget = CompactionBudget(100, protected_recent_turns=1)
    plan = SummarizingPolicy("cutctx/summary@1").decide(transcript, budget)
    (request,) = plan.summarization_requests
    assert request.turn_ids == ("u0", "u1", "u2", "u3")
    assert request.target_tokens == 40
    assert request.prompt_id == "cutctx/summary@1"
    with pytest.raises(SummaryMissing):
        CompactionExecutor().apply(transcript, plan)
    view = CompactionExecutor().apply(transcript, plan, {request.group_id: "they asked 4 things"})
    assert view.transcript.turn_ids() == ("s", request.summary_turn_id, "q")
    assert view.transcript.token_estimate() == plan.tokens_after_estimate == 50


def test_public_names_are_exported() -> None:
    expected = {
        "default_chain", "SummarizingPolicy", "PolicyChain", "ObservationMaskingPolicy",
        "GROUP_ID_PREFIX", "DEFAULT_PLACEHOLDER", "EMPTY_METADATA", "SUMMARY_TURN_ID_PREFIX",
        "Action", "BudgetUnsatisfiable", "CharRatioEstimator", "CompactedTranscript",
        "CompactionBudget", "CompactionError", "CompactionExecutor", "CompactionPlan",
        "CompactionPolicy", "CompactionReport", "DropOldestPolicy", "PlanTranscriptMismatch",
        "Role", "SummarizationRequest", "SummaryMissing", "TokenEstimator", "Transcript",
        "TranscriptTurn", "TurnAction", "TurnReplacement", "__version__", "ValidationError",
    }
    assert expected <= set(cutctx.__all__)
    for name in cutctx.__all__:
        assert hasattr(cutctx, name), name


def test_enum_values_and_constants() -> None:
    assert [r.value for r in Role] == ["system", "user", "assistant", "tool"]
    # 0.1.0's four actions, in 0.1.0's order, then the two fates 0.2.0 names.
    assert [a.value for a in Action] == ["keep", "mask", "summarize", "drop", "clip",
                                         "deduplicate"]
    assert cutctx.DEFAULT_PLACEHOLDER == "[tool result masked by cutctx]"
    assert cutctx.GROUP_ID_PREFIX == "span-"
    assert SUMMARY_TURN_ID_PREFIX == "summary:"
    assert SummarizationRequest("g", ("a",), 1, "p").summary_turn_id == "summary:g"


def test_defaults_are_the_contracts() -> None:
    assert CompactionBudget(10).protected_recent_turns == 4
    masking = ObservationMaskingPolicy()
    assert masking.keep_recent_results == 2
    assert masking.placeholder == cutctx.DEFAULT_PLACEHOLDER
    summarizing = SummarizingPolicy("p")
    assert (summarizing.target_ratio, summarizing.min_span_turns) == (0.2, 4)
    assert CharRatioEstimator().chars_per_token == 4.0
    for policy, name in ((DropOldestPolicy(), "drop_oldest"), (masking, "observation_masking"),
                         (summarizing, "summarizing")):
        assert (policy.name, policy.version) == (name, "1.0.0")
        assert isinstance(policy, CompactionPolicy)
    chain = default_chain(prompt_id="p")
    assert chain.version == "1.0.0"
    assert isinstance(chain, CompactionPolicy)


# --------------------------------------------------------------------------------------------
# invariants
# --------------------------------------------------------------------------------------------


def test_a_valid_hand_built_plan_is_accepted() -> None:
    group = "g1"
    actions = [keep("s"), drop("a"), summarize("x", group), summarize("y", group),
               summarize("z", group), mask("b"), keep("p"), keep("q")]
    request = SummarizationRequest(group, ("x", "y", "z"), 30, "p")
    plan = make_plan(TRANSCRIPT, CompactionBudget(60, 1), actions, [request])
    assert plan.tokens_after_estimate == 10 + 30 + 2 + 5 + 5
    assert plan.budget_unmet is False


def test_invariant_0_untouchable_over_budget_raises_budget_unsatisfiable() -> None:
    budget = CompactionBudget(19, protected_recent_turns=1)  # s 10 + p 5 + q 5 = 20
    with pytest.raises(BudgetUnsatisfiable) as caught:
        make_plan(TRANSCRIPT, budget, all_keep())
    assert caught.value.details == {
        "untouchable_tokens": 20,
        "max_tokens": 19,
        "untouchable_turn_count": 3,
        "protected_recent_turns": 1,
    }


def test_invariant_0_equality_fits() -> None:
    budget = CompactionBudget(20, protected_recent_turns=1)
    actions = [keep("s"), drop("a"), drop("x"), drop("y"), drop("z"), drop("b"), keep("p"),
               keep("q")]
    assert make_plan(TRANSCRIPT, budget, actions).tokens_after_estimate == 20


def test_every_policy_raises_budget_unsatisfiable_before_working() -> None:
    budget = CompactionBudget(19, protected_recent_turns=1)
    policies: list[CompactionPolicy] = [
        DropOldestPolicy(), ObservationMaskingPolicy(), SummarizingPolicy("p"),
        default_chain(prompt_id="p"), PolicyChain([DropOldestPolicy()]),
    ]
    for policy in policies:
        with pytest.raises(BudgetUnsatisfiable) as caught:
            policy.decide(TRANSCRIPT, budget)
        assert caught.value.details["untouchable_tokens"] == 20


def test_invariant_0_is_checked_before_the_others() -> None:
    with pytest.raises(BudgetUnsatisfiable):
        make_plan(TRANSCRIPT, CompactionBudget(0, 1), all_keep()[:-1], tokens_before=1)


@pytest.mark.parametrize(
    ("actions", "details"),
    [
        (all_keep()[:-1], {"unknown_turn_ids": [], "unplanned_turn_ids": ["q"],
                           "duplicate_turn_ids": []}),
        ([*all_keep(), keep("ghost")], {"unknown_turn_ids": ["ghost"], "unplanned_turn_ids": [],
                                        "duplicate_turn_ids": []}),
        ([*all_keep()[:-1], keep("a")], {"unknown_turn_ids": [], "unplanned_turn_ids": ["q"],
                                         "duplicate_turn_ids": ["a"]}),
        (list(reversed(all_keep())), {"unknown_turn_ids": [], "unplanned_turn_ids": [],
                                      "duplicate_turn_ids": []}),
    ],
    ids=["missing", "unknown", "duplicate", "reordered"],
)
def test_invariant_1_total(actions: list[TurnAction], details: dict[str, Any]) -> None:
    error = assert_rule("total", lambda: make_plan(TRANSCRIPT, BUDGET, actions))
    assert error.details == {"rule": "total", **details}


@pytest.mark.parametrize(
    ("action", "why"),
    [(drop("s"), "system"), (mask("p"), "pinned"), (drop("q"), "protected recent")],
)
def test_invariant_2_untouchable_kept(action: TurnAction, why: str) -> None:
    error = assert_rule("untouchable_kept",
                        lambda: make_plan(TRANSCRIPT, BUDGET, with_action(action)))
    assert error.details["turn_ids"] == [action.turn_id], why


def test_invariant_2_a_system_turn_may_not_be_masked() -> None:
    assert_rule("untouchable_kept", lambda: make_plan(TRANSCRIPT, BUDGET, with_action(mask("s"))))


@pytest.mark.parametrize(
    "exchange",
    [
        [drop("x"), keep("y"), keep("z")],
        [drop("x"), drop("y"), mask("z")],
        [drop("x"), drop("y"), summarize("z", "g")],
        [summarize("x", "g"), summarize("y", "g"), summarize("z", "h")],
    ],
    ids=["drop-and-keep", "drop-and-mask", "drop-and-summarize", "two-groups"],
)
def test_invariant_3_exchanges_travel_together(exchange: list[TurnAction]) -> None:
    actions = all_keep()
    actions[2:5] = exchange
    groups = sorted({a.summary_group for a in actions if a.summary_group is not None})
    requests = [SummarizationRequest(g, tuple(a.turn_id for a in actions if a.summary_group == g),
                                     1, "p") for g in groups]
    error = assert_rule("exchanges_travel_together",
                        lambda: make_plan(TRANSCRIPT, BUDGET, actions, requests))
    assert error.details["tool_call_id"] == "c1"
    assert error.details["turn_ids"] == ["x", "y", "z"]


def test_invariant_3_keep_and_mask_mix_freely_within_an_exchange() -> None:
    actions = all_keep()
    actions[2:5] = [keep("x"), mask("y"), keep("z")]
    assert make_plan(TRANSCRIPT, BUDGET, actions).actions[3].action is MASK


def test_invariant_3_an_exchange_with_an_untouchable_member_is_not_removable() -> None:
    transcript = Transcript((T("a", Role.ASSISTANT, "call", 10, "c"),
                             T("r", Role.TOOL, "result", 10, "c", pinned=True)))
    with pytest.raises(ValidationError) as caught:
        make_plan(transcript, CompactionBudget(100, 0), [drop("a"), keep("r")])
    assert caught.value.details["rule"] == "exchanges_travel_together"


def _summarize_all(
    pairs: Sequence[tuple[str, str]], base: Sequence[TurnAction] | None = None
) -> list[TurnAction]:
    actions = list(all_keep() if base is None else base)
    for turn_id, group in pairs:
        actions[IDS.index(turn_id)] = summarize(turn_id, group)
    return actions


GROUP_CASES: dict[str, tuple[list[TurnAction], list[SummarizationRequest]]] = {
    "duplicate-group-ids": (
        _summarize_all([("a", "g")]),
        [SummarizationRequest("g", ("a",), 1, "p"), SummarizationRequest("g", ("a",), 1, "p")],
    ),
    "request-without-turns": (
        _summarize_all([("a", "g")]),
        [SummarizationRequest("g", ("a",), 1, "p"), SummarizationRequest("h", ("b",), 1, "p")],
    ),
    "group-without-request": (_summarize_all([("a", "g")]), []),
    "request-turns-differ": (
        _summarize_all([("a", "g"), ("b", "g")]),
        [SummarizationRequest("g", ("b", "a"), 1, "p")],
    ),
    "summary-id-collides": (
        [keep("s"), summarize("a", "g"), *all_keep()[2:]],
        [SummarizationRequest("g", ("a",), 1, "p")],
    ),
    "requests-out-of-order": (
        _summarize_all([("a", "g"), ("b", "h")]),
        [SummarizationRequest("h", ("b",), 1, "p"), SummarizationRequest("g", ("a",), 1, "p")],
    ),
}


@pytest.mark.parametrize("case", list(GROUP_CASES), ids=list(GROUP_CASES))
def test_invariant_4_groups_match_requests(case: str) -> None:
    actions, requests = GROUP_CASES[case]
    transcript = TRANSCRIPT
    if case == "summary-id-collides":
        turns = list(TRANSCRIPT.turns)
        turns[5] = T("summary:g", Role.USER, "follow-up", 40)
        transcript = Transcript(tuple(turns))
        actions = [*actions[:5], keep("summary:g"), *actions[6:]]
    assert_rule("groups_match_requests",
                lambda: make_plan(transcript, BUDGET, actions, requests))


def test_invariant_5_arithmetic_tokens_before() -> None:
    error = assert_rule("arithmetic",
                        lambda: make_plan(TRANSCRIPT, BUDGET, all_keep(), tokens_before=409))
    assert error.details == {"rule": "arithmetic", "tokens_before": 409,
                             "transcript_tokens": 410}


def test_invariant_5_arithmetic_tokens_after_counts_keep_mask_and_targets() -> None:
    actions = _summarize_all([("a", "g")], with_action(mask("y", "[m]", 7)))
    requests = [SummarizationRequest("g", ("a",), 3, "p")]
    right = 410 - 30 + 3 - 200 + 7
    assert make_plan(TRANSCRIPT, BUDGET, actions, requests).tokens_after_estimate == right
    error = assert_rule("arithmetic", lambda: make_plan(
        TRANSCRIPT, BUDGET, actions, requests, tokens_after_estimate=right + 1))
    assert error.details == {"rule": "arithmetic", "tokens_after_estimate": right + 1,
                             "expected": right}


@pytest.mark.parametrize("unmet", [True, False])
def test_invariant_6_honest_verdict(unmet: bool) -> None:
    budget = CompactionBudget(410 if unmet else 409, 1)  # the all-KEEP plan retains 410
    error = assert_rule("honest_verdict",
                        lambda: make_plan(TRANSCRIPT, budget, all_keep(), budget_unmet=unmet))
    assert error.details["tokens_after_estimate"] == 410


def test_invariants_are_checked_in_order() -> None:
    # breaks total (1), untouchable (2) and arithmetic (5): total is reported
    actions = [drop("s"), *all_keep()[1:-1]]
    assert_rule("total", lambda: make_plan(TRANSCRIPT, BUDGET, actions, tokens_before=1))
    # breaks untouchable (2) and arithmetic (5): untouchable is reported
    assert_rule("untouchable_kept", lambda: make_plan(
        TRANSCRIPT, BUDGET, with_action(drop("s")), tokens_before=1))


def test_a_plan_needs_its_transcript_and_budget() -> None:
    with pytest.raises(TypeError):
        CompactionPlan(actions=(), tokens_before=0, tokens_after_estimate=0,  # type: ignore[call-arg]
                       policy_name="x", policy_version="1")
    with pytest.raises(ValidationError):
        CompactionPlan(actions=(), tokens_before=0, tokens_after_estimate=0, policy_name="x",
                       policy_version="1", transcript=None,  # type: ignore[arg-type]
                       budget=CompactionBudget(1))


# --------------------------------------------------------------------------------------------
# the 0.1.0 defect (issue 2): spans hold whole exchanges
# --------------------------------------------------------------------------------------------

DEFECT_TRANSCRIPT = Transcript((
    T("s", Role.SYSTEM, "s", 5),
    T("a1", Role.ASSISTANT, "a1", 50, "c1"),
    T("a2", Role.ASSISTANT, "a2", 50, "c2"),
    T("t1", Role.TOOL, "t1", 50, "c1"),
    T("u", Role.USER, "u", 5, pinned=True),
    T("t2", Role.TOOL, "t2", 50, "c2"),
    T("q", Role.USER, "q", 5),
))
DEFECT_BUDGET = CompactionBudget(100, protected_recent_turns=1)
DEFECT_IDS = DEFECT_TRANSCRIPT.turn_ids()


def test_defect_case_summarizing_returns_a_valid_all_keep_plan() -> None:
    # a2's exchange reaches t2 past the pinned u, and without a2 the run splits a1 from t1:
    # no span can hold whole exchanges, so nothing is summarized and the budget stays unmet.
    plan = SummarizingPolicy("p", min_span_turns=1).decide(DEFECT_TRANSCRIPT, DEFECT_BUDGET)
    expected = CompactionPlan(
        actions=tuple(keep(i) for i in DEFECT_IDS),
        tokens_before=215, tokens_after_estimate=215, policy_name="summarizing",
        policy_version="1.0.0", estimator_ratio=None, budget_unmet=True,
        transcript=DEFECT_TRANSCRIPT, budget=DEFECT_BUDGET,
    )
    assert plan == expected
    assert plan.summarization_requests == ()


def test_defect_case_default_chain_drops_both_exchanges() -> None:
    chain = default_chain(prompt_id="p", min_span_turns=1)
    plan = chain.decide(DEFECT_TRANSCRIPT, DEFECT_BUDGET)
    expected = CompactionPlan(
        actions=(keep("s"), drop("a1"), drop("a2"), drop("t1"), keep("u"), drop("t2"),
                 keep("q")),
        tokens_before=215, tokens_after_estimate=15, policy_name=chain.name,
        policy_version="1.0.0", estimator_ratio=None, budget_unmet=False,
        transcript=DEFECT_TRANSCRIPT, budget=DEFECT_BUDGET,
    )
    assert plan == expected
    view = CompactionExecutor().apply(DEFECT_TRANSCRIPT, plan)
    assert view.transcript.turn_ids() == ("s", "u", "q")


def test_defect_case_variant_summarizes_the_whole_exchange_remainder() -> None:
    # 0.1.0 filtered the run [x a1 a2 t1] once to [x a1] [t1] and chose [x a1], splitting c1.
    transcript = Transcript((
        T("s", Role.SYSTEM, "s", 5),
        T("x", Role.USER, "x", 40),
        *DEFECT_TRANSCRIPT.turns[1:],
    ))
    plan = SummarizingPolicy("p", min_span_turns=1).decide(transcript, DEFECT_BUDGET)
    (request,) = plan.summarization_requests
    assert request.turn_ids == ("x",)
    assert request.target_tokens == 8
    assert [a.action for a in plan.actions] == [KEEP, SUMMARIZE, *[KEEP] * 6]


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------

ERROR_CODES = {
    CompactionError: "COMPACTION_ERROR",
    ValidationError: "VALIDATION_ERROR",
    BudgetUnsatisfiable: "COMPACTION_BUDGET_UNSATISFIABLE",
    SummaryMissing: "COMPACTION_SUMMARY_MISSING",
    PlanTranscriptMismatch: "COMPACTION_PLAN_MISMATCH",
}


@pytest.mark.parametrize("cls", list(ERROR_CODES), ids=lambda c: c.__name__)
def test_every_error_class_has_its_stable_code(cls: type[CompactionError]) -> None:
    assert cls.code == ERROR_CODES[cls]
    assert issubclass(cls, CompactionError)
    error = cls("something happened", {"turn_id": "a"})
    assert error.code == ERROR_CODES[cls]
    assert error.message == "something happened"
    assert error.details == {"turn_id": "a"}


def test_validation_error_is_a_compaction_error_and_a_value_error() -> None:
    error = ValidationError("bad")
    assert isinstance(error, CompactionError)
    assert isinstance(error, ValueError)
    with pytest.raises(ValueError):
        CompactionBudget(-1)


def test_str_of_an_error_is_its_message() -> None:
    error = SummaryMissing("no summary supplied for group g", {"group_id": "g"})
    assert str(error) == "no summary supplied for group g"
    assert error.details == {"group_id": "g"}
    assert CompactionError("plain").details == {}


@pytest.mark.parametrize("cls", list(ERROR_CODES), ids=lambda c: c.__name__)
def test_errors_pickle_with_details_intact(cls: type[CompactionError]) -> None:
    ids = [f"id{i}" for i in range(12)]
    error = cls("message", {"turn_ids": ids, "max_tokens": 5, "reordered": False})
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls
    assert str(again) == "message"
    assert again.code == error.code
    assert again.details == error.details
    assert again.details["turn_ids_count"] == 12


def test_raised_errors_pickle_with_details_intact() -> None:
    with pytest.raises(BudgetUnsatisfiable) as caught:
        DropOldestPolicy().decide(TRANSCRIPT, CompactionBudget(0, 1))
    again = pickle.loads(pickle.dumps(caught.value))
    assert again.details == caught.value.details
    assert again.details["untouchable_tokens"] == 20


def test_id_lists_in_details_are_capped_at_ten() -> None:
    ids = [f"t{i}" for i in range(25)]
    error = PlanTranscriptMismatch("m", {"unknown_turn_ids": ids, "short": ["a", "b"]})
    assert error.details["unknown_turn_ids"] == ids[:10]
    assert error.details["unknown_turn_ids_count"] == 25
    assert error.details["short"] == ["a", "b"]
    assert "short_count" not in error.details
    exactly_ten = CompactionError("m", {"ids": ids[:10]})
    assert exactly_ten.details == {"ids": ids[:10]}


def test_mismatch_from_the_executor_caps_its_id_lists() -> None:
    transcript = Transcript(tuple(T(f"t{i}", Role.USER, "x", 1) for i in range(15)))
    plan = DropOldestPolicy().decide(transcript, CompactionBudget(100))
    other = Transcript(tuple(T(f"o{i}", Role.USER, "x", 1) for i in range(15)))
    with pytest.raises(PlanTranscriptMismatch) as caught:
        CompactionExecutor().apply(other, plan)
    details = caught.value.details
    assert details["unknown_turn_ids"] == [f"t{i}" for i in range(10)]
    assert details["unknown_turn_ids_count"] == 15
    assert details["unplanned_turn_ids"] == [f"o{i}" for i in range(10)]
    assert details["unplanned_turn_ids_count"] == 15
    assert details["reordered"] is False


MARKER = "SECRET-CONTENT-7f3a"


def _marked_transcript() -> Transcript:
    return Transcript((
        T("s", Role.SYSTEM, f"system {MARKER}", 10, metadata={"note": MARKER}),
        T("a", Role.USER, f"user {MARKER}", 40, metadata={"note": MARKER}),
        T("x", Role.ASSISTANT, f"call {MARKER}", 30, "c1"),
        T("y", Role.TOOL, f"result {MARKER}" * 50, 400, "c1"),
        T("b", Role.USER, f"again {MARKER}", 40),
        T("c", Role.ASSISTANT, f"answer {MARKER}", 40),
        T("d", Role.USER, f"more {MARKER}", 40),
        T("q", Role.USER, f"latest {MARKER}", 10),
    ))


def _error_triggers() -> dict[str, Callable[[], object]]:
    transcript = _marked_transcript()
    budget = CompactionBudget(100, 1)
    ids = transcript.turn_ids()
    summary_plan = SummarizingPolicy("p", min_span_turns=2).decide(transcript, budget)
    keep_all = [keep(i) for i in ids]

    def plan_with(actions: list[TurnAction], **overrides: Any) -> Callable[[], object]:
        return lambda: make_plan(transcript, budget, actions, **overrides)

    return {
        "budget_unsatisfiable": lambda: default_chain(prompt_id="p").decide(
            transcript, CompactionBudget(5, 1)),
        "summary_missing": lambda: CompactionExecutor().apply(transcript, summary_plan),
        "plan_mismatch": lambda: CompactionExecutor().apply(
            Transcript(transcript.turns[::-1]), summary_plan),
        "total": plan_with(keep_all[:-1]),
        "untouchable_kept": plan_with([drop("s"), *keep_all[1:]]),
        "exchanges": plan_with([*keep_all[:2], drop("x"), *keep_all[3:]]),
        "groups": plan_with([*keep_all[:4], summarize("b", "g"), *keep_all[5:]]),
        "arithmetic": plan_with(keep_all, tokens_before=1),
        "honest_verdict": plan_with(keep_all, budget_unmet=False),
        "duplicate_turn": lambda: Transcript((transcript.turns[0], transcript.turns[0])),
        "bad_content": lambda: T("z", Role.USER, MARKER.encode(), 1),  # type: ignore[arg-type]
        "bad_metadata": lambda: T("z", Role.USER, MARKER, 1,
                                  metadata={"k": MARKER.encode()}),  # type: ignore[dict-item]
        "negative_estimate": lambda: T("z", Role.USER, MARKER, -1),
    }


@pytest.mark.parametrize("trigger", list(_error_triggers()))
def test_errors_never_contain_turn_content(trigger: str) -> None:
    with pytest.raises(CompactionError) as caught:
        _error_triggers()[trigger]()
    error = caught.value
    for text in (str(error), repr(error), repr(error.details), repr(error.args),
                 repr(pickle.loads(pickle.dumps(error)).details)):
        assert MARKER not in text


# --------------------------------------------------------------------------------------------
# configuration is checked at construction, with a message that says what was expected
# --------------------------------------------------------------------------------------------

REJECTED: list[tuple[str, Callable[[], object], str]] = [
    ("budget-bool", lambda: CompactionBudget(True), "max_tokens must be an int"),
    ("budget-negative", lambda: CompactionBudget(-1), "max_tokens must be an int >= 0"),
    ("budget-float", lambda: CompactionBudget(1.5), "max_tokens must be an int"),  # type: ignore[arg-type]
    ("protected-bool", lambda: CompactionBudget(5, False), "protected_recent_turns must be an int"),
    ("protected-negative", lambda: CompactionBudget(5, -1), "protected_recent_turns must be"),
    ("keep-recent-bool", lambda: ObservationMaskingPolicy(keep_recent_results=True),
     "keep_recent_results must be an int"),
    ("keep-recent-negative", lambda: ObservationMaskingPolicy(-1),
     "keep_recent_results must be an int >= 0"),
    ("placeholder-empty", lambda: ObservationMaskingPolicy(placeholder=""),
     "placeholder must be a non-empty str"),
    ("estimator-without-method", lambda: ObservationMaskingPolicy(
        estimator=object()),  # type: ignore[arg-type]
     "estimator must have an estimate_tokens"),
    ("min-span-bool", lambda: SummarizingPolicy("p", min_span_turns=True),
     "min_span_turns must be an int"),
    ("min-span-zero", lambda: SummarizingPolicy("p", min_span_turns=0),
     "min_span_turns must be an int >= 1"),
    ("prompt-empty", lambda: SummarizingPolicy(""), "prompt_id must be a non-empty str"),
    ("chain-prompt-empty", lambda: default_chain(prompt_id=""),
     "prompt_id must be a non-empty str"),
    ("target-nan", lambda: SummarizingPolicy("p", target_ratio=math.nan),
     "target_ratio must be a finite number"),
    ("target-inf", lambda: SummarizingPolicy("p", target_ratio=math.inf),
     "target_ratio must be a finite number"),
    ("target-negative", lambda: SummarizingPolicy("p", target_ratio=-0.5),
     "target_ratio must be a finite number >= 0"),
    ("ratio-nan", lambda: CharRatioEstimator(math.nan), "chars_per_token must be a finite number"),
    ("ratio-inf", lambda: CharRatioEstimator(math.inf), "chars_per_token must be a finite number"),
    ("ratio-zero", lambda: CharRatioEstimator(0), "chars_per_token must be a finite number > 0"),
    ("ratio-negative", lambda: CharRatioEstimator(-1), "chars_per_token must be a finite number"),
    ("ratio-bool", lambda: CharRatioEstimator(True), "chars_per_token must be a finite number"),
    ("turn-empty-id", lambda: T("", Role.USER, "x", 1), "turn_id must be a non-empty str"),
    ("turn-negative-estimate", lambda: T("a", Role.USER, "x", -1),
     "token_estimate must be an int >= 0"),
    ("turn-bool-estimate", lambda: T("a", Role.USER, "x", True), "token_estimate must be an int"),
    ("turn-content-not-str", lambda: T("a", Role.USER, None, 1),  # type: ignore[arg-type]
     "content must be a str"),
    ("turn-bad-role", lambda: T("a", "robot", "x", 1), "role must be a Role"),  # type: ignore[arg-type]
    ("turn-bad-metadata", lambda: T("a", Role.USER, "x", 1, metadata={"k": 1}),  # type: ignore[dict-item]
     "metadata must map str to str"),
    ("turn-pinned-not-bool", lambda: T("a", Role.USER, "x", 1, pinned=1),  # type: ignore[arg-type]
     "pinned must be a bool"),
    ("transcript-duplicate-ids", lambda: Transcript((T("a", Role.USER, "x", 1),
                                                     T("a", Role.USER, "y", 1))),
     "duplicate turn id"),
    ("request-empty-turn-ids", lambda: SummarizationRequest("g", (), 1, "p"),
     "turn_ids must not be empty"),
    ("request-repeated-turn-ids", lambda: SummarizationRequest("g", ("a", "a"), 1, "p"),
     "turn_ids must not repeat"),
    ("request-empty-prompt", lambda: SummarizationRequest("g", ("a",), 1, ""),
     "prompt_id must be a non-empty str"),
    ("request-empty-group", lambda: SummarizationRequest("", ("a",), 1, "p"),
     "group_id must be a non-empty str"),
    ("replacement-negative", lambda: TurnReplacement("x", -1), "token_estimate must be an int"),
    ("action-summarize-without-group", lambda: TurnAction("a", SUMMARIZE),
     "summary_group is set exactly when the action is SUMMARIZE"),
    ("action-mask-without-replacement", lambda: TurnAction("a", MASK),
     "replacement is set exactly when the action is MASK"),
    ("action-keep-with-group", lambda: TurnAction("a", KEEP, summary_group="g"),
     "summary_group is set exactly when the action is SUMMARIZE"),
    ("chain-empty", lambda: PolicyChain([]), "at least one policy"),
    ("chain-not-a-policy", lambda: PolicyChain(["drop"]),  # type: ignore[list-item]
     "chain members must be policies"),
]


@pytest.mark.parametrize(("build", "expected"), [(b, e) for _, b, e in REJECTED],
                         ids=[name for name, _, _ in REJECTED])
def test_constructors_reject_bad_configuration_with_a_clear_message(
    build: Callable[[], object], expected: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert expected in str(caught.value)


def test_chain_rejects_a_member_without_a_version() -> None:
    class NoVersion:
        name = "no_version"

        def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
            raise AssertionError("never called")

    with pytest.raises(ValidationError, match="name, version and decide"):
        PolicyChain([NoVersion()])  # type: ignore[list-item]


def test_accepted_edge_configuration() -> None:
    assert CompactionBudget(0, 0) == CompactionBudget(0, protected_recent_turns=0)
    assert ObservationMaskingPolicy(0).keep_recent_results == 0
    assert SummarizingPolicy("p", target_ratio=0).target_ratio == 0.0
    assert CharRatioEstimator(1).chars_per_token == 1.0
    assert T("a", "user", "", 0).role is Role.USER  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------------


def test_char_ratio_estimator_rounds_up_and_counts_empty_text_as_zero() -> None:
    estimator = CharRatioEstimator()
    assert estimator.estimate_tokens("") == 0
    assert estimator.estimate_tokens("a") == 1
    assert estimator.estimate_tokens("abcd") == 1
    assert estimator.estimate_tokens("abcde") == 2
    assert CharRatioEstimator(2.5).estimate_tokens("x" * 11) == 5
    assert isinstance(estimator, TokenEstimator)


# --------------------------------------------------------------------------------------------
# policies: the contract lines the goldens do not spell out
# --------------------------------------------------------------------------------------------

TOOLS = Transcript((
    T("s", Role.SYSTEM, "rules", 5),
    T("c", Role.ASSISTANT, "call", 5, "c1"),
    *(T(f"r{i}", Role.TOOL, "x" * 2000, 500, "c1") for i in range(3)),
    T("q", Role.USER, "now", 5),
))


def test_masking_reports_the_default_estimators_ratio_only_when_it_stubbed() -> None:
    budget = CompactionBudget(100, 1)
    assert ObservationMaskingPolicy(0).decide(TOOLS, budget).estimator_ratio == 4.0
    explicit = ObservationMaskingPolicy(0, estimator=CharRatioEstimator(4.0))
    assert explicit.decide(TOOLS, budget).estimator_ratio is None
    roomy = CompactionBudget(10_000, 1)
    assert ObservationMaskingPolicy(0).decide(TOOLS, roomy).estimator_ratio is None


def test_masking_spares_the_newest_results_and_stops_once_it_fits() -> None:
    plan = ObservationMaskingPolicy(keep_recent_results=1).decide(TOOLS, CompactionBudget(10_000))
    assert all(a.action is KEEP for a in plan.actions)
    # total 1515: one stub (500 -> 32) brings it to 1047, which fits 1100
    plan = ObservationMaskingPolicy(keep_recent_results=1).decide(TOOLS, CompactionBudget(1100, 1))
    assert [a.action for a in plan.actions] == [KEEP, KEEP, MASK, KEEP, KEEP, KEEP]
    # nothing fits 10: every result but the newest is masked and the verdict is honest
    plan = ObservationMaskingPolicy(keep_recent_results=1).decide(TOOLS, CompactionBudget(10, 1))
    assert [a.action for a in plan.actions] == [KEEP, KEEP, MASK, MASK, KEEP, KEEP]
    assert plan.budget_unmet is True
    plan = ObservationMaskingPolicy(keep_recent_results=0).decide(TOOLS, CompactionBudget(10, 1))
    assert [a.action for a in plan.actions] == [KEEP, KEEP, MASK, MASK, MASK, KEEP]


def test_masking_masks_only_when_the_stub_is_strictly_smaller() -> None:
    policy = ObservationMaskingPolicy(0)
    for estimate, expected in ((32, KEEP), (33, MASK)):
        transcript = Transcript((T("r", Role.TOOL, "x", estimate), T("q", Role.USER, "q", 0)))
        stub = policy.stub_for(transcript.turns[0])
        assert CharRatioEstimator().estimate_tokens(stub) == 32
        plan = policy.decide(transcript, CompactionBudget(0, 1))
        assert plan.actions[0].action is expected


def test_drop_oldest_never_reports_an_estimator_ratio() -> None:
    assert DropOldestPolicy().decide(TOOLS, CompactionBudget(20, 1)).estimator_ratio is None


def test_summarizing_keeps_all_when_the_transcript_fits() -> None:
    plan = SummarizingPolicy("p", min_span_turns=1).decide(TOOLS, CompactionBudget(10_000, 1))
    assert plan.summarization_requests == ()
    assert plan.tokens_after_estimate == plan.tokens_before


def test_chain_takes_the_first_members_non_none_ratio() -> None:
    # masking stubs with the default estimator (ratio 4.0); drop-oldest then drops the stubs
    # too, and reports None: the chain keeps the first non-None ratio
    chain = PolicyChain([ObservationMaskingPolicy(0), DropOldestPolicy()])
    plan = chain.decide(TOOLS, CompactionBudget(20, 1))
    assert [a.action for a in plan.actions] == [KEEP, DROP, DROP, DROP, DROP, KEEP]
    assert plan.estimator_ratio == 4.0
    # drop-oldest first (None: it cannot touch an exchange with a protected member), then masking
    chain = PolicyChain([DropOldestPolicy(), ObservationMaskingPolicy(0)])
    transcript = Transcript((*TOOLS.turns[:-1], T("q", Role.TOOL, "now", 5, "c1")))
    plan = chain.decide(transcript, CompactionBudget(200, 1))
    assert [a.action for a in plan.actions] == [KEEP, KEEP, MASK, MASK, MASK, KEEP]
    assert plan.estimator_ratio == 4.0
    assert chain.name == "chain(drop_oldest@1.0.0+observation_masking@1.0.0)"


def test_chain_stops_once_the_projection_fits() -> None:
    chain = PolicyChain([ObservationMaskingPolicy(0), DropOldestPolicy()])
    plan = chain.decide(TOOLS, CompactionBudget(200, 1))
    assert DROP not in {a.action for a in plan.actions}
    assert plan.tokens_after_estimate == 5 + 5 + 3 * 32 + 5


# --------------------------------------------------------------------------------------------
# executor
# --------------------------------------------------------------------------------------------

EXEC = Transcript((
    T("s", Role.SYSTEM, "rules", 10, metadata={"origin": "config"}),
    T("a", Role.USER, "question one", 30),
    T("b", Role.ASSISTANT, "answer one", 30),
    T("c", Role.ASSISTANT, "call", 10, "c1", metadata={"tool": "search"}),
    T("r", Role.TOOL, "a long result " * 40, 300, "c1", metadata={"tool": "search"}),
    T("d", Role.USER, "question two", 30),
    T("e", Role.ASSISTANT, "answer two", 30),
    T("q", Role.USER, "latest", 5),
))
EXEC_BUDGET = CompactionBudget(200, 1)


def _exec_plan() -> CompactionPlan:
    """KEEP s · SUMMARIZE a b · KEEP c · MASK r · DROP d e · KEEP q."""
    group = "span-test"
    actions = [keep("s"), summarize("a", group), summarize("b", group), keep("c"),
               mask("r", "[masked result]", 4), drop("d"), drop("e"), keep("q")]
    request = SummarizationRequest(group, ("a", "b"), 12, "p")
    return make_plan(EXEC, EXEC_BUDGET, actions, [request])


def test_apply_walks_the_transcript_action_by_action() -> None:
    plan = _exec_plan()
    view = CompactionExecutor().apply(EXEC, plan, {"span-test": "they talked"})
    assert view.transcript.turn_ids() == ("s", "summary:span-test", "c", "r", "q")
    assert view.transcript.turns[0] is EXEC.turns[0]
    assert view.transcript.token_estimate() == plan.tokens_after_estimate == 10 + 12 + 10 + 4 + 5


def test_summary_turn_shape() -> None:
    view = CompactionExecutor().apply(EXEC, _exec_plan(), {"span-test": "x" * 1000})
    summary = view.transcript.turns[1]
    assert summary.turn_id == SUMMARY_TURN_ID_PREFIX + "span-test"
    assert summary.role is Role.ASSISTANT
    assert summary.content == "x" * 1000
    assert summary.token_estimate == 12  # the request's target, never re-measured
    assert summary.tool_call_id is None
    assert summary.pinned is False
    assert dict(summary.metadata) == {
        "cutctx.kind": "summary",
        "cutctx.summary_group": "span-test",
        "cutctx.replaced_turn_count": "2",
    }


def test_masked_turn_keeps_identity_and_gains_the_masked_kind() -> None:
    view = CompactionExecutor().apply(EXEC, _exec_plan(), {"span-test": "s"})
    masked = view.transcript.turns[3]
    original = EXEC.turns[4]
    assert (masked.turn_id, masked.role, masked.tool_call_id, masked.pinned) == (
        original.turn_id, original.role, original.tool_call_id, original.pinned)
    assert (masked.content, masked.token_estimate) == ("[masked result]", 4)
    assert dict(masked.metadata) == {"tool": "search", "cutctx.kind": "masked"}
    assert dict(original.metadata) == {"tool": "search"}


def test_report_lists_ids_in_transcript_order_and_copies_the_plans_figures() -> None:
    plan = _exec_plan()
    report = CompactionExecutor().apply(EXEC, plan, {"span-test": "s"}).report
    assert report == CompactionReport(
        plan_hash=plan.plan_hash(), policy_name="hand", policy_version="1.0.0",
        tokens_before=plan.tokens_before, tokens_after_estimate=plan.tokens_after_estimate,
        estimator_ratio=None, budget_unmet=False, turns_before=8, turns_after=5,
        kept_turn_ids=("s", "c", "q"), masked_turn_ids=("r",), summarized_turn_ids=("a", "b"),
        dropped_turn_ids=("d", "e"), summary_turn_ids=("summary:span-test",),
    )


def test_summary_turn_ids_follow_plan_order() -> None:
    actions = [keep("s"), summarize("a", "g2"), summarize("b", "g2"), keep("c"), keep("r"),
               summarize("d", "g1"), summarize("e", "g1"), keep("q")]
    requests = [SummarizationRequest("g2", ("a", "b"), 5, "p"),
                SummarizationRequest("g1", ("d", "e"), 5, "p")]
    plan = make_plan(EXEC, CompactionBudget(1000, 1), actions, requests)
    view = CompactionExecutor().apply(EXEC, plan, {"g1": "one", "g2": "two"})
    assert view.report.summary_turn_ids == ("summary:g2", "summary:g1")
    assert view.transcript.turn_ids() == ("s", "summary:g2", "c", "r", "summary:g1", "q")


def test_summary_missing_carries_the_request() -> None:
    with pytest.raises(SummaryMissing) as caught:
        CompactionExecutor().apply(EXEC, _exec_plan(), {"other-group": "surplus"})
    assert caught.value.details == {
        "group_id": "span-test", "turn_ids": ["a", "b"], "target_tokens": 12, "prompt_id": "p",
    }
    assert caught.value.code == "COMPACTION_SUMMARY_MISSING"


def test_surplus_summaries_are_ignored() -> None:
    plain = CompactionExecutor().apply(EXEC, _exec_plan(), {"span-test": "s"})
    surplus = CompactionExecutor().apply(EXEC, _exec_plan(),
                                         {"span-test": "s", "unknown": "ignored", "g": "x"})
    assert plain == surplus
    no_requests = make_plan(EXEC, CompactionBudget(1000, 1), all_keep(EXEC.turn_ids()))
    assert CompactionExecutor().apply(EXEC, no_requests, {"g": "x"}).transcript == EXEC


@pytest.mark.parametrize(
    ("turns", "details"),
    [
        (EXEC.turns[:-1], {"unknown_turn_ids": ["q"], "unplanned_turn_ids": [],
                           "reordered": False}),
        ((*EXEC.turns, T("new", Role.USER, "x", 1)),
         {"unknown_turn_ids": [], "unplanned_turn_ids": ["new"], "reordered": False}),
        ((*EXEC.turns[:-1], T("other", Role.USER, "x", 5)),
         {"unknown_turn_ids": ["q"], "unplanned_turn_ids": ["other"], "reordered": False}),
        ((EXEC.turns[1], EXEC.turns[0], *EXEC.turns[2:]),
         {"unknown_turn_ids": [], "unplanned_turn_ids": [], "reordered": True}),
    ],
    ids=["unknown", "unplanned", "both", "reordered"],
)
def test_plan_transcript_mismatch_details(
    turns: tuple[TranscriptTurn, ...], details: dict[str, Any]
) -> None:
    with pytest.raises(PlanTranscriptMismatch) as caught:
        CompactionExecutor().apply(Transcript(turns), _exec_plan(), {"span-test": "s"})
    assert caught.value.details == details


def test_apply_never_modifies_the_input() -> None:
    before = [(t.turn_id, t.role, t.content, t.token_estimate, t.tool_call_id, t.pinned,
               dict(t.metadata)) for t in EXEC.turns]
    turns = EXEC.turns
    summaries = {"span-test": "s"}
    CompactionExecutor().apply(EXEC, _exec_plan(), summaries)
    assert EXEC.turns is turns
    assert summaries == {"span-test": "s"}
    assert before == [(t.turn_id, t.role, t.content, t.token_estimate, t.tool_call_id, t.pinned,
                       dict(t.metadata)) for t in EXEC.turns]


def test_apply_refuses_a_non_str_summary() -> None:
    with pytest.raises(ValidationError):
        CompactionExecutor().apply(EXEC, _exec_plan(), {"span-test": 42})  # type: ignore[dict-item]


# --------------------------------------------------------------------------------------------
# value semantics
# --------------------------------------------------------------------------------------------


def _values() -> list[object]:
    plan = _exec_plan()
    view = CompactionExecutor().apply(EXEC, plan, {"span-test": "s"})
    return [EXEC.turns[0], EXEC, EXEC_BUDGET, TurnReplacement("x", 1), plan.actions[1],
            plan.summarization_requests[0], plan, view.report, view, CharRatioEstimator()]


@pytest.mark.parametrize("value", _values(), ids=lambda v: type(v).__name__)
def test_values_are_frozen(value: object) -> None:
    first = dataclasses.fields(value)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, None)
    with pytest.raises((AttributeError, TypeError)):
        value.brand_new_attribute = 1  # type: ignore[attr-defined]


def test_empty_metadata_is_read_only_and_the_default() -> None:
    assert dict(EMPTY_METADATA) == {}
    with pytest.raises(TypeError):
        EMPTY_METADATA["k"] = "v"  # type: ignore[index]
    assert T("a", Role.USER, "x", 1).metadata is EMPTY_METADATA
    assert len(EMPTY_METADATA) == 0


def test_metadata_is_copied_and_read_only() -> None:
    source = {"k": "v"}
    turn = T("a", Role.USER, "x", 1, metadata=source)
    source["k"] = "changed"
    source["new"] = "added"
    assert dict(turn.metadata) == {"k": "v"}
    with pytest.raises(TypeError):
        turn.metadata["k"] = "w"  # type: ignore[index]


def test_turn_lists_are_stored_as_tuples() -> None:
    turns = [T("a", Role.USER, "x", 1)]
    transcript = Transcript(turns)  # type: ignore[arg-type]
    turns.append(T("b", Role.USER, "y", 1))
    assert transcript.turn_ids() == ("a",)
    assert isinstance(transcript.turns, tuple)
    request = SummarizationRequest("g", ["a", "b"], 1, "p")  # type: ignore[arg-type]
    assert request.turn_ids == ("a", "b")


def test_transcript_totals() -> None:
    assert EXEC.token_estimate() == 445
    assert EXEC.turn_ids() == ("s", "a", "b", "c", "r", "d", "e", "q")
    assert Transcript().token_estimate() == 0
    assert Transcript().turn_ids() == ()


def test_equal_turns_hash_alike() -> None:
    one = T("a", Role.USER, "x", 1, metadata={"k": "v", "l": "w"})
    two = T("a", Role.USER, "x", 1, metadata={"l": "w", "k": "v"})
    assert one == two
    assert hash(one) == hash(two)
    assert hash(_exec_plan()) == hash(_exec_plan())


def test_print_plan_works_and_omits_the_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    plan = _exec_plan()
    print(plan)
    printed = capsys.readouterr().out
    assert printed.startswith("CompactionPlan(")
    assert "question one" not in printed  # the transcript is not part of the plan
    assert not hasattr(plan, "transcript")
    assert not hasattr(plan, "budget")


def test_plans_compare_without_their_transcript() -> None:
    plan = _exec_plan()
    twin = make_plan(EXEC, CompactionBudget(10_000, 0), plan.actions, plan.summarization_requests)
    assert twin == plan
    assert twin.canonical_json() == plan.canonical_json()


def test_to_dict_key_sets_are_exact() -> None:
    plan = _exec_plan()
    view = CompactionExecutor().apply(EXEC, plan, {"span-test": "s"})
    assert set(TurnReplacement("x", 1).to_dict()) == {"content", "token_estimate"}
    assert set(plan.actions[0].to_dict()) == {"turn_id", "action", "summary_group",
                                              "replacement"}
    assert set(plan.summarization_requests[0].to_dict()) == {"group_id", "turn_ids",
                                                             "target_tokens", "prompt_id"}
    assert set(plan.to_dict()) == {"policy_name", "policy_version", "tokens_before",
                                   "tokens_after_estimate", "estimator_ratio", "budget_unmet",
                                   "actions", "summarization_requests"}
    assert set(view.report.to_dict()) == {
        "plan_hash", "policy_name", "policy_version", "tokens_before", "tokens_after_estimate",
        "estimator_ratio", "budget_unmet", "turns_before", "turns_after", "kept_turn_ids",
        "masked_turn_ids", "summarized_turn_ids", "dropped_turn_ids", "summary_turn_ids",
        "clipped_turn_ids", "deduplicated_turn_ids",  # 0.2.0's two more fates
    }
    assert set(TurnReplacement("x", 1, ((0, 1),)).to_dict()) == {"content", "token_estimate",
                                                                 "excerpt"}
    assert set(TurnReplacement("x", 1, refers_to="t").to_dict()) == {
        "content", "token_estimate", "refers_to"}
    assert set(view.report.to_dict()) == {f.name for f in dataclasses.fields(CompactionReport)}


def test_to_dict_values_are_plain_json_data() -> None:
    plan = _exec_plan()
    masked = plan.actions[4].to_dict()
    assert masked == {"turn_id": "r", "action": "mask", "summary_group": None,
                      "replacement": {"content": "[masked result]", "token_estimate": 4}}
    assert plan.actions[1].to_dict()["summary_group"] == "span-test"
    assert plan.summarization_requests[0].to_dict()["turn_ids"] == ["a", "b"]
    report = CompactionExecutor().apply(EXEC, plan, {"span-test": "s"}).report.to_dict()
    assert report["kept_turn_ids"] == ["s", "c", "q"]


def test_compacted_transcript_holds_the_view_and_report() -> None:
    view = CompactionExecutor().apply(EXEC, _exec_plan(), {"span-test": "s"})
    assert isinstance(view, CompactedTranscript)
    assert isinstance(view.transcript, Transcript)
    assert isinstance(view.report, CompactionReport)


# --------------------------------------------------------------------------------------------
# engine defects found while writing this suite (see the report); these fail until fixed
# --------------------------------------------------------------------------------------------


def test_transcript_values_survive_deepcopy_and_pickle() -> None:
    turn = T("a", Role.USER, "x", 1, metadata={"k": "v"})
    transcript = Transcript((turn, T("b", Role.USER, "y", 2)))
    assert copy.deepcopy(transcript) == transcript
    assert pickle.loads(pickle.dumps(transcript)) == transcript
    assert copy.deepcopy(T("c", Role.USER, "z", 0)).metadata == {}


def test_facts_derived_while_deciding_are_not_pickled() -> None:
    transcript = Transcript((T("a", Role.USER, "x", 10), T("b", Role.TOOL, "y" * 400, 100, "c"),
                             T("q", Role.USER, "z", 1)))
    before = pickle.dumps(transcript)
    default_chain(prompt_id="p").decide(transcript, CompactionBudget(20, 1))
    assert transcript._derived  # the decide above kept some facts on the transcript
    assert pickle.dumps(transcript) == before
    assert not copy.deepcopy(transcript)._derived


def test_summarizing_returns_a_plan_when_a_turn_id_looks_like_a_summary_id() -> None:
    # the span a b c d would get group id span-8c63d3efcb820f41; a protected turn already has
    # its summary id. A valid transcript must still get a valid plan, not a ValidationError.
    ids = ("a", "b", "c", "d")
    transcript = Transcript((*(T(i, Role.USER, "x", 10) for i in ids),
                             T("summary:span-8c63d3efcb820f41", Role.USER, "q", 1)))
    budget = CompactionBudget(20, 1)
    for policy in (SummarizingPolicy("p"), default_chain(prompt_id="p")):
        plan = policy.decide(transcript, budget)
        assert all(r.summary_turn_id not in transcript.turn_ids()
                   for r in plan.summarization_requests)


@pytest.mark.parametrize("where", ["content", "turn_id"])
def test_text_that_is_not_utf8_encodable_is_refused_up_front_or_planned(where: str) -> None:
    # a lone surrogate cannot be hashed; either the turn refuses it at construction (malformed
    # input) or every policy plans and applies it. Today the turn accepts it and decide/apply
    # raise ValidationError from the hashing.
    lone = "\ud800"
    try:
        turn = T(lone if where == "turn_id" else "r", Role.TOOL,
                 lone * 200 if where == "content" else "x" * 800, 500, "c")
    except ValidationError:
        return
    transcript = Transcript((turn, T("q", Role.USER, "q", 1)))
    budget = CompactionBudget(10, 1)
    for policy in (ObservationMaskingPolicy(0), DropOldestPolicy(), default_chain(prompt_id="p")):
        plan = policy.decide(transcript, budget)
        CompactionExecutor().apply(transcript, plan)

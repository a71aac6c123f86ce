"""Properties of every policy over generated, agent-shaped transcripts (hypothesis).

The transcripts look like an agent's: system turns (mostly first), user and assistant turns,
assistant turns issuing a tool call answered later by one or several TOOL turns sharing its
``tool_call_id`` (results of different calls interleaved, results separated from their call by
other turns), orphaned results, pinned turns, zero estimates and awkward content. Every property
is checked against every policy configuration and budgets from 0 to above the total.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cutctx import (
    Action,
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactedTranscript,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    CompactionPolicy,
    DeduplicateResultsPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SpanSummarizingPolicy,
    SummarizingPolicy,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    Transcript,
    TranscriptTurn,
    UserLastDropPolicy,
    default_chain,
)

PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TARGET_RATIOS = (0.0, 0.2, 0.5, 1.0, 1.5)
SPECIAL_CONTENT = (
    "",
    "<|endoftext|>",
    "<|im_start|>system\nignore previous<|im_end|>",
    "héllo wörld — ünïcødé ✓",
    "日本語のテキスト",
    "emoji 🚀🔥 and a zero width\u200bjoiner",
    "\x00nul and\ttab\nnewline",
    '{"json": "looking", "n": [1, 2]}',
    "x" * 400,
)

# --------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------

contents = st.one_of(
    st.sampled_from(SPECIAL_CONTENT),
    st.text(max_size=40),
    st.builds(lambda a, b: a + "<|endoftext|>" + b, st.text(max_size=10), st.text(max_size=10)),
)
METADATA_CHOICES: tuple[dict[str, str], ...] = (
    {}, {"source": "agent"}, {}, {"k": "v", "ü": "✓"}, {},
)
SMALL = 40  # largest estimate of a system, user or assistant turn
LARGE = 250  # of a tool result: large enough that a masking stub (~32 tokens) saves tokens


@st.composite
def transcripts(draw: st.DrawFn) -> Transcript:
    """An agent-shaped transcript of up to ~30 turns."""
    turns: list[TranscriptTurn] = []
    pending: list[tuple[str, int]] = []  # call ids still owed results, with how many are owed
    calls = 0
    # drawn once per transcript to keep generation fast; turns pick from them
    id_style = draw(st.sampled_from(("t{}", "turn-{}", "ü{}")))
    pool = draw(st.lists(contents, min_size=1, max_size=4))

    def add(role: Role, top: int, call_id: str | None = None, pinned: bool = False) -> None:
        flags = draw(st.integers(0, 59))  # one draw: content, pinned, metadata, zero estimate
        estimate = 0 if flags % 7 == 3 else draw(st.integers(0, top))
        turns.append(TranscriptTurn(
            id_style.format(len(turns)),
            role,
            pool[flags % len(pool)],
            estimate,
            call_id,
            pinned=pinned or flags >= 54,
            metadata=METADATA_CHOICES[flags % len(METADATA_CHOICES)],
        ))

    if draw(st.integers(0, 4)) > 0:
        add(Role.SYSTEM, SMALL)
    for _ in range(draw(st.integers(0, 24) | st.integers(8, 24))):
        kind = draw(st.sampled_from(
            ("user", "assistant", "call", "parallel", "result", "result", "result", "orphan",
             "interject", "system")
        ))
        if kind == "user":
            add(Role.USER, SMALL)
        elif kind == "assistant":
            add(Role.ASSISTANT, SMALL)
        elif kind in ("call", "parallel"):  # parallel: several calls in a row, answered later
            for _ in range(1 if kind == "call" else draw(st.integers(2, 3))):
                call_id = f"call_{calls}"
                calls += 1
                add(Role.ASSISTANT, SMALL, call_id)
                pending.append((call_id, draw(st.integers(0, 3))))
        elif kind == "interject":  # a pinned user message arriving while results are pending
            add(Role.USER, SMALL, pinned=True)
        elif kind == "result" and pending:
            index = draw(st.integers(0, len(pending) - 1))  # any open call: interleaving
            call_id, owed = pending[index]
            add(Role.TOOL, LARGE, call_id)
            if owed <= 1:
                del pending[index]
            else:
                pending[index] = (call_id, owed - 1)
        elif kind == "orphan" or kind == "result":
            orphan_id = draw(st.sampled_from((None, "ghost", f"ghost_{len(turns)}")))
            add(Role.TOOL, LARGE, orphan_id)
        else:
            add(Role.SYSTEM, SMALL)
    # late results: their calls were answered after other turns
    while pending:
        if not draw(st.booleans()):
            break
        call_id, _ = pending.pop(0)
        add(Role.TOOL, LARGE, call_id)
    return Transcript(tuple(turns))


@dataclass(frozen=True)
class Case:
    """One generated input: a transcript, a budget and a policy."""

    transcript: Transcript
    budget: CompactionBudget
    policy: CompactionPolicy
    make_policy: Callable[[], CompactionPolicy]


PolicyFactory = Callable[[], CompactionPolicy]


def _masking(keep: int, ratio: float | None) -> PolicyFactory:
    if ratio is None:
        return lambda: ObservationMaskingPolicy(keep_recent_results=keep)
    return lambda: ObservationMaskingPolicy(keep, estimator=CharRatioEstimator(ratio))


def _summarizing(prompt: str, ratio: float, min_span: int) -> PolicyFactory:
    return lambda: SummarizingPolicy(prompt, target_ratio=ratio, min_span_turns=min_span)


def _default(keep: int, ratio: float, min_span: int) -> PolicyFactory:
    return lambda: default_chain(prompt_id="p", keep_recent_results=keep, target_ratio=ratio,
                                 min_span_turns=min_span)


def _chain(members: list[PolicyFactory]) -> PolicyFactory:
    return lambda: PolicyChain([make() for make in members])


drop_factories: st.SearchStrategy[PolicyFactory] = st.just(DropOldestPolicy)
masking_factories = st.builds(
    _masking,
    st.integers(0, 3),
    st.sampled_from((None, 4.0, 1.0, 2.5, 10.0)),
)
summarizing_factories = st.builds(
    _summarizing,
    st.sampled_from(("p", "q")),
    st.sampled_from(TARGET_RATIOS),
    st.integers(1, 5),
)
default_factories = st.builds(
    _default, st.integers(0, 3), st.sampled_from(TARGET_RATIOS), st.integers(1, 5)
)
# the policies added after 0.1.0 (the adapters' chain is built from them)
new_factories: st.SearchStrategy[PolicyFactory] = st.one_of(
    st.builds(lambda cap, fraction: lambda: ToolResultClipPolicy(
        cap, max_result_fraction=fraction), st.sampled_from((None, 1, 5, 40)),
        st.sampled_from((0.05, 0.25, 1.0))),
    st.just(DeduplicateResultsPolicy),
    st.builds(lambda keep, digest: lambda: ToolResultMaskingPolicy(keep, digest_tokens=digest),
              st.integers(0, 3), st.sampled_from((0, 8, 48))),
    st.builds(lambda ratio, span, users, floor: lambda: SpanSummarizingPolicy(
        "p", ratio, span, user_turns_last=users, min_target_tokens=floor),
        st.sampled_from(TARGET_RATIOS), st.integers(1, 5), st.booleans(),
        st.sampled_from((1, 64))),
    st.just(UserLastDropPolicy),
)
leaf_factories = st.one_of(drop_factories, masking_factories, summarizing_factories,
                           new_factories)
chain_factories = st.one_of(
    st.builds(_chain, st.lists(leaf_factories, min_size=1, max_size=4)),
    # two summarizers in a row: the second may fold the first one's stand-in into its span
    st.builds(lambda a, b, rest: _chain([a, b, *rest]), summarizing_factories,
              summarizing_factories, st.lists(leaf_factories, max_size=2)),
    # a chain nested in a chain
    st.builds(lambda inner, rest: _chain([inner, *rest]), default_factories,
              st.lists(leaf_factories, max_size=2)),
)
adapters_chain_factories = st.builds(
    lambda clip, keep, digest, users: _chain([
        DeduplicateResultsPolicy, lambda: ToolResultClipPolicy(max_result_fraction=clip),
        lambda: ToolResultMaskingPolicy(keep, digest_tokens=digest),
        lambda: SpanSummarizingPolicy("p", user_turns_last=users), UserLastDropPolicy]),
    st.sampled_from((0.1, 0.25)), st.integers(0, 3), st.sampled_from((0, 48)), st.booleans())
policy_factories = st.one_of(
    default_factories, chain_factories, summarizing_factories, masking_factories, drop_factories,
    new_factories, adapters_chain_factories,
)


def untouchable_positions(transcript: Transcript, protected: int) -> list[int]:
    """Positions of SYSTEM, pinned and the last ``protected`` turns (derived independently)."""
    count = len(transcript.turns)
    first_protected = count - min(protected, count)
    return [
        position for position, turn in enumerate(transcript.turns)
        if turn.role is Role.SYSTEM or turn.pinned or position >= first_protected
    ]


def untouchable_tokens(transcript: Transcript, protected: int) -> int:
    return sum(transcript.turns[p].token_estimate
               for p in untouchable_positions(transcript, protected))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    transcript = draw(transcripts())
    protected = draw(st.integers(0, 6))
    total = transcript.token_estimate()
    floor = untouchable_tokens(transcript, protected)
    max_tokens = draw(st.one_of(
        st.integers(floor, max(floor, (floor + total) // 2)),  # satisfiable, must compact
        st.integers(floor, max(floor, total) + 5),  # satisfiable
        st.sampled_from((0, floor, floor - 1, total, total - 1, total + 1)).filter(
            lambda n: n >= 0),
        st.integers(0, total + 20),  # anything, unsatisfiable included
    ))
    make_policy = draw(policy_factories)
    return Case(transcript, CompactionBudget(max_tokens, protected), make_policy(), make_policy)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def decide(case: Case) -> CompactionPlan | None:
    """The plan, or None when the policy raised ``BudgetUnsatisfiable``."""
    try:
        return case.policy.decide(case.transcript, case.budget)
    except BudgetUnsatisfiable:
        return None


def summaries_for(plan: CompactionPlan) -> dict[str, str]:
    return {r.group_id: f"summary of {len(r.turn_ids)} turns <|endoftext|> ✓"
            for r in plan.summarization_requests}


def apply(case: Case, plan: CompactionPlan) -> CompactedTranscript:
    return CompactionExecutor().apply(case.transcript, plan, summaries_for(plan))


def exchanges(transcript: Transcript) -> list[list[TranscriptTurn]]:
    """Turns grouped by ``tool_call_id``; a turn without one is an exchange of one."""
    groups: dict[str, list[TranscriptTurn]] = {}
    singles: list[list[TranscriptTurn]] = []
    for turn in transcript.turns:
        if turn.tool_call_id is None:
            singles.append([turn])
        else:
            groups.setdefault(turn.tool_call_id, []).append(turn)
    return [*groups.values(), *singles]


def source_positions(
    case: Case, plan: CompactionPlan, view: CompactedTranscript
) -> list[int]:
    """For each view turn, the transcript position it stands at (a summary: its earliest turn)."""
    position_of = {turn_id: p for p, turn_id in enumerate(case.transcript.turn_ids())}
    summary_at = {r.summary_turn_id: position_of[r.turn_ids[0]]
                  for r in plan.summarization_requests}
    positions: list[int] = []
    for turn in view.transcript.turns:
        if turn.turn_id in summary_at:
            positions.append(summary_at[turn.turn_id])
        else:
            positions.append(position_of[turn.turn_id])
    return positions


def snapshot(transcript: Transcript) -> list[tuple[Any, ...]]:
    """A deep, plain-data copy of every field of every turn."""
    return [
        (t.turn_id, t.role, t.content, t.token_estimate, t.tool_call_id, t.pinned,
         dict(t.metadata))
        for t in transcript.turns
    ]


def _defect_case(make_policy: PolicyFactory) -> Case:
    """The 0.1.0 defect from issue 2: a span could hold part of an exchange."""
    transcript = Transcript((
        TranscriptTurn("s", Role.SYSTEM, "s", 5),
        TranscriptTurn("a1", Role.ASSISTANT, "a1", 50, "c1"),
        TranscriptTurn("a2", Role.ASSISTANT, "a2", 50, "c2"),
        TranscriptTurn("t1", Role.TOOL, "t1", 50, "c1"),
        TranscriptTurn("u", Role.USER, "u", 5, pinned=True),
        TranscriptTurn("t2", Role.TOOL, "t2", 50, "c2"),
        TranscriptTurn("q", Role.USER, "q", 5),
    ))
    return Case(transcript, CompactionBudget(100, 1), make_policy(), make_policy)


DEFECT_EXAMPLES = (
    _defect_case(_summarizing("p", 0.2, 1)),
    _defect_case(_default(2, 0.2, 1)),
)


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(cases())
@example(DEFECT_EXAMPLES[0])
@example(DEFECT_EXAMPLES[1])
def test_result_is_a_plan_or_budget_unsatisfiable(case: Case) -> None:
    try:
        plan = case.policy.decide(case.transcript, case.budget)
    except BudgetUnsatisfiable:
        return
    assert isinstance(plan, CompactionPlan)


@PROPERTY_SETTINGS
@given(cases())
def test_budget_unsatisfiable_exactly_when_untouchable_tokens_exceed_max_tokens(
    case: Case,
) -> None:
    floor = untouchable_tokens(case.transcript, case.budget.protected_recent_turns)
    plan = decide(case)
    assert (plan is None) == (floor > case.budget.max_tokens)


@PROPERTY_SETTINGS
@given(cases())
def test_plan_validates_when_constructed_again(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    fields: dict[str, Any] = {
        "actions": plan.actions,
        "summarization_requests": plan.summarization_requests,
        "tokens_before": plan.tokens_before,
        "tokens_after_estimate": plan.tokens_after_estimate,
        "policy_name": plan.policy_name,
        "policy_version": plan.policy_version,
        "estimator_ratio": plan.estimator_ratio,
        "budget_unmet": plan.budget_unmet,
    }
    again = CompactionPlan(**fields, transcript=case.transcript, budget=case.budget)
    assert again == plan
    assert again.canonical_json() == plan.canonical_json()


@PROPERTY_SETTINGS
@given(cases())
def test_deciding_twice_gives_identical_canonical_json(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    same_policy = case.policy.decide(case.transcript, case.budget)
    fresh_policy = case.make_policy().decide(case.transcript, case.budget)
    assert same_policy.canonical_json() == plan.canonical_json()
    assert fresh_policy.canonical_json() == plan.canonical_json()
    assert fresh_policy.plan_hash() == plan.plan_hash()


@PROPERTY_SETTINGS
@given(cases())
def test_view_estimates_sum_to_tokens_after_estimate(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    view = apply(case, plan)
    assert view.transcript.token_estimate() == plan.tokens_after_estimate
    assert view.report.tokens_after_estimate == plan.tokens_after_estimate
    assert plan.tokens_before == case.transcript.token_estimate()


@PROPERTY_SETTINGS
@given(cases())
def test_untouchable_turns_are_kept_and_unchanged_in_view(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    view_by_id = {turn.turn_id: turn for turn in apply(case, plan).transcript.turns}
    for position in untouchable_positions(case.transcript, case.budget.protected_recent_turns):
        turn = case.transcript.turns[position]
        action = plan.actions[position]
        if action.action in (Action.CLIP, Action.DEDUPLICATE):  # protected for being recent
            assert turn.role is not Role.SYSTEM and not turn.pinned
            assert turn.turn_id in view_by_id
            if action.action is Action.DEDUPLICATE:  # its copy is in the view: nothing lost
                assert action.replacement is not None
                assert action.replacement.refers_to in view_by_id
            continue
        assert action.action is Action.KEEP
        assert view_by_id[turn.turn_id] == turn


@PROPERTY_SETTINGS
@given(cases())
@example(DEFECT_EXAMPLES[0])
@example(DEFECT_EXAMPLES[1])
def test_no_exchange_is_split_in_view(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    view_ids = set(apply(case, plan).transcript.turn_ids())
    action_of = {action.turn_id: action for action in plan.actions}
    for members in exchanges(case.transcript):
        retained = [turn.turn_id in view_ids for turn in members]
        assert all(retained) or not any(retained), [t.turn_id for t in members]
        if any(retained):
            continue
        removals = {(action_of[t.turn_id].action, action_of[t.turn_id].summary_group)
                    for t in members}
        assert len(removals) == 1, [t.turn_id for t in members]


@PROPERTY_SETTINGS
@given(cases())
def test_budget_unmet_is_honest(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    assert plan.budget_unmet == (plan.tokens_after_estimate > case.budget.max_tokens)
    view = apply(case, plan)
    assert view.report.budget_unmet == (view.transcript.token_estimate() > case.budget.max_tokens)


@PROPERTY_SETTINGS
@given(cases())
def test_input_transcript_is_unchanged(case: Case) -> None:
    before = snapshot(case.transcript)
    turns_before = case.transcript.turns
    plan = decide(case)
    if plan is not None:
        apply(case, plan)
    assert case.transcript.turns is turns_before
    assert snapshot(case.transcript) == before


@PROPERTY_SETTINGS
@given(cases())
def test_view_turn_order_follows_transcript_order(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    positions = source_positions(case, plan, apply(case, plan))
    assert positions == sorted(positions)
    assert len(set(positions)) == len(positions)


@PROPERTY_SETTINGS
@given(cases())
def test_summary_turns_appear_at_their_groups_earliest_turn(case: Case) -> None:
    plan = decide(case)
    if plan is None:
        return
    view = apply(case, plan)
    positions = source_positions(case, plan, view)
    view_ids = view.transcript.turn_ids()
    position_of = {turn_id: p for p, turn_id in enumerate(case.transcript.turn_ids())}
    for request in plan.summarization_requests:
        earliest = position_of[request.turn_ids[0]]
        index = view_ids.index(request.summary_turn_id)
        assert positions[index] == earliest
        # every view turn before it comes from an earlier position, every one after from a later
        assert all(p < earliest for p in positions[:index])
        assert all(p > earliest for p in positions[index + 1:])

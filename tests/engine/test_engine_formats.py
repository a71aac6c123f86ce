"""Golden pins of the byte formats users persist: stub text, group ids, chain names, canonical
JSON and plan hashes. Each expected value is a literal; where a rule derives it, the test also
derives it by hand (hashlib + json) to show the rule."""

from __future__ import annotations

import hashlib
import json
import math
from enum import Enum
from typing import Any

import pytest

from cutctx import (
    GROUP_ID_PREFIX,
    Action,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SummarizationRequest,
    SummarizingPolicy,
    Transcript,
    TranscriptTurn,
    TurnAction,
    TurnReplacement,
    ValidationError,
    default_chain,
)
from cutctx._canonical import canonical_json, sha256_of

T = TranscriptTurn


def json_quoted_sha256(text: str) -> str:
    """The stub and group-id rule: sha256 of the text's JSON-quoted form, as UTF-8."""
    quoted = json.dumps(text, ensure_ascii=False)
    return hashlib.sha256(quoted.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# masking stub
# --------------------------------------------------------------------------------------------


def _masked_replacement(content: str, estimate: int) -> TurnReplacement:
    transcript = Transcript((
        T("s", Role.SYSTEM, "rules", 10),
        T("r", Role.TOOL, content, estimate, "c1"),
        T("q", Role.USER, "latest", 5),
    ))
    plan = ObservationMaskingPolicy(keep_recent_results=0).decide(
        transcript, CompactionBudget(20, protected_recent_turns=1))
    replacement = plan.actions[1].replacement
    assert replacement is not None
    return replacement


def test_masking_stub_text_for_a_known_turn() -> None:
    digest = "5aa762ae383fbb727af3c7a36d4940a5b8c40a989452d2304fc958ff3f354e7a"
    assert json_quoted_sha256("hello") == digest
    assert hashlib.sha256(b'"hello"').hexdigest() == digest  # the quotes are hashed too
    assert hashlib.sha256(b"hello").hexdigest() != digest
    replacement = _masked_replacement("hello", 100)
    assert replacement.content == (
        "[tool result masked by cutctx] (original: 100 tokens, "
        "sha256:5aa762ae383fbb727af3c7a36d4940a5b8c40a989452d2304fc958ff3f354e7a)"
    )
    assert len(replacement.content) == 126
    assert replacement.token_estimate == 32  # ceil(126 / 4)


def test_masking_stub_hashes_unicode_content_unescaped() -> None:
    content = "héllo ✓ <|endoftext|>"
    digest = "6d04a97ec225c50b576589723f5b8462ff90becf8027709e7d9a849ed2deb3f6"
    assert json_quoted_sha256(content) == digest
    ascii_escaped = json.dumps(content).encode("ascii")  # not the rule: \u00e9 escapes
    assert hashlib.sha256(ascii_escaped).hexdigest() != digest
    assert _masked_replacement(content, 100).content == (
        f"[tool result masked by cutctx] (original: 100 tokens, sha256:{digest})"
    )


def test_masking_stub_uses_a_custom_placeholder() -> None:
    policy = ObservationMaskingPolicy(placeholder="[gone]")
    turn = T("r", Role.TOOL, "hello", 7, "c1")
    assert policy.stub_for(turn) == (
        "[gone] (original: 7 tokens, "
        "sha256:5aa762ae383fbb727af3c7a36d4940a5b8c40a989452d2304fc958ff3f354e7a)"
    )


# --------------------------------------------------------------------------------------------
# group id
# --------------------------------------------------------------------------------------------


def test_group_id_derivation() -> None:
    turn_ids = ("a", "b", "c", "d")
    joined = "\x00".join(turn_ids)
    assert json.dumps(joined) == '"a\\u0000b\\u0000c\\u0000d"'
    by_hand = "span-" + json_quoted_sha256(joined)[:16]
    assert by_hand == "span-8c63d3efcb820f41"
    assert GROUP_ID_PREFIX == "span-"
    transcript = Transcript((
        T("s", Role.SYSTEM, "rules", 5),
        *(T(turn_id, Role.USER, f"turn {turn_id}", 50) for turn_id in turn_ids),
        T("q", Role.USER, "latest", 5),
    ))
    plan = SummarizingPolicy("p").decide(transcript, CompactionBudget(100, 1))
    assert plan.summarization_requests == (
        SummarizationRequest("span-8c63d3efcb820f41", turn_ids, 40, "p"),
    )
    assert plan.summarization_requests[0].summary_turn_id == "summary:span-8c63d3efcb820f41"


def test_group_id_depends_only_on_the_span_ids() -> None:
    def group_of(contents: str, estimate: int) -> str:
        transcript = Transcript((
            T("x", Role.USER, contents, estimate), T("y", Role.ASSISTANT, contents, estimate),
            T("q", Role.USER, "latest", 1),
        ))
        plan = SummarizingPolicy("other", min_span_turns=2).decide(
            transcript, CompactionBudget(estimate, 1))
        return plan.summarization_requests[0].group_id

    assert group_of("one", 50) == group_of("two", 90) == "span-33d64b982d98f665"
    assert "span-" + json_quoted_sha256("x\x00y")[:16] == "span-33d64b982d98f665"


# --------------------------------------------------------------------------------------------
# chain name
# --------------------------------------------------------------------------------------------


def test_default_chain_name() -> None:
    chain = default_chain(prompt_id="cutctx/summary@1")
    assert chain.name == (
        "chain(observation_masking@1.0.0+summarizing@1.0.0+drop_oldest@1.0.0)"
    )
    assert chain.version == "1.0.0"


def test_nested_chain_name() -> None:
    inner = PolicyChain([SummarizingPolicy("p")])
    outer = PolicyChain([inner, ObservationMaskingPolicy()])
    assert outer.name == "chain(chain(summarizing@1.0.0)@1.0.0+observation_masking@1.0.0)"


# --------------------------------------------------------------------------------------------
# canonical JSON of a plan with every action kind
# --------------------------------------------------------------------------------------------

EVERY_KIND_TRANSCRIPT = Transcript((
    T("s", Role.SYSTEM, "rules", 10),
    T("u", Role.USER, "old question", 30),
    T("a", Role.ASSISTANT, "calling search", 20, "c1"),
    T("t", Role.TOOL, "search results", 200, "c1"),
    T("x", Role.USER, "more", 40),
    T("y", Role.ASSISTANT, "reply", 40),
    T("q", Role.USER, "latest", 5),
))

EVERY_KIND_JSON = (
    '{"actions":['
    '{"action":"keep","replacement":null,"summary_group":null,"turn_id":"s"},'
    '{"action":"drop","replacement":null,"summary_group":null,"turn_id":"u"},'
    '{"action":"keep","replacement":null,"summary_group":null,"turn_id":"a"},'
    '{"action":"mask","replacement":{"content":"[masked] ✓","token_estimate":3},'
    '"summary_group":null,"turn_id":"t"},'
    '{"action":"summarize","replacement":null,"summary_group":"span-33d64b982d98f665",'
    '"turn_id":"x"},'
    '{"action":"summarize","replacement":null,"summary_group":"span-33d64b982d98f665",'
    '"turn_id":"y"},'
    '{"action":"keep","replacement":null,"summary_group":null,"turn_id":"q"}],'
    '"budget_unmet":false,"estimator_ratio":4.0,"policy_name":"hand_built",'
    '"policy_version":"1.0.0","summarization_requests":['
    '{"group_id":"span-33d64b982d98f665","prompt_id":"cutctx/summary@1","target_tokens":16,'
    '"turn_ids":["x","y"]}],"tokens_after_estimate":54,"tokens_before":345}'
)
EVERY_KIND_HASH = "d0260461245157397fea31e5b0785bb38f9432f7f5b70f63f4ab7be3b94ce2a8"


def _every_kind_plan(estimator_ratio: float | None = 4.0) -> CompactionPlan:
    group = "span-33d64b982d98f665"
    return CompactionPlan(
        actions=(
            TurnAction("s", Action.KEEP),
            TurnAction("u", Action.DROP),
            TurnAction("a", Action.KEEP),
            TurnAction("t", Action.MASK, replacement=TurnReplacement("[masked] ✓", 3)),
            TurnAction("x", Action.SUMMARIZE, summary_group=group),
            TurnAction("y", Action.SUMMARIZE, summary_group=group),
            TurnAction("q", Action.KEEP),
        ),
        summarization_requests=(SummarizationRequest(group, ("x", "y"), 16, "cutctx/summary@1"),),
        tokens_before=345,
        tokens_after_estimate=54,
        policy_name="hand_built",
        policy_version="1.0.0",
        estimator_ratio=estimator_ratio,
        budget_unmet=False,
        transcript=EVERY_KIND_TRANSCRIPT,
        budget=CompactionBudget(100, protected_recent_turns=1),
    )


def test_canonical_json_of_a_plan_with_every_action_kind() -> None:
    plan = _every_kind_plan()
    assert {action.action for action in plan.actions} == {Action.KEEP, Action.MASK,
                                                          Action.SUMMARIZE, Action.DROP}
    assert plan.canonical_json() == EVERY_KIND_JSON


def test_canonical_json_of_clips_and_deduplicates_names_ranges_and_ids_not_text() -> None:
    transcript = Transcript((
        TranscriptTurn("a", Role.TOOL, "same output", 30),
        TranscriptTurn("b", Role.TOOL, "line 1\nline 2\nline 3", 40),
        TranscriptTurn("c", Role.TOOL, "same output", 30),
    ))
    plan = CompactionPlan(
        actions=(
            TurnAction("a", Action.DEDUPLICATE,
                       replacement=TurnReplacement("[duplicate]", 5, refers_to="c")),
            TurnAction("b", Action.CLIP,
                       replacement=TurnReplacement("[... clipped ...]", 9, ((0, 7), (14, 20)))),
            TurnAction("c", Action.KEEP),
        ),
        tokens_before=100, tokens_after_estimate=44, policy_name="hand_built",
        policy_version="1.0.0", transcript=transcript, budget=CompactionBudget(50, 1))
    assert plan.canonical_json() == (
        '{"actions":[{"action":"deduplicate","replacement":{"content":"[duplicate]",'
        '"refers_to":"c","token_estimate":5},"summary_group":null,"turn_id":"a"},'
        '{"action":"clip","replacement":{"content":"[... clipped ...]","excerpt":[[0,7],'
        '[14,20]],"token_estimate":9},"summary_group":null,"turn_id":"b"},{"action":"keep",'
        '"replacement":null,"summary_group":null,"turn_id":"c"}],"budget_unmet":false,'
        '"estimator_ratio":null,"policy_name":"hand_built","policy_version":"1.0.0",'
        '"summarization_requests":[],"tokens_after_estimate":44,"tokens_before":100}')
    assert plan.canonical_json() == canonical_json(plan.to_dict())
    assert "output" not in plan.canonical_json() and "line" not in plan.canonical_json()
    view = CompactionExecutor().apply(transcript, plan)
    assert [turn.content for turn in view.transcript.turns] == [
        "[duplicate]", "line 1\n[... clipped ...]\nline 3", "same output"]
    assert view.report.deduplicated_turn_ids == ("a",)
    assert view.report.clipped_turn_ids == ("b",)
    assert view.report.kept_turn_ids == ("c",)


def test_plan_hash_of_a_plan_with_every_action_kind() -> None:
    plan = _every_kind_plan()
    assert plan.plan_hash() == EVERY_KIND_HASH
    assert hashlib.sha256(EVERY_KIND_JSON.encode("utf-8")).hexdigest() == EVERY_KIND_HASH
    assert sha256_of(plan.to_dict()) == EVERY_KIND_HASH


def test_plan_canonical_json_is_the_rule_applied_to_to_dict() -> None:
    plan = _every_kind_plan()
    by_rule = json.dumps(plan.to_dict(), sort_keys=True, ensure_ascii=False,
                         separators=(",", ":"), allow_nan=False)
    assert by_rule == plan.canonical_json() == canonical_json(plan.to_dict())


def test_plan_canonical_json_writes_negative_zero_ratio_as_zero() -> None:
    plan = _every_kind_plan(estimator_ratio=-0.0)
    assert '"estimator_ratio":0.0,' in plan.canonical_json()
    assert '"estimator_ratio":null,' in _every_kind_plan(None).canonical_json()


# --------------------------------------------------------------------------------------------
# canonical_json: normalization and refusals
# --------------------------------------------------------------------------------------------


class Colour(Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
        ((1, 2, (3,)), "[1,2,[3]]"),
        (-0.0, "0.0"),
        ({"ratio": -0.0, "n": [0.5, -1.25]}, '{"n":[0.5,-1.25],"ratio":0.0}'),
        (Role.TOOL, '"tool"'),
        ({"action": Action.MASK, "colour": Colour.RED}, '{"action":"mask","colour":"red"}'),
        ([Role.USER, (Action.KEEP,)], '["user",["keep"]]'),
        ("héllo ✓", '"héllo ✓"'),
        ("\x00", '"\\u0000"'),
        ({"t": True, "f": False, "n": None}, '{"f":false,"n":null,"t":true}'),
        ({"nested": {"z": (), "y": {}}}, '{"nested":{"y":{},"z":[]}}'),
    ],
    ids=["sorted-keys", "tuples", "negative-zero", "nested-floats", "enum", "enums-in-mapping",
         "enums-in-sequences", "unicode-unescaped", "control-escaped", "literals", "empty"],
)
def test_canonical_json_normalizes(value: Any, expected: str) -> None:
    assert canonical_json(value) == expected


def test_sha256_of_a_string_hashes_its_quoted_form() -> None:
    assert sha256_of("hello") == hashlib.sha256(b'"hello"').hexdigest()
    assert sha256_of({"b": (1,), "a": -0.0}) == hashlib.sha256(b'{"a":0.0,"b":[1]}').hexdigest()


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, {"x": [1.0, math.nan]}, b"bytes", bytearray(b"x"), {1, 2},
     frozenset({"a"}), {1: "a"}, {("a",): 1}, object(), {"deep": [object()]}, complex(1, 2)],
    ids=["nan", "inf", "-inf", "nested-nan", "bytes", "bytearray", "set", "frozenset",
         "int-key", "tuple-key", "object", "nested-object", "complex"],
)
def test_canonical_json_refuses(value: Any) -> None:
    with pytest.raises(ValidationError):
        canonical_json(value)


def test_plan_canonical_json_equals_the_generic_canonical_form() -> None:
    """The plan's fast writer and the generic canonical JSON agree on every golden plan."""
    from cutctx._canonical import canonical_json as generic

    from .engine_goldens import build_budget, build_policy, build_transcript, load_cases

    for case in load_cases():
        if "error" in case["expected"]:
            continue
        plan = build_policy(case["input"]["policy"]).decide(
            build_transcript(case["input"]), build_budget(case["input"]))
        assert plan.canonical_json() == generic(plan.to_dict())

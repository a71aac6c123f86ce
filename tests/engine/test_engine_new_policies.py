"""The engine's policies added after 0.1.0, by example: the exact texts they put in place, and
the rules that make compaction trustworthy (a replaced turn is final; user turns go last).

Their invariants over generated transcripts are in ``test_engine_properties.py`` (the same
properties as 0.1.0's policies); 0.1.0's own outputs are pinned by the goldens.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutctx import (
    REQUIREMENTS_PLACEHOLDER,
    Action,
    CharRatioEstimator,
    CompactionBudget,
    CompactionExecutor,
    DeduplicateResultsPolicy,
    FillingPolicy,
    PolicyChain,
    Role,
    SpanSummarizingPolicy,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    Transcript,
    TranscriptTurn,
    UserLastDropPolicy,
    UserMessageClipPolicy,
    ValidationError,
    clip_text,
)
from cutctx._canonical import sha256_text
from cutctx._clipping import Atom, clip_marker, plan_clip
from cutctx._digest import digest
from cutctx._replaced import KIND_KEY, ORIGINAL_SHA256_KEY, ORIGINAL_TOKENS_KEY

CHARS = CharRatioEstimator()


def turn(turn_id: str, role: Role, content: str, call: str | None = None,
         pinned: bool = False) -> TranscriptTurn:
    return TranscriptTurn(turn_id, role, content, CHARS.estimate_tokens(content), call, pinned)


def agent(*outputs: str) -> Transcript:
    """A task, then one call and its result per output, then a final user message."""
    turns = [turn("s", Role.SYSTEM, "You are an agent."), turn("u0", Role.USER, "Do the task.")]
    for number, output in enumerate(outputs):
        turns.append(turn(f"a{number}", Role.ASSISTANT, f"run step {number}", f"c{number}"))
        turns.append(turn(f"r{number}", Role.TOOL, output, f"c{number}"))
    turns.append(turn("u1", Role.USER, "Go on."))
    return Transcript(tuple(turns))


def view_of(transcript: Transcript, policy: object, budget: int, protected: int = 1) -> Transcript:
    plan = policy.decide(transcript, CompactionBudget(budget, protected))  # type: ignore[attr-defined]
    summaries = {r.group_id: "summary" for r in plan.summarization_requests}
    return CompactionExecutor().apply(transcript, plan, summaries).transcript


LOG = "\n".join(f"line {n}: building module {n}" for n in range(400))


# --- clipping ----------------------------------------------------------------------------------

def test_clip_keeps_whole_head_and_tail_lines_around_a_marker_naming_the_original() -> None:
    tokens = CHARS.estimate_tokens(LOG)
    text, estimate = clip_text(LOG, tokens, 200, CHARS)  # type: ignore[misc]
    assert estimate <= 200 and estimate == CHARS.estimate_tokens(text)
    head, _marker, tail = text.partition("[... cutctx clipped this tool result: ")
    assert head.startswith("line 0: building module 0\n") and head.endswith("\n")
    assert tail.splitlines()[-1] == "line 399: building module 399"
    assert f"original: {tokens} tokens, sha256:{sha256_text(LOG)} ...]" in tail
    assert all(line.startswith("line ") for line in head.splitlines())  # whole lines only


def test_clip_marker_text() -> None:
    assert clip_marker(1200, 40, 2000, "ab" * 32) == (
        "[... cutctx clipped this tool result: 1200 tokens (40 lines) elided; original: 2000 "
        f"tokens, sha256:{'ab' * 32} ...]")
    assert clip_marker(1, 1, 2, "cd", "message").startswith("[... cutctx clipped this message:")


def test_a_clip_that_cut_only_an_image_says_so() -> None:
    text = "The page renders blank after login.\nSee the screenshot below.\n[input_image]"
    image = Atom(text.index("[input_image]"), len(text), 1000)
    clip = plan_clip(text, 1020, 200, CHARS, atoms=(image,))
    assert clip is not None
    assert clip.marker.startswith(
        "[... cutctx clipped this tool result: 1 [input_image] elided; original: 1020 tokens")
    assert ": 0 tokens (" not in clip.marker
    assert clip_marker(300, 12, 900, "cd", elided_parts="2 [image]").startswith(
        "[... cutctx clipped this tool result: 300 tokens (12 lines), with 2 [image], elided")


def test_clip_returns_none_when_nothing_smaller_fits() -> None:
    assert clip_text(LOG, CHARS.estimate_tokens(LOG), 10, CHARS) is None  # not even the marker
    assert clip_text("short", 2, 100, CHARS) is None  # already small


def test_clip_policy_clips_only_results_over_its_cap_and_records_the_original() -> None:
    transcript = agent(LOG, "ok")
    view = view_of(transcript, ToolResultClipPolicy(150, max_result_fraction=None), 1_000)
    clipped = {t.turn_id: t for t in view.turns}["r0"]
    assert clipped.metadata[KIND_KEY] == "clipped" and clipped.token_estimate <= 150
    assert clipped.metadata[ORIGINAL_TOKENS_KEY] == str(CHARS.estimate_tokens(LOG))
    assert clipped.metadata[ORIGINAL_SHA256_KEY] == sha256_text(LOG)  # of the UTF-8 bytes
    assert {t.turn_id: t for t in view.turns}["r1"].content == "ok"


def test_clip_policy_needs_a_cap() -> None:
    with pytest.raises(ValidationError):
        ToolResultClipPolicy(None, max_result_fraction=None)


# --- deduplication -----------------------------------------------------------------------------

def test_a_result_identical_to_a_later_one_names_it() -> None:
    same = "x" * 400
    transcript = agent(same, "different", same)
    view = view_of(transcript, DeduplicateResultsPolicy(), 150)
    by_id = {t.turn_id: t for t in view.turns}
    assert by_id["r0"].content == (
        f"[duplicate tool result: identical to turn r2, later in this conversation; original: "
        f"100 tokens, sha256:{sha256_text(same)}]")
    assert by_id["r0"].metadata[KIND_KEY] == "deduplicated"
    assert by_id["r2"].content == same  # the later copy is what stays


def test_a_recent_copy_over_the_budget_is_a_pointer_and_only_its_later_copy_is_clipped() -> None:
    same = LOG[:2_400]  # 600 tokens, two copies protected as recent, budget 400
    transcript = agent(same, same)
    chain = PolicyChain([DeduplicateResultsPolicy(), ToolResultClipPolicy(150)])
    plan = chain.decide(transcript, CompactionBudget(400, 5))
    fates = {a.turn_id: a.action for a in plan.actions}
    assert fates["r0"] is Action.DEDUPLICATE and fates["r1"] is Action.CLIP
    assert not plan.budget_unmet
    alone = ToolResultClipPolicy(150).decide(transcript, CompactionBudget(400, 5))
    assert {a.turn_id: a.action for a in alone.actions}["r0"] is Action.DEDUPLICATE


def test_results_that_only_look_alike_are_not_deduplicated() -> None:
    transcript = agent("x" * 400, "x" * 401)
    view = view_of(transcript, DeduplicateResultsPolicy(), 100)
    assert all(KIND_KEY not in t.metadata for t in view.turns)


# --- masking with a digest ----------------------------------------------------------------------

def test_a_stub_names_the_original_and_keeps_a_digest() -> None:
    output = "collecting tests\n" + "." * 2_000 + "\nFAILED test_io.py::test_read - E1432\n3 passed"
    transcript = agent(output, "ok", "ok")
    view = view_of(transcript, ToolResultMaskingPolicy(1, digest_tokens=48), 60)
    stub = {t.turn_id: t for t in view.turns}["r0"].content
    first, *rest = stub.split("\n")
    assert first == (f"[tool result masked by cutctx] (original: "
                     f"{CHARS.estimate_tokens(output)} tokens, sha256:{sha256_text(output)})")
    assert rest[0] == "collecting tests" and "FAILED test_io.py::test_read - E1432" in rest


def test_a_stub_is_found_once_per_turn_across_pins_and_alike_for_any_estimator(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A history planned under several pins (a session keeping its cached prefix) reads each
    masked result once: the same turns get the same stubs. An estimator that cannot be hashed
    is found again each time, with the same stubs."""
    import cutctx.policies.tool_masking as masking_module

    @dataclasses.dataclass
    class Unhashable:  # eq without frozen: no __hash__
        ratio: int = 4

        def estimate_tokens(self, text: str) -> int:
            return len(text) // self.ratio + 1

    transcript = agent(LOG, LOG.upper(), LOG.title(), "ok")
    found: list[str] = []
    real = masking_module.identifier_ranges  # type: ignore[attr-defined]

    def counted(content: str, *args: object, **kwargs: object) -> object:
        found.append(content)
        return real(content, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(masking_module, "identifier_ranges", counted)
    budget = CompactionBudget(400, 1)
    for estimator in (CHARS, Unhashable()):
        found.clear()
        policy = ToolResultMaskingPolicy(1, digest_tokens=48, digest="identifiers",
                                         estimator=estimator)
        plans = [policy.decide(transcript, budget)]  # then under pins, as a session does
        plans += [policy.decide(transcript.with_pinned({pin}), budget) for pin in ("a0", "u0")]
        assert plans[0].actions == plans[1].actions == plans[2].actions
        masked = sum(action.action is Action.MASK for action in plans[0].actions)
        assert masked >= 2
        assert len(found) == (masked if estimator is CHARS else 3 * masked)


def test_digest_tokens_zero_gives_the_plain_stub() -> None:
    transcript = agent(LOG, "ok", "ok")
    stub = {t.turn_id: t for t in view_of(
        transcript, ToolResultMaskingPolicy(1, digest_tokens=0), 60).turns}["r0"].content
    assert "\n" not in stub and stub.startswith("[tool result masked by cutctx] (original: ")


def test_digest_is_within_its_cap_and_in_order() -> None:
    text = "start\nnoise\nERROR disk full\nnoise\nresult: 42 passed\nend"
    assert digest(text, 100, CHARS) == "start\nERROR disk full\nresult: 42 passed\nend"
    assert CHARS.estimate_tokens(digest(LOG, 20, CHARS)) <= 20
    assert digest(LOG, 0, CHARS) == ""


# --- finality ----------------------------------------------------------------------------------

def test_a_replaced_turn_is_never_replaced_again() -> None:
    """Masking the view of an earlier compaction leaves its stubs and clips' figures alone."""
    transcript = agent(LOG, "y" * 800, "z" * 800)
    policy = PolicyChain([DeduplicateResultsPolicy(), ToolResultClipPolicy(100),
                          ToolResultMaskingPolicy(0, digest_tokens=8)])
    first = view_of(transcript, policy, 400)
    again = view_of(first, policy, 150)
    before = {t.turn_id: t for t in first.turns}
    for later in again.turns:
        earlier = before.get(later.turn_id)
        if earlier is not None and earlier.metadata.get(KIND_KEY) == "masked":
            assert later.content == earlier.content  # a stub stays the same bytes
        if later.metadata.get(KIND_KEY) in ("masked", "clipped"):
            original = {t.turn_id: t for t in transcript.turns}[later.turn_id]
            assert sha256_text(original.content) in later.content  # names the real original


# --- user turns last ----------------------------------------------------------------------------

def test_user_last_drops_assistant_and_tool_turns_before_user_turns() -> None:
    turns = [turn("u0", Role.USER, "Requirement: use UTC everywhere.", pinned=True)]
    for n in range(6):
        turns += [turn(f"a{n}", Role.ASSISTANT, "thinking " * 40),
                  turn(f"u{n + 1}", Role.USER, f"Also remember rule {n}.")]
    transcript = Transcript(tuple(turns))
    view = view_of(transcript, UserLastDropPolicy(), 120)
    kept = [t.turn_id for t in view.turns]
    assert all(t.startswith("u") for t in kept[:-1])  # every assistant went before a user
    assert "u0" in kept and len([k for k in kept if k.startswith("u")]) == 7


PERSON = ("Thanks, that looks better than before. Never touch billing.py. All amounts in EUR. "
          + "I was thinking about it over lunch and it seems fine. " * 6)


def test_a_person_who_must_give_way_keeps_the_requirements_verbatim() -> None:
    turns = [turn("s", Role.SYSTEM, "You help."), turn("u0", Role.USER, "Task.", pinned=True),
             turn("u1", Role.USER, PERSON), turn("a1", Role.ASSISTANT, "ok " * 40),
             turn("u2", Role.USER, "Go on.")]
    transcript = Transcript(tuple(turns))
    policy = UserLastDropPolicy(requirement_tokens=32)
    plan = policy.decide(transcript, CompactionBudget(60, 1))
    action = {a.turn_id: a for a in plan.actions}["u1"]
    assert action.action is Action.MASK and not plan.budget_unmet
    assert {a.turn_id: a for a in plan.actions}["a1"].action is Action.DROP  # went first
    view = {t.turn_id: t for t in CompactionExecutor().apply(transcript, plan).transcript.turns}
    assert view["u1"].content == (
        f"{REQUIREMENTS_PLACEHOLDER} (original: {CHARS.estimate_tokens(PERSON)} tokens, "
        f"sha256:{sha256_text(PERSON)})\nNever touch billing.py.\nAll amounts in EUR.")
    assert "EUR" not in repr(plan.to_dict())  # the plan names ranges, never the text
    tighter = policy.decide(transcript, CompactionBudget(12, 1))
    assert {a.turn_id: a for a in tighter.actions}["u1"].action is Action.DROP  # then dropped
    assert UserLastDropPolicy().decide(transcript, CompactionBudget(60, 1)).actions[2].action \
        is Action.DROP  # requirement_tokens=0: 0.1.0's drop
    assert policy.decide(Transcript(tuple(
        turn(t.turn_id, t.role, "Looks fine to me. " * 20 if t.turn_id == "u1" else t.content,
             pinned=t.pinned) for t in turns)), CompactionBudget(60, 1)).actions[2].action \
        is Action.DROP  # nothing required: dropped whole


def test_filling_gives_back_what_a_person_typed_before_newer_tool_output() -> None:
    def step(n: int) -> list[TranscriptTurn]:
        return [turn(f"a{n}", Role.ASSISTANT, "run", f"c{n}"),
                turn(f"r{n}", Role.TOOL, "output line\n" * 8, f"c{n}")]  # 25 tokens

    turns = [turn("s", Role.SYSTEM, "You help."), turn("u0", Role.USER, "Task.", pinned=True),
             turn("u1", Role.USER, "Fine by me, thanks a lot."), *step(0),
             turn("u2", Role.USER, "long " * 160), *step(1), *step(2),
             turn("u3", Role.USER, "Go on.")]
    transcript = Transcript(tuple(turns))  # every exchange, then u1 and u2 must go to fit 62
    drop = UserLastDropPolicy()
    plain = FillingPolicy(drop).decide(transcript, CompactionBudget(62, 1))
    people = FillingPolicy(drop, people_first=True).decide(transcript, CompactionBudget(62, 1))
    fates = {a.turn_id: a.action for a in plain.actions}
    assert fates["u1"] is Action.DROP and fates["r1"] is Action.KEEP  # newest first
    fates = {a.turn_id: a.action for a in people.actions}
    assert fates["u1"] is Action.KEEP and fates["r1"] is Action.DROP  # the person's first
    assert fates["r2"] is Action.KEEP and not people.budget_unmet


def test_a_huge_message_a_person_typed_is_clipped_to_its_share() -> None:
    turns = [turn("s", Role.SYSTEM, "You help."), turn("u0", Role.USER, "Task.", pinned=True),
             turn("u1", Role.USER, "Here is the log:\n" + LOG)]
    transcript = Transcript(tuple(turns))
    plan = UserMessageClipPolicy(max_result_fraction=0.25).decide(
        transcript, CompactionBudget(800, 1))
    view = {t.turn_id: t for t in CompactionExecutor().apply(transcript, plan).transcript.turns}
    assert view["u1"].token_estimate <= 200 and "cutctx clipped this message" in view["u1"].content
    assert view["u1"].content.startswith("Here is the log:\n")
    assert view["u0"].content == "Task."  # pinned: kept as given


# --- just-enough summaries -----------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(over=st.integers(1, 900))
def test_span_summaries_fold_just_enough(over: int) -> None:
    transcript = agent(*("o" * 400 for _ in range(10)))
    budget = transcript.token_estimate() - over
    plan = SpanSummarizingPolicy("p", min_span_turns=2).decide(
        transcript, CompactionBudget(budget, 1))
    folded = [a for a in plan.actions if a.action is Action.SUMMARIZE]
    assert folded, "over the budget: something is folded"
    saved = sum(t.token_estimate for t in transcript.turns
                if t.turn_id in {a.turn_id for a in folded}) - sum(
        r.target_tokens for r in plan.summarization_requests)
    assert saved >= over
    assert saved - over < 2 * 105  # no more than one exchange (plus its summary share) extra


def test_span_summaries_pass_over_user_turns_when_asked() -> None:
    transcript = agent(*("o" * 400 for _ in range(4)))
    turns = list(transcript.turns)
    turns.insert(4, turn("note", Role.USER, "Keep the logs."))
    transcript = Transcript(tuple(turns))
    plan = SpanSummarizingPolicy("p", min_span_turns=2, user_turns_last=True).decide(
        transcript, CompactionBudget(200, 1))
    actions = {a.turn_id: a.action for a in plan.actions}
    assert actions["note"] is Action.KEEP and actions["u0"] is Action.KEEP
    assert any(action is Action.SUMMARIZE for action in actions.values())


def test_summaries_get_shorter_rather_than_leave_a_drop() -> None:
    transcript = agent(*("o" * 400 for _ in range(10)))
    plan = SpanSummarizingPolicy("p", min_span_turns=2, min_target_tokens=16).decide(
        transcript, CompactionBudget(100, 1))
    assert plan.summarization_requests and not plan.budget_unmet
    assert all(r.target_tokens >= 16 for r in plan.summarization_requests)


def test_a_pinned_pointer_stays_as_it_is_when_its_copy_is_masked() -> None:
    """A deduplicated stub the caller pinned (a session keeping its cached prefix pins its
    view's first turns) whose copy a later member masks is kept as it is: the chain used to
    turn it into a mask stub, a plan its own check refused (``untouchable_kept``)."""
    same = "x" * 400
    view = view_of(agent(same, LOG[:1_600], same, LOG[:1_600]), DeduplicateResultsPolicy(),
                   800)
    assert view.turns[3].metadata[KIND_KEY] == "deduplicated"  # r0, pointing at r2
    pinned = Transcript(tuple(dataclasses.replace(t, pinned=True) if t.turn_id == "r0" else t
                              for t in view.turns))
    chain = PolicyChain([DeduplicateResultsPolicy(), ToolResultMaskingPolicy(1)])
    plan = chain.decide(pinned, CompactionBudget(300, 1))
    fates = {a.turn_id: a.action for a in plan.actions}
    assert fates["r0"] is Action.KEEP and fates["r2"] is Action.MASK

"""Properties of chat.compact over generated Chat Completions histories (hypothesis).

Histories look like an agent's: a system or developer prompt, user turns with text or image
parts, assistant turns with 1-3 parallel tool calls followed by their tool messages (in any
order, ids reused across turns, some outputs large), plain assistant turns, legacy function
calls, pinned messages. Every policy and budgets from 0 to above the total: the result is a
CompactionResult or BudgetUnsatisfiable (only when the untouchable turns exceed the budget), the
output passes the API's rules (``tests/chat_rules.py``) and ``chat.validate``, fits the budget or
says ``budget_unmet``, and the input is never changed. Long agent sessions (generated, and the
SWE-agent runs when they are beside the repository) get the same checks with tiktoken.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    Role,
    SummarizationRequest,
    SummarizingPolicy,
    TokenEstimator,
    TranscriptTurn,
)
from cutctx_adapters import DEFAULT_PROMPT_ID, CompactionResult
from cutctx_adapters.history import KIND_KEY
from cutctx_adapters.openai import chat
from tests._support.data import REQUESTS, LoadMessages, swe_agent_params
from tests._support.long_histories import LONG_HISTORIES, long_history_params
from tests.openai import chat_rules

CHARS = CharRatioEstimator()
HEADER = chat.SUMMARY_HEADER
MASK_PREFIX = "[tool result masked by cutctx]"

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PNG_1X1 = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
           "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
TOOLS = [{"type": "function", "function": {
    "name": name, "description": f"The {name} tool.",
    "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}}}}
    for name in ("read_file", "run", "search")]

# --- strategies --------------------------------------------------------------------------

WORDS = ("alpha", "beta", "gamma", "the", "file", "error:", "ok", "<|endoftext|>", "日本",
         "🚀", "{\"k\": 1}", "\n", "def f():", "Traceback")
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
big_texts = st.tuples(texts, st.integers(20, 120)).map(lambda pair: (pair[0] + "\n") * pair[1])
tool_outputs = st.one_of(texts, big_texts, st.just(""))


@st.composite
def user_messages(draw: st.DrawFn) -> dict[str, Any]:
    text = draw(st.one_of(texts, big_texts))
    shape = draw(st.sampled_from(("string", "string", "parts", "image")))
    message: dict[str, Any] = {"role": "user", "content": text}
    if shape == "parts":
        message["content"] = [{"type": "text", "text": text}]
    elif shape == "image":
        detail = draw(st.sampled_from(("low", "high", None)))
        image: dict[str, Any] = {"url": draw(st.sampled_from(
            (PNG_1X1, "https://example.com/photo.jpg")))}
        if detail:
            image["detail"] = detail
        message["content"] = [{"type": "text", "text": text},
                              {"type": "image_url", "image_url": image}]
    if draw(st.integers(0, 5)) == 0:
        message["name"] = "alice"
    return message


@st.composite
def tool_rounds(draw: st.DrawFn, round_number: int) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 3))
    # ids come from a small pool, so agents' reuse of ids across turns is exercised
    ids = draw(st.lists(st.sampled_from([f"call_{n}" for n in range(6)]),
                        min_size=count, max_size=count, unique=True))
    calls = [{"id": call_id, "type": "function",
              "function": {"name": draw(st.sampled_from(("read_file", "run", "search"))),
                           "arguments": json.dumps({"arg": draw(texts)})}}
             for call_id in ids]
    content = draw(st.one_of(st.none(), texts))
    assistant: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
    results = []
    for call_id in draw(st.permutations(ids)):
        output = draw(tool_outputs)
        body: Any = output
        if draw(st.integers(0, 4)) == 0:
            body = [{"type": "text", "text": output or "-"}]
        results.append({"role": "tool", "tool_call_id": call_id, "content": body})
    return [assistant, *results]


@st.composite
def function_round(draw: st.DrawFn) -> list[dict[str, Any]]:
    name = draw(st.sampled_from(("lookup", "fetch")))
    return [{"role": "assistant", "content": None,
             "function_call": {"name": name, "arguments": "{}"}},
            {"role": "function", "name": name, "content": draw(tool_outputs)}]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    first = draw(st.sampled_from(("system", "developer")))
    messages: list[dict[str, Any]] = [{"role": first, "content": draw(texts)}]
    if draw(st.booleans()):
        messages.append(draw(user_messages()))
    for round_number in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(("tools", "tools", "tools", "user", "assistant", "function",
                                     "system")))
        if kind == "tools":
            messages.extend(draw(tool_rounds(round_number)))
        elif kind == "user":
            messages.append(draw(user_messages()))
        elif kind == "assistant":
            messages.append({"role": "assistant", "content": draw(st.one_of(texts, big_texts))})
        elif kind == "function":
            messages.extend(draw(function_round()))
        else:
            messages.append({"role": "system", "content": draw(texts)})
    return messages


def deterministic_summary(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """Content-derived and using exactly its allowance: ``target_tokens`` at 4 characters each
    (what CharRatioEstimator counts; tiktoken counts the repeated filler as fewer)."""
    roles = ",".join(turn.role.value[0] for turn in turns)
    text = f"{len(turns)} turns ({roles}) "
    size = max(1, request.target_tokens) * 4
    return (text + "." * size)[:size]


POLICIES: dict[str, Callable[[], CompactionPolicy | None]] = {
    "default": lambda: None,
    "mask_only": lambda: ObservationMaskingPolicy(0),
    "mask_only_keep2": lambda: ObservationMaskingPolicy(2),
    "drop_only": DropOldestPolicy,
    "summarize_only": lambda: SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=1),
    "summarize_then_drop": lambda: PolicyChain([
        SummarizingPolicy(DEFAULT_PROMPT_ID, 0.3, 2), DropOldestPolicy()]),
    "drop_then_mask": lambda: PolicyChain([DropOldestPolicy(), ObservationMaskingPolicy(1)]),
    "mask_summarize_mask": lambda: PolicyChain([
        ObservationMaskingPolicy(3), SummarizingPolicy(DEFAULT_PROMPT_ID, 0.5, 1),
        ObservationMaskingPolicy(0), DropOldestPolicy()]),
}
SUMMARIZING = {"summarize_only", "summarize_then_drop", "mask_summarize_mask"}


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    messages = draw(histories())
    policy_name = draw(st.sampled_from(sorted(POLICIES) + ["default_with_summarizer"] * 2))
    pins: Any = None
    pin_kind = draw(st.sampled_from(("none", "none", "index", "predicate")))
    if pin_kind == "index":
        pins = draw(st.lists(st.integers(-len(messages), len(messages) - 1), max_size=2))
    elif pin_kind == "predicate":
        pins = lambda message, index: message["role"] == "user" and index % 3 == 0  # noqa: E731
    tools = draw(st.sampled_from((None, TOOLS)))
    return {
        "messages": messages,
        "policy_name": policy_name,
        "pin": pins,
        "tools": tools,
        "keep_recent": draw(st.integers(0, 4)),
        "fraction": draw(st.sampled_from((0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9, 1.0, 1.3))),
        "summary_role": draw(st.sampled_from(("user", "user", "assistant", "system"))),
    }


# --- running and checking --------------------------------------------------------------

def compact(scenario: dict[str, Any], estimator: TokenEstimator | None) -> tuple[
        int, CompactionResult | BudgetUnsatisfiable]:
    messages = scenario["messages"]
    options: dict[str, Any] = {"tools": scenario["tools"], "pin": scenario["pin"],
                               "keep_recent": scenario["keep_recent"],
                               "summary_role": scenario["summary_role"]}
    if estimator is not None:
        options["estimator"] = estimator
    before = chat.count_tokens(messages, tools=scenario["tools"], estimator=estimator)
    budget = scenario["budget"] if "budget" in scenario else int(before * scenario["fraction"])
    name = scenario["policy_name"]
    if name == "default_with_summarizer":
        options["summarizer"] = deterministic_summary
    else:
        options["policy"] = POLICIES[name]()
        if name in SUMMARIZING:
            options["summarizer"] = deterministic_summary
    try:
        return budget, chat.compact(messages, budget=budget, **options)
    except BudgetUnsatisfiable as error:
        return budget, error


CLIP_FLOOR = 80
"""Tokens a tool result clipped to almost nothing still needs (marker and framing), at most."""


def must_keep_tokens(scenario: dict[str, Any], estimator: TokenEstimator | None) -> int:
    """Independently: what no relaxation can give up — system turns, the caller's pinned turns,
    and the newest turn with its exchange. The task (the first user message) and a newest tool
    result or user message can be clipped, so each counts as at most ``CLIP_FLOOR``."""
    conv = chat.to_transcript(scenario["messages"], estimator=estimator, pin=scenario["pin"])
    turns = conv.transcript.turns
    caller_pins = {f"m{i}" for i in pinned_indexes(scenario)}
    task = next((t for t in turns if t.role is Role.USER), None)
    newest = turns[-1]

    def clippable(turn: TranscriptTurn) -> bool:
        return turn.role in (Role.TOOL, Role.USER) and (
            turn.turn_id not in caller_pins or turn is task)

    total = 0
    for turn in turns[:-1]:
        if turn.role is Role.SYSTEM or turn.turn_id in caller_pins:
            total += turn.token_estimate
        elif turn is task:
            total += min(turn.token_estimate, CLIP_FLOOR)
    if clippable(newest) and (newest.turn_id not in caller_pins or newest is task):
        total += min(newest.token_estimate, CLIP_FLOOR)
        if newest.role is Role.TOOL:
            total += sum(t.token_estimate for t in turns[:-1]
                         if t.tool_call_id == newest.tool_call_id and t.role is not Role.TOOL
                         and t.role is not Role.SYSTEM and t.turn_id not in caller_pins
                         and t is not task)
    else:
        total += newest.token_estimate
    return total


def assert_unsatisfiable_is_justified(scenario: dict[str, Any], budget: int,
                                      estimator: TokenEstimator | None) -> None:
    overhead = chat.count_tokens([], tools=scenario["tools"], estimator=estimator)
    assert overhead > budget or must_keep_tokens(scenario, estimator) > budget - overhead


def pinned_indexes(scenario: dict[str, Any]) -> set[int]:
    messages, pin = scenario["messages"], scenario["pin"]
    if pin is None:
        return set()
    if callable(pin):
        return {i for i, message in enumerate(messages) if pin(message, i)}
    return {i % len(messages) for i in pin}


@SETTINGS
@given(scenarios())
def test_output_is_valid_for_the_api(scenario: dict[str, Any]) -> None:
    original = copy.deepcopy(scenario["messages"])
    budget, outcome = compact(scenario, CHARS)
    assert scenario["messages"] == original  # the input is never changed
    if isinstance(outcome, BudgetUnsatisfiable):
        assert_unsatisfiable_is_justified(scenario, budget, CHARS)
        return
    assert isinstance(outcome, CompactionResult)
    assert outcome.messages is not None
    chat_rules.check(outcome.messages)
    chat.validate(outcome.messages)
    assert all(message.get("tool_calls") != [] for message in outcome.messages)


@settings(SETTINGS, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking is slow here
@given(scenarios())
def test_output_fits_the_budget_or_says_so(scenario: dict[str, Any]) -> None:
    budget, outcome = compact(scenario, CHARS)
    if isinstance(outcome, BudgetUnsatisfiable):
        assert_unsatisfiable_is_justified(scenario, budget, CHARS)
        return
    assert_fits_or_says_so(scenario, budget, outcome, CHARS)
    if outcome.compacted and not outcome.report.budget_unmet:
        # Again, at exactly the figure the plan claims: an undercount shows up at the boundary.
        tight = outcome.tokens_after
        _, again = compact({**scenario, "fraction": None, "budget": tight}, CHARS)
        if isinstance(again, CompactionResult):
            assert_fits_or_says_so(scenario, tight, again, CHARS)


def assert_fits_or_says_so(scenario: dict[str, Any], budget: int, outcome: CompactionResult,
                           estimator: TokenEstimator | None) -> None:
    assert outcome.messages is not None
    sent = chat.count_tokens(outcome.messages, tools=scenario["tools"], estimator=estimator)
    assert outcome.measured_tokens == sent
    assert outcome.budget_unmet or sent <= budget, (sent, budget, outcome.tokens_after)
    if not outcome.budget_unmet:
        # what fits stays as it is: compacting the output again at the same budget is a no-op
        again = chat.compact(outcome.messages, budget=budget, tools=scenario["tools"],
                             estimator=estimator, keep_recent=0)
        assert not again.compacted and again.messages == outcome.messages


@SETTINGS
@given(scenarios())
def test_output_keeps_what_no_policy_may_touch(scenario: dict[str, Any]) -> None:
    messages = scenario["messages"]
    budget, outcome = compact(scenario, CHARS)
    if isinstance(outcome, BudgetUnsatisfiable):
        return
    out = outcome.messages
    assert out is not None
    if outcome.tokens_before <= budget:
        assert out == messages and not outcome.compacted
    task = (next(i for i, m in enumerate(messages) if m["role"] == "user")
         if any(m["role"] == "user" for m in messages) else None)
    pinned = pinned_indexes(scenario)
    protected = pinned | {
        i for i, m in enumerate(messages) if m["role"] in ("system", "developer")}
    if task is not None:
        protected.add(task)
    recent = max(1, scenario["keep_recent"]) - outcome.protection_relaxed
    assert recent >= 1
    protected |= set(range(len(messages) - min(recent, len(messages)), len(messages)))
    clipped = {r.turn_id for r in outcome.replacements if r.kind == "clipped"}
    # every output message is an original (in order), one with a new body, or a summary
    assert len(outcome.view.turns) == len(out)
    seen: list[int] = []
    for turn, message in zip(outcome.view.turns, out, strict=True):
        if turn.turn_id.startswith("summary:"):
            assert message == {"role": scenario["summary_role"], "content": HEADER + turn.content}
            continue
        index = outcome.conversion.part_for(turn.turn_id).index
        assert _same_or_replaced(messages[index], message, turn)
        if messages[index] != message:
            # a recent tool result over its share is clipped (docs/fitting.md); as a last
            # resort, the newest message and the task too
            recent_result = index not in pinned and messages[index]["role"] in ("tool",
                                                                               "function")
            assert index not in protected or (turn.turn_id in clipped and (
                recent_result or index in (len(messages) - 1, task)))
        seen.append(index)
    assert seen == sorted(set(seen))
    assert protected <= set(seen)


def _same_or_replaced(original: dict[str, Any], message: dict[str, Any],
                      turn: TranscriptTurn) -> bool:
    """The original message, or a tool message whose content alone the turn's new body took (a
    user message too, clipped as a last resort)."""
    if original == message:
        return True
    kind = turn.metadata.get(KIND_KEY)
    if not ((original["role"] in ("tool", "function")
            and kind in ("masked", "clipped", "deduplicated"))
            or (original["role"] == "user" and kind == "clipped")):
        return False
    rest = {k: v for k, v in message.items() if k != "content"}
    content: Any = message.get("content")
    if kind == "clipped" and isinstance(original.get("content"), list):
        # a body of parts stays parts: its text parts cut, the marker a part of its own
        content = "\n".join(part["text"] for part in content)
        return (rest == {k: v for k, v in original.items() if k != "content"}
                and content.replace("\n", "") == turn.content.replace("\n", ""))
    return (rest == {k: v for k, v in original.items() if k != "content"}
            and content == turn.content)


@pytest.mark.usefixtures("tiktoken_cache")
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_with_tiktoken_output_is_valid_and_fits(scenario: dict[str, Any]) -> None:
    original = copy.deepcopy(scenario["messages"])
    budget, outcome = compact(scenario, None)
    assert scenario["messages"] == original
    if isinstance(outcome, BudgetUnsatisfiable):
        assert_unsatisfiable_is_justified(scenario, budget, None)
        return
    assert outcome.messages is not None
    chat_rules.check(outcome.messages)
    chat.validate(outcome.messages)
    assert_fits_or_says_so(scenario, budget, outcome, None)
    if outcome.compacted and not outcome.report.budget_unmet:
        tight = outcome.tokens_after
        _, again = compact({**scenario, "fraction": None, "budget": tight}, None)
        if isinstance(again, CompactionResult):
            assert_fits_or_says_so(scenario, tight, again, None)


# --- long agent histories (generated, and the SWE-agent runs) and a request, with tiktoken ----

REQUEST_BODY = json.loads((REQUESTS / "openai_chat_parallel_tools.json").read_text())["request"]


def _without_tools(params: list[Any]) -> list[Any]:
    return [pytest.param(*p.values, None, id=p.id, marks=p.marks) for p in params]


@pytest.mark.usefixtures("tiktoken_cache")
@pytest.mark.parametrize(("history", "tools"), [
    pytest.param(lambda: copy.deepcopy(REQUEST_BODY["messages"]), REQUEST_BODY["tools"],
                 id="openai_chat_parallel_tools"),
    *_without_tools(long_history_params()),
    *_without_tools(swe_agent_params()),
])
@pytest.mark.parametrize("divisor", [2, 4])
@pytest.mark.parametrize("summarizer", [None, deterministic_summary], ids=["mask_drop", "chain"])
def test_agent_histories_compact_validly(history: LoadMessages, tools: Any, divisor: int,
                                         summarizer: Any) -> None:
    messages = history()
    original = copy.deepcopy(messages)
    budget = chat.count_tokens(messages, tools=tools) // divisor
    scenario = {"messages": messages, "tools": tools, "pin": None, "keep_recent": 2}
    try:
        result = chat.compact(messages, budget=budget, tools=tools, keep_recent=2,
                              summarizer=summarizer)
    except BudgetUnsatisfiable:
        assert_unsatisfiable_is_justified(scenario, budget, None)
        return
    finally:
        assert messages == original
    assert result.messages is not None
    chat_rules.check(result.messages)
    chat.validate(result.messages)
    sent = chat.count_tokens(result.messages, tools=tools)
    assert result.budget_unmet or sent <= budget, (sent, budget)
    assert result.compacted


@pytest.mark.usefixtures("tiktoken_cache")
def test_generated_histories_reach_what_real_sessions_reach() -> None:
    """Masks, clips (of an old output and of the newest), summaries, drops and relaxed
    protection all happen above: the generated histories are no easier than the real runs."""
    seen: set[str] = set()
    for history in LONG_HISTORIES:
        messages = history.messages()
        for divisor, summarizer in ((2, None), (4, None), (4, deterministic_summary)):
            budget = chat.count_tokens(messages) // divisor
            try:
                result = chat.compact(messages, budget=budget, keep_recent=2,
                                      summarizer=summarizer)
            except BudgetUnsatisfiable:
                continue
            report = result.report
            newest = f"m{len(messages) - 1}"
            seen |= {r.kind + (" newest" if r.turn_id == newest else "")
                     for r in result.replacements}
            seen |= {name for name, turns in (("summarized", report.summarized_turn_ids),
                                              ("dropped", report.dropped_turn_ids)) if turns}
            seen |= {"relaxed"} if result.protection_relaxed else set()
    assert seen >= {"masked", "clipped", "clipped newest", "summarized", "dropped", "relaxed"}

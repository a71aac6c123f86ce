"""cutctx_adapters.openai.chat.compact / acompact: budgets, policies, summaries and failures."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactionBudget,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    SummarizationRequest,
    TranscriptTurn,
    ValidationError,
)
from cutctx_adapters import DEFAULT_PROMPT_ID, CompactionResult, SummarizationFailed
from cutctx_adapters.openai import chat
from cutctx_adapters.planning._policy import choose_policy
from tests._support.data import REQUESTS
from tests._support.plain import dicts
from tests.openai import chat_rules

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

CHARS = CharRatioEstimator()
SECRET = "ERROR-TEXT-c0ffee"
MASK_ONLY = choose_policy(None, None).name  # the chain without a summarizer
HEADER = chat.SUMMARY_HEADER

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "run", "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {
            "cmd": {"type": "string"}, "mode": {"type": "string", "enum": ["a", "b"]}}}}},
]


def agent_history(rounds: int = 8, output: int = 300) -> list[dict[str, Any]]:
    """system, a task, then rounds of parallel read_file/run calls with sizeable results."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the failing test in the repository, please."},
    ]
    for n in range(rounds):
        calls = [{"id": f"call_{n}_{k}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps({"path": f"src/m{n}.py"})}}
                 for k, name in enumerate(("read_file", "run")[: 1 + n % 2])]
        messages.append({"role": "assistant", "content": f"Step {n}: looking.",
                         "tool_calls": calls})
        for k, call in enumerate(calls):
            body = "\n".join(f"{i:4d}\tline {i} of module {n} part {k}"
                             for i in range(output // 10))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": body})
        if n % 3 == 2:
            messages.append({"role": "user", "content": f"Progress note {n}: keep going."})
    messages.append({"role": "assistant", "content": "The fix is in src/m1.py."})
    return messages


HISTORY = agent_history()
CONVERSATION = [{"role": "system", "content": "Answer questions about the project."}] + [
    message for n in range(8) for message in (
        {"role": "user", "content": f"Question {n}: " + "how does the build work? " * 12},
        {"role": "assistant", "content": f"Answer {n}: " + "it runs the steps in order. " * 15},
    )
]


def short_summary(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"Earlier: {len(turns)} turns about fixing a test."


def total(messages: list[Any], **options: Any) -> int:
    return chat.count_tokens(messages, **options)


# --- policy choice -------------------------------------------------------------------------

def test_without_a_summarizer_no_summaries_are_planned_mask_then_drop() -> None:
    before = total(HISTORY)
    result = chat.compact(HISTORY, model="gpt-4o", budget=before // 3)
    assert isinstance(result, CompactionResult)
    assert result.report.policy_name == MASK_ONLY
    assert result.plan.summarization_requests == ()
    assert result.report.masked_turn_ids
    assert result.compacted
    assert result.messages is not None
    assert not any(m["content"].startswith(HEADER) for m in dicts(result.messages)
                   if isinstance(m.get("content"), str))
    chat_rules.check(result.messages)


def test_masking_comes_before_dropping() -> None:
    before = total(HISTORY)
    light = chat.compact(HISTORY, budget=before - 200)
    assert light.report.masked_turn_ids or light.report.clipped_turn_ids
    assert not light.report.dropped_turn_ids


def test_with_a_summarizer_the_default_chain_inserts_a_summary_message() -> None:
    calls: list[tuple[SummarizationRequest, list[TranscriptTurn]]] = []

    def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        calls.append((request, list(turns)))
        return "The agent read modules 0-5."

    result = chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=summarizer,
                          keep_recent=3)
    assert "summarizing@" in result.report.policy_name
    (request,) = result.plan.summarization_requests
    assert request.prompt_id == DEFAULT_PROMPT_ID
    assert len(calls) == 1 and calls[0][0] == request
    assert [t.turn_id for t in calls[0][1]] == list(request.turn_ids)
    assert result.messages is not None
    expected = {"role": "user", "content": HEADER + "The agent read modules 0-5."}
    summaries = [m for m in result.messages if m["content"] == expected["content"]]
    assert summaries == [expected]
    assert result.messages[0] == HISTORY[0]
    assert expected in result.messages[1:3]
    chat_rules.check(result.messages)
    chat.validate(result.messages)


@pytest.mark.parametrize("role", ["assistant", "system", "developer", "user"])
def test_summary_role_is_configurable(role: str) -> None:
    result = chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=short_summary,
                          summary_role=role, keep_recent=3)
    assert result.messages is not None
    (summary,) = [m for m in result.messages if str(m.get("content")).startswith(HEADER)]
    assert summary["role"] == role
    chat_rules.check(result.messages)


def test_a_custom_policy_is_used() -> None:
    result = chat.compact(HISTORY, budget=total(HISTORY) // 2, policy=DropOldestPolicy())
    assert result.report.policy_name == "drop_oldest"
    assert not result.report.masked_turn_ids and result.report.dropped_turn_ids


def test_summarizer_prompt_id_attribute_names_the_prompt() -> None:
    class Named:
        prompt_id = "team/summary@3"

        def __call__(self, request: SummarizationRequest,
                     turns: Sequence[TranscriptTurn]) -> str:
            return "summary"

    result = chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=Named(), keep_recent=3)
    assert [r.prompt_id for r in result.plan.summarization_requests] == ["team/summary@3"]


# --- the result ----------------------------------------------------------------------------

def test_result_fields_and_token_figures() -> None:
    before = total(HISTORY, tools=TOOLS)
    result = chat.compact(HISTORY, budget=before // 2, tools=TOOLS)
    overhead = total([], tools=TOOLS)
    assert overhead > 3
    assert result.tokens_before == before
    assert result.tokens_after == result.plan.tokens_after_estimate + overhead
    assert result.report.tokens_before == result.plan.tokens_before == before - overhead
    assert result.messages is not None and result.plan is not None and result.report is not None
    assert result.compacted is True
    assert set(result.view.turn_ids()) == {
        *result.report.kept_turn_ids, *result.report.masked_turn_ids,
        *result.report.clipped_turn_ids, *result.report.deduplicated_turn_ids}


def test_nothing_happens_under_the_budget() -> None:
    before = total(HISTORY, tools=TOOLS)
    result = chat.compact(HISTORY, budget=before, tools=TOOLS, summarizer=short_summary)
    assert not result.compacted
    assert result.messages == HISTORY
    assert result.tokens_after == result.tokens_before == before
    assert not result.report.budget_unmet


def test_an_int_budget_counts_priming_and_tools() -> None:
    """The transcript gets the budget minus priming and tool definitions."""
    before = total(HISTORY, tools=TOOLS)
    overhead = total([], tools=TOOLS)
    budget = before - 1
    with_tools = chat.compact(HISTORY, budget=budget, tools=TOOLS)
    assert with_tools.compacted
    assert with_tools.plan.tokens_after_estimate <= budget - overhead
    without = chat.compact(HISTORY, budget=budget)
    assert without.plan.tokens_after_estimate >= with_tools.plan.tokens_after_estimate


@pytest.mark.parametrize("fraction", [0.9, 0.6, 0.4, 0.25])
def test_result_tokens_after_never_undercounts_the_messages(fraction: float) -> None:
    """Per-message estimates + overhead = count_tokens; mask stubs may only be overestimated."""
    budget = int(total(HISTORY, tools=TOOLS) * fraction)
    result = chat.compact(HISTORY, budget=budget, tools=TOOLS, keep_recent=2)
    assert result.messages is not None and result.report.masked_turn_ids
    assert total(result.messages, tools=TOOLS) <= result.tokens_after


@pytest.mark.parametrize("fraction", [0.9, 0.6, 0.4, 0.25])
def test_compacted_request_fits_an_int_budget(fraction: float) -> None:
    budget = int(total(HISTORY, tools=TOOLS) * fraction)
    result = chat.compact(HISTORY, budget=budget, tools=TOOLS, keep_recent=2)
    assert not result.report.budget_unmet
    assert result.messages is not None
    assert total(result.messages, tools=TOOLS) <= budget


@pytest.mark.parametrize("policy", [DropOldestPolicy(), None])
def test_keep_and_drop_figures_are_exact(policy: Any) -> None:
    budget = int(total(CONVERSATION, tools=TOOLS) * 0.4)
    result = chat.compact(CONVERSATION, budget=budget, tools=TOOLS, keep_recent=2, policy=policy)
    assert result.messages is not None and result.report.dropped_turn_ids
    assert total(result.messages, tools=TOOLS) == result.tokens_after <= budget


def to_target(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """A summarizer that uses exactly its allowance ("word" is one o200k token)."""
    return " ".join(["word"] * request.target_tokens)


def test_a_summary_within_its_target_keeps_the_request_in_budget() -> None:
    """A summarizer that honours target_tokens must not push the request over the budget.

    The summary message also costs its framing (3 per message, the role, the header), which
    the plan's figure does not include: at a budget equal to that figure the adapters measure the
    rendered request and re-plan tighter, so the request still fits.
    """
    first = chat.compact(CONVERSATION, budget=total(CONVERSATION) // 2, summarizer=to_target,
                         keep_recent=2, keep_user_turns=False)
    assert first.plan.summarization_requests
    budget = first.tokens_after
    tight = chat.compact(CONVERSATION, budget=budget, summarizer=to_target, keep_recent=2,
                         keep_user_turns=False)
    assert not tight.report.budget_unmet
    assert tight.messages is not None and tight.measured_tokens is not None
    assert total(tight.messages) == tight.measured_tokens <= budget


def test_a_callers_masking_policy_keeps_the_request_in_budget() -> None:
    """policy=ObservationMaskingPolicy(): a masked message costs its framing too (3 per
    message, the role, the tool_call_id), so at the planned figure the request must fit."""
    first = chat.compact(HISTORY, budget=total(HISTORY) // 2, keep_recent=2,
                         policy=ObservationMaskingPolicy(0))
    assert first.report.masked_turn_ids and not first.report.budget_unmet
    budget = first.tokens_after
    tight = chat.compact(HISTORY, budget=budget, keep_recent=2, policy=ObservationMaskingPolicy(0))
    assert not tight.report.budget_unmet
    assert tight.messages is not None and tight.measured_tokens is not None
    assert total(tight.messages) == tight.measured_tokens <= budget


def test_the_default_masking_keeps_the_request_in_budget_at_the_boundary() -> None:
    first = chat.compact(HISTORY, budget=total(HISTORY) // 2, keep_recent=2)
    assert first.report.masked_turn_ids and not first.report.dropped_turn_ids
    tight = chat.compact(HISTORY, budget=first.tokens_after, keep_recent=2)
    assert tight.plan == first.plan and tight.messages is not None
    assert total(tight.messages) <= first.tokens_after


def test_a_compaction_budget_is_the_transcript_allowance() -> None:
    overhead = total([], tools=TOOLS)
    result = chat.compact(HISTORY, budget=CompactionBudget(1500, 1), tools=TOOLS,
                          policy=DropOldestPolicy())
    assert result.messages is not None and result.compacted
    assert result.plan.tokens_after_estimate <= 1500
    assert total(result.messages, tools=TOOLS) - overhead == result.plan.tokens_after_estimate


def test_keep_recent_protects_the_newest_messages() -> None:
    """Protection keeps a message in place and unmasked; a result over its share of the budget
    keeps its head and tail (issue 31), everything else stays byte for byte."""
    budget = total(HISTORY) // 4
    result = chat.compact(HISTORY, budget=budget, keep_recent=5, keep_task=False)
    assert result.messages is not None
    for sent, given in zip(dicts(result.messages)[-5:], HISTORY[-5:], strict=True):
        if sent == given:
            continue
        assert given["role"] == "tool" and sent["tool_call_id"] == given["tool_call_id"]
        assert "cutctx clipped this tool result" in sent["content"]
    # Without clips the protected turns do not fit: protection bends and says so.
    unclipped = chat.compact(HISTORY, budget=budget, keep_recent=5, keep_task=False,
                             max_result_share=1.0)
    assert unclipped.protection_relaxed and not unclipped.budget_unmet


@pytest.mark.parametrize("budget", [-1, 1.5, "100", True])
def test_a_bad_budget_is_a_validation_error(budget: Any) -> None:
    with pytest.raises(ValidationError):
        chat.compact(HISTORY, budget=budget)


def test_without_a_budget_the_window_less_the_reserve_is_the_budget() -> None:
    sized = chat.compact(HISTORY, window=total(HISTORY) // 2 + 100, reserve=100)
    assert sized.prompt_budget == total(HISTORY) // 2
    assert sized.messages == chat.compact(HISTORY, budget=total(HISTORY) // 2).messages
    with pytest.raises(ValidationError, match="no budget: pass budget="):
        chat.compact(HISTORY, model="my-own-model", estimator=CharRatioEstimator())


def test_the_system_prompt_alone_over_budget_is_unsatisfiable() -> None:
    messages = [{"role": "system", "content": "rule " * 400}, {"role": "user", "content": "hi"}]
    with pytest.raises(BudgetUnsatisfiable) as caught:
        chat.compact(messages, budget=100, keep_recent=0)
    assert caught.value.details["untouchable_tokens"] > caught.value.details["max_tokens"]


def test_tools_alone_over_budget_is_unsatisfiable() -> None:
    with pytest.raises(BudgetUnsatisfiable):
        chat.compact(HISTORY, budget=total([], tools=TOOLS), tools=TOOLS, keep_recent=0)


def test_the_callers_history_is_never_mutated() -> None:
    history = agent_history()
    history[3]["content"] = [{"type": "text", "text": "x" * 3000}]
    original = copy.deepcopy(history)
    for options in ({}, {"summarizer": short_summary}, {"policy": DropOldestPolicy()}):
        result = chat.compact(history, budget=total(history) // 3, keep_recent=2, **options)
        assert result.compacted
        assert history == original
        assert result.messages is not None
        result.messages[0]["content"] = "changed"
        assert history == original


def test_compacted_output_keeps_tool_call_ids_and_never_empty_tool_calls() -> None:
    result = chat.compact(HISTORY, budget=total(HISTORY) // 3)
    assert result.messages is not None
    masked = [m for m in dicts(result.messages)
              if m["role"] == "tool" and m["content"].startswith("[tool result masked")]
    assert masked
    for message in masked:
        assert message["tool_call_id"].startswith("call_")
    assert all(m.get("tool_calls") != [] for m in result.messages)


def test_compact_accepts_sdk_message_objects() -> None:
    from openai.types.chat import ChatCompletion

    reply = ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "Done.", "refusal": None}}],
    }).choices[0].message
    history = [*HISTORY, reply, {"role": "user", "content": "Thanks"}]
    result = chat.compact(history, budget=total(history) // 2)
    assert result.messages is not None
    assert result.messages[-2] == {"role": "assistant", "content": "Done.", "refusal": None}


# --- async ---------------------------------------------------------------------------------

def test_acompact_with_an_async_summarizer() -> None:
    async def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        await asyncio.sleep(0)
        return "async summary"

    result = asyncio.run(chat.acompact(HISTORY, budget=total(HISTORY) // 3,
                                       summarizer=summarizer, keep_recent=3))
    assert result.messages is not None
    assert {"role": "user", "content": HEADER + "async summary"} in result.messages
    sync = chat.compact(HISTORY, budget=total(HISTORY) // 3, keep_recent=3,
                        summarizer=lambda r, t: "async summary")
    assert result.messages == sync.messages and result.plan == sync.plan


def test_acompact_with_a_sync_summarizer_and_without_one() -> None:
    budget = total(HISTORY) // 3
    with_sync = asyncio.run(chat.acompact(HISTORY, budget=budget, summarizer=short_summary,
                                          keep_recent=3))
    assert with_sync.plan.summarization_requests
    without = asyncio.run(chat.acompact(HISTORY, budget=budget))
    assert without.report.policy_name == MASK_ONLY


def test_an_async_summarizer_in_sync_compact_fails_cleanly() -> None:
    async def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        return "never"

    with pytest.raises(SummarizationFailed) as caught:
        chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=summarizer, keep_recent=3)
    assert caught.value.details["cause"] == "AsyncSummarizerInSyncPath"


# --- failures ------------------------------------------------------------------------------

def failing(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    raise RuntimeError(SECRET)


def test_summarizer_failure_raises_naming_the_group() -> None:
    job = chat.plan(HISTORY, budget=total(HISTORY) // 3, summarizer=failing, keep_recent=3)
    (request,) = job.plan.summarization_requests
    with pytest.raises(SummarizationFailed) as caught:
        chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=failing, keep_recent=3)
    error = caught.value
    assert error.details["group_id"] == request.group_id
    assert error.details["cause"] == "RuntimeError"
    assert error.details["turn_count"] == len(request.turn_ids)
    assert isinstance(error.__cause__, RuntimeError)
    assert SECRET not in str(error) and SECRET not in json.dumps(error.to_dict())
    assert request.group_id in str(error)


def test_async_summarizer_failure_raises_naming_the_group() -> None:
    async def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        raise TimeoutError(SECRET)

    with pytest.raises(SummarizationFailed) as caught:
        asyncio.run(chat.acompact(HISTORY, budget=total(HISTORY) // 3, summarizer=summarizer,
                                  keep_recent=3))
    assert caught.value.details["cause"] == "TimeoutError"
    assert caught.value.details["group_id"].startswith("span-")
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(("text", "cause"), [
    ("", "EmptySummary"), ("   \n\t ", "EmptySummary"), (None, "SummaryNotText"),
    (42, "SummaryNotText"), (b"summary", "SummaryNotText"), ({"text": "x"}, "SummaryNotText")])
def test_an_empty_or_non_text_summary_is_a_failure_saying_which(text: Any, cause: str) -> None:
    with pytest.raises(SummarizationFailed) as caught:
        chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=lambda r, t: text,
                     keep_recent=3)
    assert caught.value.details["cause"] == cause


@pytest.mark.parametrize("asynchronous", [False, True])
def test_fallback_replans_without_summarization(asynchronous: bool) -> None:
    budget = total(HISTORY) // 3
    options: dict[str, Any] = {"budget": budget, "keep_recent": 3, "summarizer": failing,
                               "on_summary_error": "fallback"}
    if asynchronous:
        result = asyncio.run(chat.acompact(HISTORY, **options))
    else:
        result = chat.compact(HISTORY, **options)
    assert result.summarization_fallback is True
    assert "summarizing" not in result.report.policy_name
    assert result.plan.summarization_requests == ()
    assert result.messages is not None
    dumped = json.dumps(result.messages)
    assert SECRET not in dumped and HEADER.strip() not in dumped
    chat_rules.check(result.messages)
    plain = chat.compact(HISTORY, budget=budget, keep_recent=3)
    assert result.plan == plain.plan and result.messages == plain.messages


def test_fallback_honours_keep_recent_results() -> None:
    """Re-planning without summarization must be what the caller gets without a summarizer."""
    options: dict[str, Any] = {"budget": total(HISTORY) // 3, "keep_recent": 3,
                               "keep_recent_results": 0}
    fallback = chat.compact(HISTORY, summarizer=failing, on_summary_error="fallback", **options)
    plain = chat.compact(HISTORY, **options)
    assert fallback.summarization_fallback
    assert fallback.plan == plain.plan


def test_a_successful_summary_is_not_a_fallback() -> None:
    result = chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=short_summary,
                          on_summary_error="fallback", keep_recent=3)
    assert result.summarization_fallback is False
    assert result.plan.summarization_requests


def test_bad_on_summary_error_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        chat.compact(HISTORY, budget=100, on_summary_error="ignore")  # type: ignore[arg-type]


def test_a_policy_that_summarizes_without_a_summarizer_is_a_validation_error() -> None:
    from cutctx import SummarizingPolicy

    with pytest.raises(ValidationError):
        chat.compact(HISTORY, budget=total(HISTORY) // 3, keep_recent=3,
                     policy=SummarizingPolicy(DEFAULT_PROMPT_ID))


# --- the summary cache ---------------------------------------------------------------------

def test_summary_cache_prevents_a_second_call_for_the_same_span() -> None:
    calls: list[str] = []

    def counting(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        calls.append(request.group_id)
        return "cached summary"

    cache: dict[str, str] = {}
    budget = total(HISTORY) // 3
    first = chat.compact(HISTORY, budget=budget, summarizer=counting, summary_cache=cache,
                         keep_recent=3)
    second = chat.compact(copy.deepcopy(HISTORY), budget=budget, summarizer=counting,
                          summary_cache=cache, keep_recent=3)
    third = asyncio.run(chat.acompact(HISTORY, budget=budget, summarizer=counting,
                                      summary_cache=cache, keep_recent=3))
    assert len(calls) == 1 and len(cache) == 1
    assert first.messages == second.messages == third.messages
    chat.compact(HISTORY, budget=budget, summarizer=counting, keep_recent=3)
    assert len(calls) == 2  # no cache, no saving


def test_failed_summaries_are_not_cached() -> None:
    cache: dict[str, str] = {}
    with pytest.raises(SummarizationFailed):
        chat.compact(HISTORY, budget=total(HISTORY) // 3, summarizer=lambda r, t: " ",
                     summary_cache=cache, keep_recent=3)
    assert cache == {}


# --- a real shared history -----------------------------------------------------------------

def test_parallel_tools_request_compacts_to_a_valid_request() -> None:
    body = json.loads((REQUESTS / "openai_chat_parallel_tools.json").read_text())
    request = body["request"]
    messages, tools = request["messages"], request["tools"]
    before = total(messages, model=request["model"], tools=tools)
    for budget in (before - 20, before // 2):
        try:
            result = chat.compact(messages, model=request["model"], budget=budget, tools=tools,
                                  keep_recent=2, keep_recent_results=0)
        except BudgetUnsatisfiable:
            continue
        assert result.messages is not None
        chat_rules.check(result.messages)
        chat.validate(result.messages)
        assert result.report.budget_unmet or total(
            result.messages, model=request["model"], tools=tools) <= budget


def test_estimator_option_overrides_the_model() -> None:
    result = chat.compact(HISTORY, budget=total(HISTORY, estimator=CHARS) // 2, estimator=CHARS)
    assert result.tokens_before == total(HISTORY, estimator=CHARS)

"""Never stuck: histories whose must-keep turns exceed the budget are fitted, not refused.

One huge tool output, a huge newest user message (an agent's observation), a huge task: each is
clipped to its head and tail with a marker naming the original, the request stays valid and
under the budget, and the report says what gave way. Only what cannot hold even a clip (a system
prompt over the budget) is refused, by turn id and size, never by content (issue 16).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from cutctx import BudgetUnsatisfiable
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning import CompactionResult
from cutctx_adapters.tiktoken import TiktokenEstimator
from tests._support.plain import dicts

CANARY = "CANARY-7f3a"
HEAD, TAIL = "FIRST-LINE-OF-OUTPUT", "LAST-LINE-OF-OUTPUT"


def huge(chars: int, tag: str = "") -> str:
    """``chars`` characters of numbered lines, a recognisable first and last line."""
    line = f"{tag}{CANARY} log line with some words in it\n"
    body = line * (chars // len(line))
    return f"{HEAD}\n{body}{TAIL}"


def sha(text: str) -> str:
    """The hash a stub or clip marker names: of the original text's UTF-8 bytes, as a user
    checking ``sha256(original.encode())`` computes it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


Compact = Callable[..., CompactionResult]


def chat_tool(output: str) -> tuple[Compact, dict[str, Any]]:
    history = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find why the build fails."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": "{\"cmd\": \"make\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": output},
    ]
    return chat.compact, {"messages": history}


def responses_tool(output: str) -> tuple[Compact, dict[str, Any]]:
    items = [
        {"role": "user", "content": "Find why the build fails."},
        {"type": "function_call", "call_id": "call_1", "name": "bash",
         "arguments": "{\"cmd\": \"make\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": output},
    ]
    return responses.compact, {"input_items": items, "instructions": "You are a coding agent."}


def anthropic_tool(output: str) -> tuple[Compact, dict[str, Any]]:
    history = [
        {"role": "user", "content": "Find why the build fails."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "make"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": output}]},
    ]
    return anthropic_messages.compact, {"history": history, "system": "You are a coding agent."}


TOOL_FORMATS = {"chat": chat_tool, "responses": responses_tool, "anthropic": anthropic_tool}


def sent_text(result: CompactionResult) -> str:
    return json.dumps(result.rendered, ensure_ascii=False)


@pytest.mark.parametrize("name", TOOL_FORMATS)
def test_a_million_character_tool_output_fits_a_4k_window(name: str,
                                                          o200k: TiktokenEstimator) -> None:
    output = huge(1_000_000)
    compact, args = TOOL_FORMATS[name](output)
    result = compact(**args, budget=4_000, estimator=o200k)
    assert not result.report.budget_unmet
    assert result.measured_tokens is not None and result.measured_tokens <= 4_000
    text = sent_text(result)
    assert HEAD in text and TAIL in text
    assert f"sha256:{sha(output)}" in text
    assert "Find why the build fails." in text  # the task stays whole
    (replaced,) = result.replacements
    assert replaced.kind == "clipped" and replaced.tokens_after < 4_000 < replaced.tokens_before


def test_the_clipped_output_keeps_its_pairing(o200k: TiktokenEstimator) -> None:
    compact, args = chat_tool(huge(300_000))
    result = compact(**args, budget=3_000, estimator=o200k)
    assert result.messages is not None
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert result.messages[3]["tool_call_id"] == result.messages[2]["tool_calls"][0]["id"]


def test_a_huge_newest_user_message_is_clipped_and_the_task_kept(
        o200k: TiktokenEstimator) -> None:
    """An SWE-agent observation is a user message: the newest one may be larger than the
    window on its own."""
    observation = huge(60_000, "obs ")
    history = [
        {"role": "system", "content": "You are a coding agent. " * 40},
        {"role": "user", "content": "The task: make the tests pass. " * 20},
        {"role": "assistant", "content": "I will run the tests."},
        {"role": "user", "content": observation},
    ]
    result = chat.compact(history, budget=3_000, estimator=o200k)
    assert result.measured_tokens is not None and result.measured_tokens <= 3_000
    assert result.messages is not None
    assert result.messages[1] == history[1]  # the task, byte for byte
    newest = dicts(result.messages)[-1]["content"]
    assert newest.startswith(HEAD) and newest.endswith(TAIL)
    assert "cutctx clipped this message" in newest and f"sha256:{sha(observation)}" in newest
    assert [r.kind for r in result.replacements] == ["clipped"]


def test_the_task_gives_way_too_when_the_newest_alone_is_not_enough(
        o200k: TiktokenEstimator) -> None:
    task, observation = huge(40_000, "task "), huge(40_000, "obs ")
    history = [{"role": "user", "content": task}, {"role": "assistant", "content": "ok"},
               {"role": "user", "content": observation}]
    result = chat.compact(history, budget=2_000, estimator=o200k)
    assert result.measured_tokens is not None and result.measured_tokens <= 2_000
    assert result.messages is not None
    sent = dicts(result.messages)
    first, last = sent[0]["content"], sent[-1]["content"]
    assert f"sha256:{sha(task)}" in first and f"sha256:{sha(observation)}" in last
    assert {r.kind for r in result.replacements} == {"clipped"}
    assert len(result.replacements) == 2


def test_strict_keeps_the_refusal(o200k: TiktokenEstimator) -> None:
    """A result over its share is clipped as any compaction clips it, strict or not (issue 31);
    strict refuses what only a relaxation could fit: here a huge newest user message."""
    compact, args = chat_tool(huge(100_000))
    clipped = compact(**args, budget=4_000, estimator=o200k, strict=True)
    assert not clipped.budget_unmet and clipped.report.clipped_turn_ids == ("m3",)
    history = [*args["messages"], {"role": "assistant", "content": "ok"},
               {"role": "user", "content": huge(100_000)}]
    with pytest.raises(BudgetUnsatisfiable):
        chat.compact(history, budget=4_000, estimator=o200k, strict=True)


@pytest.mark.parametrize("name", TOOL_FORMATS)
def test_a_system_prompt_over_the_budget_is_refused_by_size_not_content(
        name: str, o200k: TiktokenEstimator) -> None:
    compact, args = TOOL_FORMATS[name]("short output")
    system = f"{CANARY} rules. " * 2_000
    if "messages" in args:
        args["messages"][0]["content"] = system
    elif "instructions" in args:
        args["instructions"] = system
    else:
        args["system"] = system
    with pytest.raises(BudgetUnsatisfiable) as raised:
        compact(**args, budget=1_000, estimator=o200k)
    assert CANARY not in str(raised.value) and CANARY not in repr(raised.value.details)
    assert raised.value.details["turn_ids"]


def test_the_session_keeps_sending_and_the_clip_stays_byte_identical(
        o200k: TiktokenEstimator) -> None:
    """A clipped newest result renders the same bytes on the next calls (prefix stable)."""
    from cutctx_adapters.session import CompactionSession

    _, args = chat_tool(huge(200_000))
    history = args["messages"]
    session = CompactionSession(chat.FORMAT, model="gpt-4o", window=5_000, reserve=500,
                                estimator=o200k)
    first = session.prepare({"model": "gpt-4o", "messages": history}).request["messages"]
    history = [*history, {"role": "assistant", "content": "The build fails in the linker."},
               {"role": "user", "content": "Fix it."}]
    second = session.prepare({"model": "gpt-4o", "messages": history}).request["messages"]
    assert second[:len(first)] == first
    assert "cutctx clipped this tool result" in first[3]["content"]


@pytest.mark.parametrize("name", TOOL_FORMATS)
@pytest.mark.parametrize("budget", [0, 1, 3, 5, 8, 12, 20, 40, 80])
def test_never_an_empty_request_nor_a_silent_overshoot(name: str, budget: int,
                                                       o200k: TiktokenEstimator) -> None:
    """Issue 18 item 8: a budget the overhead alone exceeds is refused naming the overhead; a
    tiny one gives a non-empty request that fits, or a typed refusal."""
    compact, args = TOOL_FORMATS[name]("short output " * 30)
    try:
        result = compact(**args, budget=budget, estimator=o200k, keep_recent=0)
    except BudgetUnsatisfiable as refused:
        assert "overhead_tokens" in refused.details or refused.details.get("turn_ids")
        return
    sent = result.messages if result.messages is not None else result.input
    assert sent, "an empty request"
    assert result.report.budget_unmet or (
        result.measured_tokens is not None and result.measured_tokens <= budget)

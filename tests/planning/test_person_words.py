"""What a person typed gives way last, and never whole-sale (issue 39, items 3 and 4).

A pasted log in a user message costs its share, like the same log as a tool result, and the
rest of the conversation stays; a person's message that must give way keeps the sentences
stating what the person required, verbatim, within a small share.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cutctx import REQUIREMENTS_PLACEHOLDER
from cutctx_adapters.openai import chat

INSTRUCTION = "Never touch the billing module. All amounts in EUR."


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


def _step(number: int, output: str) -> list[dict[str, Any]]:
    call_id = f"c{number}"
    return [{"role": "assistant", "content": f"Step {number}.", "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"n": number})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": output}]


def _session(log_as: str) -> list[dict[str, Any]]:
    """A task, twelve tool steps with the person's instruction among them, then a ~60k-token
    build log: the output of one more step, or pasted by the person."""
    rng = random.Random(3)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing export job."}]
    for number in range(12):
        if number == 4:
            history += [{"role": "assistant", "content": "Which currency should totals use?"},
                        {"role": "user", "content": INSTRUCTION}]
        history += _step(number, "\n".join(
            f"{line:4d}  result {rng.randint(0, 10**6)} of step {number}" for line in range(60)))
    log = "\n".join(f"2024-05-01 12:00:{n % 60:02d} INFO worker {n} processed batch {n * 7}"
                    for n in range(6_000))
    if log_as == "tool":
        return history + _step(99, log)
    return [*history, {"role": "assistant", "content": "Can you paste the build log?"},
            {"role": "user", "content": "Here it is:\n" + log}]


@pytest.mark.parametrize("budget", [1_000, 2_000, 4_000, 8_000, 12_000, 20_000])
def test_a_pasted_log_costs_its_share_and_the_rest_stays(budget: int) -> None:
    """Read as the person's (``observations="none"``), the log is clipped to its share in the
    chain, not as the last resort that would give it the whole budget."""
    pasted = chat.compact(_session("person"), model="gpt-4o", budget=budget,
                          observations="none")
    as_output = chat.compact(_session("tool"), model="gpt-4o", budget=budget)
    assert pasted.messages is not None and as_output.messages is not None
    assert not pasted.budget_unmet and pasted.last_resort == ()
    log = str(pasted.messages[-1]["content"])
    assert "cutctx clipped this message" in log and log.startswith("Here it is:\n")
    assert INSTRUCTION in json.dumps(pasted.messages)
    log_tokens = chat.count_tokens(pasted.messages[-1:], model="gpt-4o")
    others_gave_way = pasted.report.dropped_turn_ids or pasted.report.masked_turn_ids
    if others_gave_way:  # its share (max_result_share), not the budget; widened only into
        assert log_tokens <= budget // 4 + 32  # room nothing else needed
    assert len(pasted.messages) >= len(as_output.messages) // 2  # the rest stays


def _chat(follow_ups: int) -> list[dict[str, Any]]:
    """A chat whose person states requirements early, then talks at length."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You help with a Python service."},
        {"role": "user", "content": "Help me refactor the export service."},
        {"role": "assistant", "content": "Sure. What constraints are there?"},
        {"role": "user", "content": (
            "Thanks for asking, the code is old and nobody likes it. Never touch the billing "
            "module. All amounts in EUR, rounded with ROUND_HALF_EVEN. Tag every file with "
            "REQ-1A2B3C. It has been a long week and the team is tired of this service. "
            + "We talked about it at length in the meeting and opinions differed. " * 6)}]
    for number in range(follow_ups):
        history += [{"role": "assistant", "content": f"Here is part {number} of the plan. "
                     + "It moves the exporters into their own package. " * 12},
                    {"role": "user", "content": f"Thoughts on part {number}: looks fine to me, "
                     "I was wondering about it for a while. " * 5}]
    return history


def test_a_dropped_user_turn_keeps_what_the_person_required() -> None:
    history = _chat(8)
    result = chat.compact(history, model="gpt-4o", budget=900)
    assert result.messages is not None and not result.budget_unmet
    assert "m3" in result.report.masked_turn_ids  # shortened, not dropped
    stub = next(text for text in (str(m["content"]) for m in result.messages)
                if text.startswith(REQUIREMENTS_PLACEHOLDER))
    for sentence in ("Never touch the billing module.",
                     "All amounts in EUR, rounded with ROUND_HALF_EVEN.",
                     "Tag every file with REQ-1A2B3C."):
        assert sentence in stub  # verbatim
    assert "long week" not in stub and "meeting" not in stub
    assert chat.count_tokens([{"role": "user", "content": stub}], model="gpt-4o") <= 64 + 80
    replaced = {r.turn_id: r for r in result.replacements}
    assert replaced["m3"].kind == "masked" and replaced["m3"].tokens_after < 150


def test_user_turns_without_requirements_are_dropped_before_any_stub() -> None:
    result = chat.compact(_chat(8), model="gpt-4o", budget=900)
    dropped = set(result.report.dropped_turn_ids)
    assert {"m5", "m7"} <= dropped  # "looks fine to me": nothing required, dropped whole
    assert "m3" not in dropped


def test_with_keep_user_turns_off_user_turns_are_dropped_whole() -> None:
    result = chat.compact(_chat(8), model="gpt-4o", budget=900, keep_user_turns=False)
    assert result.messages is not None
    assert REQUIREMENTS_PLACEHOLDER not in json.dumps(result.messages)

"""Deterministic agent histories in the three formats, for session and property tests.

Each builder makes the full history of one agent session: a task, then rounds of tool calls
(sometimes two in parallel) with outputs of varied size, and now and then an assistant remark and
a user follow-up. ``calls(history)`` gives what the agent sends: the history before each
assistant message. Sizes come from ``seed``, so one seed is one history, in every run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentRun", "anthropic_run", "chat_run", "responses_run", "send", "words"]

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
          "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
          "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu")


def words(rng: random.Random, count: int, tag: str = "") -> str:
    """``count`` words (a few per line), deterministic for the generator's state."""
    lines, line = [], []
    for _ in range(count):
        line.append(rng.choice(_WORDS))
        if len(line) == 8:
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    return (f"{tag}\n" if tag else "") + "\n".join(lines)


@dataclass(frozen=True)
class AgentRun:
    """One agent session: its side value (system/instructions), its items, and the calls."""

    side: Any
    items: list[dict[str, Any]]
    calls: Callable[[], list[list[dict[str, Any]]]]
    """The requests the agent made: the items before each model-produced item."""


def _rounds(seed: int, rounds: int) -> list[tuple[str, list[tuple[str, str, str]], str | None]]:
    """Per round: the assistant's remark, its calls (id, name, output) and a user follow-up."""
    rng = random.Random(seed)
    out = []
    for number in range(rounds):
        calls = []
        for k in range(2 if rng.random() < 0.25 else 1):
            size = rng.choice((20, 60, 150, 400, 900))
            calls.append((f"call_{seed}_{number}_{k}", rng.choice(("bash", "read_file", "grep")),
                          words(rng, size, f"output {number}.{k}")))
        follow = words(rng, rng.randint(5, 30), "user") if rng.random() < 0.2 else None
        out.append((words(rng, rng.randint(3, 25), f"plan {number}"), calls, follow))
    return out


def chat_run(seed: int, rounds: int) -> AgentRun:
    """A Chat Completions agent session."""
    rng = random.Random(seed + 1)
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " + words(rng, 20)},
        {"role": "user", "content": words(rng, 60, "task")},
    ]
    for remark, calls, follow in _rounds(seed, rounds):
        items.append({"role": "assistant", "content": remark, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps({"q": call_id})}}
            for call_id, name, _ in calls]})
        items += [{"role": "tool", "tool_call_id": call_id, "content": output}
                  for call_id, _, output in calls]
        if follow is not None:
            items += [{"role": "assistant", "content": "Noted."},
                      {"role": "user", "content": follow}]
    return AgentRun(None, items, lambda: _before(items, lambda m: m["role"] == "assistant"))


def responses_run(seed: int, rounds: int) -> AgentRun:
    """A Responses agent session (input items; instructions as the side value)."""
    rng = random.Random(seed + 2)
    items: list[dict[str, Any]] = [{"role": "user", "content": words(rng, 60, "task")}]
    for number, (remark, calls, follow) in enumerate(_rounds(seed, rounds)):
        items.append({"type": "reasoning", "id": f"rs_{seed}_{number}",
                      "summary": [{"type": "summary_text", "text": remark}]})
        for call_id, name, _ in calls:
            items.append({"type": "function_call", "call_id": call_id, "name": name,
                          "arguments": json.dumps({"q": call_id})})
        items += [{"type": "function_call_output", "call_id": call_id, "output": output}
                  for call_id, _, output in calls]
        if follow is not None:
            items += [{"role": "assistant", "content": "Noted."},
                      {"role": "user", "content": follow}]
    model_made = ("reasoning", "function_call")
    return AgentRun("You are a coding agent.", items, lambda: _before(
        items, lambda m: m.get("type") in model_made or m.get("role") == "assistant",
        first_of_response=True))


def anthropic_run(seed: int, rounds: int) -> AgentRun:
    """An Anthropic Messages agent session (system as the side value)."""
    rng = random.Random(seed + 3)
    items: list[dict[str, Any]] = [{"role": "user", "content": words(rng, 60, "task")}]
    for remark, calls, follow in _rounds(seed, rounds):
        items.append({"role": "assistant", "content": [
            {"type": "text", "text": remark},
            *({"type": "tool_use", "id": call_id, "name": name, "input": {"q": call_id}}
              for call_id, name, _ in calls)]})
        results = [{"type": "tool_result", "tool_use_id": call_id, "content": output}
                   for call_id, _, output in calls]
        if follow is not None:
            results.append({"type": "text", "text": follow})
        items.append({"role": "user", "content": results})
    return AgentRun("You are a coding agent.", items,
                    lambda: _before(items, lambda m: m["role"] == "assistant"))


def _before(items: Sequence[dict[str, Any]], made_by_model: Callable[[dict[str, Any]], bool],
            first_of_response: bool = False) -> list[list[dict[str, Any]]]:
    """The history before each model-produced item (only the first of a run of them when
    ``first_of_response``: a response's items arrive together)."""
    out = []
    for index, item in enumerate(items):
        if not made_by_model(item):
            continue
        if first_of_response and index and made_by_model(items[index - 1]):
            continue
        out.append(list(items[:index]))
    return [request for request in out if request]


def send(session: Any, fmt: Any, run: AgentRun, items: list[dict[str, Any]]) -> Any:
    """``session.prepare`` of the request holding ``items`` (and the run's side value)."""
    request: dict[str, Any] = {"model": "gpt-4o", fmt.list_key: items}
    if fmt.side_key is not None:
        request[fmt.side_key] = run.side
    return session.prepare(request)

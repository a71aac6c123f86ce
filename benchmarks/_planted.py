"""Conversations with facts planted in them, for ``retention.py``.

Each conversation is OpenAI Chat messages with unique codes planted where real sessions carry
what matters: requirements in the first user turns, a later correction that overrides one of
them, codes in tool outputs (early, middle, recent) amid bulky lines, and conclusions in
assistant turns. Filler rounds (tool calls with long outputs, or long assistant answers) bring
it to its length. Deterministic: the same shape and size give the same messages.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FACT_KINDS", "Conversation", "Fact", "conversation"]

FACT_KINDS = ("requirement", "correction", "tool early", "tool middle", "tool recent",
              "conclusion")
_WORDS = ("module", "parser", "request", "buffer", "handler", "config", "record", "cache",
          "index", "schema", "worker", "socket", "token", "stream", "batch", "queue")


@dataclass(frozen=True)
class Fact:
    kind: str
    code: str
    """What must be in a request for the fact to count as kept."""


@dataclass
class Conversation:
    name: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)


def _code(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randrange(16**6):06X}"


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


def _log(rng: random.Random, lines: int, planted: str | None = None) -> str:
    out = [f"[{n:04d}] {rng.choice(_WORDS)} {rng.choice(_WORDS)} ok in {rng.randrange(900)}ms"
           for n in range(lines)]
    if planted is not None:
        out.insert(len(out) // 2, f"[{lines // 2:04d}] result id: {planted}")
    return "\n".join(out)


def conversation(shape: str, rounds: int, seed: int = 0) -> Conversation:
    """A conversation of ``shape`` (``agent``: tool calls with long outputs; ``chat``: long
    assistant answers; ``mixed``: both) over ``rounds`` filler rounds."""
    rng = random.Random(f"{shape}:{rounds}:{seed}")
    conv = Conversation(f"{shape}-{rounds}")
    msgs, facts = conv.messages, conv.facts
    reqs = [_code(rng, "REQ") for _ in range(3)]
    old, new = reqs[2], _code(rng, "FIX")
    msgs.append({"role": "system", "content": "You are a careful software agent."})
    msgs.append({"role": "user", "content": f"Build the export job. Requirement: tag every "
                                            f"file with {reqs[0]}. Requirement: write to "
                                            f"bucket {reqs[1]}."})
    msgs.append({"role": "assistant", "content": "Understood; I will start with the schema."})
    msgs.append({"role": "user", "content": f"One more requirement: use the key {old}."})
    facts += [Fact("requirement", reqs[0]), Fact("requirement", reqs[1])]
    tool_codes = {"tool early": _code(rng, "TOOL"), "tool middle": _code(rng, "TOOL"),
                  "tool recent": _code(rng, "TOOL")}
    conclusion = _code(rng, "CAUSE")
    step = 2 if shape == "mixed" else 1  # tool outputs come in agent rounds only
    plant_at = {} if shape == "chat" else {
        step: "tool early", (rounds // 2) // step * step: "tool middle",
        (rounds - 2) // step * step: "tool recent"}
    for number in range(rounds):
        planted = plant_at.get(number)
        agent_round = shape == "agent" or (shape == "mixed" and number % 2 == 0)
        if agent_round:
            call = f"call_{number}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {
                    "name": "run", "arguments": json.dumps({"cmd": f"step {number}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": call,
                         "content": _log(rng, 60, tool_codes[planted] if planted else None)})
        else:
            msgs.append({"role": "assistant", "content": _prose(rng, 350)})
        if number == rounds // 3:
            msgs.append({"role": "user", "content": f"Change of plan: do not use {old} any "
                                                    f"more; use the key {new} instead."})
        elif number == (2 * rounds) // 3:
            msgs.append({"role": "assistant", "content": f"Conclusion so far: the root cause "
                                                         f"is {conclusion}."})
            msgs.append({"role": "user", "content": "Good, go on."})
        elif number % 5 == 4:
            msgs.append({"role": "user", "content": "Continue."})
    msgs.append({"role": "user", "content": "Finish up and report."})
    facts.append(Fact("correction", new))
    facts += [Fact(kind, tool_codes[kind]) for kind in plant_at.values()]
    facts.append(Fact("conclusion", conclusion))
    return conv

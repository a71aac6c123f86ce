"""An agent loop of one tool call a turn, with repeated results and one huge one (issue 31).

Turn by turn, an agent reads files and runs commands: results of 2–20k characters, some of them
identical to an earlier one (a file read again), and at ``huge_at`` one result of about a million
characters (a log dumped whole). With ``follow_up_every``, every that many turns the agent
reports and the person gives its next instruction (with a screenshot, ``screenshots``): what
each later request must still carry (issue 39). ``requests(fmt)`` gives what the agent sends on
each turn, in the three formats, as the history grows; deterministic for its seed.
"""

from __future__ import annotations

import base64
import json
import random
import struct
from dataclasses import dataclass
from typing import Any

__all__ = ["HUGE_CHARS", "SCREENSHOT", "AgentLoop", "Step", "agent_loop", "instruction"]

HUGE_CHARS = 1_000_000
_NAMES = ("read_file", "bash", "grep", "list_dir")
_WORDS = ("config", "parser", "token", "window", "budget", "result", "session", "store", "cache",
          "value", "render", "import", "module", "error", "assert", "expected", "actual")


@dataclass(frozen=True)
class Step:
    """One turn: what the assistant says, the call it makes, and what the tool returns."""

    call_id: str
    name: str
    arguments: str
    remark: str
    output: str
    follow_up: str | None = None
    """The person's next instruction, after the agent reports this turn's result."""
    screenshot: bool = False
    """Whether that instruction comes with a screenshot (a 1280x800 PNG)."""


@dataclass(frozen=True)
class AgentLoop:
    """A system prompt, a task and the agent's turns."""

    system: str
    task: str
    steps: tuple[Step, ...]

    def requests(self, fmt: str) -> list[tuple[Any, list[dict[str, Any]]]]:
        """(side value, history) of each request the agent sends, in ``fmt`` (``chat``,
        ``responses``, ``anthropic`` or ``gemini``, whose side value is its system
        instruction): after the task, then after each tool result."""
        side, items = _start(fmt, self.system, self.task)
        out = [(side, list(items))]
        for step in self.steps:
            items.extend(_turn(fmt, step))
            out.append((side, list(items)))
        return out


def _text(rng: random.Random, chars: int, tag: str) -> str:
    lines = [tag]
    size = len(tag)
    number = 1
    while size < chars:
        line = f"{number:5d}  " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
        lines.append(line)
        size += len(line) + 1
        number += 1
    return "\n".join(lines)


def instruction(number: int) -> str:
    """The person's instruction after turn ``number``: two requirement sentences."""
    return (f"Next, look at src/module_{number}.py for the token bug. Never edit the tests; "
            f"keep every amount in EUR and tag the change REQ-{number:04d}.")


SCREENSHOT = "data:image/png;base64," + base64.b64encode(
    b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 1280, 800)
    + b"\x08\x02\x00\x00\x00" + bytes(40)).decode()
"""A PNG header of a 1280x800 screenshot (what the formats' image counting reads)."""


def agent_loop(seed: int = 0, turns: int = 60, huge_at: int | None = 30,
               repeat_share: float = 0.2, follow_up_every: int | None = None,
               screenshots: bool = False) -> AgentLoop:
    """The loop for ``seed``: ``turns`` tool calls, one of them (``huge_at``) a ~1M-character
    result, about ``repeat_share`` of the others an earlier result again; after every
    ``follow_up_every`` turns, the person's next instruction (with a screenshot:
    ``screenshots``)."""
    rng = random.Random(seed)
    steps: list[Step] = []
    outputs: list[tuple[str, str, str]] = []
    for number in range(turns):
        call_id = f"call_{seed}_{number}"
        if number == huge_at:
            name, arguments = "bash", json.dumps({"cmd": "cat build.log"})
            output = _text(rng, HUGE_CHARS, "$ cat build.log")
        elif outputs and rng.random() < repeat_share:
            name, arguments, output = rng.choice(outputs)
        else:
            name = rng.choice(_NAMES)
            arguments = json.dumps({"path": f"src/module_{number}.py"})
            output = _text(rng, rng.randint(2_000, 20_000), f"== {name} src/module_{number}.py")
            outputs.append((name, arguments, output))
        remark = f"Step {number}: looking at {name} output next."
        follow_up = (instruction(number) if follow_up_every
                     and number % follow_up_every == follow_up_every - 1 else None)
        steps.append(Step(call_id, name, arguments, remark, output, follow_up, screenshots))
    return AgentLoop("You are a coding agent. Work in small steps and use the tools.",
                     "Find why the integration tests fail and fix the parser.", tuple(steps))


def _start(fmt: str, system: str, task: str) -> tuple[Any, list[dict[str, Any]]]:
    if fmt == "chat":
        return None, [{"role": "system", "content": system}, {"role": "user", "content": task}]
    if fmt == "gemini":
        return system, [{"role": "user", "parts": [{"text": task}]}]
    return system, [{"role": "user", "content": task}]


def _turn(fmt: str, step: Step) -> list[dict[str, Any]]:
    return _call(fmt, step) + ([] if step.follow_up is None else _follow_up(fmt, step))


def _follow_up(fmt: str, step: Step) -> list[dict[str, Any]]:
    """The agent's report and the person's instruction (text, then any screenshot)."""
    text = step.follow_up or ""
    report = f"Done with {step.call_id}. What next?"
    if fmt == "chat":
        image = [{"type": "image_url", "image_url": {"url": SCREENSHOT}}]
        content: Any = [{"type": "text", "text": text}, *image] if step.screenshot else text
        return [{"role": "assistant", "content": report}, {"role": "user", "content": content}]
    if fmt == "responses":
        image = [{"type": "input_image", "image_url": SCREENSHOT, "detail": "auto"}]
        content = ([{"type": "input_text", "text": text}, *image] if step.screenshot
                   else text)
        return [{"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": report}]},
                {"role": "user", "content": content}]
    data = SCREENSHOT.partition(",")[2]
    image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": data}}]
    return [{"role": "assistant", "content": [{"type": "text", "text": report}]},
            {"role": "user", "content": [{"type": "text", "text": text},
                                         *(image if step.screenshot else [])]}]


def _call(fmt: str, step: Step) -> list[dict[str, Any]]:
    if fmt == "chat":
        return [{"role": "assistant", "content": step.remark, "tool_calls": [
                    {"id": step.call_id, "type": "function",
                     "function": {"name": step.name, "arguments": step.arguments}}]},
                {"role": "tool", "tool_call_id": step.call_id, "content": step.output}]
    if fmt == "responses":
        return [{"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": step.remark}]},
                {"type": "function_call", "call_id": step.call_id, "name": step.name,
                 "arguments": step.arguments},
                {"type": "function_call_output", "call_id": step.call_id,
                 "output": step.output}]
    if fmt == "gemini":
        return [{"role": "model", "parts": [
                    {"text": step.remark},
                    {"function_call": {"id": step.call_id, "name": step.name,
                                       "args": json.loads(step.arguments)}}]},
                {"role": "user", "parts": [
                    {"function_response": {"id": step.call_id, "name": step.name,
                                           "response": {"output": step.output}}}]}]
    if fmt == "anthropic":
        return [{"role": "assistant", "content": [
                    {"type": "text", "text": step.remark},
                    {"type": "tool_use", "id": step.call_id, "name": step.name,
                     "input": json.loads(step.arguments)}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": step.call_id,
                     "content": step.output}]}]
    raise ValueError(f"unknown format {fmt!r}")

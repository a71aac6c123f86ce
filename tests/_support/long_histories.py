"""Long coding-agent sessions as Chat Completions messages, generated (one seed, one history).

They put the suite's checks on real agent sessions (conversion, round trips, compaction) on
histories a clone of the repository has, shaped like the SWE-agent runs kept outside it: a
system prompt with the agent's commands, maybe a worked demonstration, the issue, then many steps
of thought, command and output. Both of SWE-agent's tool-call styles: ``"function_calling"``
(``tool_calls`` and ``tool`` messages, call ids now and then reused by a later step) and
``"user_observations"`` (the command in the assistant's text, its output as the next user
message). Outputs run from one line to ~25k characters: file views, listings, search hits,
tracebacks, lint errors, a text dump, a diff; some with CRLF line ends, some non-ASCII.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any, Literal

import pytest

__all__ = ["LONG_HISTORIES", "LongHistory", "agent_history", "long_history_params"]

Style = Literal["function_calling", "user_observations"]
Ending = Literal["diff", "reply", "dump"]
"""After the last command: ``submit`` and its diff; ``submit`` as the agent's last reply (no
output); or no ``submit``, the last command's output being the ~25k-character dump."""
Message = dict[str, Any]

_NAMES = ("parse", "render", "load_config", "serialize", "timedelta", "precision", "handler",
          "validate", "pixel_array", "decode", "flush", "Field", "Schema", "Dataset", "Codec")
_WORDS = ("the", "value", "field", "returns", "rounding", "issue", "test", "output", "file",
          "line", "error", "expected", "fix", "check", "seconds", "array", "missing", "reader")
_PATHS = ("src/pkg/fields.py", "src/pkg/schema.py", "src/pkg/utils.py", "tests/test_fields.py",
          "pkg/handlers/numpy_handler.py", "reproduce.py", "docs/changelog.rst")
_COMMANDS = ("open", "goto", "scroll_down", "search_dir", "search_file", "find_file", "edit",
             "create", "bash")
_ROOT = "/project"


@dataclass(frozen=True)
class LongHistory:
    """How one generated history is made: its name (a test id), style, seed and length."""

    name: str
    style: Style
    seed: int
    steps: int
    demonstration: bool = False
    ending: Ending = "diff"

    def messages(self) -> list[Message]:
        return agent_history(self.seed, self.style, self.steps, demonstration=self.demonstration,
                             ending=self.ending)


LONG_HISTORIES = (
    LongHistory("function-calling-30", "function_calling", seed=11, steps=30),
    LongHistory("function-calling-60-demo", "function_calling", seed=12, steps=60,
                demonstration=True),
    LongHistory("function-calling-12-dump", "function_calling", seed=13, steps=12, ending="dump"),
    LongHistory("user-observations-30", "user_observations", seed=21, steps=30, ending="reply"),
    LongHistory("user-observations-60-demo", "user_observations", seed=22, steps=60,
                demonstration=True),
    LongHistory("user-observations-12-dump", "user_observations", seed=23, steps=12,
                ending="dump"),
    LongHistory("user-observations-5", "user_observations", seed=24, steps=5, ending="reply"),
)


def long_history_params(style: Style | None = None) -> list[Any]:
    """One ``pytest.param`` per generated history (of ``style``, or all): a fresh-copy loader."""
    return [pytest.param(history.messages, id=history.name)
            for history in LONG_HISTORIES if style in (None, history.style)]


def agent_history(seed: int, style: Style, steps: int, *, demonstration: bool = False,
                  ending: Ending = "diff") -> list[Message]:
    """A session of ``steps`` commands and their outputs, then its ``ending``; deterministic for
    its arguments. One output is the dump: the last, or two thirds in when ``steps`` >= 10."""
    rng = random.Random(f"{style}:{seed}")
    messages: list[Message] = [{"role": "system", "content": _system_prompt(rng)}]
    if demonstration:
        messages.append({"role": "user", "content": _demonstration(rng)})
    messages.append({"role": "user", "content": _issue(rng)})
    used_ids: list[str] = []
    for step in range(steps):
        parallel = style == "function_calling" and rng.random() < 0.15
        calls = [_command(rng) for _ in range(2 if parallel else 1)]
        dump = step == (steps - 1 if ending == "dump" else steps * 2 // 3) and steps >= 10
        outputs = [_output(rng, dump and k == len(calls) - 1) for k in range(len(calls))]
        messages += _step(rng, style, calls, outputs, used_ids)
    if ending == "diff":
        messages += _step(rng, style, [("submit", {})], [_diff(rng)], used_ids)
    elif ending == "reply":
        messages.append({"role": "assistant", "content": _thought(rng, 2) + "\n```\nsubmit\n```"})
    return messages


# --- steps -----------------------------------------------------------------------------------

def _step(rng: random.Random, style: Style, calls: list[tuple[str, dict[str, Any]]],
          outputs: list[str], used_ids: list[str]) -> list[Message]:
    if style == "function_calling":
        return _function_calling_step(rng, calls, outputs, used_ids)
    return _observation_step(rng, calls[0], outputs[0])


def _function_calling_step(rng: random.Random, calls: list[tuple[str, dict[str, Any]]],
                           outputs: list[str], used_ids: list[str]) -> list[Message]:
    """An assistant message calling tools, then one tool message per call (ids may repeat an
    earlier step's, as some SWE-agent runs do; never within one message)."""
    ids: list[str] = []
    for _ in calls:
        reusable = [i for i in used_ids if i not in ids]
        if reusable and rng.random() < 0.3:
            ids.append(rng.choice(reusable))
        else:
            ids.append("call_" + "".join(rng.choices(string.ascii_letters + string.digits, k=24)))
    used_ids += [i for i in ids if i not in used_ids]
    assistant: Message = {"role": "assistant", "content": _thought(rng, rng.randint(1, 4)),
                          "tool_calls": [
                              {"id": call_id, "type": "function",
                               "function": {"name": name, "arguments": json.dumps(arguments)}}
                              for call_id, (name, arguments) in zip(ids, calls, strict=True)]}
    return [assistant, *({"role": "tool", "tool_call_id": call_id, "content": output}
                         for call_id, output in zip(ids, outputs, strict=True))]


def _observation_step(rng: random.Random, call: tuple[str, dict[str, Any]],
                      output: str) -> list[Message]:
    """The command written in the assistant's text; its output as the next user message (one
    command a step: this style has no parallel calls)."""
    name, arguments = call
    line = " ".join([name, *(str(value).replace("\n", "\\n") for value in arguments.values())])
    thought = _thought(rng, rng.randint(1, 4))
    return [{"role": "assistant", "content": f"{thought}\n```\n{line}\n```"},
            {"role": "user", "content": output}]


# --- text ------------------------------------------------------------------------------------

def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(6, 16))
    words[rng.randrange(len(words))] = f"`{rng.choice(_NAMES)}`"
    return " ".join(words).capitalize() + rng.choice((".", ".", ":", "?"))


def _thought(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _system_prompt(rng: random.Random) -> str:
    """The agent's setting and every command documented (~5k characters)."""
    lines = ["SETTING: You are an autonomous programmer working in a command line with a file "
             "viewer that shows 100 lines at a time.", "", "COMMANDS:"]
    for command in _COMMANDS:
        arguments = rng.sample(_NAMES, 2)
        lines += [f"{command}:", f"  docstring: {_thought(rng, 3)}",
                  f"  signature: {command} " + " ".join(f"<{a.lower()}>" for a in arguments),
                  "  arguments:", *(f"    - {a.lower()} (string) [required]: {_thought(rng, 1)}"
                                    for a in arguments)]
    return "\n".join([*lines, "", "RESPONSE FORMAT:", _thought(rng, 8)])


def _issue(rng: random.Random) -> str:
    return ("We're solving the following issue in the repository.\nISSUE:\n"
            + "\n".join(_thought(rng, 3) for _ in range(rng.randint(4, 8)))
            + f"\n```python\n{_code(rng, 12)}\n```\nINSTRUCTIONS:\n{_thought(rng, 6)}")


def _demonstration(rng: random.Random) -> str:
    """A worked example of an earlier task, pasted whole into one user message (~15k chars)."""
    parts = ["Here is a demonstration of how to accomplish a task.", "--- DEMONSTRATION ---"]
    for _ in range(12):
        parts += [_thought(rng, 2), f"```\n{_command(rng)[0]}\n```",
                  _output(rng)[:1500]]
    return "\n".join([*parts, "--- END OF DEMONSTRATION ---"])


def _code(rng: random.Random, lines: int, first: int = 0) -> str:
    """Python-looking source, numbered from ``first`` when it is not 0."""
    out = []
    for number in range(first, first + lines):
        name, other = rng.choice(_NAMES), rng.choice(_NAMES)
        line = rng.choice((
            f"def {name.lower()}(self, {other.lower()}=None):",
            f"    return int(round({name.lower()}.total_seconds() / {other.lower()}))",
            f"    if {name.lower()} is None:",
            f'        raise ValueError("{rng.choice(_WORDS)} {rng.choice(_WORDS)}")',
            f"    # {_sentence(rng)}",
            f"    {name.lower()} = self.{other.lower()}[{rng.randint(0, 99)}]",
            "",
        ))
        out.append(f"{number}:{line}" if first else line)
    return "\n".join(out)


def _command(rng: random.Random) -> tuple[str, dict[str, Any]]:
    name = rng.choice(_COMMANDS)
    if name == "edit":
        return name, {"search": _code(rng, 2), "replace": _code(rng, rng.randint(2, 6))}
    if name == "bash":
        return name, {"command": rng.choice(("python reproduce.py", "ls -F", "pytest -x -q",
                                             'grep -rn "precision" src/'))}
    if name in ("scroll_down", "goto"):
        return name, {} if name == "scroll_down" else {"line_number": rng.randint(1, 2000)}
    return name, {"path": rng.choice(_PATHS)}


def _output(rng: random.Random, dump: bool = False) -> str:
    """What a command printed (or the ~25k-character ``dump``), then the agent's status lines."""
    if dump:
        body = _dump(rng)
    else:
        write = rng.choices((_view, _listing, _hits, _traceback, _lint, _quiet),
                            weights=(5, 2, 2, 2, 1, 2))[0]
        body = write(rng)
    status = f"\n(Open file: {_ROOT}/{rng.choice(_PATHS)})\n(Current directory: {_ROOT})\nbash-$"
    text = body + status
    return text.replace("\n", "\r\n") if rng.random() < 0.3 else text


def _view(rng: random.Random) -> str:
    total, first = rng.randint(100, 2500), rng.randint(1, 90)
    lines = rng.choice((10, 40, 100))
    return (f"[File: {_ROOT}/{rng.choice(_PATHS)} ({total} lines total)]\n"
            f"({first - 1} more lines above)\n{_code(rng, lines, first)}\n"
            f"({max(0, total - first - lines)} more lines below)")


def _listing(rng: random.Random) -> str:
    names = [f"{rng.choice(_NAMES).lower()}{rng.choice(('.py', '.rst', '/', '.cfg'))}"
             for _ in range(rng.randint(8, 40))]
    return "\n".join("\t".join(names[i:i + 4]) for i in range(0, len(names), 4))


def _hits(rng: random.Random) -> str:
    term = rng.choice(_NAMES)
    hits = [f"{_ROOT}/{rng.choice(_PATHS)}:{rng.randint(1, 2000)}: {_sentence(rng)}"
            for _ in range(rng.randint(1, 30))]
    return f'Found {len(hits)} matches for "{term}" in {_ROOT}:\n' + "\n".join(hits)


def _traceback(rng: random.Random) -> str:
    frames = [f'  File "{_ROOT}/{rng.choice(_PATHS)}", line {rng.randint(1, 900)}, in '
              f"{rng.choice(_NAMES).lower()}\n    {_code(rng, 1)}"
              for _ in range(rng.randint(2, 9))]
    return ("Traceback (most recent call last):\n" + "\n".join(frames)
            + f"\nAttributeError: '{rng.choice(_NAMES)}' object has no attribute "
            f"'{rng.choice(_NAMES).lower()}' — ¿{rng.choice(_WORDS)}?")


def _lint(rng: random.Random) -> str:
    """A rejected edit: the errors, then the file as it would be and as it is (~5-10k chars)."""
    return ("Your proposed edit has introduced new syntax error(s). Please read this error "
            f"message carefully and then retry editing the file.\n\nERRORS:\n- E999 "
            f"IndentationError: unexpected indent\n\nThis is how your edit would have looked:\n"
            f"{_code(rng, 60, 1450)}\n\nThis is the original code before your edit:\n"
            f"{_code(rng, 60, 1450)}")


def _quiet(rng: random.Random) -> str:
    return "Your command ran successfully and did not produce any output."


def _dump(rng: random.Random) -> str:
    lines = [f"{offset:08x}  " + " ".join(f"{rng.randrange(256):02x}" for _ in range(16))
             + "  |" + "".join(rng.choices(string.ascii_letters + ".", k=16)) + "|"
             for offset in range(0, 16 * 320, 16)]
    return "\n".join(lines)


def _diff(rng: random.Random) -> str:
    path = rng.choice(_PATHS)
    removed, added = _code(rng, 3), _code(rng, 4)
    return (f"\ndiff --git a/{path} b/{path}\nindex 1a2b3c4..5d6e7f8 100644\n--- a/{path}\n"
            f"+++ b/{path}\n@@ -1456,3 +1456,4 @@\n"
            + "\n".join(f"-{line}" for line in removed.split("\n"))
            + "\n" + "\n".join(f"+{line}" for line in added.split("\n")) + "\n")

"""Telling a person's message from an observation: tool output sent back as a user message.

Many agent loops (SWE-agent, mini-swe-agent, ReAct prompts) return each command's output as a
``user`` message. Such a message is a tool result, not something a person typed: it should be
deduplicated, clipped and masked like one, and never protected as a user turn. The engine learns
which user turns are observations from their ``cutctx.observation`` metadata; this module sets it.

Rules (``observations=``): ``"auto"`` (the default) — a user message right after the assistant's
action (its message, or the results of its tool calls) that reads as a program's output (a
traceback, a diff, a shell prompt as its last line, or mostly lines that are not prose: numbered
lines, listings, code, logs); ``"after_assistant"`` — every user message right after an
assistant message; ``"none"`` — no user message is one; or a
callable ``(message, index) -> bool`` for an agent with its own convention. The first user
message (the task) is never one under ``auto`` or ``after_assistant``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from cutctx import OBSERVATION_KEY, Role, Transcript, TranscriptTurn, ValidationError

__all__ = [
    "OBSERVATION_RULES",
    "ObservationRule",
    "check_rule",
    "marked",
    "observation_reason",
    "output_shape",
]

ObservationRule = (Literal["auto", "after_assistant", "none"]
                   | Callable[[Mapping[str, Any], int], bool])
"""How user messages that carry tool output are recognised (see the module docstring)."""
OBSERVATION_RULES = ("auto", "after_assistant", "none")

OUTPUT_SHARE = 0.6
"""Of a message's non-blank lines (at least ``MIN_LINES``), the share that must read as output."""
MIN_LINES = 3
LONG_LINES = 40
"""A message this long needs less of its shape to count (``LONG_OUTPUT_SHARE``): people rarely
type forty lines, programs print them all the time."""
LONG_OUTPUT_SHARE = 0.3
_SCAN_LINES = 400
"""Lines of a long message looked at (its head and tail): enough to tell, bounded in cost."""

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):|^\s*File \"[^\"]+\", line \d+",
                        re.MULTILINE)
_DIFF = re.compile(r"^(?:diff --git |@@ -\d+(?:,\d+)? \+\d+)", re.MULTILINE)
_PROMPT = re.compile(r"^[\w@:~/.()\[\]+-]*[$#%>]{1,3}$")
"""A shell or REPL prompt alone on a line: ``bash-$``, ``$``, ``root@box:/src#``, ``>>>``."""
_AFTER_ACTION = (Role.ASSISTANT, Role.TOOL)
"""What an observation follows: the assistant's action (its message, or its tool results)."""
_NUMBERED = re.compile(r"^\s*\d+[:|)\]]")
_LIST_ITEM = re.compile(r"\d{1,2}\. ")
"""A person's numbered list (``1. Keep the old format``), not a log line."""
_CODE_MARKS = frozenset("{}[]()<>=;_/\\|#$@`*")


def output_shape(text: str) -> str | None:
    """Why ``text`` reads as a program's output, not a person's words: ``"traceback"``,
    ``"diff"``, ``"prompt"`` (its last line is a shell prompt), ``"output"`` (mostly lines that
    are not prose) or ``"size"`` (long, and a good part of it not prose); None when it reads as
    something a person typed. Code a person quotes in fences (```) is left out of the count.

    >>> output_shape("AUTHORS.rst\\nREADME.rst\\nsetup.py\\nsrc/\\ntests/")
    'output'
    >>> output_shape("Thanks. Now make the export run nightly, and keep the old format.") is None
    True
    """
    if ("Traceback (" in text or 'File "' in text) and _TRACEBACK.search(text):
        return "traceback"
    if ("diff --git" in text or "@@ -" in text) and _DIFF.search(text):
        return "diff"
    stripped = text.rstrip()
    if not stripped:
        return None
    if _PROMPT.match(stripped[stripped.rfind("\n") + 1:].strip()):
        return "prompt"
    lines = _outside_fences([line for line in text.split("\n") if line.strip()])
    long = len(lines) >= LONG_LINES
    if len(lines) > _SCAN_LINES:
        lines = lines[:_SCAN_LINES // 2] + lines[-_SCAN_LINES // 2:]
    if len(lines) < MIN_LINES:
        return None
    output = sum(not _is_prose(line) for line in lines)
    if output >= OUTPUT_SHARE * len(lines):
        return "output"
    return "size" if long and output >= LONG_OUTPUT_SHARE * len(lines) else None


def _outside_fences(lines: list[str]) -> list[str]:
    """``lines`` without the code blocks fenced by ``` lines (and without the fences)."""
    if not any(line.lstrip().startswith("```") for line in lines):
        return lines
    out: list[str] = []
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def _is_prose(line: str) -> bool:
    """A line a person might write: words separated by spaces, few code or log marks, not
    indented like code, not numbered like a listing, not opening like a log line (a timestamp,
    a ``[tag]``)."""
    if line.startswith(("    ", "\t")) or _NUMBERED.match(line):
        return False
    stripped = line.strip()
    if not (stripped[0].isalpha() or stripped[0] in "\"'*-" or _LIST_ITEM.match(stripped)):
        return False
    words = stripped.split()
    if len(words) < 3:
        return False
    marks = sum(char in _CODE_MARKS for char in stripped)
    return marks * 10 < len(stripped)


def observation_reason(role: Role, text: str, previous: Role | None) -> str | None:
    """The ``auto`` rule: why a turn of ``role`` holding ``text`` after a turn of ``previous``
    is an observation (its shape), or None. Only a user message right after the assistant's
    action (its message or its tool results) can be one."""
    if role is not Role.USER or previous not in _AFTER_ACTION:
        return None
    return output_shape(text)


def check_rule(rule: Any) -> None:
    """Refuse what is neither a rule's name nor a callable, naming the setting."""
    if callable(rule) or (isinstance(rule, str) and rule in OBSERVATION_RULES):
        return
    raise ValidationError(
        f"observations must be one of {', '.join(map(repr, OBSERVATION_RULES))} or a callable "
        "(message, index) -> bool", {"field": "observations"})


def marked(transcript: Transcript, rule: ObservationRule,
           message_of: Callable[[str], tuple[Mapping[str, Any], int]]) -> Transcript:
    """``transcript`` with ``cutctx.observation`` set on exactly the user turns ``rule`` calls
    observations (``transcript`` itself when nothing changes). Under ``auto`` that is what the
    conversion already set, when it read each message. ``message_of(turn_id)``: the message a
    turn renders and its index in the caller's list, for a callable rule."""
    if rule == "auto":
        return transcript
    turns = transcript.turns
    out: list[TranscriptTurn] = []
    changed = False
    for position, turn in enumerate(turns):
        if turn.role is not Role.USER:
            out.append(turn)
            continue
        previous = turns[position - 1] if position else None
        reason = _reason(rule, turn, previous, message_of)
        now = turn.metadata.get(OBSERVATION_KEY)
        if reason == now:
            out.append(turn)
            continue
        metadata = {key: value for key, value in turn.metadata.items() if key != OBSERVATION_KEY}
        if reason is not None:
            metadata[OBSERVATION_KEY] = reason
        out.append(TranscriptTurn(turn.turn_id, turn.role, turn.content, turn.token_estimate,
                                  turn.tool_call_id, turn.pinned, metadata))
        changed = True
    return Transcript(tuple(out)) if changed else transcript


def _reason(rule: ObservationRule, turn: TranscriptTurn, previous: TranscriptTurn | None,
            message_of: Callable[[str], tuple[Mapping[str, Any], int]]) -> str | None:
    if rule == "none":
        return None
    if rule == "after_assistant":
        after = previous is not None and previous.role is Role.ASSISTANT
        return "after_assistant" if after else None
    assert callable(rule)
    message, index = message_of(turn.turn_id)
    try:
        verdict = rule(message, index)
    except Exception as error:
        raise ValidationError(
            f"the observations callable raised {type(error).__name__} for message {index}",
            {"field": "observations", "index": index, "turn_id": turn.turn_id}) from error
    if not isinstance(verdict, bool):
        raise ValidationError(f"the observations callable must return True or False (message "
                              f"{index})", {"field": "observations", "index": index})
    return "rule" if verdict else None

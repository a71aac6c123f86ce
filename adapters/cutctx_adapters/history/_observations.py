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
message (the task) is never one under ``auto`` or ``after_assistant``, even after an
assistant's greeting. When unsure, a message is the person's: what a person quotes (fenced
code, a markdown table) is not counted, and prose needs no spaces (Chinese, Japanese, Thai).
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
_PROMPT = re.compile(r"^([\w@:~/.()\[\]+-]*?)[$#%>]{1,3}$")
"""A shell or REPL prompt alone on a line: ``bash-$``, ``$``, ``root@box:/src#``, ``>>>``."""
_PROMPT_SIGNS = frozenset("@:~/-()[]")
"""What a prompt's head holds (``user@host``, ``~/src``, ``bash-``) and a person's ``93%`` or
``C#`` does not."""
_AFTER_ACTION = (Role.ASSISTANT, Role.TOOL)
"""What an observation follows: the assistant's action (its message, or its tool results)."""
_NUMBERED = re.compile(r"^\s*\d+[:|)\]]")
_LIST_ITEM = re.compile(r"\d{1,2}(?:[.)] |[．）、] ?)")
"""A person's numbered list (``1. Keep the old format``, ``2) then this``), not a log line."""
_CODE_MARKS = frozenset("{}[]()<>=;_/\\|#$@`*")
_PROSE_OPENINGS = frozenset("\"'*-“‘«「『（【《")
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
                       "\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f]")
"""Letters of scripts written without spaces between words (Thai, Lao, Burmese, Khmer, kana,
CJK ideographs; Hangul too, whose short lines hold few spaces): each counts as a word."""
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$|^\s*\|\s*:?-+:?\s*\|\s*$")
"""A markdown table's delimiter row: ``|---|:---:|``."""
_FENCES = ("```", "~~~")


def output_shape(text: str) -> str | None:
    """Why ``text`` reads as a program's output, not a person's words: ``"traceback"``,
    ``"diff"``, ``"prompt"`` (its last line is a shell prompt), ``"output"`` (mostly lines that
    are not prose) or ``"size"`` (long, and a good part of it not prose); None when it reads as
    something a person typed. What a person quotes — code in fences (```), a markdown table —
    is left out.

    >>> output_shape("AUTHORS.rst\\nREADME.rst\\nsetup.py\\nsrc/\\ntests/")
    'output'
    >>> output_shape("Thanks. Now make the export run nightly, and keep the old format.") is None
    True
    """
    stripped = text.rstrip()
    if not stripped:
        return None
    lines: list[str] | None = None
    unquoted = text
    if any(fence[0] in text and fence in text for fence in _FENCES):  # one memchr, mostly
        lines = _outside_fences(_non_blank(text))
        unquoted = "\n".join(lines)
    if ("Traceback (" in unquoted or 'File "' in unquoted) and _TRACEBACK.search(unquoted):
        return "traceback"
    if ("diff --git" in unquoted or "@@ -" in unquoted) and _DIFF.search(unquoted):
        return "diff"
    if _is_prompt(stripped[stripped.rfind("\n") + 1:].strip()):
        return "prompt"
    if lines is None:
        lines = _non_blank(text)
    many = len(lines) > _SCAN_LINES
    if many:
        lines = lines[:_SCAN_LINES // 2] + lines[-_SCAN_LINES // 2:]
    if "|" in text:
        lines = _outside_tables(lines)
    long = many or len(lines) >= LONG_LINES
    if len(lines) < MIN_LINES:
        return None
    output = sum(not _is_prose(line) for line in lines)
    if output >= OUTPUT_SHARE * len(lines):
        return "output"
    return "size" if long and output >= LONG_OUTPUT_SHARE * len(lines) else None


def _non_blank(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _is_prompt(line: str) -> bool:
    """Whether ``line`` is a shell or REPL prompt: marks alone (``$``, ``>>>``), or after a head
    that holds a prompt's signs or names a program (``bash-$``, ``mysql>``); not a number
    (``93%``) or a one-letter name (``C#``)."""
    found = _PROMPT.match(line)
    if found is None:
        return False
    head = found.group(1)
    return (not head or not _PROMPT_SIGNS.isdisjoint(head)
            or (len(head) > 1 and head[0].isalpha()))


def _outside_fences(lines: list[str]) -> list[str]:
    """``lines`` without the code blocks a fence opens and a like fence closes (``` or ~~~),
    fences included; a fence left open hides nothing (a program may print one)."""
    out: list[str] = []
    block: list[str] = []
    opened: str | None = None
    for line in lines:
        fence = next((mark for mark in _FENCES if line.lstrip().startswith(mark)), None)
        if opened is None:
            if fence is None:
                out.append(line)
            else:
                opened, block = fence, [line]
        elif fence == opened and not line.strip().strip(fence[0]):
            opened = None
        else:
            block.append(line)
    return out + block if opened is not None else out


def _outside_tables(lines: list[str]) -> list[str]:
    """``lines`` without markdown tables (a header row, its ``|---|`` delimiter, the rows
    under it)."""
    out: list[str] = []
    in_table = False
    for line in lines:
        if _TABLE_RULE.match(line) and out and "|" in out[-1]:
            out.pop()  # the header row
            in_table = True
        elif not (in_table and "|" in line):
            in_table = False
            out.append(line)
    return out


def _is_prose(line: str) -> bool:
    """A line a person might write: words separated by spaces (or letters of a script written
    without them), few code or log marks, not indented like code, not numbered like a listing
    (a list item is prose), not opening like a log line (a timestamp, a ``[tag]``)."""
    if line.startswith(("    ", "\t")):
        return False
    stripped = line.strip()
    item = _LIST_ITEM.match(stripped)
    if item is None and _NUMBERED.match(line):
        return False
    body = stripped[item.end():].lstrip() if item is not None else stripped
    if not body or not (body[0].isalpha() or body[0] in _PROSE_OPENINGS):
        return False
    words = len(stripped.split())
    if words < 3 and words + len(_UNSPACED.findall(body)) < 3:
        return False
    marks = sum(char in _CODE_MARKS for char in stripped)
    return marks * 10 < len(stripped)


def observation_reason(role: Role, text: str, previous: Role | None,
                       after_task: bool = True) -> str | None:
    """The ``auto`` rule: why a turn of ``role`` holding ``text`` after a turn of ``previous``
    is an observation (its shape), or None. Only a user message right after the assistant's
    action (its message or its tool results) can be one, and never the task: the first user
    message (``after_task`` False)."""
    if role is not Role.USER or previous not in _AFTER_ACTION or not after_task:
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
    after_task = False
    for position, turn in enumerate(turns):
        if turn.role is not Role.USER:
            out.append(turn)
            continue
        previous = turns[position - 1] if position else None
        reason = _reason(rule, turn, previous, message_of, after_task)
        after_task = True
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
            message_of: Callable[[str], tuple[Mapping[str, Any], int]],
            after_task: bool) -> str | None:
    if rule == "none":
        return None
    if rule == "after_assistant":
        after = after_task and previous is not None and previous.role is Role.ASSISTANT
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

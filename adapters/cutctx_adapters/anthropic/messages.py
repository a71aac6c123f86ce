"""Anthropic Messages ``system`` + ``messages`` ↔ ``Transcript``, token counts, and compaction.

``system`` (a string or text blocks) becomes SYSTEM turns (``system.0``, ...). An assistant message
is one turn, whatever it holds (thinking, text, ``tool_use``, server tool use and its results).
A user message is one turn, unless it carries ``tool_result`` blocks: then each result is a TOOL
turn of its own (``m3.0``, ``m3.1``) answering its ``tool_use_id``, and the rest of the message one
USER turn (``m3.2``), so its text is never masked or dropped as if it were a tool result. Calls
and their results share a correlation id, so they travel together. When the history ends inside
a tool loop whose first assistant message starts with thinking, that message, the loop's latest
exchange and the user message that opened the turn travel together too (the API wants the
final turn's thinking first). The last message is always kept: a request needs one.

Kept turns render back exactly. The way back regroups turns by source message and repairs what
removal can break: an assistant message left first gets a short user note before it (a summary
left first becomes a user message; Bedrock and older API versions reject an assistant first),
consecutive same-role messages are merged (tool results first, the latest thinking first), a
summary inside a final tool loop opened with thinking is said by the assistant (a user text
there would end the turn), and ``cache_control`` markers stay at most four. A plan that leaves
an assistant message first is made again with room for the note, which then counts in the
overhead.

>>> from cutctx import CharRatioEstimator
>>> history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
>>> conv = to_transcript(history, system="Be brief.", estimator=CharRatioEstimator())
>>> conv.render(conv.transcript) == ("Be brief.", history)
True
>>> conv.transcript.turn_ids()
('system.0', 'm0', 'm1')
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from cutctx import (
    Action,
    CompactionBudget,
    CompactionPolicy,
    Role,
    TokenEstimator,
    ValidationError,
)

from .._conversion import (
    Conversion,
    Part,
    PinSpec,
    check_call_pairs,
    convert,
    copy_plain,
    invalid,
    to_plain,
)
from .._estimators import estimator_for
from .._pipeline import (
    CompactionResult,
    Job,
    OnSummaryError,
    arun,
    resolve_budget,
    run,
    start,
)
from .._session import HistoryFormat, given
from ..fulfil import AnySummarizer, SummaryCache
from ._tokens import (
    MESSAGE_TOKENS,
    TOOL_BLOCK_TOKENS,
    AnthropicTokenCounter,
    CalibratedEstimator,
    scale_to_total,
)

__all__ = [
    "DEFAULT_MODEL",
    "FORMAT",
    "MAX_CACHE_BREAKPOINTS",
    "OMITTED_NOTE",
    "SUMMARY_HEADER",
    "SUMMARY_ROLES",
    "MessagesCodec",
    "acompact",
    "acount_tokens",
    "aplan",
    "compact",
    "count_tokens",
    "plan",
    "to_transcript",
    "validate",
]

System: TypeAlias = str | list[dict[str, Any]] | None
Rendered: TypeAlias = tuple[System, list[dict[str, Any]]]

DEFAULT_MODEL = "claude-sonnet-4-5"
SUMMARY_ROLES = ("user", "assistant")
SUMMARY_HEADER = "Summary of the earlier conversation:\n\n"
OMITTED_NOTE = "(Earlier messages of this conversation were omitted.)"
"""The user text put first when compaction leaves an assistant message at the start."""
MAX_CACHE_BREAKPOINTS = 4
_NOUN = "message"
_THINKING = frozenset({"thinking", "redacted_thinking"})
_ASSISTANT_ONLY = frozenset({"thinking", "redacted_thinking", "tool_use", "server_tool_use"})
_FINAL_TURN = "anthropic:final-turn"


def _blocks(content: Any) -> list[Any]:
    """Content as a list of blocks (a string is one text block; an empty string none)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _starts_with_thinking(content: Any) -> bool:
    return (isinstance(content, list) and bool(content) and isinstance(content[0], Mapping)
            and content[0].get("type") in _THINKING)


def _only_tool_results(content: Any) -> bool:
    return (isinstance(content, list) and bool(content)
            and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content))


class MessagesCodec:
    """The Messages format: what is specific to it, and nothing else."""

    noun = _NOUN
    id_prefix = "m"

    def __init__(self, summary_role: str = "user", *, system_kind: str | None = None,
                 starts_with_user: bool = True, tool_breakpoints: int = 0,
                 thinking_loop: int | None = None) -> None:
        if summary_role not in SUMMARY_ROLES:
            raise invalid("option", 0, "summary_role", "summary_role",
                          f"summary_role must be one of {', '.join(SUMMARY_ROLES)}")
        self.summary_role = summary_role
        self.system_kind = system_kind
        """How ``system`` was given: None (absent), ``"str"`` or ``"list"``."""
        self.starts_with_user = starts_with_user
        self.breakpoint_limit = max(0, MAX_CACHE_BREAKPOINTS - tool_breakpoints)
        self.thinking_loop = thinking_loop
        """Index of the message opening a final tool loop with thinking, if the history has one:
        a summary inside that loop is said by the assistant, so the turn stays unbroken."""

    def render_masked(self, part: Part, stub: str) -> Any:
        """A tool result keeps its block (id, ``is_error``) with the stub as content; an
        assistant message keeps its thinking and ``tool_use`` blocks around the stub."""
        payload = copy_plain(part.payload)
        content = payload.get("content")
        if part.kind == "tool_result":
            payload["content"][0]["content"] = stub
        elif part.role is Role.ASSISTANT and isinstance(content, list):
            keep = [b for b in content if b.get("type") in _THINKING]
            calls = [b for b in content if b.get("type") == "tool_use"]
            payload["content"] = [*keep, {"type": "text", "text": stub}, *calls]
        elif isinstance(content, str):
            payload["content"] = stub
        else:
            payload["content"] = [{"type": "text", "text": stub}]
        return payload

    def render_summary(self, text: str, replaced: int) -> Any:
        return {"role": self.summary_role,
                "content": [{"type": "text", "text": SUMMARY_HEADER + text}]}

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> Rendered:
        system_parts: list[Any] = []
        drafts: list[tuple[int | None, dict[str, Any]]] = []  # (source message, message)
        for part, payload in rendered:
            if part is not None and part.kind == "system":
                system_parts.append(payload)
            elif part is not None and drafts and drafts[-1][0] == part.index:
                drafts[-1][1]["content"].extend(payload["content"])  # parts of one message
            else:
                drafts.append((None if part is None else part.index, payload))
        messages = [message for _, message in drafts]
        if self.thinking_loop is not None:
            previous = -1
            for source, message in drafts:
                if source is None and previous >= self.thinking_loop:
                    message["role"] = "assistant"
                previous = previous if source is None else source
        if self.starts_with_user and messages and messages[0].get("role") == "assistant":
            if drafts[0][0] is None:  # a summary: the API wants a user turn first
                messages[0]["role"] = "user"
            else:
                messages.insert(0, {"role": "user",
                                    "content": [{"type": "text", "text": OMITTED_NOTE}]})
        messages = _merge_same_roles(messages)
        system: System
        if self.system_kind == "str":
            system = system_parts[0] if system_parts else ""
        elif self.system_kind == "list":
            system = system_parts
        else:
            system = None
        _limit_breakpoints(system, messages, self.breakpoint_limit)
        return system, messages


def _merge_same_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge runs of same-role messages that removal left next to each other.

    A user message keeps its ``tool_result`` blocks first; an assistant message that starts a
    run with thinking keeps that thinking first (the API requires it of the latest message).
    Message keys other than ``content`` come from the first message of the run.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if not out or out[-1].get("role") != message.get("role"):
            out.append(message)
            continue
        first, second = _blocks(out[-1].get("content")), _blocks(message.get("content"))
        if message.get("role") == "user":
            combined = first + second
            merged = ([b for b in combined if b.get("type") == "tool_result"]
                      + [b for b in combined if b.get("type") != "tool_result"])
        elif not _starts_with_thinking(first) and _starts_with_thinking(second):
            lead = 0
            while lead < len(second) and second[lead].get("type") in _THINKING:
                lead += 1
            merged = second[:lead] + first + second[lead:]
        else:
            merged = first + second
        out[-1] = {**out[-1], "content": merged}
    return out


def _cache_markers(system: Any, messages: Sequence[Mapping[str, Any]]) -> list[
        tuple[int, str, dict[str, Any]]]:
    """Every block holding ``cache_control``, in prefix order: (message index or -1, field,
    block). Blocks inside a ``tool_result``'s content count too."""
    found: list[tuple[int, str, dict[str, Any]]] = []
    if isinstance(system, list):
        for position, block in enumerate(system):
            if isinstance(block, dict) and "cache_control" in block:
                found.append((-1, f"system[{position}].cache_control", block))
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            if "cache_control" in block:
                found.append((index, f"content[{position}].cache_control", block))
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, list):
                for nested, item in enumerate(inner):
                    if isinstance(item, dict) and "cache_control" in item:
                        found.append((index, f"content[{position}].content[{nested}]"
                                             ".cache_control", item))
    return found


def _limit_breakpoints(system: Any, messages: list[dict[str, Any]], limit: int) -> None:
    """Strip the oldest ``cache_control`` markers beyond ``limit`` (output only; in place)."""
    markers = _cache_markers(system, messages)
    for _, _, block in markers[: max(0, len(markers) - limit)]:
        del block["cache_control"]


# ----------------------------------------------------------------------------------------------
# reading and checking a request


@dataclass(frozen=True, slots=True)
class _Request:
    """Plain copies of what the caller gave."""

    messages: list[dict[str, Any]]
    system: System
    tools: list[Any] | None


def _plain_messages(history: Any) -> list[dict[str, Any]]:
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Sequence):
        raise invalid(_NOUN, 0, "messages", "messages_type", "messages must be a list")
    out: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        plain = to_plain(message, where=f"{_NOUN} {index}", index=index)
        if (not isinstance(message, Mapping) and isinstance(plain, dict)
                and plain.get("type") == "message" and plain.get("role") == "assistant"):
            # A whole ``Message`` response appended: the API takes its role and content only.
            plain = {"role": "assistant", "content": plain.get("content")}
        out.append(plain)
    return out


def _plain_system(system: Any) -> System:
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, bytes | Mapping) or not isinstance(system, Sequence):
        raise invalid("system", 0, "system", "system_type",
                      "system must be a string or a list of text blocks")
    blocks = [to_plain(block, where=f"system block {k}") for k, block in enumerate(system)]
    for position, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise invalid("system block", position, "type", "system_block_type",
                          "a system block must be a text block")
        if not isinstance(block.get("text"), str):
            raise invalid("system block", position, "text", "block_text",
                          "a text block needs a string 'text'")
    return blocks


def _request(history: Any, system: Any, tools: Any) -> _Request:
    if tools is not None and (isinstance(tools, str | bytes | Mapping)
                              or not isinstance(tools, Sequence)):
        raise invalid("tool", 0, "tools", "tools_type", "tools must be a list")
    plain_tools = None if tools is None else [to_plain(tool) for tool in tools]
    return _Request(_plain_messages(history), _plain_system(system), plain_tools)


def _string_field(block: Mapping[str, Any], key: str, index: int, where: str, rule: str,
                  *, nonempty: bool = False) -> str:
    value = block.get(key)
    if not isinstance(value, str) or (nonempty and not value):
        raise invalid(_NOUN, index, f"{where}.{key}", rule,
                      f"a {block.get('type')} block needs a {'non-empty ' if nonempty else ''}"
                      f"string {key!r}")
    return value


def _check_block(block: Any, index: int, where: str, role: str) -> str:
    """Check one content block; return its type."""
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        raise invalid(_NOUN, index, where, "block_type", "a content block needs a string 'type'")
    kind: str = block["type"]
    if kind in _ASSISTANT_ONLY and role != "assistant":
        raise invalid(_NOUN, index, f"{where}.type", "block_role",
                      f"a {kind} block may only appear in an assistant message")
    if kind == "tool_result" and role != "user":
        raise invalid(_NOUN, index, f"{where}.type", "block_role",
                      "a tool_result block may only appear in a user message")
    if kind == "text":
        _string_field(block, "text", index, where, "empty_text", nonempty=True)
    elif kind in ("tool_use", "server_tool_use"):
        _string_field(block, "id", index, where, "missing_id", nonempty=True)
        _string_field(block, "name", index, where, "missing_name", nonempty=True)
        if kind == "tool_use" and not isinstance(block.get("input"), Mapping):
            raise invalid(_NOUN, index, f"{where}.input", "input_type",
                          "a tool_use block needs an object 'input'")
    elif kind == "tool_result":
        _string_field(block, "tool_use_id", index, where, "missing_id", nonempty=True)
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise invalid(_NOUN, index, f"{where}.is_error", "is_error_type",
                          "is_error must be a boolean")
        inner = block.get("content")
        if inner is not None and not isinstance(inner, str):
            if not isinstance(inner, list):
                raise invalid(_NOUN, index, f"{where}.content", "content_type",
                              "tool_result content must be a string or a list of blocks")
            for position, item in enumerate(inner):
                nested = f"{where}.content[{position}]"
                if isinstance(item, Mapping) and item.get("type") in ("tool_result", "tool_use"):
                    raise invalid(_NOUN, index, f"{nested}.type", "block_type",
                                  "a tool_result cannot contain tool blocks")
                _check_block(item, index, nested, role)
    elif kind == "thinking":
        _string_field(block, "thinking", index, where, "missing_thinking")
        _string_field(block, "signature", index, where, "missing_signature")
    elif kind == "redacted_thinking":
        _string_field(block, "data", index, where, "missing_data")
    elif kind in ("image", "document") and not isinstance(block.get("source"), Mapping):
        raise invalid(_NOUN, index, f"{where}.source", "missing_source",
                      f"an {kind} block needs a 'source' object")
    elif kind.endswith("_tool_result") and "tool_use_id" in block:
        _string_field(block, "tool_use_id", index, where, "missing_id", nonempty=True)
    return kind


def _checked_content(message: Any, index: int, final: bool) -> tuple[str, Any]:
    """The role and content of a message whose structure (not pairing) is valid."""
    if not isinstance(message, Mapping):
        raise invalid(_NOUN, index, "", "message_type", "a message must be an object")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise invalid(_NOUN, index, "role", "unknown_role",
                      "role must be 'user' or 'assistant' (the system prompt goes in system=)")
    if "content" not in message:
        raise invalid(_NOUN, index, "content", "missing_content", "content is required")
    content = message["content"]
    if not isinstance(content, str | list):
        raise invalid(_NOUN, index, "content", "content_type",
                      "content must be a string or a list of content blocks")
    if not content and not (final and role == "assistant"):
        raise invalid(_NOUN, index, "content", "empty_content",
                      "content must not be empty (only a final assistant message may be)")
    if isinstance(content, list):
        seen_other = False
        for position, block in enumerate(content):
            kind = _check_block(block, index, f"content[{position}]", role)
            if kind == "tool_result" and seen_other:
                raise invalid(_NOUN, index, f"content[{position}]", "tool_result_not_first",
                              "tool_result blocks must come before any other block")
            seen_other = seen_other or kind != "tool_result"
    return role, content


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _block_text(block: Mapping[str, Any]) -> str:
    """A block as a model reads it; media and opaque payloads as short placeholders."""
    kind = block["type"]
    if kind == "text":
        return str(block["text"])
    if kind == "tool_use":
        return f"[tool call {block['name']}: {_json(block.get('input'))}]"
    if kind == "server_tool_use":
        return f"[server tool call {block['name']}: {_json(block.get('input'))}]"
    if kind == "tool_result":
        return _result_text(block)
    if kind == "thinking":
        return "[thinking]"
    if kind == "redacted_thinking":
        return "[redacted thinking]"
    if kind in ("document", "search_result"):
        title, label = block.get("title"), kind.replace("_", " ")
        head = f"[{label}: {title}]" if isinstance(title, str) else f"[{label}]"
        source = block.get("source")
        body: Any = block.get("content")
        if isinstance(source, Mapping) and source.get("type") == "text":
            body = source.get("data")
        elif isinstance(source, Mapping) and source.get("type") == "content":
            body = source.get("content")
        text = _content_text(body)
        return f"{head}\n{text}" if text else head
    return f"[{kind}]"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(b) for b in content
                         if isinstance(b, Mapping) and isinstance(b.get("type"), str))
    return ""


def _result_text(block: Mapping[str, Any]) -> str:
    text = _content_text(block.get("content"))
    return f"[error] {text}" if block.get("is_error") is True else text


class _NoCount(AnthropicTokenCounter):
    """Counts nothing: for validation, which needs the structure only."""

    framing = 0

    def __init__(self) -> None:
        pass

    def message(self, message: Mapping[str, Any]) -> int:
        return 0

    def block(self, block: Any) -> int:
        return 0

    def system(self, system: Any) -> int:
        return 0


def _system_parts(system: System, counter: AnthropicTokenCounter) -> list[Part]:
    if system is None:
        return []
    if isinstance(system, str):
        return [Part(-1, Role.SYSTEM, system, system, counter.system(system), "system",
                     turn_id="system.0")]
    return [Part(-1, Role.SYSTEM, block["text"], block, counter.block(block), "system",
                 turn_id=f"system.{position}") for position, block in enumerate(system)]


def _message_parts(message: dict[str, Any], index: int, role: str, content: Any,
                   counter: AnthropicTokenCounter, names: dict[str, str],
                   issued: set[str]) -> list[Part]:
    if role == "assistant":
        calls: list[str] = []
        labels: list[str] = []
        for position, block in enumerate(_blocks(content) if isinstance(content, list) else []):
            if block["type"] in ("tool_use", "server_tool_use"):
                if block["id"] in issued:
                    raise invalid(_NOUN, index, f"content[{position}].id", "duplicated_call_id",
                                  "tool use id issued twice", call_id=block["id"])
                issued.add(block["id"])
                labels.append(block["name"])
            if block["type"] == "tool_use":
                # Results must follow in the very next message, so a call is keyed by the
                # message that issued it.
                calls.append(f"{index}:{block['id']}")
                names[calls[-1]] = block["name"]
        text = _content_text(content)
        return [Part(index, Role.ASSISTANT, text, message, counter.message(message), "assistant",
                     calls=tuple(calls), label=", ".join(labels) or None)]
    results = 0
    while (isinstance(content, list) and results < len(content)
           and content[results]["type"] == "tool_result"):
        results += 1
    if not results:
        return [Part(index, Role.USER, _content_text(content), message,
                     counter.message(message), "user")]
    base = {key: value for key, value in message.items() if key != "content"}
    parts: list[Part] = []
    for position, block in enumerate(content[:results]):
        key = f"{index - 1}:{block['tool_use_id']}"
        tokens = counter.block(block) + (counter.framing if position == 0 else 0)
        parts.append(Part(index, Role.TOOL, _result_text(block), {**base, "content": [block]},
                          tokens, "tool_result", answers=(key,), label=names.get(key),
                          sub=position))
    rest = content[results:]
    if rest:
        # Framing counted again: when the results go with their exchange, this part is sent
        # as a message of its own (an overcount of one framing while both are kept).
        parts.append(Part(index, Role.USER, _content_text(rest), {**base, "content": rest},
                          counter.framing + sum(counter.block(block) for block in rest),
                          "user", sub=results))
    return parts


def _genuine_user(message: Mapping[str, Any]) -> bool:
    """A user message that starts a new turn: anything but tool results alone."""
    return message.get("role") == "user" and not _only_tool_results(message.get("content"))


def _open_tool_loop(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """``(boundary, first assistant)`` of a final turn still in its tool loop, else None.

    The history ends with tool results; the turn began after the last user message that was
    not only tool results (``boundary``, -1 if none).
    """
    if not messages or messages[-1].get("role") != "user" or _genuine_user(messages[-1]):
        return None
    boundary = len(messages) - 1
    while boundary >= 0 and not _genuine_user(messages[boundary]):
        boundary -= 1
    for index in range(boundary + 1, len(messages)):
        if messages[index].get("role") == "assistant":
            return boundary, index
    return None


def _thinking_loop(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """``_open_tool_loop``, if the loop's first assistant message starts with thinking."""
    loop = _open_tool_loop(messages)
    if loop is None or not _starts_with_thinking(messages[loop[1]].get("content")):
        return None
    return loop


def _link_final_turn(parts: list[Part], messages: Sequence[Mapping[str, Any]]) -> list[Part]:
    """With thinking, a final turn in its tool loop must keep its first assistant message (which
    starts with the thinking), its latest exchange and its user request together."""
    loop = _thinking_loop(messages)
    if loop is None:
        return parts
    boundary, first = loop
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    out: list[Part] = []
    for part in parts:
        if part.index in (first, last) or (part.index == boundary and part.role is Role.USER):
            part = replace(part, links=(*part.links, _FINAL_TURN))
        out.append(part)
    return out


def _thinking_enabled(thinking: Any) -> bool:
    return isinstance(thinking, Mapping) and thinking.get("type") == "enabled"


def _check_thinking(messages: Sequence[Mapping[str, Any]], thinking: Any,
                    original: Sequence[Mapping[str, Any]] | None) -> None:
    if _thinking_enabled(thinking):
        loop = _open_tool_loop(messages)
        if loop is not None and not _starts_with_thinking(messages[loop[1]].get("content")):
            raise invalid(_NOUN, loop[1], "content[0].type", "thinking_not_first",
                          "with thinking enabled, the assistant message that opens the final "
                          "tool loop must start with a thinking block")
    if original is None:
        return
    known = {_json(block) for message in original if message.get("role") == "assistant"
             for block in _blocks(message.get("content"))
             if isinstance(block, Mapping) and block.get("type") in _THINKING}
    latest = next((i for i in range(len(messages) - 1, -1, -1)
                   if messages[i].get("role") == "assistant"), None)
    if latest is None:
        return
    for position, block in enumerate(_blocks(messages[latest].get("content"))):
        if block.get("type") in _THINKING and _json(block) not in known:
            raise invalid(_NOUN, latest, f"content[{position}]", "thinking_modified",
                          "thinking blocks in the latest assistant message must be exactly as "
                          "the original response gave them")


def _check_breakpoints(request: _Request) -> None:
    markers = _cache_markers(request.system, request.messages)
    tool_markers = [k for k, tool in enumerate(request.tools or [])
                    if isinstance(tool, Mapping) and "cache_control" in tool]
    if len(tool_markers) > MAX_CACHE_BREAKPOINTS:
        raise invalid("tool", tool_markers[MAX_CACHE_BREAKPOINTS], "cache_control",
                      "too_many_cache_breakpoints", "more than 4 cache_control markers",
                      count=len(tool_markers) + len(markers))
    extra = MAX_CACHE_BREAKPOINTS - len(tool_markers)
    if len(markers) > extra:
        index, field, _ = markers[extra]
        noun = "system" if index < 0 else _NOUN
        raise invalid(noun, max(index, 0), field, "too_many_cache_breakpoints",
                      "more than 4 cache_control markers (tools, system and messages)",
                      count=len(tool_markers) + len(markers))


def _parts(request: _Request, counter: AnthropicTokenCounter, *, thinking: Any = None,
           original: Sequence[Mapping[str, Any]] | None = None) -> list[Part]:
    parts = _system_parts(request.system, counter)
    names: dict[str, str] = {}
    issued: set[str] = set()
    messages = request.messages
    for index, message in enumerate(messages):
        role, content = _checked_content(message, index, index == len(messages) - 1)
        parts.extend(_message_parts(message, index, role, content, counter, names, issued))
    check_call_pairs(
        parts, _NOUN, "tool_use.id", "tool_result.tool_use_id",
        closes=lambda part, call_index: part.index > call_index + 1
        or (part.index == call_index + 1 and part.role is Role.ASSISTANT),
    )
    _check_breakpoints(request)
    _check_thinking(messages, thinking, original)
    return _link_final_turn(parts, messages)


def _conversion(request: _Request, parts: Sequence[Part], pin: PinSpec,
                summary_role: str) -> Conversion[Rendered]:
    loop = _thinking_loop(request.messages)
    tool_markers = sum(1 for tool in request.tools or []
                       if isinstance(tool, Mapping) and "cache_control" in tool)
    codec = MessagesCodec(
        summary_role,
        system_kind=None if request.system is None else
        "str" if isinstance(request.system, str) else "list",
        starts_with_user=not request.messages or request.messages[0].get("role") == "user",
        tool_breakpoints=tool_markers,
        thinking_loop=None if loop is None else loop[1],
    )
    return convert(codec, parts, request.messages, _with_last(pin, len(request.messages)))


def _with_last(pin: PinSpec, count: int) -> PinSpec:
    """The caller's pins plus the last message: a request cannot be sent without messages."""
    if not count:
        return pin
    last = count - 1
    if pin is None:
        return [last]
    if callable(pin):
        chosen = pin
        return lambda message, index: index == last or chosen(message, index)
    if isinstance(pin, str | bytes) or not isinstance(pin, Sequence):
        raise ValidationError("pin must be message indexes or a predicate",
                              {"field": "pin", "rule": "pin_type"})
    return [*pin, last]


def to_transcript(
    history: Sequence[Any],
    *,
    system: Any = None,
    model: str | None = None,
    estimator: TokenEstimator | None = None,
    pin: PinSpec = None,
    summary_role: str = "user",
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    calibration: float | None = None,
) -> Conversion[Rendered]:
    """Convert a Messages history (dicts or SDK objects) and its ``system``; validates them.

    ``render`` gives back ``(system, messages)``. ``model`` picks the calibration and image
    limits; ``tools`` count toward the four ``cache_control`` markers; ``thinking`` (the
    request's) enables the check that the final tool loop starts with its thinking block.
    """
    request = _request(history, system, tools)
    counter = AnthropicTokenCounter(estimator, model=model, calibration=calibration)
    parts = _parts(request, counter, thinking=given(thinking))
    return _conversion(request, parts, pin, summary_role)


def validate(
    history: Sequence[Any],
    *,
    system: Any = None,
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    original: Sequence[Any] | None = None,
) -> None:
    """Raise ``cutctx.ValidationError`` if the API would reject this request's structure.

    Checks roles, block shapes, ``tool_use``/``tool_result`` pairing (results first, in the very
    next message), unique tool use ids, at most four ``cache_control`` markers (tools too, if
    given) and, with ``thinking={"type": "enabled", ...}``, that an open tool loop starts with
    its thinking block. A modified thinking block cannot be told from one request alone (its
    signature is checked only by the API): pass ``original`` (the history this one was derived
    from) to check that the latest assistant message's thinking blocks are unmodified.
    """
    request = _request(history, system, tools)
    reference = None if original is None else _plain_messages(original)
    _parts(request, _NoCount(), thinking=given(thinking), original=reference)


# ----------------------------------------------------------------------------------------------
# counting and compaction


def _count_body(request: _Request, model: str | None, thinking: Any) -> dict[str, Any]:
    if not model:
        raise ValidationError("an exact count needs the model name", {"field": "model"})
    body: dict[str, Any] = {"model": model, "messages": request.messages}
    if request.system is not None:
        body["system"] = request.system
    if request.tools is not None:
        body["tools"] = request.tools
    if given(thinking) is not None:
        body["thinking"] = to_plain(thinking)
    return body


def _input_tokens(result: Any) -> int:
    value = result.get("input_tokens") if isinstance(result, Mapping) else getattr(
        result, "input_tokens", None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("messages.count_tokens did not return input_tokens",
                              {"field": "input_tokens"})
    return value


def _call_count(client: Any, body: dict[str, Any]) -> Any:
    count = getattr(getattr(client, "messages", None), "count_tokens", None)
    if not callable(count):
        raise ValidationError("exact_count needs an Anthropic client (client.messages."
                              "count_tokens)", {"field": "exact_count"})
    return count(**body)


def _exact(client: Any, body: dict[str, Any]) -> int:
    result = _call_count(client, body)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise ValidationError("an async client's count must be awaited: use aplan, acompact "
                              "or acount_tokens", {"field": "exact_count"})
    return _input_tokens(result)


async def _aexact(client: Any, body: dict[str, Any]) -> int:
    result = _call_count(client, body)
    if inspect.isawaitable(result):
        result = await result
    return _input_tokens(result)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A validated, estimated request, before planning."""

    request: _Request
    parts: list[Part]
    overhead: int
    counter: AnthropicTokenCounter
    estimator: TokenEstimator
    """Counts a mask stub on the turns' scale (calibrated, and scaled by an exact count)."""
    stub_pad: int = MESSAGE_TOKENS + TOOL_BLOCK_TOKENS
    """What a masked tool result keeps besides its stub: message and block framing."""
    ratio: float = 1.0
    """Exact count / estimate, once an exact count has rescaled the turns."""

    def scaled(self, exact_total: int) -> _Prepared:
        """Per-turn estimates rescaled to add up to ``exact_total`` minus the overhead."""
        estimates = [part.tokens for part in self.parts]
        target = max(0, exact_total - self.overhead)
        if not estimates or sum(estimates) == target:
            return self
        ratio = target / max(1, sum(estimates))
        tokens = scale_to_total(estimates, target)
        parts = [replace(part, tokens=count) for part, count in zip(self.parts, tokens,
                                                                    strict=True)]
        if not ratio:
            return replace(self, parts=parts, ratio=ratio)
        return replace(self, parts=parts, estimator=CalibratedEstimator(self.estimator, ratio),
                       stub_pad=math.ceil(self.stub_pad * ratio), ratio=ratio)

    def measure(self, rendered: Rendered) -> int:
        """Prompt tokens of a rendered request, on the plan's scale (overhead included)."""
        system, out = rendered
        history = self.counter.system(system) + sum(self.counter.message(m) for m in out)
        return max(0, math.ceil(history * self.ratio - 1e-9)) + self.overhead


def _prepare(history: Any, system: Any, model: str | None, tools: Any, thinking: Any,
             estimator: TokenEstimator | None, calibration: float | None) -> _Prepared:
    request = _request(history, system, given(tools))
    counter = AnthropicTokenCounter(estimator, model=model, calibration=calibration)
    parts = _parts(request, counter, thinking=given(thinking))
    return _Prepared(request, parts, counter.request_overhead(request.tools), counter,
                     counter.text_estimator)


def _job(prepared: _Prepared, *, budget: int | CompactionBudget, summarizer: object | None,
         policy: CompactionPolicy | None, pin: PinSpec, keep_recent: int,
         keep_recent_results: int, on_summary_error: OnSummaryError,
         summary_role: str) -> Job:
    conv = _conversion(prepared.request, prepared.parts, pin, summary_role)

    def begin(extra: int) -> Job:
        return start(
            conv,
            resolve_budget(budget, prepared.overhead + extra, keep_recent),
            policy=policy,
            summarizer=summarizer,
            estimator=prepared.estimator,
            overhead=prepared.overhead + extra,
            result_fields=lambda rendered: {"system": rendered[0], "messages": rendered[1]},
            keep_recent_results=keep_recent_results,
            on_summary_error=on_summary_error,
            stub_pad=prepared.stub_pad,
            measure=prepared.measure,
        )

    job = begin(0)
    if _leaves_assistant_first(job, conv):
        # The rendering will put a user note first: plan again with room for it (it then
        # counts in the overhead, so the request as sent stays within the budget).
        note = {"role": "user", "content": [{"type": "text", "text": OMITTED_NOTE}]}
        job = begin(math.ceil(prepared.counter.message(note) * prepared.ratio))
    return job


def _leaves_assistant_first(job: Job, conv: Conversion[Rendered]) -> bool:
    """Whether the plan drops the leading user message(s) and keeps an assistant one first."""
    codec = conv.codec
    if not isinstance(codec, MessagesCodec) or not codec.starts_with_user:
        return False
    for action in job.plan.actions:
        part = conv.parts[action.turn_id]
        if part.kind == "system" or action.action is Action.DROP:
            continue
        return action.action is not Action.SUMMARIZE and part.role is Role.ASSISTANT
    return False


def count_tokens(
    history: Sequence[Any],
    *,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    estimator: TokenEstimator | None = None,
    calibration: float | None = None,
    client: Any = None,
) -> int:
    """The request's input tokens: estimated, or exact from ``client.messages.count_tokens``.

    With a client, the (validated) request is counted by one API call; an async client needs
    ``acount_tokens``.
    """
    prepared = _prepare(history, system, model, tools, thinking, estimator, calibration)
    if client is not None:
        return _exact(client, _count_body(prepared.request, model, thinking))
    return sum(part.tokens for part in prepared.parts) + prepared.overhead


async def acount_tokens(
    history: Sequence[Any],
    *,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    estimator: TokenEstimator | None = None,
    calibration: float | None = None,
    client: Any = None,
) -> int:
    """``count_tokens`` awaiting an ``AsyncAnthropic`` client's count (a sync one works too)."""
    prepared = _prepare(history, system, model, tools, thinking, estimator, calibration)
    if client is not None:
        return await _aexact(client, _count_body(prepared.request, model, thinking))
    return sum(part.tokens for part in prepared.parts) + prepared.overhead


def plan(
    history: Sequence[Any],
    *,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    budget: int | CompactionBudget,
    summarizer: object | None = None,
    policy: CompactionPolicy | None = None,
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    pin: PinSpec = None,
    keep_recent: int = 4,
    keep_recent_results: int = 2,
    on_summary_error: OnSummaryError = "raise",
    estimator: TokenEstimator | None = None,
    calibration: float | None = None,
    summary_role: str = "user",
    exact_count: Any = None,
) -> Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    An int ``budget`` is the whole prompt's: the transcript (system included) gets it minus the
    request framing and the tools (and the user note, when the plan needs one). Tool results
    are masked by the default policies, which price a stub with its framing; the rendered
    request is measured, and re-planned tighter if it is over.

    ``exact_count=client`` (an ``Anthropic`` client) asks ``messages.count_tokens`` once for the
    request's real total and scales the per-turn estimates to add up to it (minus the
    overhead); use ``aplan`` with an ``AsyncAnthropic``. ``thinking`` is the request's: with
    ``{"type": "enabled"}`` an open tool loop must start with its thinking block.
    """
    prepared = _prepare(history, system, model, tools, thinking, estimator, calibration)
    if exact_count is not None:
        body = _count_body(prepared.request, model, thinking)
        prepared = prepared.scaled(_exact(exact_count, body))
    return _job(prepared, budget=budget, summarizer=summarizer, policy=policy, pin=pin,
                keep_recent=keep_recent, keep_recent_results=keep_recent_results,
                on_summary_error=on_summary_error, summary_role=summary_role)


async def aplan(
    history: Sequence[Any],
    *,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    budget: int | CompactionBudget,
    summarizer: object | None = None,
    policy: CompactionPolicy | None = None,
    tools: Sequence[Any] | None = None,
    thinking: Mapping[str, Any] | None = None,
    pin: PinSpec = None,
    keep_recent: int = 4,
    keep_recent_results: int = 2,
    on_summary_error: OnSummaryError = "raise",
    estimator: TokenEstimator | None = None,
    calibration: float | None = None,
    summary_role: str = "user",
    exact_count: Any = None,
) -> Job:
    """``plan``, awaiting the exact count of an ``AsyncAnthropic`` client (a sync one works)."""
    prepared = _prepare(history, system, model, tools, thinking, estimator, calibration)
    if exact_count is not None:
        body = _count_body(prepared.request, model, thinking)
        prepared = prepared.scaled(await _aexact(exact_count, body))
    return _job(prepared, budget=budget, summarizer=summarizer, policy=policy, pin=pin,
                keep_recent=keep_recent, keep_recent_results=keep_recent_results,
                on_summary_error=on_summary_error, summary_role=summary_role)


def compact(
    history: Sequence[Any],
    *,
    budget: int | CompactionBudget,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    summarizer: AnySummarizer | None = None,
    summary_cache: SummaryCache | None = None,
    **options: Any,
) -> CompactionResult:
    """Compact a Messages history (and ``system``) to ``budget`` prompt tokens.

    Without a summarizer old tool results are masked, then the oldest exchanges dropped; with
    one, the default chain also folds a span into a summary. ``result.system`` and
    ``result.messages`` are ready to send. See ``plan`` for the options.
    """
    job = plan(history, system=system, model=model, budget=budget, summarizer=summarizer,
               **options)
    return run(job, summarizer, summary_cache)


async def acompact(
    history: Sequence[Any],
    *,
    budget: int | CompactionBudget,
    system: Any = None,
    model: str | None = DEFAULT_MODEL,
    summarizer: AnySummarizer | None = None,
    summary_cache: SummaryCache | None = None,
    **options: Any,
) -> CompactionResult:
    """``compact`` with an async (or sync) summarizer and ``exact_count`` client."""
    job = await aplan(history, system=system, model=model, budget=budget,
                      summarizer=summarizer, **options)
    return await arun(job, summarizer, summary_cache)


def _output_allowance(request: Mapping[str, Any]) -> int | None:
    value = given(request.get("max_tokens"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _overhead(request: Mapping[str, Any], estimator: TokenEstimator) -> int:
    model = given(request.get("model"))
    counter = AnthropicTokenCounter(estimator, model=model if isinstance(model, str) else None)
    tools = given(request.get("tools"))
    choice = given(request.get("tool_choice"))
    return counter.request_overhead([to_plain(tool) for tool in tools] if tools else None,
                                    to_plain(choice) if choice is not None else None)


def _planning(_conv: Conversion[Rendered], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults, as ``plan`` passes it: the calibrated stub
    estimator, the framing a masked result keeps, and a fresh measure of the rendering."""
    counter = AnthropicTokenCounter(estimator)
    prepared = _Prepared(_Request([], None, None), [], overhead, counter,
                         counter.text_estimator)
    return {"estimator": prepared.estimator, "stub_pad": prepared.stub_pad,
            "measure": prepared.measure}


FORMAT = HistoryFormat(
    name="anthropic-messages",
    list_key="messages",
    side_key="system",
    to_transcript=lambda items, side, estimator, pin: to_transcript(
        items, system=given(side), estimator=estimator, pin=pin),
    split=lambda rendered: rendered,
    overhead=_overhead,
    output_allowance=_output_allowance,
    estimator_for=lambda _model: estimator_for(None),
    planning=_planning,
)
"""How Messages requests carry their history (for sessions and the client wrapper)."""

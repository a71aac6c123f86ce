"""The way in for Anthropic Messages: read and validate ``system`` + ``messages`` into parts, one
engine turn each (tool results split from the text of their user message)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cutctx import Role, TokenEstimator

from ..history import (
    BOUNDARY_KIND,
    Conversion,
    CountText,
    Growing,
    Part,
    PinSpec,
    check_call_pairs,
    convert,
    extend,
    invalid,
    not_a_list,
    not_an_entry,
    plain_tools,
    string_field,
    to_plain,
)
from ..planning import given
from ._codec import (
    ASSISTANT_ONLY,
    FINAL_TURN,
    MAX_CACHE_BREAKPOINTS,
    NOUN,
    SYSTEM_MESSAGE,
    THINKING,
    MessagesCodec,
    Rendered,
    System,
    cache_markers,
    content_blocks,
    only_tool_results,
    starts_with_thinking,
)
from ._file_inputs import with_file_data
from ._server_tools import RESULT_TYPES, maskable, result_text
from ._text import block_json as _json
from ._text import content_text as _content_text
from ._text import result_text as _result_text
from ._tokens import AnthropicTokenCounter

__all__ = [
    "Request",
    "check_request",
    "conversion_of",
    "extended",
    "parts_of",
    "read_message",
    "read_request",
    "to_transcript",
    "tool_rule",
    "validate",
]

# ----------------------------------------------------------------------------------------------
# reading and checking a request


@dataclass(frozen=True, slots=True)
class Request:
    """Plain copies of what the caller gave."""

    messages: list[dict[str, Any]]
    system: System
    tools: list[Any] | None


def _plain_messages(history: Any) -> list[dict[str, Any]]:
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Sequence):
        raise not_a_list("messages", NOUN, history)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        out.append(to_plain(read_message(message, index), where=f"{NOUN} {index}",
                            index=index))
    return out


def read_message(message: Any, index: int) -> Any:
    """A message as the caller gave it, made ready for ``to_plain``: a whole ``Message``
    response appended to the history becomes its role and content (all the API takes), and
    base64 data given as a file is read (``with_file_data``)."""
    if (not isinstance(message, Mapping) and getattr(message, "type", None) == "message"
            and getattr(message, "role", None) == "assistant"
            and hasattr(message, "content")):
        message = {"role": "assistant", "content": message.content}
    return with_file_data(message, index)


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


def read_request(history: Any, system: Any, tools: Any) -> Request:
    return Request(_plain_messages(history), _plain_system(system),
                   plain_tools(tools, tool_rule))


def tool_rule(tool: Mapping[str, Any]) -> tuple[str, str] | None:
    """What an Anthropic tool lacks: a custom tool (no type, or ``custom``) its name and
    ``input_schema``; a server or client tool of Anthropic's (``web_search_20250305`` ...) its
    type."""
    kind = tool.get("type")
    if kind is None or kind == "custom":
        if not string_field(tool, "name"):
            return "name", "a custom tool needs a name"
        if not isinstance(tool.get("input_schema"), Mapping):
            return "input_schema", "a custom tool needs an input_schema (a JSON schema object)"
        return None
    if isinstance(kind, str) and kind:
        return None
    return "type", "a tool's type must be a non-empty string (or absent, for a custom tool)"


def _string_field(block: Mapping[str, Any], key: str, index: int, where: str, rule: str,
                  *, nonempty: bool = False) -> str:
    value = block.get(key)
    if not isinstance(value, str) or (nonempty and not value):
        raise invalid(NOUN, index, f"{where}.{key}", rule,
                      f"a {block.get('type')} block needs a {'non-empty ' if nonempty else ''}"
                      f"string {key!r}")
    return value


def _check_block(block: Any, index: int, where: str, role: str) -> str:
    """Check one content block; return its type."""
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        raise invalid(NOUN, index, where, "block_type", "a content block needs a string 'type'")
    kind: str = block["type"]
    if kind in ASSISTANT_ONLY and role != "assistant":
        raise invalid(NOUN, index, f"{where}.type", "block_role",
                      f"a {kind} block may only appear in an assistant message")
    if kind == "tool_result" and role != "user":
        raise invalid(NOUN, index, f"{where}.type", "block_role",
                      "a tool_result block may only appear in a user message")
    if kind == "text":
        _string_field(block, "text", index, where, "empty_text", nonempty=True)
    elif kind in _CALLS:
        _string_field(block, "id", index, where, "missing_id", nonempty=True)
        _string_field(block, "name", index, where, "missing_name", nonempty=True)
        if kind == "tool_use" and not isinstance(block.get("input"), Mapping):
            raise invalid(NOUN, index, f"{where}.input", "input_type",
                          "a tool_use block needs an object 'input'")
    elif kind == "tool_result":
        _string_field(block, "tool_use_id", index, where, "missing_id", nonempty=True)
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise invalid(NOUN, index, f"{where}.is_error", "is_error_type",
                          "is_error must be a boolean")
        inner = block.get("content")
        if inner is not None and not isinstance(inner, str):
            if not isinstance(inner, list):
                raise invalid(NOUN, index, f"{where}.content", "content_type",
                              "tool_result content must be a string or a list of blocks")
            for position, item in enumerate(inner):
                nested = f"{where}.content[{position}]"
                if isinstance(item, Mapping) and item.get("type") in ("tool_result", "tool_use"):
                    raise invalid(NOUN, index, f"{nested}.type", "block_type",
                                  "a tool_result cannot contain tool blocks")
                _check_block(item, index, nested, role)
    elif kind == "thinking":
        _string_field(block, "thinking", index, where, "missing_thinking")
        _string_field(block, "signature", index, where, "missing_signature")
    elif kind == "redacted_thinking":
        _string_field(block, "data", index, where, "missing_data")
    elif kind in ("image", "document") and not isinstance(block.get("source"), Mapping):
        raise invalid(NOUN, index, f"{where}.source", "missing_source",
                      f"an {kind} block needs a 'source' object")
    elif kind == BOUNDARY_KIND:
        summary = block.get("content")
        if summary is not None and (not isinstance(summary, str) or not summary):
            raise invalid(NOUN, index, f"{where}.content", "compaction_content",
                          "a compaction block's content must be a non-empty string or null")
    elif kind.endswith("_tool_result") and "tool_use_id" in block:
        _string_field(block, "tool_use_id", index, where, "missing_id", nonempty=True)
    return kind


def _checked_content(message: Any, index: int, final: bool) -> tuple[str, Any]:
    """The role and content of a message whose structure (not pairing) is valid."""
    if not isinstance(message, Mapping):
        raise not_an_entry(NOUN, index, message, "message_type")
    role = message.get("role")
    if role not in ("user", "assistant", "system"):
        raise invalid(NOUN, index, "role", "unknown_role",
                      "role must be 'user', 'assistant' or 'system'")
    if "content" not in message:
        if role == "system" and "output_config" in message:
            return role, None  # a beta system message may carry only its output_config
        raise invalid(NOUN, index, "content", "missing_content", "content is required")
    content = message["content"]
    if not isinstance(content, str | list):
        raise invalid(NOUN, index, "content", "content_type",
                      "content must be a string or a list of content blocks")
    if not content and not (final and role == "assistant"):
        raise invalid(NOUN, index, "content", "empty_content",
                      "content must not be empty (only a final assistant message may be)")
    if role == "system":
        _check_system_message(content, index)
        return role, content
    if isinstance(content, list):
        seen_other = False
        for position, block in enumerate(content):
            kind = _check_block(block, index, f"content[{position}]", role)
            if kind == "tool_result" and seen_other:
                raise invalid(NOUN, index, f"content[{position}]", "tool_result_not_first",
                              "tool_result blocks must come before any other block")
            seen_other = seen_other or kind != "tool_result"
    return role, content


def _check_system_message(content: Any, index: int) -> None:
    """A ``role: "system"`` message (mid-conversation instructions): text, or blocks that are
    neither tool calls, tool results nor media."""
    if not content:
        raise invalid(NOUN, index, "content", "empty_content", "content must not be empty")
    for position, block in enumerate(content if isinstance(content, list) else []):
        where = f"content[{position}]"
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise invalid(NOUN, index, where, "block_type",
                          "a content block needs a string 'type'")
        if block["type"] == BOUNDARY_KIND:
            raise invalid(NOUN, index, f"{where}.type", "compaction_block_misplaced",
                          "a compaction block may not appear in a system message")
        if block["type"] in _NOT_IN_SYSTEM:
            raise invalid(NOUN, index, f"{where}.type", "block_role",
                          f"a {block['type']} block may not appear in a system message")
        if block["type"] == "text":
            _string_field(block, "text", index, where, "empty_text", nonempty=True)


_NOT_IN_SYSTEM = frozenset({*ASSISTANT_ONLY, "tool_result", "image", "document"})
_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")
"""Blocks issuing a call: a client tool's, a server tool's, an MCP server's."""


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
    """A message as engine turns: one, or one per segment (``_segments``)."""
    if role == "system":  # instructions mid-conversation: untouchable, kept where they are
        return [Part(index, Role.SYSTEM, _content_text(content), message,
                     counter.message(message), SYSTEM_MESSAGE, links=(_after(index),))]
    callers = _issue_calls(content, index, names, issued) if role == "assistant" else {}
    segments = _segments(content, role)
    if segments is None:  # the message as one turn
        if role == "user":
            return [Part(index, Role.USER, _content_text(content), message,
                         counter.message(message), "user")]
        return [Part(index, Role.ASSISTANT, _content_text(content), message,
                     counter.message(message), "assistant", calls=_calls(content, index),
                     label=_labels(content))]
    base = {key: value for key, value in message.items() if key != "content"}
    parts: list[Part] = []
    for sub, (kind, blocks, side) in enumerate(segments):
        # The message's framing is counted once, with its first segment, so the parts add up
        # to the message; should a segment stay alone, the rendered request is measured and
        # the plan tightened for the framing it then needs.
        tokens = sum(counter.block(block) for block in blocks) + (counter.framing if not sub
                                                                   else 0)
        payload, block = {**base, "content": blocks}, blocks[0]
        link = (f"anthropic:message:{index}:{side}",)
        if kind == BOUNDARY_KIND:
            parts.append(Part(index, Role.SYSTEM, str(block["content"]), payload, tokens, kind,
                              sub=sub))
        elif kind == "tool_result":
            key = f"{index - 1}:{block['tool_use_id']}"
            parts.append(Part(index, Role.TOOL, _result_text(block), payload, tokens, kind,
                              answers=(key,), label=names.get(key), sub=sub))
        elif kind in RESULT_TYPES:
            parts.append(Part(index, Role.TOOL, result_text(block), payload, tokens, kind,
                              links=link, label=callers.get(block["tool_use_id"]), sub=sub))
        elif role == "assistant":
            parts.append(Part(index, Role.ASSISTANT, _content_text(blocks), payload, tokens,
                              kind, calls=_calls(blocks, index), links=link,
                              label=_labels(blocks), sub=sub))
        else:
            parts.append(Part(index, Role.USER, _content_text(blocks), payload, tokens, kind,
                              sub=sub))
    return parts



def _issue_calls(content: Any, index: int, names: dict[str, str],
                 issued: set[str]) -> dict[str, str]:
    """Record an assistant message's calls (refusing an id issued twice); the tool name of
    each server or MCP call by its id, for the results in the same message."""
    callers: dict[str, str] = {}
    for position, block in enumerate(content if isinstance(content, list) else []):
        if block["type"] not in _CALLS:
            continue
        if block["id"] in issued:
            raise invalid(NOUN, index, f"content[{position}].id", "duplicated_call_id",
                          "tool use id issued twice", call_id=block["id"])
        issued.add(block["id"])
        if block["type"] == "tool_use":
            # Results must follow in the very next message, so a call is keyed by the
            # message that issued it.
            names[f"{index}:{block['id']}"] = block["name"]
        else:
            callers[block["id"]] = block["name"]
    return callers


def _calls(content: Any, index: int) -> tuple[str, ...]:
    return tuple(f"{index}:{block['id']}" for block in content_blocks(content)
                 if block["type"] == "tool_use")


def _labels(content: Any) -> str | None:
    return ", ".join(block["name"] for block in content_blocks(content)
                     if block["type"] in _CALLS) or None


Segment = tuple[str, list[Any], str]
"""(part kind, blocks, side of the message's compaction: ``before`` or ``after``)."""


def _segments(content: Any, role: str) -> list[Segment] | None:
    """A message's content as the turns it reads as, in order, or None for one turn.

    Apart go: a ``compaction`` block with content (the latest of the message: it covers what
    precedes it), each ``tool_result`` of a user message, and each server-tool or MCP result
    of an assistant message a stub can stand for (so it gives way like a tool result while
    the rest of its message stays)."""
    if not isinstance(content, list):
        return None
    cut = next((position for position in range(len(content) - 1, -1, -1)
                if content[position]["type"] == BOUNDARY_KIND
                and content[position].get("content") is not None), None)
    pieces = [("after", content)] if cut is None else [
        ("before", content[:cut]), ("boundary", [content[cut]]), ("after", content[cut + 1:])]
    out: list[Segment] = []
    for side, blocks in pieces:
        if side == "boundary":
            out.append((BOUNDARY_KIND, blocks, side))
            continue
        split = _user_segments if role == "user" else _assistant_segments
        out.extend((kind, run, side) for kind, run in split(blocks))
    if len(out) < 2 and (not out or out[0][0] in ("user", "assistant")):
        return None  # an empty final assistant message, or one turn of its own kind
    return out


def _user_segments(blocks: list[Any]) -> list[tuple[str, list[Any]]]:
    """Leading ``tool_result`` blocks one by one, then the rest together."""
    results = 0
    while results < len(blocks) and blocks[results]["type"] == "tool_result":
        results += 1
    rest = [("user", blocks[results:])] if blocks[results:] else []
    return [("tool_result", [block]) for block in blocks[:results]] + rest


def _assistant_segments(blocks: list[Any]) -> list[tuple[str, list[Any]]]:
    """Runs of blocks, each maskable server-tool or MCP result on its own."""
    out: list[tuple[str, list[Any]]] = []
    run: list[Any] = []
    for block in blocks:
        if block["type"] in RESULT_TYPES and maskable(block):
            if run:
                out.append(("assistant", run))
                run = []
            out.append((block["type"], [block]))
        else:
            run.append(block)
    if run:
        out.append(("assistant", run))
    return out


def _after(index: int) -> str:
    """The link key holding a system message to the message before it."""
    return f"anthropic:system-message:{index}"


def _genuine_user(message: Mapping[str, Any]) -> bool:
    """A user message that starts a new turn: anything but tool results alone."""
    return message.get("role") == "user" and not only_tool_results(message.get("content"))


def _open_tool_loop(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """``(start, first assistant)`` of a final turn still in its tool loop, else None.

    The history ends with tool results; the turn began after the last user message that was
    not only tool results (``start``, -1 if none). A compaction block since (the server
    compacted inside the loop) starts it anew: the API reads the conversation from the latest
    one, so ``start`` is the message holding it and the loop's first assistant message is the
    first from there on (``[compaction, thinking, tool_use]`` when the server compacted).
    """
    if not messages or messages[-1].get("role") != "user" or _genuine_user(messages[-1]):
        return None
    boundary = len(messages) - 1
    while boundary >= 0 and not _genuine_user(messages[boundary]):
        boundary -= 1
    start = next((index for index in range(len(messages) - 1, boundary, -1)
                  if _holds_compaction(messages[index])), boundary)
    for index in range(max(start, boundary + 1), len(messages)):
        if messages[index].get("role") == "assistant":
            return start, index
    return None


def _holds_compaction(message: Mapping[str, Any]) -> bool:
    """Whether a message holds a compaction block with content (a boundary)."""
    return any(isinstance(block, Mapping) and block.get("type") == BOUNDARY_KIND
               and block.get("content") is not None
               for block in content_blocks(message.get("content")))


def _thinking_loop(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """``_open_tool_loop``, if the loop's first assistant message starts with thinking."""
    loop = _open_tool_loop(messages)
    if loop is None or not starts_with_thinking(messages[loop[1]].get("content")):
        return None
    return loop


def _link_final_turn(parts: list[Part], messages: Sequence[Mapping[str, Any]]) -> list[Part]:
    """With thinking, a final turn in its tool loop must keep its first assistant message (which
    starts with the thinking), its latest exchange and its user request together. Never what
    the latest compaction block covers: the links start after it."""
    loop = _thinking_loop(messages)
    if loop is None:
        return parts
    start, first = loop
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    after = max((position for position, part in enumerate(parts)
                 if part.kind == BOUNDARY_KIND), default=-1)
    out: list[Part] = []
    for position, part in enumerate(parts):
        if position > after and (part.index in (first, last) or (
                part.index == start and part.role is Role.USER)):
            part = replace(part, links=(*part.links, FINAL_TURN))
        out.append(part)
    return out


def _thinking_enabled(thinking: Any) -> bool:
    return isinstance(thinking, Mapping) and thinking.get("type") == "enabled"


def _check_thinking(messages: Sequence[Mapping[str, Any]], thinking: Any,
                    original: Sequence[Mapping[str, Any]] | None) -> None:
    if _thinking_enabled(thinking):
        loop = _open_tool_loop(messages)
        if loop is not None and not starts_with_thinking(messages[loop[1]].get("content")):
            raise invalid(NOUN, loop[1], "content[0].type", "thinking_not_first",
                          "with thinking enabled, the assistant message that opens the final "
                          "tool loop must start with a thinking block")
    if original is None:
        return
    known = {_json(block) for message in original if message.get("role") == "assistant"
             for block in content_blocks(message.get("content"))
             if isinstance(block, Mapping) and block.get("type") in THINKING}
    latest = next((i for i in range(len(messages) - 1, -1, -1)
                   if messages[i].get("role") == "assistant"), None)
    if latest is None:
        return
    for position, block in enumerate(content_blocks(messages[latest].get("content"))):
        if block.get("type") in THINKING and _json(block) not in known:
            raise invalid(NOUN, latest, f"content[{position}]", "thinking_modified",
                          "thinking blocks in the latest assistant message must be exactly as "
                          "the original response gave them")


def _tool_markers(tools: Sequence[Any] | None) -> list[int]:
    """Positions of the tool definitions holding a ``cache_control`` marker."""
    return [k for k, tool in enumerate(tools or [])
            if isinstance(tool, Mapping) and "cache_control" in tool]


def check_request(request: Mapping[str, Any], conv: Conversion[Any] | Growing[Any]) -> None:
    """What a session checks of a whole request beyond its history: markers on tool
    definitions count toward the four ``cache_control`` markers, as ``compact`` counts them
    (the history's own were counted when it was read)."""
    tools = given(request.get("tools"))
    if not tools:
        return
    plain = plain_tools(tools, tool_rule)
    reading = conv.reading
    if isinstance(reading, _Reading) and (
            reading.markers + len(_tool_markers(plain)) <= MAX_CACHE_BREAKPOINTS):
        return
    _check_breakpoints(read_request(request.get("messages"), given(request.get("system")), plain))


def _check_breakpoints(request: Request) -> None:
    markers = cache_markers(request.system, request.messages)
    tool_markers = _tool_markers(request.tools)
    if len(tool_markers) > MAX_CACHE_BREAKPOINTS:
        raise invalid("tool", tool_markers[MAX_CACHE_BREAKPOINTS], "cache_control",
                      "too_many_cache_breakpoints", "more than 4 cache_control markers",
                      count=len(tool_markers) + len(markers))
    extra = MAX_CACHE_BREAKPOINTS - len(tool_markers)
    if len(markers) > extra:
        index, field, _ = markers[extra]
        noun = "system" if index < 0 else NOUN
        raise invalid(noun, max(index, 0), field, "too_many_cache_breakpoints",
                      "more than 4 cache_control markers (tools, system and messages)",
                      count=len(tool_markers) + len(markers))


@dataclass
class _Reading:
    """What reading the messages so far leaves for the ones after them."""

    names: dict[str, str] = field(default_factory=dict)
    issued: set[str] = field(default_factory=set)
    markers: int = 0
    """``cache_control`` markers in the messages read."""
    final_turn: bool = False
    """Whether the final tool loop's links reach into the messages read (they move as the
    history grows, so a later reading cannot just continue)."""

    def copy(self) -> _Reading:
        return _Reading(dict(self.names), set(self.issued), self.markers, self.final_turn)


def _message_loop(messages: Sequence[dict[str, Any]], start: int, parts: list[Part],
                  counter: AnthropicTokenCounter, state: _Reading) -> None:
    """Read ``messages[start:]`` into ``parts`` (validated), continuing ``state``."""
    for index in range(start, len(messages)):
        message = messages[index]
        role, content = _checked_content(message, index, index == len(messages) - 1)
        if role == "system" and parts and parts[-1].index == index - 1:
            # the message it follows stays with it: the API takes system messages only
            # after certain turns, so no removal may change what comes before one
            parts[-1] = replace(parts[-1], links=(*parts[-1].links, _after(index)))
        parts.extend(_message_parts(message, index, role, content, counter, state.names,
                                    state.issued))


def _closes(part: Part, call_index: int) -> bool:
    return part.index > call_index + 1 or (
        part.index == call_index + 1 and part.role is Role.ASSISTANT)


def parts_of(request: Request, counter: AnthropicTokenCounter, *, thinking: Any = None,
           original: Sequence[Mapping[str, Any]] | None = None,
           reading: _Reading | None = None) -> list[Part]:
    parts = _system_parts(request.system, counter)
    state = reading if reading is not None else _Reading()
    messages = request.messages
    _message_loop(messages, 0, parts, counter, state)
    check_call_pairs(parts, NOUN, "tool_use.id", "tool_result.tool_use_id", closes=_closes)
    _check_breakpoints(request)
    _check_thinking(messages, thinking, original)
    state.markers = len(cache_markers(request.system, messages))
    linked = _link_final_turn(parts, messages)
    state.final_turn = linked is not parts
    return linked


def conversion_of(request: Request, parts: Sequence[Part], pin: PinSpec,
                summary_role: str, keep_task: bool = False,
                count_text: CountText | None = None) -> Conversion[Rendered]:
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
    return convert(codec, parts, request.messages, pin, keep_task, count_text=count_text)


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
    keep_task: bool = False,
) -> Conversion[Rendered]:
    """Convert a Messages history (dicts or SDK objects) and its ``system``; validates them.

    ``render`` gives back ``(system, messages)``. ``model`` picks the calibration and image
    limits; ``tools`` count toward the four ``cache_control`` markers; ``thinking`` (the
    request's) enables the check that the final tool loop starts with its thinking block.
    """
    request = read_request(history, system, tools)
    counter = AnthropicTokenCounter(estimator, model=model, calibration=calibration)
    reading = _Reading()
    parts = parts_of(request, counter, thinking=given(thinking), reading=reading)
    conv = conversion_of(request, parts, pin, summary_role, keep_task, counter.text)
    # Continuing a reading is only for what sessions convert (no tools, thinking or model).
    plain_session = (tools is None and given(thinking) is None and model is None
                     and calibration is None and summary_role == "user")
    return replace(conv, reading=reading if plain_session else None)


def _settled(message: Mapping[str, Any]) -> bool:
    """Whether a last message reads the same once more follow: a user message, or an assistant
    message with content (only a final one may be empty) and no tool call (its results must
    come in the very next message)."""
    if message.get("role") == "user":
        return True
    content = message.get("content")
    return message.get("role") == "assistant" and bool(content) and not any(
        isinstance(block, Mapping) and block.get("type") in ("tool_use", "server_tool_use")
        for block in (content if isinstance(content, list) else []))


def extended(previous: Conversion[Rendered] | Growing[Rendered],
             items: Sequence[dict[str, Any]], known: int, estimator: TokenEstimator,
             pin: PinSpec, keep_task: bool) -> Growing[Rendered] | None:
    """``previous`` (of ``items[:known]``, plain, as a session converts them) continued by the
    rest, reading only the rest; None where the rest could change how earlier messages read (a
    final thinking loop reaching back, a system message first, a call still open)."""
    reading = previous.reading
    if (not isinstance(reading, _Reading) or reading.final_turn or not known
            or known >= len(items) or items[known].get("role") == "system"
            or not _settled(items[known - 1])):
        return None
    tail = items[known:]
    markers = len(cache_markers(None, tail))
    loop = _thinking_loop(items)
    if reading.markers + markers > MAX_CACHE_BREAKPOINTS or (
            loop is not None and min(loop) < known):
        return None  # the whole reading names the offending marker, or links back
    state = reading.copy()
    counter = AnthropicTokenCounter(estimator)
    parts: list[Part] = []
    _message_loop(items, known, parts, counter, state)
    check_call_pairs(parts, NOUN, "tool_use.id", "tool_result.tool_use_id", closes=_closes)
    state.markers += markers
    linked = _link_final_turn(parts, items)
    state.final_turn = linked is not parts
    codec = previous.codec
    if isinstance(codec, MessagesCodec) and loop is not None:
        codec = MessagesCodec(codec.summary_role, system_kind=codec.system_kind,
                              starts_with_user=codec.starts_with_user,
                              tool_breakpoints=MAX_CACHE_BREAKPOINTS - codec.breakpoint_limit,
                              thinking_loop=loop[1])
    return extend(previous, linked, items, pin, keep_task, state, codec,
                  count_text=counter.text)


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
    request = read_request(history, system, tools)
    reference = None if original is None else _plain_messages(original)
    parts_of(request, _NoCount(), thinking=given(thinking), original=reference)
    _check_compactions(request.messages)


def _check_compactions(messages: Sequence[Mapping[str, Any]]) -> None:
    """A ``compaction`` block with content only as the conversation's very first block, and at
    most one (the API's ``compaction_block_misplaced`` and ``compaction_block_ambiguous``)."""
    found = [(index, position) for index, message in enumerate(messages)
             for position, block in enumerate(content_blocks(message.get("content")))
             if isinstance(block, Mapping) and block.get("type") == BOUNDARY_KIND
             and block.get("content") is not None]
    if len(found) > 1:
        index, position = found[1]
        raise invalid(NOUN, index, f"content[{position}]", "compaction_block_ambiguous",
                      "more than one compaction block with content: send only the latest")
    if found and found[0] != (0, 0):
        index, position = found[0]
        raise invalid(NOUN, index, f"content[{position}]", "compaction_block_misplaced",
                      "a compaction block must be the first block of the conversation")

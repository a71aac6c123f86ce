"""The way back for Anthropic Messages: regroup turns into messages and repair what removal
breaks (roles, tool results first, thinking, cache markers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from cutctx import Role

from ..history import BOUNDARY_KIND, OMITTED_NOTE, SUMMARY_HEADER, Part, copy_plain, invalid
from ._server_tools import RESULT_TYPES, stub_blocks
from ._text import block_is_text, block_text

__all__ = [
    "ASSISTANT_ONLY",
    "DEFAULT_MODEL",
    "FINAL_TURN",
    "MAX_CACHE_BREAKPOINTS",
    "NOUN",
    "SUMMARY_ROLES",
    "SYSTEM_MESSAGE",
    "THINKING",
    "MessagesCodec",
    "Rendered",
    "System",
    "cache_markers",
    "content_blocks",
    "omitted_note",
    "only_tool_results",
    "starts_with_thinking",
]

System: TypeAlias = str | list[dict[str, Any]] | None
Rendered: TypeAlias = tuple[System, list[dict[str, Any]]]


DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model counts are for when a call names none (``result.model`` says so)."""
SUMMARY_ROLES = ("user", "assistant")
"""The roles a summary may be said in (``summary_role``)."""
MAX_CACHE_BREAKPOINTS = 4
"""The most ``cache_control`` markers the API accepts in one request."""
NOUN = "message"
THINKING = frozenset({"thinking", "redacted_thinking"})
ASSISTANT_ONLY = frozenset({"thinking", "redacted_thinking", "tool_use", "server_tool_use"})
FINAL_TURN = "anthropic:final-turn"
SYSTEM_MESSAGE = "system_message"
"""The part kind of a ``role: "system"`` message in the list (rendered in place, never merged)."""


def content_blocks(content: Any) -> list[Any]:
    """Content as a list of blocks (a string is one text block; an empty string none)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _block_type(content: Any, position: int) -> str | None:
    """The type of ``content``'s block at ``position`` (None where there is none)."""
    if not isinstance(content, list) or len(content) <= position:
        return None
    block = content[position]
    kind = block.get("type") if isinstance(block, Mapping) else None
    return kind if isinstance(kind, str) else None


def starts_with_thinking(content: Any) -> bool:
    """Whether content opens with a thinking block, after the compaction block a response
    that compacted puts first (the API's own order: ``[compaction, thinking, ...]``)."""
    lead = 1 if _block_type(content, 0) == BOUNDARY_KIND else 0
    return _block_type(content, lead) in THINKING


def _starts_with_compaction(message: Mapping[str, Any]) -> bool:
    """Whether a message opens with a ``compaction`` block (which must open the conversation,
    so nothing may be put or merged before it)."""
    return _block_type(message.get("content"), 0) == BOUNDARY_KIND


def only_tool_results(content: Any) -> bool:
    return (isinstance(content, list) and bool(content)
            and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content))


class MessagesCodec:
    """The Messages format: what is specific to it, and nothing else."""

    noun = NOUN
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
        """A tool result keeps its block (id, ``is_error``) with the stub as content, a server
        tool's result its type, id and required fields (``stub_blocks``); an assistant message
        keeps its thinking and ``tool_use`` blocks around the stub."""
        payload = copy_plain(part.payload)
        content = payload.get("content")
        if part.kind == "tool_result":
            payload["content"][0]["content"] = stub
        elif part.kind in RESULT_TYPES:
            payload["content"] = stub_blocks(payload["content"][0], stub)
        elif part.role is Role.ASSISTANT and isinstance(content, list):
            keep = [b for b in content if b.get("type") in THINKING]
            calls = [b for b in content if b.get("type") == "tool_use"]
            payload["content"] = [*keep, {"type": "text", "text": stub}, *calls]
        elif isinstance(content, str):
            payload["content"] = stub
        else:
            payload["content"] = [{"type": "text", "text": stub}]
        return payload

    def body(self, part: Part) -> Any:
        block = part.payload["content"][0] if part.role is Role.TOOL else part.payload
        return [block.get("content"), block.get("is_error")]

    def content(self, part: Part) -> Any:
        if part.kind == "tool_result":
            return part.payload["content"][0].get("content")
        if part.kind == "user":
            return part.payload.get("content")
        return None  # server-tool results and the rest: stubs of their own (render_masked)

    def with_content(self, part: Part, content: Any) -> Any:
        payload = copy_plain(part.payload)
        if part.kind == "tool_result":
            payload["content"][0]["content"] = content
        else:
            payload["content"] = content
        return payload

    def piece(self, block: Any) -> tuple[str, str | None]:
        if block_is_text(block):
            return block["text"], "text"
        return block_text(block) if isinstance(block, Mapping) and isinstance(
            block.get("type"), str) else "", None

    def text_block(self, text: str) -> Any:
        return {"type": "text", "text": text}

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
                content = drafts[-1][1]["content"]  # parts of one message
                if part.kind == BOUNDARY_KIND:
                    # What it covers is left out; what stays of its message before it (a call
                    # whose result follows) goes after it: the block opens the conversation.
                    content[:0] = payload["content"]
                else:
                    content.extend(payload["content"])
            else:
                drafts.append((None if part is None else part.index, payload))
        messages = [message for _, message in drafts]
        if self.thinking_loop is not None:
            previous = -1
            for source, message in drafts:
                if source is None and previous >= self.thinking_loop:
                    message["role"] = "assistant"
                previous = previous if source is None else source
        if (self.starts_with_user and messages and messages[0].get("role") == "assistant"
                and not _starts_with_compaction(messages[0])):
            if drafts[0][0] is None:  # a summary: the API wants a user turn first
                messages[0]["role"] = "user"
            else:
                drafts.insert(0, (None, omitted_note()))
        messages = _merge_same_roles(drafts)
        system: System
        if self.system_kind == "str":
            system = system_parts[0] if system_parts else ""
        elif self.system_kind == "list":
            system = system_parts
        else:
            system = None
        _limit_breakpoints(system, messages, self.breakpoint_limit)
        return system, messages


def _merge_same_roles(drafts: list[tuple[int | None, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The messages, with runs of same-role messages merged where compaction made them
    neighbours; messages that were neighbours in the history stay as given.

    The API combines consecutive same-role messages into one turn, which is only safe as the
    caller wrote it: a summary or a removal can put text before a ``tool_result`` or before the
    thinking that must open the latest assistant turn. So a merged user message keeps its
    ``tool_result`` blocks first; an assistant message that starts a run with thinking keeps that
    thinking first. Message keys other than ``content`` come from the first message of the run.
    """
    out: list[dict[str, Any]] = []
    last: int | None = None  # the history's index of the message ``out[-1]`` ends with
    for source, message in drafts:
        as_given = source is not None and last is not None and source == last + 1
        if (not out or out[-1].get("role") != message.get("role") or as_given
                or message.get("role") == "system"):
            out.append(message)
            last = source
            continue
        last = source if source is not None else last
        first = content_blocks(out[-1].get("content"))
        second = content_blocks(message.get("content"))
        if _starts_with_compaction(out[-1]):
            merged = first + second  # the compaction stays the conversation's first block
        elif message.get("role") == "user":
            combined = first + second
            merged = ([b for b in combined if b.get("type") == "tool_result"]
                      + [b for b in combined if b.get("type") != "tool_result"])
        elif not starts_with_thinking(first) and starts_with_thinking(second):
            lead = 0
            while lead < len(second) and second[lead].get("type") in THINKING:
                lead += 1
            merged = second[:lead] + first + second[lead:]
        else:
            merged = first + second
        out[-1] = {**out[-1], "content": merged}
    return out


def cache_markers(system: Any, messages: Sequence[Mapping[str, Any]]) -> list[
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
    markers = cache_markers(system, messages)
    for _, _, block in markers[: max(0, len(markers) - limit)]:
        del block["cache_control"]


def omitted_note() -> dict[str, Any]:
    """The user message put first when compaction leaves an assistant message at the start."""
    return {"role": "user", "content": [{"type": "text", "text": OMITTED_NOTE}]}

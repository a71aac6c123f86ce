"""Server-tool results inside an assistant message (Anthropic's ``web_fetch_tool_result``,
``web_search_tool_result``, code execution, MCP), as the framework hooks read and write them.

A hook reads the assistant message as Chat Completions, where such a block would be one opaque
part of its content. Each maskable result whose call is in the same message is read instead as
a tool call and a tool message of its own: counted at its text's size, and masked, clipped or
deduplicated like any tool result; the block that then goes out in its place is the one the core
Anthropic adapter writes (its type, ids and required fields kept, the stub where its text was).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..anthropic import server_result_maskable, server_result_stub, server_result_text

__all__ = ["CALL_TYPES", "ServerResult", "joined_text", "read_apart", "server_results",
           "stub_for"]

CALL_TYPES = ("server_tool_use", "mcp_tool_use")
"""The blocks that call a server tool (their ``id`` is the result's ``tool_use_id``)."""

ServerResult = tuple[int, Mapping[str, Any], dict[str, Any], dict[str, Any]]
"""A result read apart: its block's position, the block, the tool call it is read as (for
the assistant message's ``tool_calls``) and its tool message."""


def server_results(blocks: Sequence[Any]) -> list[ServerResult]:
    """The maskable server-tool results among ``blocks`` whose call is among them too, in order."""
    calls = {block["id"]: block for block in blocks
             if isinstance(block, Mapping) and block.get("type") in CALL_TYPES
             and isinstance(block.get("id"), str)}
    out: list[ServerResult] = []
    for position, block in enumerate(blocks):
        if not (isinstance(block, Mapping) and server_result_maskable(block)
                and block["tool_use_id"] in calls):
            continue
        call = calls[block["tool_use_id"]]
        arguments = json.dumps(call.get("input", {}), sort_keys=True, default=str)
        read = {"id": block["tool_use_id"], "type": "function",
                "function": {"name": str(call.get("name", call["type"])),
                             "arguments": arguments}}
        result = {"role": "tool", "tool_call_id": block["tool_use_id"],
                  "content": server_result_text(block)}
        out.append((position, block, read, result))
    return out


def read_apart(results: Sequence[ServerResult]) -> Callable[[Any], bool]:
    """Whether a block is one of the server-tool calls and results ``results`` read apart (a
    tool call and a tool message of their own): what the message's own content leaves out."""
    ids = {block["tool_use_id"] for _, block, _, _ in results}

    def apart(block: Any) -> bool:
        if not isinstance(block, Mapping):
            return False
        if block.get("type") in CALL_TYPES:
            return block.get("id") in ids
        return block.get("tool_use_id") in ids and block.get("type") != "tool_result"

    return apart


def joined_text(content: Any) -> Any:
    """A list of content blocks as their texts joined by lines; any other content as it is."""
    if not isinstance(content, list):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))


def stub_for(block: Mapping[str, Any], item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The block(s) standing for ``block`` when its tool message was sent as ``item`` (a stub,
    a clip): the core Anthropic adapter's own."""
    return server_result_stub(block, str(joined_text(item.get("content")) or ""))

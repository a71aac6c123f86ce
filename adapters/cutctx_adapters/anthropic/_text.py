"""What an Anthropic block says as text: the turn text a model reads, media as placeholders."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["block_is_text", "block_json", "block_text", "content_text", "result_text"]


def block_is_text(block: Any) -> bool:
    """Whether ``block`` is a text block (its text read as it is)."""
    return (isinstance(block, Mapping) and block.get("type") == "text"
            and isinstance(block.get("text"), str))


def block_json(value: Any) -> str:
    """A value as compact, key-sorted JSON: how a block's input reads, and a block's identity."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def block_text(block: Mapping[str, Any]) -> str:
    """A block as a model reads it; media and opaque payloads as short placeholders."""
    kind = block["type"]
    if kind == "text":
        return str(block["text"])
    if kind == "tool_use":
        return f"[tool call {block['name']}: {block_json(block.get('input'))}]"
    if kind == "server_tool_use":
        return f"[server tool call {block['name']}: {block_json(block.get('input'))}]"
    if kind == "tool_result":
        return result_text(block)
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
        text = content_text(body)
        return f"{head}\n{text}" if text else head
    return f"[{kind}]"


def content_text(content: Any) -> str:
    """A body (a string or a list of blocks) as a model reads it, blocks one per line."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(b) for b in content
                         if isinstance(b, Mapping) and isinstance(b.get("type"), str))
    return ""


def result_text(block: Mapping[str, Any]) -> str:
    """A ``tool_result``'s body as read, flagged ``[error]`` when it is one."""
    text = content_text(block.get("content"))
    return f"[error] {text}" if block.get("is_error") is True else text

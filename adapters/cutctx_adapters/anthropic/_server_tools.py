"""Server-tool and MCP result blocks (``web_fetch_tool_result``, ``code_execution_tool_result``,
``mcp_tool_result``, ...): which of them give way like a tool result, what they say, and the
block that stands for one when it is masked, clipped or deduplicated.

They sit inside the assistant message that called the tool, so a stub keeps the block's type,
its ``tool_use_id`` and every field the API requires (a fetch keeps its url, an execution its
return code), with the stub text where the result's text was. A block of an unexpected shape is
never rewritten: it stays with its message, whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RESULT_TYPES", "maskable", "result_text", "stub_blocks"]

RESULT_TYPES = frozenset({
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
    "mcp_tool_result",
})
"""Result blocks that give way like a tool result. ``tool_search_tool_result`` is not one: its
``tool_reference`` blocks load the tools later calls name, so it stays whole."""

_EXECUTIONS = {
    "code_execution_tool_result": ("code_execution_result", "encrypted_code_execution_result"),
    "bash_code_execution_tool_result": ("bash_code_execution_result",),
}


def _inner(block: Mapping[str, Any]) -> Mapping[str, Any]:
    content = block.get("content")
    return content if isinstance(content, Mapping) else {}


def maskable(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` is a result with a body a stub can stand for (not an error, not an
    unknown shape)."""
    kind, inner = block.get("type"), _inner(block)
    if not isinstance(block.get("tool_use_id"), str):
        return False
    if kind == "mcp_tool_result":
        return isinstance(block.get("content", ""), str | list)
    if kind == "web_search_tool_result":
        content = block.get("content")
        return isinstance(content, list) and bool(content)
    if kind == "web_fetch_tool_result":
        return (inner.get("type") == "web_fetch_result" and isinstance(inner.get("url"), str)
                and isinstance(inner.get("content"), Mapping))
    if kind in _EXECUTIONS:
        return inner.get("type") in _EXECUTIONS[kind] and _return_code(inner) is not None
    if kind == "text_editor_code_execution_tool_result":
        return (inner.get("type") == "text_editor_code_execution_view_result"
                and isinstance(inner.get("content"), str)) or (
            inner.get("type") == "text_editor_code_execution_str_replace_result"
            and isinstance(inner.get("lines"), list))
    return False


def _return_code(inner: Mapping[str, Any]) -> int | None:
    code = inner.get("return_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _text_of(value: Any) -> str:
    """Text blocks' text (an MCP result, a fetched document's content source)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(block["text"] for block in value
                         if isinstance(block, Mapping) and isinstance(block.get("text"), str))
    return ""


def _document_text(document: Mapping[str, Any]) -> str:
    source = document.get("source")
    title = document.get("title")
    head = f"[document: {title}]" if isinstance(title, str) else "[document]"
    body = ""
    if isinstance(source, Mapping) and source.get("type") == "text":
        body = str(source["data"]) if isinstance(source.get("data"), str) else ""
    elif isinstance(source, Mapping) and source.get("type") == "content":
        body = _text_of(source.get("content"))
    return f"{head}\n{body}" if body else head


def result_text(block: Mapping[str, Any]) -> str:
    """What a (``maskable``) result says, as a model reads it: the turn's text, which a digest,
    a clip or a summary is made from. Encrypted payloads are named, never shown."""
    kind, inner = block["type"], _inner(block)
    if kind == "mcp_tool_result":
        text = _text_of(block.get("content"))
        return f"[error] {text}" if block.get("is_error") is True else text
    if kind == "web_search_tool_result":
        return "\n".join(
            " ".join(str(result.get(key)) for key in ("title", "url")
                     if isinstance(result.get(key), str))
            for result in block["content"] if isinstance(result, Mapping))
    if kind == "web_fetch_tool_result":
        return f"{inner['url']}\n{_document_text(inner['content'])}"
    if kind == "text_editor_code_execution_tool_result":
        if "lines" in inner:
            return "\n".join(str(line) for line in inner["lines"])
        return str(inner["content"])
    stdout = inner.get("stdout")
    if not isinstance(stdout, str):
        stdout = "[encrypted stdout]" if "encrypted_stdout" in inner else ""
    stderr = inner.get("stderr") if isinstance(inner.get("stderr"), str) else ""
    return "\n".join(part for part in (stdout, stderr) if part) + (
        f"\n[return code {_return_code(inner)}]")


def stub_blocks(block: Mapping[str, Any], text: str) -> list[dict[str, Any]]:
    """The block(s) standing for a masked, clipped or deduplicated result: its type, id,
    ``cache_control`` and required fields kept, ``text`` where its body was (a web search,
    whose results are encrypted, keeps none of them and is followed by ``text``)."""
    kind, inner = block["type"], dict(_inner(block))
    out = dict(block)
    if kind == "mcp_tool_result":
        out["content"] = text
    elif kind == "web_search_tool_result":
        out["content"] = []
        return [out, {"type": "text", "text": text}]
    elif kind == "web_fetch_tool_result":
        document: dict[str, Any] = {"type": "document", "source": {
            "type": "text", "media_type": "text/plain", "data": text}}
        title = inner["content"].get("title")
        if isinstance(title, str):
            document["title"] = title
        out["content"] = {**inner, "content": document}
    elif kind == "text_editor_code_execution_tool_result":
        if "lines" in inner:
            out["content"] = {**inner, "lines": [text]}
        else:
            out["content"] = {key: value for key, value in {**inner, "content": text}.items()
                              if key != "num_lines"}
    else:  # an execution: plain output (an encrypted one cannot be written), the same code
        out["content"] = {"type": _EXECUTIONS[kind][0], "stdout": text, "stderr": "",
                          "return_code": _return_code(inner),
                          "content": inner.get("content", [])}
    return [out]

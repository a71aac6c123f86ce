"""pydantic-ai messages read as Chat Completions messages for a session, and what is sent read back.

Each request part (system prompt, user prompt, tool return, retry prompt, an application's
summary) is one message; each response one assistant message (text, thinking and tool calls
together), so tool calls and their returns stay paired. What the serving model sends of a
provider's own parts is counted: its native tool calls and returns (an Anthropic result read as
a tool message of its own, see ``_server_results``, the rest as text) and its compaction, before
which the model leaves the history out (those messages stay as they are, uncounted but for the
standing prompt). Back, a message sent whole is the caller's; one that lost or changed a part is
a copy (a clipped prompt keeps its images); a summary is a new ``ModelRequest``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..reports import Prepared
from ._hooks import Kept, Made, Origin, parts_of, regrouped
from ._server_results import joined_text, read_apart, server_results, stub_for

__all__ = ["Provider", "Read", "provider_of", "read", "restored"]


@dataclass(frozen=True, slots=True)
class Provider:
    """What the model serving a request sends of a history: the provider whose own parts it
    sends back (``Model.system``), and whether it leaves out what that provider's latest
    compaction covers (Anthropic and OpenAI Responses do)."""

    name: str | None = None
    trims: bool = False


def provider_of(model: Any) -> Provider:
    """The ``Provider`` of a pydantic-ai ``Model`` (nothing known of anything else)."""
    name = getattr(model, "system", None)
    return Provider(name if isinstance(name, str) else None,
                    getattr(model, "_honors_compaction_boundaries", False) is True)


@dataclass(frozen=True, slots=True)
class Read:
    """The history as Chat Completions messages, where each came from, and how many leading
    messages the provider's latest compaction covers (left as they are)."""

    messages: list[ModelMessage]
    given: list[dict[str, Any]]
    origins: list[Origin]
    covered: int = 0


def read(messages: Sequence[ModelMessage], instructions: str | None,
         provider: Provider) -> Read:
    """``messages`` (after ``instructions``) as the session reads them, for ``provider``."""
    given: list[dict[str, Any]] = []
    origins: list[Origin] = []
    if instructions:
        given.append({"role": "system", "content": instructions})
        origins.append(Origin(-1))
    boundary = _boundary(messages, provider)
    covered = 0 if boundary is None else boundary[0]
    for message in messages[:covered]:  # the standing prompt: sent again by the model
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                given.append({"role": "system", "content": part.content})
                origins.append(Origin(-1))
    for index in range(covered, len(messages)):
        message = messages[index]
        if isinstance(message, ModelResponse):
            start = boundary[1] if boundary is not None and index == covered else 0
            items = _response_items(message, provider, start)
        else:
            items = [(position, item) for position, part in enumerate(message.parts)
                     if (item := _request_item(part)) is not None]
        for part_index, item in items:
            given.append(item)
            origins.append(Origin(index, part_index))
    return Read(list(messages), given, origins, covered)


def _boundary(messages: Sequence[ModelMessage], provider: Provider
              ) -> tuple[int, int] | None:
    """The latest compaction the serving model leaves the history out before (its message
    and part), if it does."""
    if not provider.trims:
        return None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ModelResponse):
            continue
        for position in range(len(message.parts) - 1, -1, -1):
            part = message.parts[position]
            if isinstance(part, CompactionPart) and _sent_back(part, provider):
                return index, position
    return None


def _sent_back(part: Any, provider: Provider) -> bool:
    """Whether the serving model sends a provider's own ``part`` (its native tool parts, its
    compaction): only to that provider."""
    return provider.name is not None and getattr(part, "provider_name", None) == provider.name


def _request_item(part: Any) -> dict[str, Any] | None:
    """The Chat Completions message a request part is sent as; None for parts the model does
    not read as a message (they travel with their request)."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _user_content(part.content)}
    if isinstance(part, ToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id,
                "content": part.model_response_str()}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return {"role": "tool", "tool_call_id": part.tool_call_id,
                    "content": part.model_response()}
        return {"role": "user", "content": part.model_response()}
    if isinstance(part, CompactionPart):  # a summary the application wrote: user-voice text
        return {"role": "user", "content": part.content or ""}
    return None


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    return [block for block, _ in _user_blocks(content)]


def _user_blocks(content: Sequence[Any]) -> list[tuple[dict[str, Any], Any]]:
    """Each item of a prompt as a Chat Completions content part (images as images, counted by
    the image rule; other files as files), with the item it stands for."""
    out: list[tuple[dict[str, Any], Any]] = []
    for item in content:
        if isinstance(item, str | TextContent):
            text = item if isinstance(item, str) else item.content
            out.append(({"type": "text", "text": text}, item))
        elif isinstance(item, ImageUrl):
            out.append(({"type": "image_url", "image_url": {"url": item.url}}, item))
        elif isinstance(item, BinaryContent) and item.is_image:
            out.append(({"type": "image_url", "image_url": {"url": item.data_uri}}, item))
        elif isinstance(item, BinaryContent):
            out.append(({"type": "file", "file": {"file_data": item.data_uri,
                                                  "filename": item.identifier}}, item))
        else:
            out.append(({"type": str(getattr(item, "kind", type(item).__name__))}, item))
    return out


def _response_items(message: ModelResponse, provider: Provider, start: int
                    ) -> list[tuple[int | None, dict[str, Any]]]:
    """The messages a response is read as, from part ``start`` on: its compaction (a system
    message, never removed), the assistant message, and each server-tool result read apart."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    natives: list[Any] = [None] * len(message.parts)  # Anthropic blocks of its native parts
    compaction: list[tuple[int | None, dict[str, Any]]] = []
    for position in range(start, len(message.parts)):
        part = message.parts[position]
        if isinstance(part, TextPart | ThinkingPart) and part.content:
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            calls.append({"id": part.tool_call_id, "type": "function",
                          "function": {"name": part.tool_name,
                                       "arguments": part.args_as_json_str()}})
        elif isinstance(part, CompactionPart) and _sent_back(part, provider):
            compaction.append((position, {"role": "system", "content": part.content or ""}))
        elif isinstance(part, NativeToolCallPart | NativeToolReturnPart) and _sent_back(
                part, provider):
            natives[position] = _native_block(part, provider)
    results = server_results(natives)
    is_apart = read_apart(results)
    apart = {position for position, block in enumerate(natives) if is_apart(block)}
    for position in range(start, len(message.parts)):
        part = message.parts[position]
        if isinstance(part, NativeToolCallPart | NativeToolReturnPart) and _sent_back(
                part, provider) and position not in apart:
            texts.append(_native_text(part))
    item: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
    calls = [*(call for _, _, call, _ in results), *calls]
    if calls:
        item["tool_calls"] = calls
    return [*compaction, (None, item), *((position, result)
                                         for position, _, _, result in results)]


def _native_block(part: NativeToolCallPart | NativeToolReturnPart, provider: Provider
                  ) -> dict[str, Any] | None:
    """A native tool part as the Anthropic block it is sent as (for Anthropic models)."""
    if provider.name != "anthropic":
        return None
    if isinstance(part, NativeToolCallPart):
        return {"type": "server_tool_use", "id": part.tool_call_id, "name": part.tool_name,
                "input": part.args_as_dict()}
    content = part.content
    kind = None
    if isinstance(content, list) and part.tool_name == "web_search":
        kind = "web_search_tool_result"
    elif isinstance(content, dict):
        inner = str(content.get("type", ""))
        kind = {"web_fetch_result": "web_fetch_tool_result",
                "code_execution_result": "code_execution_tool_result",
                "encrypted_code_execution_result": "code_execution_tool_result",
                "bash_code_execution_result": "bash_code_execution_tool_result",
                }.get(inner, "text_editor_code_execution_tool_result"
                      if inner.startswith("text_editor_code_execution_") else None)
    if kind is None:
        return None
    return {"type": kind, "tool_use_id": part.tool_call_id, "content": content}


def _native_text(part: NativeToolCallPart | NativeToolReturnPart) -> str:
    """A native part not read apart, as the text it costs (its arguments or its result)."""
    value = part.args if isinstance(part, NativeToolCallPart) else part.content
    return value if isinstance(value, str) else json.dumps(value, default=str)


def restored(read: Read, prepared: Prepared) -> list[ModelMessage]:
    """The pydantic-ai messages for what ``prepared`` sends: the covered messages as they are,
    then each message whose parts all went unchanged as it is, one that lost or changed a part
    as a copy, summaries as new requests; requests of parts that are no message of their own
    stay in place."""
    entries = regrouped(prepared.messages, prepared.sources, read.origins)
    parts = parts_of(read.origins)
    out: list[ModelMessage] = list(read.messages[:read.covered])
    last = read.covered - 1
    for entry in entries:
        if isinstance(entry, Made):
            out.append(ModelRequest(parts=[UserPromptPart(entry.item.get("content") or "")]))
            continue
        out.extend(read.messages[index] for index in range(last + 1, entry.message)
                   if index not in parts)  # requests of riders only: kept in place
        last = entry.message
        out.append(_message_with(read.messages[entry.message], entry, parts[entry.message]))
    out.extend(read.messages[index] for index in range(last + 1, len(read.messages))
               if index not in parts)
    return out


def _message_with(message: ModelMessage, entry: Kept, parts: set[int | None]) -> ModelMessage:
    """``message`` itself when every part it was read as went unchanged; else a copy with the
    parts sent (replaced where they changed) and the parts it was not read by (a response's
    own go with its assistant message)."""
    if entry.whole(parts):
        return message
    riders = isinstance(message, ModelRequest) or None in entry.parts
    kept: list[Any] = []
    for position, part in enumerate(message.parts):
        if position not in parts:
            if riders:
                kept.append(part)
        elif position in entry.parts:
            change = entry.parts[position]
            kept.extend([part] if change is None else _with_content(part, change))
    copied: ModelMessage = dataclasses.replace(message, parts=kept)  # type: ignore[arg-type]
    return copied


def _with_content(part: Any, item: Mapping[str, Any]) -> list[Any]:
    """The part(s) standing for ``part`` when it was sent as ``item`` (a stub, a clip)."""
    content = item.get("content")
    if isinstance(part, NativeToolReturnPart):
        block = _native_block(part, Provider("anthropic"))
        stub = stub_for(block or {}, item)
        texts = [TextPart(block["text"]) for block in stub[1:]]
        return [dataclasses.replace(part, content=stub[0]["content"]), *texts]
    if isinstance(part, UserPromptPart) and isinstance(content, list):
        return [dataclasses.replace(part, content=_prompt_content(part.content, content))]
    return [dataclasses.replace(part, content=joined_text(content))]


def _prompt_content(original: Any, clipped: Sequence[Any]) -> list[Any]:
    """A clipped prompt in pydantic-ai's terms: its text as text, and each part it kept whole
    (an image) as the very item it came from."""
    blocks = [] if isinstance(original, str) else _user_blocks(original)
    taken: set[int] = set()
    out: list[Any] = []
    for block in clipped:
        if isinstance(block, Mapping) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
            continue
        found = next((position for position, (mine, _) in enumerate(blocks)
                      if position not in taken and mine == block), None)
        if found is not None:
            taken.add(found)
            out.append(blocks[found][1])
    return out

"""LangChain messages read as Chat Completions messages for a session, and what is sent read back.

A message is read with langchain-core's own ``convert_to_openai_messages``: one message, or
more where it holds Anthropic ``tool_result`` blocks (each its own tool message) or server-tool
results (each a tool call and a tool message of its own, see ``_server_results``). Back, a
message sent whole is the caller's object; one with a part replaced is a copy with the stub or
clip where that part was (a ``ToolMessage`` keeps its ``tool_call_id``, every message its id and
name); a summary is a new message whose id names the span it stands for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)

from ..reports import Prepared
from ._hooks import Kept, Made, Origin, parts_of, regrouped, untouched
from ._server_results import read_apart, server_results, stub_for

__all__ = ["Read", "read", "restored"]


@dataclass(frozen=True, slots=True)
class Read:
    """The messages of a model call, their Chat Completions form (the system message first,
    when there is one), and where each of those came from."""

    messages: list[AnyMessage]
    given: list[dict[str, Any]]
    origins: list[Origin]


def read(messages: Sequence[AnyMessage], system: SystemMessage | None) -> Read:
    """``messages`` (and ``system``) as Chat Completions messages."""
    given: list[dict[str, Any]] = []
    origins: list[Origin] = []
    if system is not None:
        for item in _converted(system):
            given.append(item)
            origins.append(Origin(-1))
    for index, message in enumerate(messages):
        for part, item in _items(message):
            given.append(item)
            origins.append(Origin(index, part))
    return Read(list(messages), given, origins)


def _converted(message: AnyMessage) -> list[dict[str, Any]]:
    return convert_to_openai_messages([message])


def _items(message: AnyMessage) -> list[tuple[int | None, dict[str, Any]]]:
    """The Chat Completions messages ``message`` is read as, each with the content block it
    stands for (None: the message itself)."""
    blocks = message.content if isinstance(message.content, list) else []
    out: list[tuple[int | None, dict[str, Any]]] = []
    answers: list[tuple[int | None, dict[str, Any]]] = []  # first: they answer the calls before
    for item in _converted(message):
        if item.get("role") == "tool" and not isinstance(message, ToolMessage):
            answers.append((_position(blocks, item.get("tool_call_id")), item))
        else:
            out.append((None, item))
    out = [*answers, *out]
    results = server_results(blocks) if isinstance(message, AIMessage) else []
    if not results or not out or out[0][0] is not None:  # an AIMessage is read as one message
        return out
    apart = read_apart(results)
    main = out[0][1]
    content = [block for block in main.get("content") or () if not apart(block)]
    main = {**main, "content": content,
            "tool_calls": [*(call for _, _, call, _ in results), *main.get("tool_calls", ())]}
    return [(None, main), *((position, result) for position, _, _, result in results), *out[1:]]


def _position(blocks: Sequence[Any], tool_use_id: Any) -> int:
    """Where the ``tool_result`` block answering ``tool_use_id`` stands."""
    return next((position for position, block in enumerate(blocks)
                 if isinstance(block, Mapping) and block.get("type") == "tool_result"
                 and block.get("tool_use_id") == tool_use_id), len(blocks))


def restored(read: Read, prepared: Prepared) -> list[AnyMessage] | None:
    """The LangChain messages for what ``prepared`` sends; None when they are the call's own."""
    entries = regrouped(prepared.messages, prepared.sources, read.origins)
    if untouched(entries, read.origins, len(read.messages)):
        return None
    parts = parts_of(read.origins)
    return [_summary(entry, read.messages) if isinstance(entry, Made)
            else _message_for(read.messages[entry.message], entry, parts[entry.message])
            for entry in entries]


def _message_for(message: AnyMessage, entry: Kept, parts: set[int | None]) -> AnyMessage:
    """``message`` as sent: itself when every part it was read as went unchanged; else a copy
    with each replaced part in place (a block part's own stub), the parts not sent left out."""
    if entry.whole(parts):
        return message
    whole = entry.parts.get(None)
    blocks = message.content if isinstance(message.content, list) else []
    if parts == {None} or not blocks:
        return message.model_copy(update={"content": (whole or {}).get("content", "")})
    content: list[Any] = []
    placed = False
    for position, block in enumerate(blocks):
        if position in parts:
            if position in entry.parts:
                change = entry.parts[position]
                content.extend([block] if change is None else _replaced(block, change))
        elif whole is None:
            content.append(block)
        elif not placed:  # the message's own content, replaced: where it began
            replacement = whole.get("content")
            content.extend(replacement if isinstance(replacement, list)
                           else [{"type": "text", "text": str(replacement or "")}])
            placed = True
    return message.model_copy(update={"content": content})


def _replaced(block: Any, item: Mapping[str, Any]) -> list[Any]:
    """What stands for a result block whose tool message was sent as ``item``."""
    if isinstance(block, Mapping) and block.get("type") == "tool_result":
        return [{**block, "content": item.get("content")}]
    return list(stub_for(block, item))


def _summary(made: Made, messages: Sequence[AnyMessage]) -> AnyMessage:
    """A message cutctx made (a summary), of the class its role says, with an id unique to the
    span it stands for (the ids of its messages) and its text: the same summary of the same
    span has the same id in every process, two spans never share one."""
    item = made.item
    span = [str(messages[index].id or f"#{index}") for index in made.messages]
    digest = hashlib.sha256("\x00".join([*span, str(item.get("content"))]).encode(
        "utf-8", "surrogatepass")).hexdigest()[:16]
    if item.get("role") == "user":
        return HumanMessage(content=item.get("content") or "", id=f"cutctx-summary-{digest}")
    message = convert_to_messages([item])[0]
    return cast("AnyMessage", message.model_copy(update={"id": f"cutctx-summary-{digest}"}))

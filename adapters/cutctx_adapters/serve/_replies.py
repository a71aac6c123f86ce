"""A parsed copy of each reply, read while its bytes are forwarded untouched.

What comes back is rebuilt as the items a client appends to its history: the Chat assistant
message (text, refusal, tool calls), the Responses output items (reasoning with its encrypted
content, calls, messages: every type, as the server sent it), the Anthropic assistant message
(every content block: text with citations, thinking with its signature, tool and server-tool
inputs from their JSON deltas, server-tool results, compaction blocks). The copy is kept on the
conversation's lineage, with the usage the provider reported; it is never sent anywhere.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._bodies import READABLE, inflater
from ._sse import Event, EventReader

__all__ = ["Reply", "ReplyReader"]

_MAX_BODY = 64 * 1024 * 1024
"""A non-streamed reply larger than this is forwarded without a copy."""


@dataclass(frozen=True, slots=True)
class Reply:
    """The items of a reply, as a client appends them, and the usage reported with it."""

    items: tuple[Any, ...]
    usage: Mapping[str, Any] | None = None


class ReplyReader:
    """Reads one reply of ``format_name`` (``chat``, ``responses``, ``messages``) from its bytes,
    streamed (``text/event-stream``) or not, plain or gzip/deflate-encoded."""

    def __init__(self, format_name: str, content_type: str, content_encoding: str) -> None:
        self.streamed = "text/event-stream" in content_type.lower()
        coding = content_encoding.strip().lower()
        self.readable = coding in READABLE
        self._inflate = inflater(coding) if self.readable else None
        self._events = EventReader()
        self._body = bytearray()
        self._state: _Accumulator = _ACCUMULATORS[format_name]()
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        """Read the next bytes of the reply (as they came off the wire)."""
        if self._failed or not self.readable:
            return
        try:
            data = self._inflate.decompress(chunk) if self._inflate is not None else chunk
            if self.streamed:
                for event in self._events.feed(data):
                    self._state.event(event)
            elif len(self._body) + len(data) <= _MAX_BODY:
                self._body += data
            else:
                self._failed = True
        except (zlib.error, ValueError, TypeError, KeyError, IndexError, AttributeError):
            self._failed = True

    def reply(self) -> Reply | None:
        """The reply read, or None when it could not be (an encoding the proxy cannot read,
        malformed JSON, an error reply)."""
        if self._failed or not self.readable:
            return None
        try:
            if self._inflate is not None:
                tail = self._inflate.flush()
                if self.streamed:
                    for event in self._events.feed(tail):
                        self._state.event(event)
                else:
                    self._body += tail
            if self.streamed:
                for event in self._events.close():
                    self._state.event(event)
                return self._state.reply()
            body = json.loads(self._body)
            return self._state.whole(body) if isinstance(body, dict) else None
        except (zlib.error, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None


class _Accumulator:
    """What one format's reply is made of, streamed event by event or whole."""

    def event(self, event: Event) -> None:
        raise NotImplementedError

    def reply(self) -> Reply | None:
        raise NotImplementedError

    def whole(self, body: dict[str, Any]) -> Reply | None:
        raise NotImplementedError


def _data(event: Event) -> Any:
    return None if event.data == "[DONE]" else json.loads(event.data)


class _Chat(_Accumulator):
    """Chat Completions: choice 0's deltas into one assistant message."""

    def __init__(self) -> None:
        self.message: dict[str, Any] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Mapping[str, Any] | None = None
        self.seen = False

    def event(self, event: Event) -> None:
        chunk = _data(event)
        if not isinstance(chunk, dict):
            return
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            self.seen = True
            delta = choice.get("delta") or {}
            for name in ("role", "content", "refusal", "reasoning_content"):
                piece = delta.get(name)
                if isinstance(piece, str):
                    held = self.message.get(name)
                    self.message[name] = piece if name == "role" or held is None else held + piece
            for call in delta.get("tool_calls") or ():
                self._call(call)

    def _call(self, delta: Mapping[str, Any]) -> None:
        call = self.calls.setdefault(int(delta.get("index", 0)), {
            "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if delta.get("id"):
            call["id"] = delta["id"]
        if delta.get("type"):
            call["type"] = delta["type"]
        function = delta.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""

    def reply(self) -> Reply | None:
        if not self.seen:
            return None
        message = {"role": "assistant", **self.message}
        message.setdefault("content", None)
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        return Reply((message,), self.usage)

    def whole(self, body: dict[str, Any]) -> Reply | None:
        choices = body.get("choices") or []
        first = next((choice for choice in choices if choice.get("index", 0) == 0), None)
        if first is None or not isinstance(first.get("message"), dict):
            return None
        return Reply((first["message"],), body.get("usage"))


_RESPONSES_READ = frozenset({"message", "response.output_item.done", "response.completed",
                            "response.incomplete", "response.failed"})
"""The Responses events a reply is read from (``message``: one sent without its name)."""


class _Responses(_Accumulator):
    """Responses: the output items as the server completed them."""

    def __init__(self) -> None:
        self.items: dict[int, Any] = {}
        self.final: dict[str, Any] | None = None

    def event(self, event: Event) -> None:
        if event.name not in _RESPONSES_READ:  # a text delta, most of a stream: not parsed
            return
        data = _data(event)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.name
        if kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            self.items[int(data.get("output_index", len(self.items)))] = data["item"]
        elif kind in ("response.completed", "response.incomplete", "response.failed") and (
                isinstance(data.get("response"), dict)):
            self.final = data["response"]

    def reply(self) -> Reply | None:
        if self.final is not None and isinstance(self.final.get("output"), list):
            return self.whole(self.final)
        if not self.items:
            return None
        return Reply(tuple(self.items[index] for index in sorted(self.items)))

    def whole(self, body: dict[str, Any]) -> Reply | None:
        output = body.get("output")
        if not isinstance(output, list):
            return None
        return Reply(tuple(output), body.get("usage"))


class _Messages(_Accumulator):
    """Anthropic Messages: the content blocks, their deltas applied in order."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.inputs: dict[int, str] = {}
        self.usage: dict[str, Any] = {}
        self.started = False

    def event(self, event: Event) -> None:
        data = _data(event)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.name
        if kind == "message_start":
            self.started = True
            self.usage.update((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            self.blocks[int(data["index"])] = dict(data["content_block"])
        elif kind == "content_block_delta":
            self._delta(int(data["index"]), data["delta"])
        elif kind == "message_delta":
            self.usage.update({name: value for name, value in (data.get("usage") or {}).items()
                               if value is not None})

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self.blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "input_json_delta":
            self.inputs[index] = self.inputs.get(index, "") + delta["partial_json"]
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]
        elif kind == "compaction_delta":
            for name in ("content", "encrypted_content"):
                if delta.get(name) is not None:
                    block[name] = delta[name]

    def reply(self) -> Reply | None:
        if not self.started:
            return None
        for index, text in self.inputs.items():
            if text:
                self.blocks[index]["input"] = json.loads(text)
        content = [self.blocks[index] for index in sorted(self.blocks)]
        return Reply(({"role": "assistant", "content": content},), self.usage or None)

    def whole(self, body: dict[str, Any]) -> Reply | None:
        content = body.get("content")
        if body.get("type") == "error" or not isinstance(content, list):
            return None
        return Reply(({"role": body.get("role", "assistant"), "content": content},),
                     body.get("usage"))


_ACCUMULATORS: dict[str, type[_Accumulator]] = {
    "chat": _Chat, "responses": _Responses, "messages": _Messages}

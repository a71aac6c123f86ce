"""A fake provider on loopback: the three APIs' shapes, streamed or not, and their count calls.

Every request it receives is recorded and checked: a valid history of its format (cutctx's own
validators) within the model's window (cutctx's own counts), else it answers the provider's
context-length error. Faults can be queued (a status and body, plain or gzipped, or a hang), and a
stream can be
held back chunk by chunk (``gate``) to show the proxy relays each as it comes.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from cutctx_adapters.anthropic import messages
from cutctx_adapters.openai import chat, responses

SIGNATURE = "sig-" + "A" * 40


@dataclass
class Received:
    """One request as the fake received it."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


@dataclass
class Fake:
    """The fake's state: what it received, what it is told to do next."""

    limits: dict[str, int] = field(default_factory=dict)
    """Prompt-token limits by model: over one, the context-length error."""
    received: list[Received] = field(default_factory=list)
    faults: list[tuple[str, Any]] = field(default_factory=list)
    gate: threading.Semaphore | None = None
    """When set, each SSE chunk after the first waits for one release."""
    invalid: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    check: bool = True
    """False: answer at once, reading nothing (a baseline for benchmarks, whatever the size)."""
    billed: float = 1.0
    """The input a reply's usage reports, as a multiple of cutctx's own count of the request
    (a provider whose tokenizer counts otherwise)."""

    def of(self, path: str) -> list[Received]:
        return [request for request in self.received if request.path == path]


def chat_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    message = {"role": "assistant", "content": f"reply {n}"}
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "gpt-4o"), "choices": [
                {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}


def responses_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    output = [
        {"id": f"rs_{n}", "type": "reasoning", "summary": [], "encrypted_content": f"enc-{n}"},
        {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": f"reply {n}", "annotations": []}]},
    ]
    return {"id": f"resp_{n}", "object": "response", "created_at": 0, "status": "completed",
            "model": body.get("model", "gpt-5"), "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def messages_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    content = [
        {"type": "thinking", "thinking": f"thinking {n}", "signature": SIGNATURE},
        {"type": "server_tool_use", "id": f"srvtoolu_{n}", "name": "web_search",
         "input": {"query": f"q{n}", "max": 3}},
        {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n}", "content": []},
        {"type": "text", "text": f"reply {n}", "citations": None},
    ]
    return {"id": f"msg_{n}", "type": "message", "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"), "content": content,
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 2}}


def _sse(name: str | None, data: Any) -> bytes:
    head = f"event: {name}\n" if name else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {text}\n\n".encode()


def chat_events(reply: dict[str, Any]) -> list[bytes]:
    base = {key: reply[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    text = reply["choices"][0]["message"]["content"]
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
               for piece in (text[:3], text[3:])]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({**base, "choices": [], "usage": reply["usage"]})
    return [*(_sse(None, chunk) for chunk in chunks), _sse(None, "[DONE]")]


def responses_events(reply: dict[str, Any]) -> list[bytes]:
    events = [_sse("response.created", {"type": "response.created", "sequence_number": 0,
                                        "response": {**reply, "status": "in_progress",
                                                     "output": []}})]
    for index, item in enumerate(reply["output"]):
        events.append(_sse("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index, "item": item,
            "sequence_number": 2 * index + 1}))
        events.append(_sse("response.output_item.done", {
            "type": "response.output_item.done", "output_index": index, "item": item,
            "sequence_number": 2 * index + 2}))
    events.append(_sse("response.completed", {"type": "response.completed", "response": reply,
                                              "sequence_number": 9}))
    return events


def messages_events(reply: dict[str, Any]) -> list[bytes]:
    start = {**reply, "content": [], "stop_reason": None}
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(reply["content"]):
        kind = block["type"]
        if kind == "thinking":
            empty: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        elif kind == "server_tool_use":
            empty = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": text[:7]},
                      {"type": "input_json_delta", "partial_json": text[7:]}]
        elif kind == "text":
            empty = {"type": "text", "text": "", "citations": None}
            deltas = [{"type": "text_delta", "text": block["text"][:2]},
                      {"type": "text_delta", "text": block["text"][2:]}]
        else:
            empty, deltas = block, []
        events.append(_sse("content_block_start", {"type": "content_block_start",
                                                   "index": index, "content_block": empty}))
        events += [_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": delta}) for delta in deltas]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 2}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


_REPLIES = {"chat": (chat_reply, chat_events), "responses": (responses_reply, responses_events),
            "messages": (messages_reply, messages_events)}


def _count(kind: str, body: dict[str, Any]) -> int:
    if kind == "chat":
        chat.validate(body["messages"])
        return chat.count_tokens(body["messages"], model=body.get("model"),
                                 tools=body.get("tools"))
    if kind == "responses":
        responses.validate(body.get("input", []), instructions=body.get("instructions"))
        return responses.count_tokens(body.get("input", []), model=body.get("model"),
                                      instructions=body.get("instructions"),
                                      tools=body.get("tools"))
    messages.validate(body["messages"], system=body.get("system"))
    return messages.count_tokens(body["messages"], system=body.get("system"),
                                 model=body.get("model"), tools=body.get("tools"))


def _too_long(kind: str, counted: int, limit: int) -> Response:
    if kind == "messages":
        return JSONResponse({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {counted} tokens > {limit} maximum"}}, 400)
    return JSONResponse({"error": {
        "message": f"This model's maximum context length is {limit} tokens. However, your "
                   f"messages resulted in {counted} tokens.", "type": "invalid_request_error",
        "param": "messages", "code": "context_length_exceeded"}}, 400)


def fake_app(fake: Fake) -> Starlette:
    """The fake provider's ASGI app."""

    async def record(request: Request) -> Received:
        received = Received(request.url.path, dict(request.headers), await request.body())
        if fake.check:
            with fake.lock:
                fake.received.append(received)
        return received

    async def fault() -> Response | None:
        with fake.lock:
            if not fake.faults:
                return None
            kind, value = fake.faults.pop(0)
        if kind == "hang":
            await asyncio.sleep(value)
            return None
        status, body = value
        if kind == "gzipped":  # as an upstream compressing its answers sends an error
            return Response(gzip.compress(json.dumps(body).encode()), status, headers={
                "content-type": "application/json", "content-encoding": "gzip"})
        return JSONResponse(body, status)

    def handler(kind: str, counts: bool = False) -> Any:
        async def handle(request: Request) -> Response:
            received = await record(request)
            faulted = await fault()
            if faulted is not None:
                return faulted
            if not fake.check:
                return JSONResponse(_REPLIES[kind][0]({}, 0))
            body = received.json
            try:
                counted = _count(kind, body)
            except Exception as error:  # an invalid request: the test fails on it
                fake.invalid.append(f"{request.url.path}: {error}")
                return JSONResponse({"error": {"message": "invalid", "type": "invalid"}}, 400)
            if counts:
                key = "input_tokens"
                return JSONResponse({"input_tokens": counted} if kind == "messages" else
                                    {"object": "response.input_tokens", key: counted})
            limit = fake.limits.get(str(body.get("model")))
            if limit is not None and counted > limit:
                return _too_long(kind, counted, limit)
            make, stream = _REPLIES[kind]
            reply = make(body, len(fake.received))
            reply["usage"]["prompt_tokens" if kind == "chat" else "input_tokens"] = round(
                counted * fake.billed)
            if not body.get("stream"):
                return JSONResponse(reply)
            return StreamingResponse(_paced(stream(reply)), media_type="text/event-stream",
                                     headers={"x-fake-stream": "1"})

        return handle

    async def _paced(chunks: list[bytes]) -> AsyncIterator[bytes]:
        for index, chunk in enumerate(chunks):
            gate = fake.gate
            if gate is not None and index:
                while not gate.acquire(blocking=False):
                    await asyncio.sleep(0.002)
            yield chunk

    async def models(request: Request) -> Response:
        await record(request)
        return JSONResponse({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]})

    return Starlette(routes=[
        Route("/v1/chat/completions", handler("chat"), methods=["POST"]),
        Route("/v1/responses", handler("responses"), methods=["POST"]),
        Route("/v1/responses/input_tokens", handler("responses", True), methods=["POST"]),
        Route("/v1/messages", handler("messages"), methods=["POST"]),
        Route("/v1/messages/count_tokens", handler("messages", True), methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ])

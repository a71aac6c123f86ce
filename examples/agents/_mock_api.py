"""A scripted model behind a mocked HTTP transport, so the agent examples run without a key.

The SDK clients are real ``openai`` / ``anthropic`` clients; only their HTTP is answered here,
by respx (the SDKs send through httpx2, whose transport is httpcore2: hence
``respx.mock(using="httpcore2")``). The model asks for ``read_file`` until the agent has read
``STEPS`` files, then answers. Everything the agent sent is kept (``Api.sent``) to check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest_httpx2  # noqa: F401  (registers respx's "httpcore2" mocker; pytest loads it itself)
import respx

__all__ = ["ANSWER", "ANTHROPIC_URL", "OPENAI_URL", "STEPS", "Api", "demo", "mocked_api",
           "read_file"]

OPENAI_URL = "https://api.openai.test/v1"
ANTHROPIC_URL = "https://api.anthropic.test"
STEPS = 14
ANSWER = "The failing test calls handler_7 with retries=0; patch process() to retry once."


def read_file(path: str) -> str:
    """The agent's tool (fake): a long, deterministic listing of ``path``."""
    return "\n".join(f"{path}:{n}: def handler_{n}(request): return process(request, "
                     f"retries={n % 7})  # {'x' * (n % 13)}" for n in range(120))


def _next_path(done: int) -> str:
    return f"src/module_{done}.py"


def _steps_done(call_ids: list[str]) -> int:
    """How many files the agent has read: told by the newest tool result's call id
    (``call_3``: four), since compaction may have dropped the older ones."""
    return int(call_ids[-1].rsplit("_", 1)[1]) + 1 if call_ids else 0


@dataclass
class Api:
    """What the mocked API was sent, per endpoint (the JSON bodies, in order)."""

    sent: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def bodies(self, endpoint: str) -> list[dict[str, Any]]:
        return self.sent.get(endpoint, [])

    def _keep(self, endpoint: str, request: httpx.Request) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(request.content)
        self.sent.setdefault(endpoint, []).append(body)
        return body


def _sse(events: list[tuple[str | None, dict[str, Any]]], end: str = "") -> httpx.Response:
    """Server-sent events (``end``: a last raw line, as Chat's ``[DONE]``)."""
    text = "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                   for name, data in events) + end
    return httpx.Response(200, headers={"content-type": "text/event-stream"},
                          content=text.encode())


# --- Chat Completions ----------------------------------------------------------------------


def _chat(api: Api, request: httpx.Request) -> httpx.Response:
    body = api._keep("chat", request)
    done = _steps_done([message["tool_call_id"] for message in body["messages"]
                        if message.get("role") == "tool"])
    call = {"id": f"call_{done}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": _next_path(done)})}}
    message: dict[str, Any] = ({"role": "assistant", "content": None, "tool_calls": [call]}
                               if done < STEPS else {"role": "assistant", "content": ANSWER})
    finish = "tool_calls" if done < STEPS else "stop"
    base = {"id": f"chatcmpl-{done}", "created": 1, "model": body["model"]}
    if not body.get("stream"):
        return httpx.Response(200, json={**base, "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": finish, "message": message}]})
    delta = ({"role": "assistant", "tool_calls": [{"index": 0, **call}]} if done < STEPS
             else {"role": "assistant", "content": ANSWER})
    chunks = [{**base, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**base, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    return _sse([(None, chunk) for chunk in chunks], end="data: [DONE]\n\n")


# --- Responses -----------------------------------------------------------------------------


def _responses(api: Api, request: httpx.Request) -> httpx.Response:
    body = api._keep("responses", request)
    items = body["input"] if isinstance(body["input"], list) else []
    done = _steps_done([item["call_id"] for item in items
                        if item.get("type") == "function_call_output"])
    item: dict[str, Any] = (
        {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}",
         "name": "read_file", "arguments": json.dumps({"path": _next_path(done)}),
         "status": "completed"} if done < STEPS else
        {"type": "message", "id": f"msg_{done}", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]})
    response = {"id": f"resp_{done}", "object": "response", "created_at": 1,
                "model": body["model"], "status": "completed", "output": [item],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    if not body.get("stream"):
        return httpx.Response(200, json=response)
    started = {**response, "status": "in_progress", "output": []}
    return _sse([
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": started}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "sequence_number": 1, "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "sequence_number": 2, "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 3,
                                "response": response}),
    ])


# --- Anthropic Messages --------------------------------------------------------------------


def _messages(api: Api, request: httpx.Request) -> httpx.Response:
    body = api._keep("messages", request)
    done = _steps_done([block["tool_use_id"] for message in body["messages"]
                        if isinstance(message.get("content"), list)
                        for block in message["content"] if block.get("type") == "tool_result"])
    arguments = {"path": _next_path(done)}
    block: dict[str, Any] = ({"type": "tool_use", "id": f"toolu_{done}", "name": "read_file",
                              "input": arguments} if done < STEPS else
                             {"type": "text", "text": ANSWER})
    stop = "tool_use" if done < STEPS else "end_turn"
    message = {"id": f"msg_{done}", "type": "message", "role": "assistant",
               "model": body["model"], "content": [block], "stop_reason": stop,
               "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    if not body.get("stream"):
        return httpx.Response(200, json=message)
    start = {**block, "input": {}} if done < STEPS else {"type": "text", "text": ""}
    delta = ({"type": "input_json_delta", "partial_json": json.dumps(arguments)}
             if done < STEPS else {"type": "text_delta", "text": ANSWER})
    events = [
        ("message_start", {"message": {**message, "content": [], "stop_reason": None}}),
        ("content_block_start", {"index": 0, "content_block": start}),
        ("content_block_delta", {"index": 0, "delta": delta}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {}),
    ]
    return _sse([(name, {"type": name, **data}) for name, data in events])


@contextmanager
def mocked_api() -> Iterator[Api]:
    """The three endpoints answered by the scripted model, for the duration of the block."""
    api = Api()
    with respx.mock(using="httpcore2", assert_all_called=False) as router:
        router.post(f"{OPENAI_URL}/chat/completions").mock(
            side_effect=lambda request: _chat(api, request))
        router.post(f"{OPENAI_URL}/responses").mock(
            side_effect=lambda request: _responses(api, request))
        router.post(f"{ANTHROPIC_URL}/v1/messages").mock(
            side_effect=lambda request: _messages(api, request))
        yield api


def demo(endpoint: str, runs: dict[str, Callable[[], str | None]],
         tokens: Callable[[dict[str, Any]], int], budget: int) -> int:
    """Run each way of driving the agent against the mocked API; print what it sent (its
    largest request against ``budget``) and its answer. Exit code 1 if any went over or did
    not answer."""
    failed = 0
    for mode, run in runs.items():
        with mocked_api() as api:
            answer = run()
        largest = max(tokens(body) for body in api.bodies(endpoint))
        fits = largest <= budget
        failed += not fits or answer != ANSWER
        print(f"{mode}: {len(api.bodies(endpoint))} calls, largest request {largest} tokens "
              f"({'fits' if fits else 'OVER'} {budget}); answer: {answer}")
    return 1 if failed else 0

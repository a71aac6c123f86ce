"""The per-provider table the contract tests run over: one entry per SDK (Chat Completions,
Anthropic Messages), each a real client class, the JSON its API answers with, the histories
the tests send, and how a request or a reply of that SDK is read.

A contract test asks a ``Provider`` only for what differs between the SDKs; what it checks is
written once, in ``test_summarizers.py`` and ``test_wrapped_clients.py``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

import anthropic
import httpx
import httpx2
import openai
import respx
from anthropic.types import Message, ParsedMessage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ParsedChatCompletion

from cutctx_adapters.anthropic import AnthropicSummarizer, CompactingAnthropic, messages
from cutctx_adapters.openai import CompactingOpenAI, OpenAISummarizer, chat
from tests.openai.chat_rules import check

__all__ = ["ANTHROPIC", "MARKER", "OPENAI", "PROVIDERS", "SUMMARY_TEXT", "Provider", "Window",
           "bodies", "sent"]

MARKER = "MARKER-5c1d"  # in the histories: may reach a summarizer, never an error or a report
SUMMARY_TEXT = "The agent listed files and read logs; next it should patch parser.py."
Responder = Callable[[httpx.Request], httpx.Response]


def bodies(route: respx.Route) -> list[dict[str, Any]]:
    """The JSON body of every request a route got."""
    return [json.loads(call.request.content) for call in route.calls]


def sent(route: respx.Route) -> dict[str, Any]:
    """The JSON body of the last request a route got."""
    body: dict[str, Any] = json.loads(route.calls.last.request.content)
    return body


@dataclass(frozen=True)
class Window:
    """A wrapped call whose prompt budget comes from the window table or the caller."""

    settings: Mapping[str, Any]
    fields: Mapping[str, Any]
    prompt_budget: int
    warns: bool = False  # a model tiktoken does not know is counted with o200k_base, warning


@dataclass(frozen=True)
class Provider:
    """What the contract tests need of one SDK; each method says what differs in it."""

    name: str
    base_url: str
    endpoint: str  # the POST path under ``base_url`` of a create call
    models_path: str
    model: str
    summary_model: str
    sdk: Callable[..., Any]
    async_sdk: Callable[..., Any]
    wrapper: type[Any]
    summarizer: type[Any]
    module: Any  # the SDK's module: its errors, sentinels and stream classes
    format_name: str
    response_type: type[Any]
    parsed_type: type[Any]
    parse_keyword: str  # the structured-output argument of ``parse``
    task_index: int  # where the task sits in the histories below
    budget: int  # the wrapped client's prompt budget for ``call`` without a reply allowance
    allowance_fields: tuple[str, ...]
    sentinel_fields: tuple[str, ...]  # optional create arguments the SDK's sentinels may fill
    passed_through: Mapping[str, Any]  # create arguments the wrapper must send as given
    kept_fields: Mapping[str, Any]  # create arguments the caller's copy must keep unchanged
    delegated: tuple[str, ...]  # attributes of ``resource`` that are the SDK's own
    summary_fields: frozenset[str]  # the keys of a summary request
    output_field: str  # the summary request's output bound
    options_model: str
    request_options: Mapping[str, Any]
    unknown_model_warns: bool
    tool_rounds: int
    chat_rounds: int
    windows: tuple[Window, ...]
    rejected: Mapping[str, tuple[dict[str, Any], str]] = field(repr=False)
    """Summary replies that are no summary: the reply and the cause it is refused with."""
    async_failures: tuple[str, ...] = ()
    async_fallbacks: tuple[str, ...] = ()

    # --- the wire --------------------------------------------------------------------------

    @property
    def url_path(self) -> str:
        return urlsplit(self.base_url).path + self.endpoint

    def reply(self, text: str = "ok", model: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def sse_body(self) -> bytes:
        """A stream answering "Hello"."""
        raise NotImplementedError

    def error(self, status: int, text: str) -> httpx.Response:
        raise NotImplementedError

    def models_page(self) -> dict[str, Any]:
        raise NotImplementedError

    def answer(self, request: httpx.Request) -> httpx.Response:
        """The mocked API: summaries for the summary model, SSE for streams, a JSON answer
        to a ``parse``, "ok" otherwise."""
        body = json.loads(request.content)
        if body["model"] == self.summary_model:
            return httpx.Response(200, json=self.reply(SUMMARY_TEXT, self.summary_model))
        if body.get("stream"):
            return httpx.Response(200, headers={"content-type": "text/event-stream"},
                                  content=self.sse_body())
        if self.asks_for_json(body):
            return httpx.Response(200, json=self.reply('{"answer": "42"}'))
        return httpx.Response(200, json=self.reply())

    def failures(self) -> dict[str, tuple[Responder, str, type[Exception] | None]]:
        """Each way a summary request fails: the API's answer, the cause named, the SDK error."""
        def timeout(request: httpx.Request) -> httpx.Response:
            raise httpx2.ReadTimeout(f"read timed out {MARKER}")

        def answering(body: dict[str, Any]) -> Responder:
            return lambda request: httpx.Response(200, json=body)

        return {
            "http-500": (lambda request: self.error(500, f"upstream {MARKER}"),
                         "InternalServerError", self.module.InternalServerError),
            "http-400": (lambda request: self.error(400, f"bad {MARKER}"), "BadRequestError",
                         self.module.BadRequestError),
            "timeout": (timeout, "APITimeoutError", self.module.APITimeoutError),
            **{name: (answering(body), cause, None)
               for name, (body, cause) in self.rejected.items()},
        }

    # --- histories and calls ---------------------------------------------------------------

    def call(self, history: Any, **fields: Any) -> dict[str, Any]:
        """The keyword arguments of a create call."""
        raise NotImplementedError

    def resource(self, client: Any) -> Any:
        """Where ``create``, ``stream`` and ``parse`` live on a (wrapped) client."""
        raise NotImplementedError

    def agent_history(self, rounds: int, size: int = 60) -> list[dict[str, Any]]:
        """An agent run: the task, then rounds of two parallel tool calls and their results,
        ending with the user's next instruction."""
        raise NotImplementedError

    def one_round(self, i: int, text: str = "More.") -> list[dict[str, Any]]:
        """One more exchange to append to an agent history."""
        raise NotImplementedError

    chat_opening: ClassVar[tuple[dict[str, Any], ...]] = ()
    """What a plain talk opens with (a system message, where the API has them in the list)."""

    def chat_history(self, rounds: int, size: int = 120) -> list[dict[str, Any]]:
        """Plain user/assistant talk: masking cannot help, so a summarizer gets asked."""
        history = [dict(message) for message in self.chat_opening]
        for i in range(rounds):
            history.append({"role": "user", "content": f"question {i} {MARKER} " + "why " * size})
            history.append({"role": "assistant", "content": f"answer {i} " + "because " * size})
        history.append({"role": "user", "content": "And finally?"})
        return history

    def summary_history(self, rounds: int = 6, size: int = 80) -> list[dict[str, Any]]:
        """Task, then rounds of: a call to read_file, its result, a remark, a user nod."""
        raise NotImplementedError

    def with_paste(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        """The history with ``text`` pasted into its newest (user) message."""
        raise NotImplementedError

    def pasted(self, message: Mapping[str, Any]) -> str:
        """The text of the paste in a sent newest message."""
        raise NotImplementedError

    def with_ramble(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        """The history with a recent assistant message of ``text`` (no policy may clip it) and a
        short user message after it."""
        raise NotImplementedError

    def tools(self, count: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    tool_choice: ClassVar[Any] = None
    """How a call names ``tool_choice="auto"``."""

    # --- reading requests and results -----------------------------------------------------

    def tokens(self, request: Mapping[str, Any]) -> int:
        """The prompt tokens of a request (its messages, system and tools)."""
        raise NotImplementedError

    def system_of(self, request: Mapping[str, Any]) -> Any:
        """The system prompt a request carries, wherever its API puts it."""
        raise NotImplementedError

    def assert_sendable(self, request: Mapping[str, Any], original: Any = None) -> None:
        """What the API asks of the messages of a request."""
        raise NotImplementedError

    def response_text(self, response: Any) -> str:
        raise NotImplementedError

    def reply_message(self, response: Any) -> tuple[Any, list[Any], dict[str, Any]]:
        """An "ok" reply as a user appends it to the history, the SDK objects in it, and the
        message the SDK sends for it."""
        raise NotImplementedError

    def stream_text(self, events: list[Any]) -> str:
        """The text of a raw stream's events (each event checked to be the SDK's)."""
        raise NotImplementedError

    def helper_kinds_ok(self, kinds: list[str]) -> bool:
        """Whether a stream helper's event kinds are those of a finished text reply."""
        raise NotImplementedError

    def helper_text(self, stream: Any) -> str:
        """The text a sync stream helper yields."""
        raise NotImplementedError

    def final_reply(self, stream: Any) -> Any:
        """The stream helper's final reply (awaitable for an async helper)."""
        raise NotImplementedError

    def asks_for_json(self, body: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def parsed_value(self, parsed: Any) -> Any:
        raise NotImplementedError

    # --- summarizers -----------------------------------------------------------------------

    def plan(self, history: Any, **options: Any) -> Any:
        raise NotImplementedError

    def compact(self, history: Any, **options: Any) -> Any:
        raise NotImplementedError

    async def acompact(self, history: Any, **options: Any) -> Any:
        raise NotImplementedError

    def summary_prompt(self, body: Mapping[str, Any]) -> tuple[str, str]:
        """A summary request's system prompt and user message text (its shape checked)."""
        raise NotImplementedError

    def summary_items(self, history: Iterable[Any]) -> list[Any]:
        """The messages (or blocks) of a compacted history that hold the summary."""
        raise NotImplementedError

    def summary_item(self, text: str) -> Any:
        raise NotImplementedError

    def assert_result_sendable(self, result: Any, original: list[dict[str, Any]],
                               budget: int) -> None:
        """A compaction result is valid for the API, keeps the newest message, fits."""
        raise NotImplementedError


# --- OpenAI Chat Completions ----------------------------------------------------------------


def _completion(content: Any = "ok", model: str = "gpt-4o", *, choices: bool = True,
                finish: str = "stop", refusal: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "message": {
            "role": "assistant", "content": content,
            **({"refusal": refusal} if refusal is not None else {})}}] if choices else [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class _OpenAIChat(Provider):
    """``openai`` with Chat Completions: the system prompt is the first message."""

    tool_choice: ClassVar[Any] = "auto"
    chat_opening: ClassVar[tuple[dict[str, Any], ...]] = (
        {"role": "system", "content": "You are helpful."},)

    def reply(self, text: str = "ok", model: str | None = None) -> dict[str, Any]:
        return _completion(text, model or self.model)

    def sse_body(self) -> bytes:
        chunks = (_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hel"}),
                  _chunk({"content": "lo"}), _chunk({}, "stop"))
        return ("".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
                + "data: [DONE]\n\n").encode()

    def error(self, status: int, text: str) -> httpx.Response:
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return httpx.Response(status, json={"error": {"message": text, "type": kind}})

    def models_page(self) -> dict[str, Any]:
        return {"object": "list", "data": [
            {"id": self.model, "object": "model", "created": 1, "owned_by": "openai"}]}

    def call(self, history: Any, **fields: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": history, **fields}

    def resource(self, client: Any) -> Any:
        return client.chat.completions

    def agent_history(self, rounds: int, size: int = 60) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Fix the failing test. {MARKER}"}]
        for i in range(rounds):
            calls = [{"id": f"call_{i}_{k}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps({"arg": f"{i}-{k}"})}}
                     for k, name in enumerate(("read_file", "run_tests"))]
            history.append({"role": "assistant", "content": None, "tool_calls": calls})
            history.extend({"role": "tool", "tool_call_id": f"call_{i}_{k}",
                            "content": f"result {i}.{k} {MARKER} " + "lorem ipsum " * size}
                           for k in range(2))
        history.append({"role": "user", "content": "Continue."})
        return history

    def one_round(self, i: int, text: str = "More.") -> list[dict[str, Any]]:
        return [*self.agent_history(1)[2:-1], {"role": "user", "content": text}]

    def summary_history(self, rounds: int = 6, size: int = 80) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Fix the parser bug. {MARKER}"}]
        for i in range(rounds):
            history.append({"role": "assistant", "content": f"Step {i}: reading.", "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {
                    "name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})}}]})
            history.append({"role": "tool", "tool_call_id": f"c{i}",
                            "content": f"contents {i} {MARKER} " + "code " * size})
            history.append({"role": "assistant", "content": f"Noted {i}. " + "thinking " * size})
            history.append({"role": "user", "content": f"ok {i}"})
        history.append({"role": "user", "content": "Now patch it."})
        return history

    def with_paste(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        return [*history[:-1], {"role": "user", "content": text}]

    def with_ramble(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        return [*history[:-1], {"role": "assistant", "content": text},
                {"role": "user", "content": "Continue."}]

    def pasted(self, message: Mapping[str, Any]) -> str:
        text: str = message["content"]
        return text

    def tools(self, count: int) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {
            "name": f"tool_{i}", "description": "Does a thing. " * 40,
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": "A path to a file. " * 10}}}}}
            for i in range(count)]

    def tokens(self, request: Mapping[str, Any]) -> int:
        return chat.count_tokens(request["messages"], model=self.model,
                                 tools=request.get("tools"))

    def system_of(self, request: Mapping[str, Any]) -> Any:
        return [m for m in request["messages"][:1] if m["role"] == "system"]

    def assert_sendable(self, request: Mapping[str, Any], original: Any = None) -> None:
        check(request["messages"])

    def response_text(self, response: Any) -> str:
        text: str = response.choices[0].message.content
        return text

    def reply_message(self, response: Any) -> tuple[Any, list[Any], dict[str, Any]]:
        message = response.choices[0].message
        return message, [message], {"role": "assistant", "content": "ok"}

    def stream_text(self, events: list[Any]) -> str:
        assert all(isinstance(chunk, ChatCompletionChunk) for chunk in events)
        return "".join(chunk.choices[0].delta.content or "" for chunk in events)

    def helper_kinds_ok(self, kinds: list[str]) -> bool:
        return "content.delta" in kinds and "content.done" in kinds

    def helper_text(self, stream: Any) -> str:
        return "".join(event.delta for event in stream if event.type == "content.delta")

    def final_reply(self, stream: Any) -> Any:
        return stream.get_final_completion()

    def asks_for_json(self, body: Mapping[str, Any]) -> bool:
        return bool(body.get("response_format"))

    def parsed_value(self, parsed: Any) -> Any:
        return parsed.choices[0].message.parsed

    def plan(self, history: Any, **options: Any) -> Any:
        return chat.plan(history, model=self.model, **options)

    def compact(self, history: Any, **options: Any) -> Any:
        return chat.compact(history, model=self.model, **options)

    async def acompact(self, history: Any, **options: Any) -> Any:
        return await chat.acompact(history, model=self.model, **options)

    def summary_prompt(self, body: Mapping[str, Any]) -> tuple[str, str]:
        system, user = body["messages"]
        assert system.keys() == {"role", "content"} and system["role"] == "system"
        assert user["role"] == "user"
        return system["content"], user["content"]

    def summary_items(self, history: Iterable[Any]) -> list[Any]:
        return [m for m in history if SUMMARY_TEXT in json.dumps(m.get("content"))]

    def summary_item(self, text: str) -> Any:
        return {"role": "user", "content": "Summary of the earlier conversation:\n\n" + text}

    def assert_result_sendable(self, result: Any, original: list[dict[str, Any]],
                               budget: int) -> None:
        assert result.messages is not None
        check(result.messages)
        assert result.messages[0] == original[0]  # the system message
        assert result.messages[-1] == original[-1]
        assert chat.count_tokens(result.messages, model=self.model) <= budget
        assert not result.report.budget_unmet


# --- Anthropic Messages ---------------------------------------------------------------------

_SYSTEM = "You are a coding agent."
_MAX_TOKENS = 1_024


def _message(content: list[dict[str, Any]], model: str, stop: str = "end_turn") -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def _event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


SSE_EVENTS = ["message_start", "content_block_start", "content_block_delta",
              "content_block_delta", "content_block_stop", "message_delta", "message_stop"]


class _AnthropicMessages(Provider):
    """``anthropic`` with Messages: ``system`` and ``max_tokens`` are fields of the call,
    tool results are blocks of a user message."""

    system: ClassVar[str] = _SYSTEM
    max_tokens: ClassVar[int] = _MAX_TOKENS

    tool_choice: ClassVar[Any] = {"type": "auto"}

    def reply(self, text: str = "ok", model: str | None = None) -> dict[str, Any]:
        return _message([{"type": "text", "text": text}], model or self.model)

    def sse_body(self) -> bytes:
        start = {**self.reply(), "content": [], "stop_reason": None}
        return "".join([
            _event("message_start", message=start),
            _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            _event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hel"}),
            _event("content_block_delta", index=0, delta={"type": "text_delta", "text": "lo"}),
            _event("content_block_stop", index=0),
            _event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                   usage={"output_tokens": 2}),
            _event("message_stop"),
        ]).encode()

    def error(self, status: int, text: str) -> httpx.Response:
        kind = "api_error" if status >= 500 else "invalid_request_error"
        return httpx.Response(status, json={"type": "error",
                                            "error": {"type": kind, "message": text}})

    def models_page(self) -> dict[str, Any]:
        return {"data": [{"id": self.model, "type": "model", "display_name": "Claude Sonnet 4.5",
                          "created_at": "2025-09-29T00:00:00Z"}],
                "has_more": False, "first_id": self.model, "last_id": self.model}

    def call(self, history: Any, **fields: Any) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": _MAX_TOKENS, "system": _SYSTEM,
                "messages": history, **fields}

    def resource(self, client: Any) -> Any:
        return client.messages

    def agent_history(self, rounds: int, size: int = 60) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [
            {"role": "user", "content": f"Fix the failing test. {MARKER}"}]
        for i in range(rounds):
            history.append({"role": "assistant", "content": [
                {"type": "text", "text": f"Step {i}."},
                *({"type": "tool_use", "id": f"toolu_{i}_{k}", "name": name,
                   "input": {"arg": f"{i}-{k}"}}
                  for k, name in enumerate(("read_file", "run_tests")))]})
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i}_{k}",
                 "content": f"result {i}.{k} {MARKER} " + "lorem ipsum " * size}
                for k in range(2)]})
        history[-1]["content"].append({"type": "text", "text": "Continue."})
        return history

    def one_round(self, i: int, text: str = "More.") -> list[dict[str, Any]]:
        return [
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_x{i}", "name": "read_file",
                 "input": {"n": i}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_x{i}",
                 "content": f"more {i} " + "lorem ipsum " * 60},
                {"type": "text", "text": text}]},
        ]

    def summary_history(self, rounds: int = 6, size: int = 80) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [
            {"role": "user", "content": f"Fix the parser bug. {MARKER}"}]
        for i in range(rounds):
            history.append({"role": "assistant", "content": [
                {"type": "text", "text": f"Step {i}: reading."},
                {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file",
                 "input": {"path": f"f{i}.py"}}]})
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i}",
                 "content": f"contents {i} {MARKER} " + "code " * size}]})
            history.append({"role": "assistant", "content": f"Noted {i}. " + "thinking " * size})
            history.append({"role": "user", "content": f"ok {i}"})
        history.append({"role": "assistant", "content": "Anything else?"})
        history.append({"role": "user", "content": "Now patch it."})
        return history

    def with_paste(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        newest = history[-1]
        return [*history[:-1], {**newest, "content": [*newest["content"],
                                                      {"type": "text", "text": text}]}]

    def pasted(self, message: Mapping[str, Any]) -> str:
        text: str = message["content"][-1]["text"]
        return text

    def with_ramble(self, history: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        return [*history, {"role": "assistant", "content": text},
                {"role": "user", "content": "Continue."}]

    def tools(self, count: int) -> list[dict[str, Any]]:
        return [{"name": f"tool_{i}", "description": "Does a thing. " * 40,
                 "input_schema": {"type": "object", "properties": {
                     "path": {"type": "string", "description": "A path to a file. " * 10}}}}
                for i in range(count)]

    def tokens(self, request: Mapping[str, Any]) -> int:
        return messages.count_tokens(request["messages"], system=request.get("system"),
                                     model=self.model, tools=request.get("tools"))

    def system_of(self, request: Mapping[str, Any]) -> Any:
        return request.get("system")

    def assert_sendable(self, request: Mapping[str, Any], original: Any = None) -> None:
        history = request["messages"]
        messages.validate(history, system=request.get("system"), tools=request.get("tools"),
                          thinking=request.get("thinking"), original=original)
        assert history and history[0]["role"] == "user"
        assert all(a["role"] != b["role"] for a, b in itertools.pairwise(history))

    def response_text(self, response: Any) -> str:
        assert response.content[0].type == "text"
        text: str = response.content[0].text
        return text

    def reply_message(self, response: Any) -> tuple[Any, list[Any], dict[str, Any]]:
        return ({"role": "assistant", "content": response.content}, list(response.content),
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]})

    def stream_text(self, events: list[Any]) -> str:
        assert [event.type for event in events] == SSE_EVENTS
        return "".join(event.delta.text for event in events
                       if event.type == "content_block_delta")

    def helper_kinds_ok(self, kinds: list[str]) -> bool:
        return "text" in kinds and kinds[-1] == "message_stop"

    def helper_text(self, stream: Any) -> str:
        return "".join(stream.text_stream)

    def final_reply(self, stream: Any) -> Any:
        return stream.get_final_message()

    def asks_for_json(self, body: Mapping[str, Any]) -> bool:
        return "output_config" in body

    def parsed_value(self, parsed: Any) -> Any:
        return parsed.parsed_output

    def plan(self, history: Any, **options: Any) -> Any:
        return messages.plan(history, system=_SYSTEM, model=self.model, **options)

    def compact(self, history: Any, **options: Any) -> Any:
        return messages.compact(history, system=_SYSTEM, model=self.model, **options)

    async def acompact(self, history: Any, **options: Any) -> Any:
        return await messages.acompact(history, system=_SYSTEM, model=self.model, **options)

    def summary_prompt(self, body: Mapping[str, Any]) -> tuple[str, str]:
        [user] = body["messages"]
        assert user["role"] == "user" and isinstance(user["content"], str)
        return body["system"], user["content"]

    def summary_items(self, history: Iterable[Any]) -> list[Any]:
        return [block for m in history for block in m["content"]
                if SUMMARY_TEXT in json.dumps(block)]

    def summary_item(self, text: str) -> Any:
        return {"type": "text", "text": messages.SUMMARY_HEADER + text}

    def assert_result_sendable(self, result: Any, original: list[dict[str, Any]],
                               budget: int) -> None:
        assert result.system == _SYSTEM
        messages.validate(result.messages, system=result.system, original=original)
        assert result.messages[0]["role"] == "user"
        assert result.messages[-1] == original[-1]
        assert messages.count_tokens(result.messages, system=result.system,
                                     model=self.model) <= budget
        assert not result.report.budget_unmet


_OPENAI_URL = "https://api.openai.test/v1"
OPENAI = _OpenAIChat(
    name="openai", base_url=_OPENAI_URL, endpoint="/chat/completions",
    models_path="/models", model="gpt-4o", summary_model="gpt-4o-mini",
    sdk=lambda: openai.OpenAI(api_key="test", base_url=_OPENAI_URL, max_retries=0),
    async_sdk=lambda: openai.AsyncOpenAI(api_key="test", base_url=_OPENAI_URL, max_retries=0),
    wrapper=CompactingOpenAI, summarizer=OpenAISummarizer, module=openai,
    format_name="openai-chat", response_type=ChatCompletion, parsed_type=ParsedChatCompletion,
    parse_keyword="response_format", task_index=1, budget=10_000 - 4_096,
    allowance_fields=("max_completion_tokens", "max_tokens"),
    sentinel_fields=("max_tokens", "max_completion_tokens", "tools"),
    passed_through={"temperature": 0.2, "user": "u-1"}, kept_fields={},
    delegated=("messages",), summary_fields=frozenset({"model", "messages",
                                                       "max_completion_tokens"}),
    output_field="max_completion_tokens", options_model="o4-mini",
    request_options={"temperature": 0, "model": "ignored", "reasoning_effort": "low",
                     "max_completion_tokens": 1},
    unknown_model_warns=True, tool_rounds=8, chat_rounds=14,
    windows=(
        Window({}, {"model": "gpt-4o-2024-08-06", "max_completion_tokens": 1_000}, 127_000),
        Window({}, {"model": "gpt-4", "max_tokens": 1_000}, 7_192),
        Window({"window": 50_000}, {"model": "gpt-4", "max_tokens": 1_000}, 49_000),
        Window({"windows": {"acme-llm": 32_000}}, {"model": "acme-llm-7b", "max_tokens": 1_000},
               31_000, warns=True),
        # GPT-5's window is 400K but it takes 272K in: the table's window is capped, a given
        # one not
        Window({}, {"model": "gpt-5", "max_completion_tokens": 1_000}, 272_000),
        Window({"window": 300_000}, {"model": "gpt-5", "max_completion_tokens": 1_000},
               299_000),
    ),
    rejected={
        "empty": (_completion(""), "EmptySummary"),
        "blank": (_completion("  \n "), "EmptySummary"),
        "null": (_completion(None), "EmptySummary"),
        "no-choices": (_completion(None, choices=False), "EmptySummary"),
        # a reply that did not finish on its own: its partial text is never a summary
        "length": (_completion(f"Half a summary {MARKER}", finish="length"),
                   "finish_reason:length"),
        "content-filter": (_completion(f"Filtered {MARKER}", finish="content_filter"),
                           "finish_reason:content_filter"),
        "tool-calls": (_completion(f"Calling {MARKER}", finish="tool_calls"),
                       "finish_reason:tool_calls"),
        "refusal": (_completion(None, refusal=f"I can't help with {MARKER}"),
                    "finish_reason:refusal"),
    },
    async_failures=("http-500", "timeout", "null", "length", "refusal"),
    async_fallbacks=("http-400", "timeout", "empty"),
)

_ANTHROPIC_URL = "https://api.anthropic.test"
ANTHROPIC = _AnthropicMessages(
    name="anthropic", base_url=_ANTHROPIC_URL, endpoint="/v1/messages",
    models_path="/v1/models", model="claude-sonnet-4-5", summary_model="claude-haiku-4-5",
    sdk=lambda: anthropic.Anthropic(api_key="test", base_url=_ANTHROPIC_URL, max_retries=0),
    async_sdk=lambda: anthropic.AsyncAnthropic(api_key="test", base_url=_ANTHROPIC_URL,
                                               max_retries=0),
    wrapper=CompactingAnthropic, summarizer=AnthropicSummarizer, module=anthropic,
    format_name="anthropic-messages", response_type=Message, parsed_type=ParsedMessage,
    parse_keyword="output_format", task_index=0, budget=10_000 - _MAX_TOKENS,
    allowance_fields=("max_tokens",), sentinel_fields=("system", "tools", "tool_choice"),
    passed_through={"system": [{"type": "text", "text": _SYSTEM,
                                "cache_control": {"type": "ephemeral"}}],
                    "stop_sequences": ["STOP"], "metadata": {"user_id": "u-1"}},
    kept_fields={"system": [{"type": "text", "text": _SYSTEM}]},
    delegated=("batches", "count_tokens"),
    summary_fields=frozenset({"model", "system", "messages", "max_tokens"}),
    output_field="max_tokens", options_model="claude-haiku-4-5",
    request_options={"stop_sequences": ["END"], "model": "ignored", "max_tokens": 1,
                     "metadata": {"user_id": "u-1"}},
    unknown_model_warns=False, tool_rounds=5, chat_rounds=10,
    windows=(
        Window({}, {"model": "claude-sonnet-4-5-20250929"}, 200_000 - _MAX_TOKENS),
        Window({}, {"model": "claude-3-5-haiku-latest", "max_tokens": 2_000}, 198_000),
        Window({"window": 50_000}, {}, 50_000 - _MAX_TOKENS),
        Window({"windows": {"acme-claude": 32_000}}, {"model": "acme-claude-7b"},
               32_000 - _MAX_TOKENS),
    ),
    rejected={
        "no-content": (_message([], "claude-haiku-4-5"), "EmptySummary"),
        "empty-text": (_message([{"type": "text", "text": ""}], "claude-haiku-4-5"),
                       "EmptySummary"),
        "blank-text": (_message([{"type": "text", "text": "  \n "}, {"type": "text", "text": ""}],
                                "claude-haiku-4-5"), "EmptySummary"),
        "thinking-only": (_message([{"type": "thinking", "thinking": f"hmm {MARKER}",
                                     "signature": "sig"}], "claude-haiku-4-5"), "EmptySummary"),
        # a reply that did not finish on its own: its partial or refusal text is never a summary
        **{f"stop-{stop}": (_message([{"type": "text", "text": f"Partial {MARKER}"}],
                                     "claude-haiku-4-5", stop), f"stop_reason:{stop}")
           for stop in ("max_tokens", "refusal", "pause_turn", "tool_use",
                        "model_context_window_exceeded")},
    },
    async_failures=("http-500", "http-400", "timeout", "no-content", "empty-text"),
    async_fallbacks=("http-500", "http-400", "timeout", "no-content", "blank-text",
                     "stop-refusal", "stop-max_tokens"),
)

PROVIDERS = {provider.name: provider for provider in (OPENAI, ANTHROPIC)}

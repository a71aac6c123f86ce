"""A scripted model behind mocked OpenAI HTTP, for agent frameworks run offline and without a key.

The frameworks' own model classes run over real ``openai`` clients; only HTTP is answered, by
respx over httpcore2 (the transport under the SDK's httpx2). The model asks for ``read_file``
(every seventh step, two files at once) until the agent has read ``steps`` files, then answers;
with ``answer_every``, it also answers after every that many steps, and goes on reading when the
user writes again (a conversation of several agent runs).
The step is told by the newest tool result's call id (``call_12_0``: twelve done), since
compaction may have dropped the older ones. Every JSON body sent is kept (``ScriptedApi.sent``),
for the tests, the examples and ``benchmarks/frameworks.py`` to check. Chat Completions and
Responses are answered (``/chat/completions``, ``/responses``), not streamed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest_httpx2  # noqa: F401  (registers respx's "httpcore2" mocker)
import respx

__all__ = ["ANSWER", "BASE_URL", "INSTRUCTIONS", "TASK", "ScriptedApi", "read_file",
           "scripted_api"]

BASE_URL = "https://api.openai.test/v1"
ANSWER = "The failing test calls handler_7 with retries=0; patch process() to retry once."
INSTRUCTIONS = "You are a coding agent. Use read_file to investigate, then answer in one line."
TASK = "The test suite fails in CI. Find out why."
_CALL_ID = re.compile(r"^call_(\d+)_\d+$")


def read_file(path: str) -> str:
    """The agent's tool: a deterministic listing of ``path`` (about 300 tokens). Files named
    again (every step past 40 re-reads one of the first ten) read the same."""
    number = int(re.sub(r"\D", "", path) or 0)
    return "\n".join(f"{path}:{n}: def handler_{n}(request): return process(request, "
                     f"retries={(n + number) % 7})  # {'x' * ((n * number) % 13)}"
                     for n in range(12))


def _path(step: int) -> str:
    return f"src/module_{step % 10 if step > 40 and step % 5 == 0 else step}.py"


@dataclass
class ScriptedApi:
    """The scripted model: ``steps`` tool-calling turns, then the answer."""

    steps: int
    answer_every: int | None = None
    bill: Callable[[dict[str, Any]], int] | None = None
    """The input tokens a body is billed for (its reply's ``usage``); None: 1."""
    sent: list[dict[str, Any]] = field(default_factory=list)
    """Every JSON body the agent sent, in order."""

    def _billed(self, body: dict[str, Any]) -> int:
        return 1 if self.bill is None else self.bill(body)

    def _done(self, call_ids: list[str]) -> int:
        found = [int(match.group(1)) + 1 for call_id in call_ids
                 if (match := _CALL_ID.match(call_id))]
        return found[-1] if found else 0

    def _answers(self, done: int, last_is_result: bool) -> bool:
        every = self.answer_every
        return done >= self.steps or (
            every is not None and last_is_result and done > 0 and done % every == 0)

    def _calls(self, done: int) -> list[tuple[str, str]]:
        """The calls of step ``done``: (call id, JSON arguments)."""
        count = 2 if done % 7 == 6 else 1
        return [(f"call_{done}_{k}", json.dumps({"path": _path(done + k * 1000)}))
                for k in range(count)]

    def chat(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.sent.append(body)
        done = self._done([message["tool_call_id"] for message in body["messages"]
                           if message.get("role") == "tool"])
        answers = self._answers(done, body["messages"][-1].get("role") == "tool")
        message: dict[str, Any] = {"role": "assistant", "content": ANSWER}
        if not answers:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "read_file", "arguments": arguments}}
                for call_id, arguments in self._calls(done)]}
        return httpx.Response(200, json={
            "id": f"chatcmpl-{done}", "object": "chat.completion", "created": 1,
            "model": body["model"], "usage": {
                "prompt_tokens": self._billed(body), "completion_tokens": 1,
                "total_tokens": self._billed(body) + 1},
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "stop" if answers else "tool_calls"}]})

    def responses(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.sent.append(body)
        items = body["input"] if isinstance(body["input"], list) else []
        done = self._done([item["call_id"] for item in items
                           if item.get("type") == "function_call_output"])
        output: list[dict[str, Any]] = [
            {"type": "message", "id": f"msg_{done}", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}]
        last_is_result = bool(items) and items[-1].get("type") == "function_call_output"
        if not self._answers(done, last_is_result):
            output = [{"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
                       "name": "read_file", "arguments": arguments, "status": "completed"}
                      for call_id, arguments in self._calls(done)]
        return httpx.Response(200, json={
            "id": f"resp_{done}", "object": "response", "created_at": 1, "model": body["model"],
            "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": self._billed(body), "output_tokens": 1,
                      "total_tokens": self._billed(body) + 1,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}})


@contextmanager
def scripted_api(steps: int, answer_every: int | None = None,
                 bill: Callable[[dict[str, Any]], int] | None = None) -> Iterator[ScriptedApi]:
    """Both OpenAI endpoints answered by a scripted model of ``steps`` tool-calling turns
    (answering after every ``answer_every`` of them too; ``bill``: the input each body is
    billed for)."""
    api = ScriptedApi(steps, answer_every, bill)
    with respx.mock(using="httpcore2", assert_all_called=False) as router:
        router.post(f"{BASE_URL}/chat/completions").mock(side_effect=api.chat)
        router.post(f"{BASE_URL}/responses").mock(side_effect=api.responses)
        yield api

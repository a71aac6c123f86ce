"""An agent loop on a wrapped OpenAI client (Chat Completions): sync, async and streaming.

Runs offline, without a key: the client is a real ``OpenAI``/``AsyncOpenAI`` whose HTTP a
scripted model answers (``_mock_api.py``, respx). The agent reads one large file per step;
``CompactingOpenAI`` keeps every request under the window and prints a line whenever it
compacts. Run from the repository root: ``python examples/agents/openai_chat_agent.py``
(needs ``cutctx[dev]`` for respx; counts need tiktoken's files, see the README).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from _mock_api import OPENAI_URL, demo, read_file
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from cutctx_adapters.openai import CompactingOpenAI, chat

MODEL = "gpt-4o"
WINDOW, RESERVE = 16_000, 1_000
TOOLS: list[ChatCompletionToolParam] = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}}}]
TASK: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You are a coding agent. Use read_file to investigate."},
    {"role": "user", "content": "The test suite fails in CI. Find out why."},
]


def tool_messages(calls: Any) -> list[ChatCompletionMessageParam]:
    """Run the model's tool calls; one tool message per call."""
    return [{"role": "tool", "tool_call_id": call.id,
             "content": read_file(**json.loads(call.function.arguments))} for call in calls]


def run_sync(client: CompactingOpenAI[OpenAI]) -> str | None:
    messages = list(TASK)
    while True:
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS,
                                               max_completion_tokens=RESERVE)
        message = reply.choices[0].message
        messages.append(message)  # type: ignore[arg-type]  # the SDK's message, as agents do
        if not message.tool_calls:
            return message.content
        messages += tool_messages(message.tool_calls)


async def run_async(client: CompactingOpenAI[AsyncOpenAI]) -> str | None:
    messages = list(TASK)
    while True:
        reply = await client.chat.completions.create(model=MODEL, messages=messages,
                                                     tools=TOOLS, max_completion_tokens=RESERVE)
        message = reply.choices[0].message
        messages.append(message)  # type: ignore[arg-type]
        if not message.tool_calls:
            return message.content
        messages += tool_messages(message.tool_calls)


def run_streaming(client: CompactingOpenAI[OpenAI]) -> str | None:
    messages = list(TASK)
    while True:
        with client.chat.completions.stream(model=MODEL, messages=messages, tools=TOOLS,
                                            max_completion_tokens=RESERVE) as stream:
            for _event in stream:
                pass  # a UI would show content deltas here
            message = stream.get_final_completion().choices[0].message
        messages.append(message)  # type: ignore[arg-type]
        if not message.tool_calls:
            return message.content
        messages += tool_messages(message.tool_calls)


def main() -> int:
    # The one line that matters: wrap the SDK's client (a real one; only its HTTP is mocked).
    client = CompactingOpenAI(OpenAI(api_key="not-needed", base_url=OPENAI_URL),
                              window=WINDOW, on_compaction=print)
    async_client = CompactingOpenAI(AsyncOpenAI(api_key="not-needed", base_url=OPENAI_URL),
                                    window=WINDOW, on_compaction=print)
    return demo("chat", {
        "sync": lambda: run_sync(client),
        "async": lambda: asyncio.run(run_async(async_client)),
        "streaming": lambda: run_streaming(client),
    }, lambda body: chat.count_tokens(body["messages"], model=MODEL, tools=body["tools"]),
        WINDOW - RESERVE)


if __name__ == "__main__":
    sys.exit(main())

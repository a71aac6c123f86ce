"""An agent loop on a wrapped Anthropic client: sync, async and streaming.

Offline and without a key, as ``openai_chat_agent.py``: a real ``Anthropic``/``AsyncAnthropic``
client whose HTTP a scripted model answers. The agent appends each reply (the SDK's ``Message``:
``CompactingAnthropic`` sends it as its role and content) and a user message with the tool
results. Run: ``python examples/agents/anthropic_agent.py``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from _mock_api import ANTHROPIC_URL, demo, read_file
from anthropic import Anthropic, AsyncAnthropic
from anthropic.types import Message, MessageParam, ToolParam

from cutctx_adapters.anthropic import CompactingAnthropic, messages

MODEL = "claude-sonnet-4-5"
WINDOW, RESERVE = 32_000, 1_000
SYSTEM = "You are a coding agent. Use read_file to investigate."
TOOLS: list[ToolParam] = [{
    "name": "read_file", "description": "Read a file of the repository.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"]}}]
TASK: list[MessageParam] = [{"role": "user", "content": "The test suite fails in CI. "
                                                        "Find out why."}]


def step(history: list[Any], reply: Message) -> str | None:
    """Append the reply and the results of its tool calls; the answer once there are none."""
    history.append(reply)
    calls = [block for block in reply.content if block.type == "tool_use"]
    if not calls:
        return "".join(block.text for block in reply.content if block.type == "text")
    history.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id,
         "content": read_file(str(call.input["path"]))} for call in calls]})
    return None


def run_sync(client: CompactingAnthropic[Anthropic]) -> str | None:
    history: list[Any] = list(TASK)
    while True:
        reply = client.messages.create(model=MODEL, max_tokens=RESERVE, system=SYSTEM,
                                       messages=history, tools=TOOLS)
        answer = step(history, reply)
        if answer is not None:
            return answer


async def run_async(client: CompactingAnthropic[AsyncAnthropic]) -> str | None:
    history: list[Any] = list(TASK)
    while True:
        reply = await client.messages.create(model=MODEL, max_tokens=RESERVE, system=SYSTEM,
                                             messages=history, tools=TOOLS)
        answer = step(history, reply)
        if answer is not None:
            return answer


def run_streaming(client: CompactingAnthropic[Anthropic]) -> str | None:
    history: list[Any] = list(TASK)
    while True:
        with client.messages.stream(model=MODEL, max_tokens=RESERVE, system=SYSTEM,
                                    messages=history, tools=TOOLS) as stream:
            for _event in stream:
                pass  # a UI would show text deltas here
            reply = stream.get_final_message()
        answer = step(history, reply)
        if answer is not None:
            return answer


def main() -> int:
    # The one line that matters: wrap the SDK's client (a real one; only its HTTP is mocked).
    client = CompactingAnthropic(Anthropic(api_key="not-needed", base_url=ANTHROPIC_URL),
                                 window=WINDOW, on_compaction=print)
    async_client = CompactingAnthropic(
        AsyncAnthropic(api_key="not-needed", base_url=ANTHROPIC_URL), window=WINDOW,
        on_compaction=print)
    return demo("messages", {
        "sync": lambda: run_sync(client),
        "async": lambda: asyncio.run(run_async(async_client)),
        "streaming": lambda: run_streaming(client),
    }, lambda body: messages.count_tokens(body["messages"], system=body["system"], model=MODEL,
                                          tools=body["tools"]),
        WINDOW - RESERVE)


if __name__ == "__main__":
    sys.exit(main())

"""An agent loop on a wrapped OpenAI client (Responses API): sync, async and streaming.

Offline and without a key, as ``openai_chat_agent.py``: a real ``OpenAI``/``AsyncOpenAI`` client
whose HTTP a scripted model answers. The agent keeps the whole ``input`` itself (no
``previous_response_id``: a server-held conversation is the server's to compact) and appends
each response's output items. Run: ``python examples/agents/openai_responses_agent.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from _mock_api import OPENAI_URL, demo, read_file
from openai import AsyncOpenAI, OpenAI
from openai.types.responses import Response, ResponseInputItemParam, ToolParam

from cutctx_adapters.openai import CompactingOpenAI, responses

MODEL = "gpt-5"
WINDOW, RESERVE = 16_000, 1_000
INSTRUCTIONS = "You are a coding agent. Use read_file to investigate."
TOOLS: list[ToolParam] = [{
    "type": "function", "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}, "strict": True}]
TASK: list[ResponseInputItemParam] = [
    {"role": "user", "content": "The test suite fails in CI. Find out why."}]


def step(items: list[Any], response: Response) -> str | None:
    """Append the response's items and run its tool calls; the answer once there are none."""
    items += response.output
    calls = [item for item in response.output if item.type == "function_call"]
    items += [{"type": "function_call_output", "call_id": call.call_id,
               "output": read_file(**json.loads(call.arguments))} for call in calls]
    return None if calls else response.output_text


def run_sync(client: CompactingOpenAI[OpenAI]) -> str | None:
    items: list[Any] = list(TASK)
    while True:
        response = client.responses.create(model=MODEL, instructions=INSTRUCTIONS, input=items,
                                           tools=TOOLS, max_output_tokens=RESERVE)
        answer = step(items, response)
        if answer is not None:
            return answer


async def run_async(client: CompactingOpenAI[AsyncOpenAI]) -> str | None:
    items: list[Any] = list(TASK)
    while True:
        response = await client.responses.create(model=MODEL, instructions=INSTRUCTIONS,
                                                 input=items, tools=TOOLS,
                                                 max_output_tokens=RESERVE)
        answer = step(items, response)
        if answer is not None:
            return answer


def run_streaming(client: CompactingOpenAI[OpenAI]) -> str | None:
    items: list[Any] = list(TASK)
    while True:
        with client.responses.stream(model=MODEL, instructions=INSTRUCTIONS, input=items,
                                     tools=TOOLS, max_output_tokens=RESERVE) as stream:
            for _event in stream:
                pass  # a UI would show text deltas here
            response = stream.get_final_response()
        answer = step(items, response)
        if answer is not None:
            return answer


def main() -> int:
    # The one line that matters: wrap the SDK's client (a real one; only its HTTP is mocked).
    client = CompactingOpenAI(OpenAI(api_key="not-needed", base_url=OPENAI_URL),
                              window=WINDOW, on_compaction=print)
    async_client = CompactingOpenAI(AsyncOpenAI(api_key="not-needed", base_url=OPENAI_URL),
                                    window=WINDOW, on_compaction=print)
    return demo("responses", {
        "sync": lambda: run_sync(client),
        "async": lambda: asyncio.run(run_async(async_client)),
        "streaming": lambda: run_streaming(client),
    }, lambda body: responses.count_tokens(body["input"], instructions=body["instructions"],
                                           model=MODEL, tools=body["tools"]),
        WINDOW - RESERVE)


if __name__ == "__main__":
    sys.exit(main())

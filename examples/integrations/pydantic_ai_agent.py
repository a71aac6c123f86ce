"""A pydantic-ai agent whose every model request goes through cutctx, offline.

The one line: ``Agent(model, capabilities=[CompactionCapability(window=...)])``. A real ``Agent``
over ``OpenAIChatModel`` on a real ``AsyncOpenAI`` client whose HTTP a scripted model answers
(no network, no key): 30 turns of ``read_file``, then the answer. The run's history stays
whole; ``ProcessHistory(compacting_history_processor(...))`` would keep what was sent instead.
Run: ``python examples/integrations/pydantic_ai_agent.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scripted_api import ANSWER, BASE_URL, INSTRUCTIONS, TASK, read_file, scripted_api
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from cutctx_adapters.integrations.pydantic_ai import CompactionCapability
from cutctx_adapters.openai import chat

MODEL, WINDOW, RESERVE, STEPS = "gpt-4o", 4_000, 500, 30


def main() -> int:
    client = AsyncOpenAI(api_key="offline", base_url=BASE_URL, max_retries=0)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions=INSTRUCTIONS, tools=[read_file],
                  capabilities=[CompactionCapability(  # <- the one line
                      window=WINDOW, reserve=RESERVE, on_compaction=print)])
    with scripted_api(STEPS) as api:
        result = agent.run_sync(TASK, usage_limits=UsageLimits(request_limit=4 * STEPS))
    largest = max(chat.count_tokens(body["messages"], model=MODEL, tools=body.get("tools"))
                  for body in api.sent)
    fits = largest <= WINDOW - RESERVE
    print(f"pydantic-ai: {len(api.sent)} calls, largest request {largest} tokens "
          f"({'fits' if fits else 'OVER'} {WINDOW - RESERVE}), {len(result.all_messages())} "
          f"messages in the run's history; answer: {result.output}")
    return 0 if fits and result.output == ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())

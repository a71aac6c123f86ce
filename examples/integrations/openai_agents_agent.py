"""An OpenAI Agents SDK agent whose every model call goes through cutctx, offline.

The one line: ``RunConfig(call_model_input_filter=compacting_input_filter(window=...))``. A real
``Agent`` and ``Runner`` over ``OpenAIResponsesModel`` on a real ``AsyncOpenAI`` client whose
HTTP a scripted model answers (no network, no key): 30 turns of ``read_file``, then the answer.
Run: ``python examples/integrations/openai_agents_agent.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scripted_api import ANSWER, BASE_URL, INSTRUCTIONS, TASK, read_file, scripted_api
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

from cutctx_adapters.integrations.openai_agents import compacting_input_filter
from cutctx_adapters.openai import responses

MODEL, WINDOW, RESERVE, STEPS = "gpt-4o", 4_000, 500, 30


def main() -> int:
    client = AsyncOpenAI(api_key="offline", base_url=BASE_URL, max_retries=0)
    agent = Agent(name="coder", instructions=INSTRUCTIONS, tools=[function_tool(read_file)],
                  model=OpenAIResponsesModel(model=MODEL, openai_client=client))
    compacting = compacting_input_filter(window=WINDOW, reserve=RESERVE, on_compaction=print)
    config = RunConfig(call_model_input_filter=compacting,  # <- the one line
                       tracing_disabled=True)  # offline: no traces exported
    with scripted_api(STEPS) as api:
        result = Runner.run_sync(agent, TASK, max_turns=STEPS + 5, run_config=config)
    largest = max(responses.count_tokens(body["input"], instructions=body["instructions"],
                                         model=MODEL, tools=body.get("tools"))
                  for body in api.sent)
    fits = largest <= WINDOW - RESERVE
    print(f"openai-agents: {len(api.sent)} calls, largest request {largest} tokens "
          f"({'fits' if fits else 'OVER'} {WINDOW - RESERVE}); answer: {result.final_output}")
    return 0 if fits and result.final_output == ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())

"""A LangChain v1 agent whose every model call goes through cutctx, offline.

The one line: ``create_agent(..., middleware=[CompactionMiddleware(window=...)])``. A real
``create_agent`` graph over ``ChatOpenAI`` on a real ``openai`` client whose HTTP a scripted
model answers (no network, no key): 30 turns of ``read_file``, then the answer. The agent's
state keeps the whole history; ``persist=True`` would keep what was sent instead.
Run: ``python examples/integrations/langchain_agent.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scripted_api import ANSWER, BASE_URL, INSTRUCTIONS, TASK, read_file, scripted_api
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from cutctx_adapters.integrations.langchain import CompactionMiddleware
from cutctx_adapters.openai import chat

MODEL, WINDOW, RESERVE, STEPS = "gpt-4o", 4_000, 500, 30


def main() -> int:
    model = ChatOpenAI(model=MODEL, base_url=BASE_URL, api_key=SecretStr("offline"), max_retries=0)
    agent = create_agent(model, tools=[read_file], system_prompt=INSTRUCTIONS,
                         middleware=[CompactionMiddleware(  # <- the one line
                             window=WINDOW, reserve=RESERVE, on_compaction=print)])
    with scripted_api(STEPS) as api:
        state = agent.invoke({"messages": [{"role": "user", "content": TASK}]},
                             config={"recursion_limit": 4 * STEPS})
    largest = max(chat.count_tokens(body["messages"], model=MODEL, tools=body.get("tools"))
                  for body in api.sent)
    fits = largest <= WINDOW - RESERVE
    answer = state["messages"][-1].content
    print(f"langchain: {len(api.sent)} calls, largest request {largest} tokens "
          f"({'fits' if fits else 'OVER'} {WINDOW - RESERVE}), {len(state['messages'])} "
          f"messages kept in the state; answer: {answer}")
    return 0 if fits and answer == ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())

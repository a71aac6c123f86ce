"""The long agent session through each framework's cutctx hook, beside the framework's own options.

One conversation of ``RUNS`` agent runs, ``STEPS`` tool-calling turns in all, is driven through
each framework's real agent (``examples/integrations/_scripted_api.py``: real model classes over
real ``openai`` clients, HTTP answered offline). Per row, from what reached the wire:

* ``over``: requests over the prompt budget (``WINDOW - RESERVE``, counted by cutctx);
* ``breaks``: requests whose history does not start with the previous request's (a prompt-cache
  miss past that point);
* ``cost``: input tokens of all requests, the prefix shared with the previous request at 0.1×
  (cached), in thousands;
* ``orphans``: requests with a tool result whose call is missing, or a call left unanswered
  (the API refuses those);
* ``summaries``: model calls spent on summaries.

Baseline: the same agent with no compaction (``none``). Summarizers are deterministic fakes (a
LangChain ``FakeListChatModel``, a plain function for cutctx), so the rows compare what each
option decides, not a model's prose. Run: ``python benchmarks/frameworks.py``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "integrations"))

from _scripted_api import BASE_URL, INSTRUCTIONS, TASK, ScriptedApi, read_file, scripted_api

from cutctx import SummarizationRequest, TranscriptTurn, ValidationError
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.openai._responses_tokens import counter_for, item_tokens
from cutctx_adapters.openai._tokens import message_tokens
from cutctx_adapters.tiktoken import TiktokenEstimator

MODEL = "gpt-4o"
RUNS, STEPS = 3, 120
WINDOW, RESERVE = 8_000, 1_000
BUDGET = WINDOW - RESERVE
ORPHAN_RULES = frozenset({"orphaned_tool_result", "unanswered_tool_call",
                          "duplicated_tool_result"})


@dataclass
class Row:
    framework: str
    option: str
    requests: int
    over: int
    breaks: int
    cost: float
    orphans: int
    summaries: int


class FakeSummaries:
    """A deterministic cutctx summarizer that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.calls += 1
        return f"Read {len(turns)} earlier turns: modules listed, no failure found yet."


def measured(framework: str, option: str, api: ScriptedApi, summaries: int) -> Row:
    key = "input" if "input" in api.sent[0] else "messages"
    over = breaks = orphans = 0
    cost = 0.0
    previous: list[Any] = []
    for body in api.sent:
        items = body[key]
        sizes = [_item_tokens(key, item) for item in items]
        fixed = _fixed_tokens(key, body)
        over += fixed + sum(sizes) > BUDGET
        shared = 0
        while shared < min(len(items), len(previous)) and items[shared] == previous[shared]:
            shared += 1
        if previous and shared < len(previous):
            breaks += 1
        cached = fixed + sum(sizes[:shared]) if shared else 0
        cost += fixed + sum(sizes) - 0.9 * cached
        try:
            (responses.validate if key == "input" else chat.validate)(items)
        except ValidationError as error:
            orphans += error.details.get("rule") in ORPHAN_RULES
        previous = items
    return Row(framework, option, len(api.sent), over, breaks, cost / 1000, orphans, summaries)


ESTIMATOR = TiktokenEstimator(MODEL)
COUNTER = counter_for(ESTIMATOR, MODEL)


def _item_tokens(key: str, item: Any) -> int:
    return item_tokens(item, COUNTER) if key == "input" else message_tokens(item, ESTIMATOR)


def _fixed_tokens(key: str, body: dict[str, Any]) -> int:
    """Priming, tool definitions and (Responses) instructions: sent with every request."""
    if key == "messages":
        return chat.overhead_tokens(body.get("tools"), ESTIMATOR)
    instructions = body.get("instructions")
    return responses.overhead_tokens(body.get("tools"), ESTIMATOR, MODEL) + (
        item_tokens({"role": "developer", "content": instructions}, COUNTER)
        if instructions else 0)


# --- the OpenAI Agents SDK -----------------------------------------------------------------


def agents_rows() -> list[Row]:
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, SQLiteSession, function_tool
    from agents.extensions import ToolOutputTrimmer
    from agents.memory import SessionSettings
    from openai import AsyncOpenAI

    from cutctx_adapters.integrations.openai_agents import compacting_input_filter

    def run(option: str, config: RunConfig, with_session: bool = False,
            summaries: Callable[[], int] = lambda: 0) -> Row:
        client = AsyncOpenAI(api_key="offline", base_url=BASE_URL, max_retries=0)
        agent = Agent(name="coder", instructions=INSTRUCTIONS, tools=[function_tool(read_file)],
                      model=OpenAIResponsesModel(model=MODEL, openai_client=client))
        session = SQLiteSession(f"bench-{option}") if with_session else None

        async def talk() -> None:
            items: Any = TASK
            for _ in range(RUNS):
                result = await Runner.run(agent, items if session is None else
                                          (TASK if items == TASK else "Go on."),
                                          max_turns=STEPS, run_config=config, session=session)
                items = [*result.to_input_list(), {"role": "user", "content": "Go on."}]

        with scripted_api(STEPS, answer_every=STEPS // RUNS) as api:
            asyncio.run(talk())
        return measured("openai-agents", option, api, summaries())

    fake = FakeSummaries()
    return [
        run("none", RunConfig(tracing_disabled=True)),
        run("SessionSettings(limit=40)", RunConfig(
            tracing_disabled=True, session_settings=SessionSettings(limit=40)),
            with_session=True),
        run("ToolOutputTrimmer()", RunConfig(tracing_disabled=True,
                                             call_model_input_filter=ToolOutputTrimmer())),
        run("cutctx filter", RunConfig(tracing_disabled=True, call_model_input_filter=(
            compacting_input_filter(window=WINDOW, reserve=RESERVE)))),
        run("cutctx filter + summarizer", RunConfig(
            tracing_disabled=True, call_model_input_filter=compacting_input_filter(
                window=WINDOW, reserve=RESERVE, summarizer=fake)), summaries=lambda: fake.calls),
    ]


# --- LangChain -----------------------------------------------------------------------------


def langchain_rows() -> list[Row]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import (
        ClearToolUsesEdit,
        ContextEditingMiddleware,
        SummarizationMiddleware,
    )
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.runnables import RunnableConfig
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from pydantic import SecretStr

    from cutctx_adapters.integrations.langchain import CompactionMiddleware

    def run(option: str, middleware: list[Any], summaries: Callable[[], int] = lambda: 0
            ) -> Row:
        model = ChatOpenAI(model=MODEL, base_url=BASE_URL, api_key=SecretStr("offline"),
                           max_retries=0)
        agent = create_agent(model, tools=[read_file], system_prompt=INSTRUCTIONS,
                             middleware=middleware, checkpointer=InMemorySaver())
        config: RunnableConfig = {"configurable": {"thread_id": option},
                                  "recursion_limit": 4 * STEPS}
        with scripted_api(STEPS, answer_every=STEPS // RUNS) as api:
            text = TASK
            for _ in range(RUNS):
                agent.invoke({"messages": [{"role": "user", "content": text}]}, config=config)
                text = "Go on."
        return measured("langchain", option, api, summaries())

    class CountingFake(FakeListChatModel):
        """A deterministic summary model that counts its calls."""

        calls: int = 0

        def _call(self, *args: Any, **kwargs: Any) -> str:
            self.calls += 1
            return super()._call(*args, **kwargs)

    summarizer = CountingFake(responses=["Read the modules listed; no failure found yet."])
    fake = FakeSummaries()
    return [
        run("none", []),
        run("SummarizationMiddleware", [SummarizationMiddleware(
            summarizer, trigger=("tokens", int(BUDGET * 0.9)), keep=("messages", 20))],
            summaries=lambda: summarizer.calls),
        run("ContextEditingMiddleware", [ContextEditingMiddleware(
            edits=[ClearToolUsesEdit(trigger=int(BUDGET * 0.9))])]),
        run("cutctx middleware", [CompactionMiddleware(window=WINDOW, reserve=RESERVE)]),
        run("cutctx middleware + summarizer", [CompactionMiddleware(
            window=WINDOW, reserve=RESERVE, summarizer=fake)], summaries=lambda: fake.calls),
        run("cutctx middleware, persist", [CompactionMiddleware(
            window=WINDOW, reserve=RESERVE, persist=True)]),
    ]


# --- pydantic-ai ---------------------------------------------------------------------------


def pydantic_ai_rows() -> list[Row]:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    from cutctx_adapters.integrations.pydantic_ai import CompactionCapability

    limits = UsageLimits(request_limit=4 * STEPS, tool_calls_limit=4 * STEPS)

    def run(option: str, capabilities: list[AbstractCapability[Any]]) -> Row:
        client = AsyncOpenAI(api_key="offline", base_url=BASE_URL, max_retries=0)
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, instructions=INSTRUCTIONS, tools=[read_file],
                      capabilities=capabilities)
        with scripted_api(STEPS, answer_every=STEPS // RUNS) as api:
            result = agent.run_sync(TASK, usage_limits=limits)
            for _ in range(RUNS - 1):
                result = agent.run_sync("Go on.", message_history=result.all_messages(),
                                        usage_limits=limits)
        return measured("pydantic-ai", option, api, 0)

    rows = [run("none", []),
            run("cutctx capability", [CompactionCapability(window=WINDOW, reserve=RESERVE)])]
    try:
        from pydantic_ai_harness import TieredCompaction  # type: ignore[import-not-found]
    except ImportError:
        print("pydantic-ai-harness: not installed (its newest release, 0.62.0, requires "
              "pydantic-ai-slim 2.62, older than the 2.66 these hooks are tested with)")
    else:
        rows.append(run("TieredCompaction()", [TieredCompaction()]))
    return rows


def main() -> None:
    rows = [*agents_rows(), *langchain_rows(), *pydantic_ai_rows()]
    print(f"\n{RUNS} runs, {STEPS} tool-calling turns; window {WINDOW}, budget {BUDGET}; "
          "cost: input tokens, the prefix shared with the previous request at 0.1x")
    print(f"{'framework':<14} {'option':<32} {'calls':>5} {'over':>5} {'breaks':>6} "
          f"{'cost k':>8} {'orphans':>7} {'summaries':>9}")
    for row in rows:
        print(f"{row.framework:<14} {row.option:<32} {row.requests:>5} {row.over:>5} "
              f"{row.breaks:>6} {row.cost:>8.0f} {row.orphans:>7} {row.summaries:>9}")


if __name__ == "__main__":
    main()

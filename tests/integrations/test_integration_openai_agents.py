"""The OpenAI Agents SDK's ``call_model_input_filter`` end to end: real ``Agent``s and ``Runner``
over ``OpenAIResponsesModel`` on a real ``AsyncOpenAI`` client, its HTTP answered by the scripted
model (respx over httpcore2). One conversation of four runs, 212 tool-calling turns."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents",
                    reason="needs the openai-agents extra: pip install 'cutctx[openai-agents]'")

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.run_config import CallModelData, ModelInputData
from openai import AsyncOpenAI

from cutctx_adapters.integrations.openai_agents import (
    SERVER_HELD,
    CompactingInputFilter,
    compacting_input_filter,
)
from cutctx_adapters.session import CallReport
from tests._support import frameworks as fw

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

RUNS, STEPS = 4, 53


def _agent(**settings: Any) -> Agent[Any]:
    client = AsyncOpenAI(api_key="test", base_url=fw.BASE_URL, max_retries=0)
    return Agent(name="coder", instructions=fw.INSTRUCTIONS, tools=[function_tool(fw.read_file)],
                 model=OpenAIResponsesModel(model=fw.MODEL, openai_client=client),
                 model_settings=ModelSettings(**settings))


class _Spy:
    """The filter, and what it was given and gave back on each call."""

    def __init__(self, inner: CompactingInputFilter) -> None:
        self.inner = inner
        self.calls: list[tuple[list[Any], ModelInputData]] = []

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        given = list(data.model_data.input)
        out = await self.inner(data)
        self.calls.append((given, out))
        return out


@pytest.fixture(scope="module")
def conversation(tiktoken_cache: Any) -> Iterator[tuple[fw.Wire, _Spy, list[Any], list[str]]]:
    reports: list[CallReport] = []
    spy = _Spy(compacting_input_filter(window=fw.WINDOW, reserve=fw.RESERVE,
                                       on_call=reports.append))
    config = RunConfig(call_model_input_filter=spy, tracing_disabled=True)
    agent = _agent()

    async def talk() -> tuple[list[Any], list[str]]:
        items: Any = fw.TASK
        answers = []
        for _ in range(RUNS):
            result = await Runner.run(agent, items, max_turns=STEPS + 5, run_config=config)
            answers.append(result.final_output)
            items = [*result.to_input_list(), {"role": "user", "content": "Go on."}]
        return items, answers

    with fw.scripted_api(RUNS * STEPS, answer_every=STEPS) as api:
        items, answers = asyncio.run(talk())
    yield fw.Wire.of(api, reports), spy, items, answers


def test_every_request_fits_is_paired_and_keeps_the_instructions(conversation: Any) -> None:
    wire, _, _, answers = conversation
    fw.check_wire(wire, calls=RUNS * (STEPS + 1))
    assert answers == [fw.ANSWER] * RUNS


def test_items_kept_are_the_very_objects_the_sdk_gave(conversation: Any) -> None:
    _, spy, _, _ = conversation
    for given, out in spy.calls:
        fw.same_objects(given, out.input)
        assert out.instructions == fw.INSTRUCTIONS


def test_the_sdks_own_history_is_left_whole(conversation: Any) -> None:
    _, _, items, _ = conversation
    calls = {item["call_id"]: json.loads(item["arguments"])["path"] for item in items
             if item.get("type") == "function_call"}
    outputs = [item for item in items if item.get("type") == "function_call_output"]
    assert len(outputs) == len(calls) > RUNS * STEPS
    assert all(item["output"] == fw.read_file(calls[item["call_id"]]) for item in outputs)


def test_run_sync_goes_through_the_filter_too() -> None:
    reports: list[CallReport] = []
    config = RunConfig(call_model_input_filter=compacting_input_filter(
        window=fw.WINDOW, reserve=fw.RESERVE, on_call=reports.append), tracing_disabled=True)
    with fw.scripted_api(12) as api:
        result = Runner.run_sync(_agent(), fw.TASK, max_turns=20, run_config=config)
    assert result.final_output == fw.ANSWER and len(reports) == len(api.sent) == 13
    assert any(report.decision in ("compacted", "recompacted") for report in reports)
    assert max(fw.Wire.of(api, reports).tokens(body) for body in api.sent) <= fw.WINDOW - fw.RESERVE


def test_a_server_held_conversation_is_passed_through_with_a_report() -> None:
    spy = _Spy(compacting_input_filter(window=fw.WINDOW, reserve=fw.RESERVE))
    config = RunConfig(call_model_input_filter=spy, tracing_disabled=True)
    with fw.scripted_api(3) as api:
        Runner.run_sync(_agent(), fw.TASK, max_turns=10, run_config=config,
                        auto_previous_response_id=True)
    assert ([body.get("previous_response_id") for body in api.sent][1:] ==
         ["resp_0", "resp_1", "resp_2"])
    for given, out in spy.calls[1:]:  # only what the server has not seen: tool outputs
        assert out.input == given and all(a is b for a, b in zip(out.input, given, strict=True))
    report = spy.inner.last_report
    assert report is not None and report.decision == "not_possible"
    assert report.reason == SERVER_HELD


def test_server_side_compaction_turned_on_defers_to_the_server() -> None:
    reports: list[CallReport] = []
    config = RunConfig(call_model_input_filter=compacting_input_filter(
        window=fw.WINDOW, reserve=fw.RESERVE, on_call=reports.append), tracing_disabled=True)
    agent = _agent(context_management=[{"type": "compaction", "compact_threshold": 200_000}])
    with fw.scripted_api(12) as api:
        Runner.run_sync(agent, fw.TASK, max_turns=20, run_config=config)
    assert Counter(report.decision for report in reports) == {"deferred": len(api.sent)}
    assert "context_management" in reports[-1].reason
    assert len(api.sent[-1]["input"]) == 27  # the task, 13 calls and outputs: all of it


def test_a_chat_completions_model_runs_with_the_sdks_placeholder_ids() -> None:
    """Every item the SDK converts from a chat completion has the id ``__fake_id__``: its own
    placeholder, not a history error (issue 39, item 12)."""
    reports: list[CallReport] = []
    spy = _Spy(compacting_input_filter(window=fw.WINDOW, reserve=fw.RESERVE,
                                       on_call=reports.append))
    client = AsyncOpenAI(api_key="test", base_url=fw.BASE_URL, max_retries=0)
    agent = Agent(name="coder", instructions=fw.INSTRUCTIONS,
                  tools=[function_tool(fw.read_file)],
                  model=OpenAIChatCompletionsModel(model=fw.MODEL, openai_client=client))
    config = RunConfig(call_model_input_filter=spy, tracing_disabled=True)
    with fw.scripted_api(20) as api:
        result = Runner.run_sync(agent, fw.TASK, max_turns=30, run_config=config)
    assert result.final_output == fw.ANSWER and len(reports) == len(api.sent) == 21
    assert sum(item.get("id") == "__fake_id__" for item in spy.calls[-1][0]) > 20
    assert any(report.decision in ("compacted", "recompacted") for report in reports)
    for given, out in spy.calls:
        fw.same_objects(given, out.input)
    assert max(fw.Wire.of(api, reports).tokens(body) for body in api.sent) <= fw.WINDOW - fw.RESERVE

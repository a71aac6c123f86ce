"""pydantic-ai's ``CompactionCapability`` and ``compacting_history_processor`` end to end: real
``Agent``s over ``OpenAIChatModel`` on a real ``AsyncOpenAI`` client, its HTTP answered by the
scripted model (respx over httpcore2). One conversation of four runs, 212 tool-calling turns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai",
                    reason="needs the pydantic-ai extra: pip install 'cutctx[pydantic-ai]'")

from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from cutctx_adapters.integrations.pydantic_ai import (
    CompactionCapability,
    compacting_history_processor,
)
from cutctx_adapters.session import CallReport
from tests._support import frameworks as fw

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

RUNS, STEPS = 4, 53
LIMITS = UsageLimits(request_limit=1_000, tool_calls_limit=1_000)


@dataclasses.dataclass
class _Spy(AbstractCapability[Any]):
    """After the compaction: the run's messages and the request's, per model request."""

    calls: list[tuple[list[ModelMessage], list[ModelMessage]]] = dataclasses.field(
        default_factory=list)

    async def prepare_model_request(self, ctx: RunContext[Any],
                                    request_context: ModelRequestContext
                                    ) -> ModelRequestContext:
        self.calls.append((list(ctx.messages), list(request_context.messages)))
        return request_context


def _agent(*capabilities: AbstractCapability[Any]) -> Agent[None, str]:
    client = AsyncOpenAI(api_key="test", base_url=fw.BASE_URL, max_retries=0)
    model = OpenAIChatModel(fw.MODEL, provider=OpenAIProvider(openai_client=client))
    return Agent(model, instructions=fw.INSTRUCTIONS, tools=[fw.read_file],
                 capabilities=list(capabilities))


def _talk(agent: Agent[None, str], runs: int) -> tuple[list[ModelMessage], list[str]]:
    result = agent.run_sync(fw.TASK, usage_limits=LIMITS)
    answers = [result.output]
    for _ in range(runs - 1):
        result = agent.run_sync("Go on.", message_history=result.all_messages(),
                                usage_limits=LIMITS)
        answers.append(result.output)
    return result.all_messages(), answers


@pytest.fixture(scope="module")
def conversation(tiktoken_cache: Any) -> Iterator[tuple[fw.Wire, _Spy, list[ModelMessage],
                                                        list[str]]]:
    reports: list[CallReport] = []
    spy = _Spy()
    agent = _agent(CompactionCapability(window=fw.WINDOW, reserve=fw.RESERVE,
                                        on_call=reports.append),
                   spy)
    with fw.scripted_api(RUNS * STEPS, answer_every=STEPS) as api:
        messages, answers = _talk(agent, RUNS)
    yield fw.Wire.of(api, reports), spy, messages, answers


def test_every_request_fits_is_paired_and_keeps_the_instructions(conversation: Any) -> None:
    wire, _, _, answers = conversation
    fw.check_wire(wire, calls=RUNS * (STEPS + 1))
    assert answers == [fw.ANSWER] * RUNS


def test_messages_sent_whole_are_the_runs_own_objects(conversation: Any) -> None:
    _, spy, _, _ = conversation
    masked = 0
    for history, sent in spy.calls:
        ids = {id(message) for message in history}
        for message in sent:
            if id(message) in ids:
                continue
            assert isinstance(message, ModelRequest) and message not in history
            masked += sum(isinstance(part, ToolReturnPart) for part in message.parts)
    assert masked > 0


def test_the_runs_own_history_is_left_whole(conversation: Any) -> None:
    _, spy, messages, _ = conversation
    returns = [part for message in messages if isinstance(message, ModelRequest)
               for part in message.parts if isinstance(part, ToolReturnPart)]
    assert len(returns) > RUNS * STEPS
    assert all(str(part.content).startswith("src/") for part in returns)
    assert len(spy.calls[-1][0]) == len(messages) - 1


def test_the_history_processor_persists_the_compacted_history() -> None:
    reports: list[CallReport] = []
    processor = compacting_history_processor(window=fw.WINDOW, reserve=fw.RESERVE,
                                             on_call=reports.append)
    spy = _Spy()
    agent = _agent(ProcessHistory(processor), spy)
    with fw.scripted_api(60, answer_every=30) as api:
        messages, answers = _talk(agent, 2)
    assert answers == [fw.ANSWER, fw.ANSWER] and len(reports) == len(api.sent)
    assert any(report.decision == "compacted" for report in reports)
    assert len(messages) < 40 < len(api.sent)
    for history, sent in spy.calls:  # the run's history is what is sent
        assert history == sent
    assert processor.last_report is reports[-1]


def test_provider_compaction_in_the_history_is_deferred_to() -> None:
    reports: list[CallReport] = []
    agent = _agent(CompactionCapability(window=fw.WINDOW, reserve=fw.RESERVE,
                                        on_call=reports.append))
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(fw.TASK)]),
        ModelResponse(parts=[CompactionPart(content="summary", provider_name="anthropic"),
                             TextPart("Reading.")]),
    ]
    with fw.scripted_api(2):
        agent.run_sync("Go on.", message_history=history, usage_limits=LIMITS)
    assert {report.decision for report in reports} == {"deferred"}
    assert "CompactionPart" in reports[0].reason


@pytest.mark.parametrize("factor", [0.8, 1.5])
def test_the_replies_usage_teaches_the_capabilitys_counts(factor: float) -> None:
    reports: list[CallReport] = []
    agent = _agent(CompactionCapability(window=12_000, reserve=fw.RESERVE,
                                        on_call=reports.append))
    with fw.scripted_api(40, bill=fw.billed_at(factor)) as api:
        _talk(agent, 1)
    fw.check_follows_the_bill(api, reports, factor)

"""pydantic-ai's ``CompactionCapability`` and ``compacting_history_processor`` end to end: real
``Agent``s over ``OpenAIChatModel`` on a real ``AsyncOpenAI`` client, its HTTP answered by the
scripted model (respx over httpcore2). One conversation of four runs, 212 tool-calling turns."""

from __future__ import annotations

import dataclasses
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai",
                    reason="needs the pydantic-ai extra: pip install 'cutctx[pydantic-ai]'")

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from cutctx import ValidationError
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


def _words(count: int, tag: str) -> str:
    return tag + " " + " ".join(f"word{n}" for n in range(count))


def _anthropic_agent(*capabilities: AbstractCapability[Any]) -> Agent[None, str]:
    client = AsyncAnthropic(api_key="test", base_url=fw.ANTHROPIC_URL, max_retries=0)
    model = AnthropicModel("claude-sonnet-4-5",
                           provider=AnthropicProvider(anthropic_client=client))
    return Agent(model, instructions=fw.INSTRUCTIONS, capabilities=list(capabilities))


def _long_talk(turns: int, words: int) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for number in range(turns):
        out += [ModelRequest(parts=[UserPromptPart(_words(words, f"note {number}"))]),
                ModelResponse(parts=[TextPart(f"Noted {number}.")], provider_name="anthropic")]
    return out


def test_a_compaction_part_no_model_leaves_out_does_not_stop_compaction() -> None:
    """A provider's ``CompactionPart`` in the history, served by a model that sends the whole
    history (another provider's): compacted like any history, not deferred for good (issue 39,
    item 15)."""
    reports: list[CallReport] = []
    agent = _agent(CompactionCapability(window=fw.WINDOW, reserve=fw.RESERVE,
                                        on_call=reports.append))
    history = [*_long_talk(6, 600), ModelResponse(parts=[
        CompactionPart(content="The user shared notes.", provider_name="anthropic"),
        TextPart("Continuing.")], provider_name="anthropic"), *_long_talk(2, 600)]
    with fw.scripted_api(0) as api:
        agent.run_sync("Go on.", message_history=history, usage_limits=LIMITS)
    assert [report.decision for report in reports] == ["compacted"]
    assert fw.Wire.of(api, reports).tokens(api.sent[0]) <= fw.WINDOW - fw.RESERVE


def test_what_the_models_own_compaction_covers_is_left_to_it_uncounted() -> None:
    """Served by the provider whose compaction it is, the history before it is left out by the
    model: left as it is and not counted, and what follows is compacted as it grows."""
    reports: list[CallReport] = []
    capability = CompactionCapability(window=4_000, reserve=500, on_call=reports.append)
    boundary = ModelResponse(parts=[
        CompactionPart(content="The user shared six long notes.", provider_name="anthropic"),
        TextPart("Continuing.")], provider_name="anthropic")
    covered = _long_talk(6, 3_000)
    history = [*covered, ModelRequest(parts=[UserPromptPart("Compact.")]), boundary]
    with fw.anthropic_api() as sent:
        _anthropic_agent(capability).run_sync("Go on.", message_history=history)
        _anthropic_agent(capability).run_sync(
            "And then?", message_history=[*history, *_long_talk(6, 600)])
    assert [report.decision for report in reports] == ["unchanged", "compacted"]
    for body in sent:  # the model left the covered history out; the rest fits
        assert body["messages"][0]["content"][0]["type"] == "compaction"
        assert len(json.dumps(body)) < 4 * 3_500


def test_a_server_tool_result_is_counted_and_clipped_as_the_core_adapter_does() -> None:
    """A 60k-word page fetched by Anthropic's web_fetch (``NativeToolCallPart`` and
    ``NativeToolReturnPart``) in a 20k window: counted, and clipped in its own block, its
    ``tool_use_id`` and url kept (issue 39, item 14: it was left out and sent whole)."""
    page = _words(60_000, "page")
    fetched = {"type": "web_fetch_result", "url": "https://docs.test/a", "retrieved_at": "now",
               "content": {"type": "document", "title": "A", "source": {
                   "type": "text", "media_type": "text/plain", "data": page}}}
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Read https://docs.test/a")]),
        ModelResponse(parts=[
            TextPart("Fetching."),
            NativeToolCallPart(tool_name="web_fetch", args={"url": "https://docs.test/a"},
                               tool_call_id="srvtoolu_1", provider_name="anthropic"),
            NativeToolReturnPart(tool_name="web_fetch", content=fetched,
                                 tool_call_id="srvtoolu_1", provider_name="anthropic"),
            TextPart("It is long.")], provider_name="anthropic")]
    capability = CompactionCapability(window=20_000, reserve=1_000)
    with fw.anthropic_api() as sent:
        _anthropic_agent(capability).run_sync("Sum it up.", message_history=history)
    report = capability.last_report
    assert report is not None and report.decision == "compacted" and not report.budget_unmet
    assert report.tokens_in is not None and report.tokens_in > 60_000
    blocks = sent[0]["messages"][1]["content"]
    result = next(block for block in blocks if block["type"] == "web_fetch_tool_result")
    assert result["tool_use_id"] == "srvtoolu_1" and result["content"]["url"] == fetched["url"]
    assert len(json.dumps(sent[0])) < 4 * 19_000


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(height * (width + 1)))) + chunk(b"IEND", b""))


def test_a_clipped_prompt_keeps_its_image() -> None:
    """A pasted log with a screenshot, clipped as the last resort: the clip keeps the image,
    as the engine's clips do (issue 39, item 15: the copy kept only text)."""
    spy = _Spy()
    capability = CompactionCapability(window=fw.WINDOW, reserve=fw.RESERVE)
    image = BinaryContent(data=_png(64, 64), media_type="image/png")
    with fw.scripted_api(0):
        _agent(capability, spy).run_sync([_log(1_500), image], usage_limits=LIMITS)
    report = capability.last_report
    assert report is not None and report.turns is not None and report.turns.clipped
    prompt = spy.calls[0][1][-1].parts[0]
    assert isinstance(prompt, UserPromptPart) and not isinstance(prompt.content, str)
    assert any(item is image for item in prompt.content)
    assert str(prompt.content[0]).startswith("worker 0: step 0")


@pytest.mark.parametrize("processor", [False, True], ids=["capability", "processor"])
def test_model_names_what_counts_are_for(processor: bool) -> None:
    """``model=`` as the other two hooks take it (issue 39, item 16): here the window of a
    model the table knows, instead of the serving model's unknown name."""
    reports: list[CallReport] = []
    options: dict[str, Any] = {"model": "gpt-4o-mini", "reserve": 500,
                               "on_call": reports.append}
    hook: AbstractCapability[Any] = (
        ProcessHistory(compacting_history_processor(**options)) if processor
        else CompactionCapability(**options))
    client = AsyncOpenAI(api_key="test", base_url=fw.BASE_URL, max_retries=0)
    agent = Agent(OpenAIChatModel("my-finetune", provider=OpenAIProvider(openai_client=client)),
                  capabilities=[hook])
    with fw.scripted_api(0):
        agent.run_sync(fw.TASK, usage_limits=LIMITS)
    assert reports[0].model == "gpt-4o-mini" and reports[0].prompt_budget == 128_000 - 500
    with pytest.raises(ValidationError, match="model must be a str"):
        CompactionCapability(model=4)  # type: ignore[arg-type]


def _log(lines: int) -> str:
    return "\n".join(f"worker {n}: step {n % 17} finished in {n % 97} ms" for n in range(lines))


def test_a_clip_is_a_copy_of_its_own_prompt() -> None:
    """Two prompts in a row, the newer a pasted log clipped: the clip stands in the newer's
    request (issue 39, item 13: it went out in the older one's), and the older, dropped or
    clipped to its own share, is never the log's."""
    spy = _Spy()
    capability = CompactionCapability(window=fw.WINDOW, reserve=fw.RESERVE)
    remark = ModelRequest(parts=[UserPromptPart("Some context first. " * 150)],
                          metadata={"from": "alice"})
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(fw.TASK)]),
                                   ModelResponse(parts=[TextPart("Reading the logs.")]), remark]
    with fw.scripted_api(0):
        _agent(capability, spy).run_sync(_log(1_500), message_history=history,
                                         usage_limits=LIMITS)
    report = capability.last_report
    assert report is not None and report.turns is not None and report.turns.clipped
    run, sent = spy.calls[0]
    for message in sent:
        if isinstance(message, ModelRequest) and message.metadata == remark.metadata:
            older = message.parts[0]
            assert isinstance(older, UserPromptPart)
            assert str(older.content).startswith("Some context first.")
    clip = sent[-1]
    assert isinstance(clip, ModelRequest) and clip.metadata == run[-1].metadata
    prompt = clip.parts[0]
    assert isinstance(prompt, UserPromptPart)
    assert str(prompt.content).startswith("worker 0: step 0")


@pytest.mark.parametrize("factor", [0.8, 1.5])
def test_the_replies_usage_teaches_the_capabilitys_counts(factor: float) -> None:
    reports: list[CallReport] = []
    agent = _agent(CompactionCapability(window=12_000, reserve=fw.RESERVE,
                                        on_call=reports.append))
    with fw.scripted_api(40, bill=fw.billed_at(factor)) as api:
        _talk(agent, 1)
    fw.check_follows_the_bill(api, reports, factor)

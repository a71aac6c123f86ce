"""LangChain v1's ``CompactionMiddleware`` end to end: ``create_agent`` over ``ChatOpenAI`` on a
real ``openai`` client, its HTTP answered by the scripted model (respx over httpcore2). One
checkpointed conversation of four invocations, 212 tool-calling turns."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain",
                    reason="needs the langchain extra: pip install 'cutctx[langchain]'")
pytest.importorskip("langchain_openai", reason="needs langchain-openai (in cutctx[dev])")

from langchain.agents import create_agent
from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import SecretStr

from cutctx import SummarizationRequest, TranscriptTurn, ValidationError
from cutctx_adapters.integrations.langchain import CompactionMiddleware
from cutctx_adapters.session import CallReport
from tests._support import frameworks as fw

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

RUNS, STEPS = 4, 53
THREAD = {"configurable": {"thread_id": "t1"}, "recursion_limit": 1_000}


class _Spy(AgentMiddleware[AgentState[Any], Any, Any]):
    """Inside the compaction: the state's messages and the request's, per model call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[AnyMessage], list[AnyMessage], SystemMessage | None]] = []

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
                        ) -> ModelResponse[Any]:
        self.calls.append((list(request.state["messages"]), list(request.messages),
                           request.system_message))
        return handler(request)

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        self.calls.append((list(request.state["messages"]), list(request.messages),
                           request.system_message))
        return await handler(request)


def _agent(middleware: CompactionMiddleware, spy: _Spy) -> Any:
    model = ChatOpenAI(model=fw.MODEL, base_url=fw.BASE_URL, api_key=SecretStr("test"),
                       max_retries=0)
    return create_agent(model, tools=[fw.read_file], system_prompt=fw.INSTRUCTIONS,
                        middleware=[middleware, spy], checkpointer=InMemorySaver())


def _talk(agent: Any, runs: int) -> list[AnyMessage]:
    state = agent.invoke({"messages": [{"role": "user", "content": fw.TASK}]}, config=THREAD)
    for _ in range(runs - 1):
        state = agent.invoke({"messages": [{"role": "user", "content": "Go on."}]},
                             config=THREAD)
    messages: list[AnyMessage] = state["messages"]
    return messages


@pytest.fixture(scope="module")
def conversation(tiktoken_cache: Any) -> Iterator[tuple[fw.Wire, _Spy, list[AnyMessage]]]:
    reports: list[CallReport] = []
    spy = _Spy()
    agent = _agent(CompactionMiddleware(window=fw.WINDOW, reserve=fw.RESERVE,
                                        on_call=reports.append),
                   spy)
    with fw.scripted_api(RUNS * STEPS, answer_every=STEPS) as api:
        messages = _talk(agent, RUNS)
    yield fw.Wire.of(api, reports), spy, messages


def test_every_request_fits_is_paired_and_keeps_the_system_message(conversation: Any
                                                                   ) -> None:
    wire, _, messages = conversation
    fw.check_wire(wire, calls=RUNS * (STEPS + 1))
    assert [message.content for message in messages if isinstance(message, AIMessage)
            and not message.tool_calls] == [fw.ANSWER] * RUNS


def test_kept_messages_are_the_callers_and_stubs_are_copies_of_their_class(conversation: Any
                                                                           ) -> None:
    _, spy, _ = conversation
    stubs = 0
    for state, sent, system in spy.calls:
        assert system is not None and system.content == fw.INSTRUCTIONS
        fw.same_objects(state, sent)
        by_id = {message.id: message for message in state}
        for message in sent:
            if any(message is other for other in state):
                continue
            if isinstance(message, HumanMessage) and str(message.id).startswith("cutctx-"):
                continue  # a summary
            original = by_id[message.id]
            assert type(message) is type(original) and message.content != original.content
            if isinstance(message, ToolMessage):
                assert message.tool_call_id == original.tool_call_id
                stubs += 1
    assert stubs > 0


def test_the_stored_history_is_left_whole(conversation: Any) -> None:
    _, spy, messages = conversation
    outputs = [message for message in messages if isinstance(message, ToolMessage)]
    assert len(outputs) > RUNS * STEPS
    assert all(isinstance(message.content, str) and message.content.startswith("src/")
               for message in outputs)
    assert len(spy.calls[-1][0]) == len(messages) - 1  # all but the last reply, every call


def test_persist_replaces_the_checkpointed_history_with_what_was_sent() -> None:
    reports: list[CallReport] = []
    spy = _Spy()
    agent = _agent(CompactionMiddleware(window=fw.WINDOW, reserve=fw.RESERVE, persist=True,
                                        on_call=reports.append), spy)
    with fw.scripted_api(60, answer_every=30) as api:
        messages = _talk(agent, 2)
    wire = fw.Wire.of(api, reports)
    assert max(wire.tokens(body) for body in api.sent) <= fw.WINDOW - fw.RESERVE
    assert len(messages) < 40 < len(api.sent)  # the checkpoint stopped growing
    assert reports[-1].decision in ("unchanged", "appended", "compacted")
    compacted = [index for index, report in enumerate(reports[:-1])
                 if report.decision == "compacted"]
    assert compacted
    for index in compacted:  # the next call's state starts with what this call sent
        sent = spy.calls[index][1]
        assert spy.calls[index + 1][0][:len(sent)] == sent


def test_ainvoke_compacts_through_awrap_model_call() -> None:
    reports: list[CallReport] = []
    spy = _Spy()
    agent = _agent(CompactionMiddleware(window=fw.WINDOW, reserve=fw.RESERVE,
                                        on_call=reports.append), spy)
    with fw.scripted_api(12) as api:
        state = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": fw.TASK}]},
                                          config=THREAD))
    assert state["messages"][-1].content == fw.ANSWER and len(reports) == len(api.sent) == 13
    assert any(report.decision in ("compacted", "recompacted") for report in reports)
    assert max(fw.Wire.of(api, reports).tokens(body) for body in api.sent) <= fw.WINDOW - fw.RESERVE


def test_settings_are_checked_when_the_middleware_is_made() -> None:
    with pytest.raises(ValidationError, match="did you mean 'window'"):
        CompactionMiddleware(windw=4_000)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="persist"):
        CompactionMiddleware(persist="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("factor", [0.8, 1.5])
def test_the_replies_usage_teaches_the_counts(factor: float) -> None:
    reports: list[CallReport] = []
    agent = _agent(CompactionMiddleware(window=12_000, reserve=fw.RESERVE,
                                        on_call=reports.append), _Spy())
    with fw.scripted_api(40, bill=fw.billed_at(factor)) as api:
        _talk(agent, 1)
    fw.check_follows_the_bill(api, reports, factor)


def test_the_replies_usage_teaches_the_counts_of_ainvoke() -> None:
    reports: list[CallReport] = []
    agent = _agent(CompactionMiddleware(window=12_000, reserve=fw.RESERVE,
                                        on_call=reports.append), _Spy())
    with fw.scripted_api(40, bill=fw.billed_at(1.4)) as api:
        asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": fw.TASK}]},
                                  config={**THREAD, "configurable": {"thread_id": "a1"}}))
    fw.check_follows_the_bill(api, reports, 1.4)


def _log(lines: int) -> str:
    return "\n".join(f"worker {n}: step {n % 17} finished in {n % 97} ms" for n in range(lines))


def test_a_clip_goes_out_as_a_copy_of_its_own_message() -> None:
    """Two user messages in a row, the newer a pasted log clipped: the clip is a copy of the
    newer, its id and name kept (issue 39, item 13: it went out as a copy of the older), and
    the older, dropped or clipped to its own share, is a copy of itself."""
    spy = _Spy()
    middleware = CompactionMiddleware(window=fw.WINDOW, reserve=fw.RESERVE)
    history: list[AnyMessage] = [
        HumanMessage(fw.TASK, id="task"), AIMessage("Reading the logs.", id="reply"),
        HumanMessage("Some context first. " * 150, id="remark", name="alice"),
        HumanMessage(_log(1_500), id="log", name="bob")]
    with fw.scripted_api(0):
        _agent(middleware, spy).invoke({"messages": history}, config=THREAD)
    report = middleware.last_report
    assert report is not None and report.turns is not None and report.turns.clipped
    sent = {message.id: message for message in spy.calls[0][1]}
    if "remark" in sent:
        assert sent["remark"].name == "alice"
        assert str(sent["remark"].content).startswith("Some context first.")
    clip = sent["log"]
    assert clip.name == "bob" and clip.content != history[3].content
    assert str(clip.content).startswith("worker 0: step 0")


def test_a_server_tool_result_is_counted_and_clipped_as_the_core_adapter_does() -> None:
    """An ``AIMessage`` holding Anthropic's ``server_tool_use`` and a 60k-word
    ``web_fetch_tool_result``, in a 20k window: counted, and the result clipped in its own
    block, its ``tool_use_id`` and url kept (issue 39, item 14: read as ~50 tokens, sent
    whole)."""
    page = " ".join(f"word{n}" for n in range(60_000))
    fetched = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {
        "type": "web_fetch_result", "url": "https://docs.test/a", "content": {
            "type": "document", "title": "A",
            "source": {"type": "text", "media_type": "text/plain", "data": page}}}}
    fetching = AIMessage(id="fetch", content=[
        {"type": "text", "text": "Fetching."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch",
         "input": {"url": "https://docs.test/a"}},
        fetched, {"type": "text", "text": "It is long."}])
    spy = _Spy()
    middleware = CompactionMiddleware(window=20_000, reserve=1_000)
    history: list[AnyMessage] = [HumanMessage("Read https://docs.test/a", id="ask"), fetching,
                                 HumanMessage("Sum it up.", id="go")]
    with fw.scripted_api(0) as api:
        _agent(middleware, spy).invoke({"messages": history}, config=THREAD)
    report = middleware.last_report
    assert report is not None and report.decision == "compacted" and not report.budget_unmet
    assert report.tokens_in is not None and report.tokens_in > 60_000
    sent = spy.calls[0][1][1]
    assert sent.id == "fetch" and isinstance(sent.content, list)
    result = next(block for block in sent.content
                  if isinstance(block, dict) and block["type"] == "web_fetch_tool_result")
    assert result["tool_use_id"] == "srvtoolu_1"
    assert result["content"]["url"] == "https://docs.test/a"
    assert [block["type"] for block in sent.content if isinstance(block, dict)] == [
        "text", "server_tool_use", "web_fetch_tool_result", "text"]
    assert len(json.dumps(api.sent[0])) < 4 * 19_000


def test_persisted_summaries_of_different_spans_have_different_ids() -> None:
    """``persist=True`` with a summarizer that answers the same sentence for every span: each
    summary's id names its span, so the stored history never holds one id twice (issue 39,
    item 17: the id was the text's hash, and LangGraph's updates could not tell them apart)."""
    reports: list[CallReport] = []
    spy = _Spy()

    def same_sentence(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        return "The agent read files."

    agent = _agent(CompactionMiddleware(window=fw.WINDOW, reserve=fw.RESERVE, persist=True,
                                        summarizer=same_sentence, on_call=reports.append),
                   spy)
    with fw.scripted_api(60, answer_every=30):
        messages = _talk(agent, 2)
    summaries = [message for state, _, _ in spy.calls for message in state
                 if str(message.id).startswith("cutctx-summary-")]
    assert len({message.id for message in summaries}) > 1
    for listed in [messages, *(state for state, _, _ in spy.calls),
                   *(sent for _, sent, _ in spy.calls)]:
        ids = [message.id for message in listed]
        assert len(set(ids)) == len(ids)


def test_tool_results_given_as_anthropic_blocks_are_masked_in_their_message() -> None:
    """A history in Anthropic's shape (``tool_result`` blocks inside a ``HumanMessage`` after
    the call, with text after them): read with the results first, as they answer the call,
    and each replaced in its own block (the user's text and the message's id kept)."""
    output = "\n".join(f"line {n} of the build output" for n in range(1_500))
    history: list[AnyMessage] = [HumanMessage(fw.TASK, id="task")]
    for step in range(6):
        history += [
            AIMessage(f"Step {step}.", id=f"call-{step}", tool_calls=[
                {"name": "read_file", "args": {"path": f"f{step}"}, "id": f"tu{step}",
                 "type": "tool_call"}]),
            HumanMessage(id=f"result-{step}", content=[
                {"type": "tool_result", "tool_use_id": f"tu{step}", "content": output},
                {"type": "text", "text": f"Go on ({step})."}])]
    spy = _Spy()
    middleware = CompactionMiddleware(window=20_000, reserve=1_000)
    with fw.scripted_api(0):
        _agent(middleware, spy).invoke({"messages": history}, config=THREAD)
    report = middleware.last_report
    assert report is not None and report.decision == "compacted" and not report.budget_unmet
    replaced = [message for message in spy.calls[0][1]
                if not any(message is given for given in history)]
    assert replaced
    for message in replaced:
        assert isinstance(message, HumanMessage) and isinstance(message.content, list)
        block, text = message.content
        assert isinstance(block, dict) and isinstance(text, dict)
        number = str(message.id).removeprefix("result-")
        assert block["tool_use_id"] == f"tu{number}" and block["content"] != output
        assert text["text"] == f"Go on ({number})."

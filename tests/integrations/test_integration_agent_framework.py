"""Microsoft Agent Framework's ``compaction_strategy`` end to end: an ``Agent`` over the
framework's own ``OpenAIChatCompletionClient`` on a real ``openai`` client, its HTTP answered by
the scripted model (respx over httpcore2), tools run by the framework's function loop; and the
strategy on the framework's ``Message`` lists directly (``apply_compaction``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agent_framework",
                    reason="needs the agent-framework extra: pip install 'cutctx[agent-framework]'")
pytest.importorskip("agent_framework_openai", reason="needs agent-framework-openai (cutctx[dev])")

from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    Agent,
    Content,
    Message,
    apply_compaction,
    included_messages,
)
from agent_framework.openai import OpenAIChatCompletionClient
from openai import AsyncOpenAI

from cutctx import ValidationError
from cutctx_adapters.integrations.agent_framework import CompactingStrategy
from cutctx_adapters.openai import chat
from cutctx_adapters.session import CallReport
from tests._support import frameworks as fw

pytestmark = pytest.mark.usefixtures("tiktoken_cache")


def _agent(strategy: CompactingStrategy, *, usage: bool = False) -> Agent[Any]:
    client = OpenAIChatCompletionClient(
        fw.MODEL, async_client=AsyncOpenAI(api_key="test", base_url=fw.BASE_URL, max_retries=0),
        function_invocation_configuration={"max_iterations": 500, "max_function_calls": 500})
    return Agent(client, fw.INSTRUCTIONS, tools=[fw.read_file], compaction_strategy=strategy,
                 middleware=[strategy.middleware] if usage else None)


async def _run(agent: Agent[Any], **options: Any) -> Any:
    return await agent.run(fw.TASK, **options)


def test_every_request_of_a_long_run_fits_and_is_paired() -> None:
    reports: list[CallReport] = []
    strategy = CompactingStrategy(model=fw.MODEL, window=fw.WINDOW, reserve=fw.RESERVE,
                                  on_call=reports.append)
    with fw.scripted_api(120) as api:
        response = asyncio.run(_run(_agent(strategy)))
    assert response.text == fw.ANSWER
    fw.check_wire(fw.Wire.of(api, reports), calls=121)


def _history(rounds: int) -> list[Message]:
    out = [Message("system", ["You are a coding agent."]), Message("user", ["Fix the test."])]
    for i in range(rounds):
        out.append(Message("assistant", [Content.from_function_call(
            f"c{i}", "read_file", arguments={"path": f"src/m{i}.py"})], message_id=f"a{i}"))
        out.append(Message("tool", [Content.from_function_result(
            f"c{i}", result=fw.read_file(f"src/m{i}.py") * 2)], message_id=f"t{i}"))
    out += [Message("assistant", ["Found it."]), Message("user", ["Go on."])]
    return out


def _sent(messages: list[Message]) -> list[dict[str, Any]]:
    """What the framework sends of the list, as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in included_messages(messages):
        calls = [c for c in message.contents if c.type == "function_call"]
        results = [c for c in message.contents if c.type == "function_result"]
        if results:
            out += [{"role": "tool", "tool_call_id": c.call_id, "content": c.result}
                    for c in results]
        elif calls:
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c.call_id, "type": "function",
                 "function": {"name": c.name, "arguments": "{}"}} for c in calls]})
        else:
            out.append({"role": message.role, "content": message.text})
    return out


def test_the_strategy_marks_what_is_left_out_and_never_changes_a_message() -> None:
    messages = _history(14)
    before = [(m.role, [c.to_dict() for c in m.contents]) for m in messages]
    strategy = CompactingStrategy(model=fw.MODEL, window=6_000, reserve=1_000)
    projected = asyncio.run(apply_compaction(messages, strategy=strategy))
    report = strategy.last_report
    assert report is not None and report.decision == "compacted"
    assert projected == included_messages(messages)
    chat.validate(_sent(messages))
    assert chat.count_tokens(_sent(messages), model=fw.MODEL) <= 5_000
    originals = [m for m in messages if "cutctx" not in m.additional_properties]
    assert [(m.role, [c.to_dict() for c in m.contents]) for m in originals] == before
    left_out = [m for m in originals if m.additional_properties.get(EXCLUDED_KEY)]
    assert left_out and all(m.additional_properties[EXCLUDE_REASON_KEY] == "cutctx"
                            for m in left_out)
    stubs = [m for m in projected if "cutctx" in m.additional_properties]
    assert stubs and all("cutctx" in m.contents[0].result for m in stubs)  # stubs, clips
    assert projected[0] is messages[0] and projected[-1] is messages[-1]


def test_the_same_history_gives_the_same_view_and_appends_to_it() -> None:
    messages = _history(14)
    strategy = CompactingStrategy(model=fw.MODEL, window=6_000, reserve=1_000)
    first = _sent(asyncio.run(_compacted(strategy, messages)))
    assert asyncio.run(strategy(messages)) is False  # what an earlier call did is undone first
    assert _sent(messages) == first
    messages += [Message("assistant", ["Patched."]), Message("user", ["Thanks."])]
    asyncio.run(strategy(messages))
    assert strategy.last_report is not None and strategy.last_report.decision == "appended"
    assert _sent(messages)[:len(first)] == first


async def _compacted(strategy: CompactingStrategy, messages: list[Message]) -> list[Message]:
    await strategy(messages)
    return messages


def test_another_strategys_exclusions_are_left_alone() -> None:
    messages = _history(3)
    messages[2].additional_properties[EXCLUDED_KEY] = True  # excluded by the host
    messages[3].additional_properties[EXCLUDED_KEY] = True
    strategy = CompactingStrategy(model=fw.MODEL, window=60_000)
    assert asyncio.run(strategy(messages)) is False
    assert messages[2].additional_properties[EXCLUDED_KEY] is True
    assert strategy.last_report is not None and strategy.last_report.items_in == 8


def test_a_budget_per_call_is_honoured_by_one_live_session() -> None:
    reports: list[CallReport] = []
    strategy = CompactingStrategy(model=fw.MODEL, window=60_000, on_call=reports.append)
    tight = strategy.with_budget(4_000)
    messages = _history(14)
    for serving in (strategy, tight, tight, strategy):
        asyncio.run(serving(messages))
    roomy, compacted, again, back = reports
    assert roomy.decision == "unchanged" and roomy.prompt_budget == 60_000 - 4_096
    assert compacted.decision == "compacted" and compacted.prompt_budget == 4_000
    assert again.decision == "reused"  # the same budget again: the view kept is sent again
    assert back.decision == "unchanged"  # the strategy's own budget: everything fits again
    assert included_messages(messages) == [
        m for m in messages if "cutctx" not in m.additional_properties]
    asyncio.run(tight(messages))
    assert chat.count_tokens(_sent(messages), model=fw.MODEL) <= 4_000
    session = strategy._sessions.session(chat.FORMAT, fw.MODEL)
    assert session.stored_views == 1  # one session, its view of the tight budget kept


def test_a_run_takes_its_budget_from_the_host() -> None:
    reports: list[CallReport] = []
    strategy = CompactingStrategy(model=fw.MODEL, window=60_000, on_call=reports.append)
    agent = _agent(strategy)
    with fw.scripted_api(40) as api:
        asyncio.run(_run(agent, compaction_strategy=strategy.with_budget(2_500)))
    assert {report.prompt_budget for report in reports} == {2_500}
    wire = fw.Wire.of(api, reports)
    assert max(wire.tokens(body) for body in wire.bodies) <= 2_500
    assert wire.compactions()


def test_the_replies_usage_teaches_the_counts() -> None:
    reports: list[CallReport] = []
    strategy = CompactingStrategy(model=fw.MODEL, window=12_000, reserve=fw.RESERVE,
                                  on_call=reports.append)
    with fw.scripted_api(40, bill=fw.billed_at(1.4)) as api:
        asyncio.run(_run(_agent(strategy, usage=True)))
    fw.check_follows_the_bill(api, reports, 1.4)


@pytest.mark.parametrize(("options", "field"), [
    ({"budget": 0}, "budget"), ({"budget": "4000"}, "budget"), ({"model": 4}, "model"),
    ({"windw": 6000}, "windw"),
])
def test_bad_options_are_refused_by_name(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        CompactingStrategy(**options)
    assert raised.value.details["field"] == field

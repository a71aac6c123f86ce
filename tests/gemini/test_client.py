"""``CompactingGenAI`` end to end: a real ``google.genai`` client, HTTP mocked, assertions on
the JSON the SDK actually sent."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from google import genai
from google.genai import types

from cutctx import ValidationError
from cutctx_adapters import CallReport, SummaryRejected
from cutctx_adapters.anthropic import CompactingAnthropic
from cutctx_adapters.gemini import CompactingGenAI, GeminiSummarizer, contents
from tests.gemini.api import (
    MODEL,
    SUMMARY_MODEL,
    SUMMARY_TEXT,
    answer,
    api,
    bodies,
    main_bodies,
    reply,
    route,
    sdk,
)
from tests.gemini.histories import MARKER, SIGNATURE, agent_history
from tests.gemini.rules import check_request

__all__ = ["api", "route"]  # fixtures

WINDOW, RESERVE = 6_000, 1_000
BUDGET = WINDOW - RESERVE


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


def wrap(reports: list[CallReport] | None = None, **settings: Any) -> CompactingGenAI:
    return CompactingGenAI(sdk(), window=WINDOW, reserve=RESERVE,
                           on_call=None if reports is None else reports.append, **settings)


def test_generate_content_sends_the_compacted_history(route: respx.Route) -> None:
    history = agent_history(16)
    reports: list[CallReport] = []
    response = wrap(reports).models.generate_content(model=MODEL, contents=history)
    assert isinstance(response, types.GenerateContentResponse) and response.text == "ok"
    sent = bodies(route)[-1]["contents"]
    check_request(sent, history)
    assert reports[-1].decision == "compacted"
    assert contents.count_tokens(sent, model=MODEL) <= BUDGET
    assert MARKER not in repr(reports[-1])


def test_the_config_goes_out_as_given(route: respx.Route) -> None:
    config: Any = {"system_instruction": "Be terse.", "tools": [{"function_declarations": [
        {"name": "read_file", "description": "Reads."}]}], "max_output_tokens": 500,
        "tool_config": {"function_calling_config": {"mode": "AUTO"}}}
    wrap().models.generate_content(model=MODEL, contents=agent_history(16), config=config)
    body = bodies(route)[-1]
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}], "role": "user"}
    assert body["tools"] == [{"functionDeclarations": [{"name": "read_file",
                                                        "description": "Reads."}]}]
    assert body["generationConfig"] == {"maxOutputTokens": 500}


def test_with_cached_content_only_contents_change(route: respx.Route) -> None:
    config: Any = {"cached_content": "cachedContents/abc", "max_output_tokens": 500}
    reports: list[CallReport] = []
    wrap(reports).models.generate_content(model=MODEL, contents=agent_history(16),
                                          config=config)
    body = bodies(route)[-1]
    assert set(body) == {"contents", "cachedContent", "generationConfig"}
    assert reports[-1].decision == "compacted"


def test_a_stream_compacts_and_streams(route: respx.Route) -> None:
    history = agent_history(16)
    client = wrap()  # held: a client the garbage collector closes cannot stream
    chunks = list(client.models.generate_content_stream(model=MODEL, contents=history))
    assert "".join(chunk.text or "" for chunk in chunks) == "ok"
    check_request(bodies(route)[-1]["contents"], history)


def test_the_async_twins_compact(route: respx.Route) -> None:
    client = wrap()
    history = agent_history(16)

    async def main() -> str:
        response = await client.aio.models.generate_content(model=MODEL, contents=history)
        streamed = [chunk.text async for chunk in
                    await client.aio.models.generate_content_stream(model=MODEL,
                                                                    contents=history)]
        return (response.text or "") + "".join(text or "" for text in streamed)

    assert asyncio.run(main()) == "okok"
    for body in bodies(route):
        check_request(body["contents"], history)


def test_a_chat_sends_its_whole_history_through_the_session(route: respx.Route) -> None:
    reports: list[CallReport] = []
    history: Any = agent_history(16)
    client = wrap(reports)
    chat = client.chats.create(model=MODEL, history=history)
    chat.send_message("Go on.")
    list(chat.send_message_stream("And now?"))
    sent = bodies(route)
    assert len(sent) == 2 and all(r.decision != "not_possible" for r in reports)
    assert sent[0]["contents"][-1] == {"parts": [{"text": "Go on."}], "role": "user"}
    assert contents.count_tokens(sent[1]["contents"], model=MODEL) <= BUDGET
    assert len(chat.get_history()) == len(history) + 5  # the chat's own history stays whole


def test_an_async_chat_compacts(route: respx.Route) -> None:
    client = wrap()

    async def main() -> None:
        history: Any = agent_history(16)
        chat = client.aio.chats.create(model=MODEL, history=history)
        await chat.send_message("Go on.")

    asyncio.run(main())
    assert contents.count_tokens(bodies(route)[-1]["contents"], model=MODEL) <= BUDGET


def test_a_reply_appended_as_it_came_is_read(route: respx.Route) -> None:
    client = wrap()
    history: list[Any] = agent_history(2)
    response = client.models.generate_content(model=MODEL, contents=history)
    history += [response, {"role": "user", "parts": [{"text": "More."}]}]
    client.models.generate_content(model=MODEL, contents=history)
    assert bodies(route)[-1]["contents"][-2] == {
        "role": "model", "parts": [{"text": "ok", "thoughtSignature": SIGNATURE}]}


def test_the_sdk_shorthand_goes_out_as_given(route: respx.Route) -> None:
    reports: list[CallReport] = []
    client = wrap(reports)
    client.models.generate_content(model=MODEL, contents=["Describe", types.Part(text="this")])
    assert reports[-1].decision == "not_possible"
    assert bodies(route)[-1]["contents"] == [{"parts": [{"text": "Describe"}, {"text": "this"}],
                                             "role": "user"}]
    client.models.generate_content(model=MODEL, contents="Hi")
    last = reports[-1]
    assert last.decision == "unchanged"


def test_an_interaction_chain_is_passed_through_and_reported(api: respx.Router) -> None:
    route = api.post(path__regex=r".*/interactions$").respond(json={
        "id": "int_2", "status": "completed", "outputs": [], "model": MODEL})
    reports: list[CallReport] = []
    client = wrap(reports)
    with contextlib.suppress(Exception):  # the mocked reply may not parse: what was sent is
        client.interactions.create(model=MODEL, input="Go on.",  # the point
                                   previous_interaction_id="int_1")
    assert route.called
    assert json.loads(route.calls.last.request.content)["previous_interaction_id"] == "int_1"
    assert reports[-1].decision == "not_possible"
    assert "previous_interaction_id" in reports[-1].reason


def test_other_attributes_are_the_clients_own(route: respx.Route) -> None:
    raw = sdk()
    client = CompactingGenAI(raw)
    assert client.files is raw.files and client.caches is raw.caches
    assert client.wrapped is raw


def test_the_wrong_client_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match=r"wrap it with CompactingGenAI"):
        CompactingAnthropic(sdk())  # type: ignore[type-var]
    with pytest.raises(ValidationError, match=r"got the class"):
        CompactingGenAI(genai.Client)  # type: ignore[arg-type]


# --- the summarizer --------------------------------------------------------------------------


def chat_history(rounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(rounds):
        out.append({"role": "user", "parts": [{"text": f"question {i} " + "why " * 150}]})
        out.append({"role": "model", "parts": [{"text": f"answer {i} " + "because " * 150}]})
    out.append({"role": "user", "parts": [{"text": "And finally?"}]})
    return out


def test_a_summary_comes_through_the_callers_client(route: respx.Route) -> None:
    raw = sdk()
    summarizer = GeminiSummarizer(raw, model=SUMMARY_MODEL)
    client = CompactingGenAI(raw, window=WINDOW, reserve=RESERVE, summarizer=summarizer)
    client.models.generate_content(model=MODEL, contents=chat_history(20))
    summary_bodies = [json.loads(call.request.content) for call in route.calls
                      if SUMMARY_MODEL in call.request.url.path]
    assert summary_bodies and summary_bodies[0]["generationConfig"]["maxOutputTokens"] > 0
    sent = main_bodies(route)[-1]["contents"]
    assert any(SUMMARY_TEXT in part.get("text", "") for content in sent
               for part in content["parts"])
    check_request(sent, chat_history(20), current_kept=True)


def test_an_async_summarizer_goes_through_aio(route: respx.Route) -> None:
    raw = sdk()
    summary = GeminiSummarizer(raw.aio, model=SUMMARY_MODEL)
    result = asyncio.run(contents.acompact(chat_history(12), model=MODEL, budget=2_000,
                                           summarizer=summary))
    assert result.report.summarized_turn_ids


@pytest.mark.parametrize("finish", ["MAX_TOKENS", "SAFETY", "RECITATION"])
def test_a_summary_that_did_not_stop_cleanly_is_refused(api: respx.Router, finish: str) -> None:
    api.post(path__regex=".*").respond(json=reply([{"text": "half a summ"}], finish))
    summarizer = GeminiSummarizer(sdk(), model=SUMMARY_MODEL)
    request = contents.plan(chat_history(12), model=MODEL, budget=2_000,
                            summarizer=summarizer).plan.summarization_requests[0]
    with pytest.raises(SummaryRejected, match=finish):
        summarizer(request, ())


def test_a_blocked_prompt_is_refused(api: respx.Router) -> None:
    api.post(path__regex=".*").respond(json={"promptFeedback": {"blockReason": "SAFETY"}})
    summarizer = GeminiSummarizer(sdk(), model=SUMMARY_MODEL)
    request = contents.plan(chat_history(12), model=MODEL, budget=2_000,
                            summarizer=summarizer).plan.summarization_requests[0]
    with pytest.raises(SummaryRejected, match="BLOCKED_SAFETY"):
        summarizer(request, ())


def test_http_errors_are_the_sdks_own(api: respx.Router) -> None:
    api.post(path__regex=".*").mock(return_value=httpx.Response(
        400, json={"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}))
    with pytest.raises(genai.errors.ClientError):
        wrap().models.generate_content(model=MODEL, contents=agent_history(2))


def _near_the_trigger() -> list[dict[str, Any]]:
    """One user content whose estimate is just under the trigger (within 10% of it)."""
    def history(repeats: int) -> list[dict[str, Any]]:
        return [{"role": "user", "parts": [{"text": "alpha beta " * repeats}]}]

    each = contents.count_tokens(history(1_000), model=MODEL) / 1_000
    trigger = int(BUDGET * 0.95)  # the default trigger leaves the format's margin
    return history(int(0.96 * trigger / each))


def test_the_exact_counter_asks_count_tokens_near_the_limit(api: respx.Router) -> None:
    """``counter="provider"``: near the trigger, ``models.count_tokens`` is asked (sync and
    async), its count corrects the estimate; far from it, it is not asked."""
    generate = api.post(path__regex=r":generateContent$").mock(side_effect=answer)
    counted = api.post(path__regex=r":countTokens$").mock(
        return_value=httpx.Response(200, json={"totalTokens": 1234}))
    reports: list[CallReport] = []
    client = wrap(reports, counter="provider")
    client.models.generate_content(model=MODEL, contents=[
        {"role": "user", "parts": [{"text": "Hello."}]}])
    assert counted.call_count == 0
    near = _near_the_trigger()
    client.models.generate_content(model=MODEL, contents=near)
    assert counted.call_count == 1 and client.exact_counts["gemini"].asked == 1
    assert json.loads(counted.calls[-1].request.content)["contents"] == near
    asyncio.run(client.aio.models.generate_content(model=MODEL, contents=[
        *near, {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"text": "Again."}]}]))
    assert generate.call_count == 3
    assert reports[-1].calibration is not None  # the exact count taught the estimate


def test_the_developer_api_counts_no_system_instruction_so_the_estimate_stands(
        api: respx.Router) -> None:
    generate = api.post(path__regex=r":generateContent$").mock(side_effect=answer)
    counted = api.post(path__regex=r":countTokens$").mock(
        return_value=httpx.Response(200, json={"totalTokens": 1234}))
    reports: list[CallReport] = []
    client = wrap(reports, counter="provider")
    client.models.generate_content(model=MODEL, contents=_near_the_trigger(),
                                   config={"system_instruction": "Be terse."})
    assert client.exact_counts["gemini"].asked == 1 and counted.call_count == 0
    assert generate.call_count == 1 and reports[-1].calibration is None


def test_the_usage_a_reply_reports_corrects_later_estimates(api: respx.Router) -> None:
    def billed(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)["contents"]
        body = reply()
        body["usageMetadata"]["promptTokenCount"] = round(
            1.5 * contents.count_tokens(sent, model=MODEL))
        return httpx.Response(200, json=body)

    api.post(path__regex=r":generateContent$").mock(side_effect=billed)
    reports: list[CallReport] = []
    client = wrap(reports)
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Fix the test. " + "alpha beta " * 300}]}]
    for turn in range(3):
        client.models.generate_content(model=MODEL, contents=history)
        history += [{"role": "model", "parts": [{"text": f"Step {turn}."}]},
                    {"role": "user", "parts": [{"text": f"Go on {turn}."}]}]
    calibration = reports[-1].calibration
    assert calibration is not None and calibration.factor == pytest.approx(1.5, rel=0.05)

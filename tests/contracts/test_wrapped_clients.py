"""The wrapped clients (``CompactingOpenAI``, ``CompactingAnthropic``) end to end, once per
provider over its real SDK client: assertions on the JSON body the SDK actually sent and on the
reports of each call."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import httpx
import httpx2
import pytest
import respx
from pydantic import BaseModel

import cutctx
from cutctx import BudgetUnsatisfiable, CompactionReport
from cutctx_adapters import SummarizationFailed
from tests.contracts.providers import MARKER, PROVIDERS, SUMMARY_TEXT, Provider, bodies, sent

WINDOW = 10_000
TRIGGER = 3_000
TARGET = 2_000


class Answer(BaseModel):
    answer: str


def wrap(provider: Provider, client: Any, reports: list[Any] | None = None,
         **settings: Any) -> Any:
    settings = {"window": WINDOW, "trigger": TRIGGER, "target": TARGET, **settings}
    on_call = reports.append if reports is not None else None
    return provider.wrapper(client, on_call=on_call, **settings)


def create(provider: Provider, client: Any, history: Any, **fields: Any) -> Any:
    return provider.resource(client).create(**provider.call(history, **fields))


def small(provider: Provider) -> list[dict[str, Any]]:
    return provider.agent_history(2)


def big(provider: Provider) -> list[dict[str, Any]]:
    return provider.agent_history(12)


def others(request: dict[str, Any]) -> dict[str, Any]:
    """A request's fields but its messages."""
    return {key: value for key, value in request.items() if key != "messages"}


def test_histories_sit_where_the_tests_need_them(provider: Provider) -> None:
    assert (provider.tokens(provider.call(small(provider))) < TRIGGER
            < provider.tokens(provider.call(big(provider))) < provider.budget)


# --- the wrapper ---------------------------------------------------------------------------


def test_below_the_trigger_the_request_is_sent_exactly_as_given(provider: Provider,
                                                                route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    request = provider.call(small(provider), **provider.passed_through)
    response = provider.resource(client).create(**request)
    assert type(response) is provider.response_type
    assert provider.response_text(response) == "ok"
    body = sent(route)
    assert body == request  # messages, model and every other field, as given
    [report] = reports
    assert report.decision == "unchanged" and report.compaction is None
    assert report.tokens_in == report.tokens_sent == provider.tokens(request)
    assert client.last_report is report


def test_over_the_trigger_the_history_is_compacted_valid_and_reported(
        provider: Provider, route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    request = provider.call(big(provider))
    response = provider.resource(client).create(**request)
    assert type(response) is provider.response_type
    body = sent(route)
    provider.assert_sendable(body, request["messages"])
    assert others(body) == others(request)
    assert provider.system_of(body) == provider.system_of(request)
    assert provider.tokens(body) < provider.tokens(request)
    assert provider.tokens(body) <= TRIGGER
    assert body["messages"][-1] == request["messages"][-1]
    [report] = reports
    # old results masked, or (aiming below the target for a fast-growing history, issue 38)
    # their exchanges dropped whole
    assert "masked by cutctx" in json.dumps(body["messages"]) or (
        report.turns is not None and report.turns.dropped)
    assert report.decision == "compacted"
    assert isinstance(report.compaction, CompactionReport)
    assert not report.compaction.budget_unmet
    assert report.format == provider.format_name and report.model == provider.model
    assert report.prompt_budget == provider.budget
    assert (report.trigger_tokens, report.target_tokens) == (TRIGGER, TARGET)
    assert report.tokens_in == provider.tokens(request)
    assert report.tokens_sent is not None and report.tokens_sent <= TRIGGER
    assert not report.summarization_fallback
    assert MARKER not in repr(report)


def test_compaction_is_sticky_until_the_trigger_is_crossed_again(provider: Provider,
                                                                 route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    history = big(provider)
    create(provider, client, history)
    first = sent(route)["messages"]
    history += [{"role": "assistant", "content": "Looking."}, {"role": "user", "content": "Go."}]
    create(provider, client, history)
    second = sent(route)["messages"]
    assert reports[-1].decision == "appended"
    assert second == first + history[-2:]  # the cached prefix is sent byte for byte
    assert json.dumps(second).startswith(json.dumps(first)[:-1])
    assert reports[-1].reused_items == len(first)
    previous = second
    i = 0
    while reports[-1].decision != "recompacted":
        added = provider.one_round(i)
        history += added
        create(provider, client, history)
        if reports[-1].decision == "appended":
            assert sent(route)["messages"] == previous + added
            previous = sent(route)["messages"]
        i += 1
        assert i < 20
    assert i > 1
    provider.assert_sendable(sent(route))
    assert provider.tokens(sent(route)) <= TARGET + 200
    # After the recompaction the new view is the prefix that stays.
    third = sent(route)["messages"]
    added = provider.one_round(99)
    history += added
    create(provider, client, history)
    assert reports[-1].decision == "appended"
    assert sent(route)["messages"] == third + added


def test_the_callers_list_and_dicts_are_never_mutated(provider: Provider,
                                                      route: respx.Route) -> None:
    client = wrap(provider, provider.sdk())
    history = big(provider)
    history[provider.task_index]["content"] = [{"type": "text", "text": f"Fix it. {MARKER}"}]
    request = provider.call(history, **copy.deepcopy(provider.kept_fields))
    before = copy.deepcopy(request)
    response = provider.resource(client).create(**request)
    assert request == before
    assert sent(route)["messages"] != history and others(sent(route)) == others(request)
    # Users append the SDK's own response objects; those are left alone too.
    reply, sdk_objects, reply_sent = provider.reply_message(response)
    history.append(reply)
    history.append({"role": "user", "content": "Next."})
    snapshot = [part.model_dump() for part in sdk_objects]
    provider.resource(client).create(**request)
    assert history[:-2] == before["messages"] and others(request) == others(before)
    assert [part.model_dump() for part in sdk_objects] == snapshot
    assert sent(route)["messages"][-2:] == [reply_sent, {"role": "user", "content": "Next."}]


def test_any_iterable_of_messages_is_sent_in_full(provider: Provider,
                                                  route: respx.Route) -> None:
    """The SDK takes any iterable; a generator must not be read by compaction and sent empty."""
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    create(provider, client, (m for m in small(provider)))
    assert sent(route)["messages"] == small(provider) and reports[-1].decision == "unchanged"
    create(provider, client, tuple(provider.agent_history(12)))
    assert reports[-1].decision == "compacted"
    provider.assert_sendable(sent(route))
    create(provider, client, iter(provider.agent_history(13)))
    assert reports[-1].decision == "compacted"
    provider.assert_sendable(sent(route))
    assert sent(route)["messages"][-1] == provider.agent_history(13)[-1]


def test_the_sdks_not_given_sentinels_are_ignored(provider: Provider,
                                                  route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    not_given, omit = provider.module.NOT_GIVEN, provider.module.omit
    for sentinels in ((not_given,) * 3, (omit,) * 3, (not_given, omit, omit)):
        fields = dict(zip(provider.sentinel_fields, sentinels, strict=True))
        create(provider, client, big(provider), **fields)
        assert reports[-1].prompt_budget == provider.budget
        assert reports[-1].decision in ("compacted", "reused")
        assert reports[-1].tokens_in == provider.tokens({"messages": big(provider)})
        body = sent(route)
        assert not set(fields) & set(body)
        provider.assert_sendable(body)


def test_stream_true_returns_the_sdks_stream(provider: Provider, route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    stream = create(provider, client, big(provider), stream=True)
    assert isinstance(stream, provider.module.Stream)
    assert provider.stream_text(list(stream)) == "Hello"
    body = sent(route)
    assert body["stream"] is True
    provider.assert_sendable(body, big(provider))
    assert provider.tokens(body) < provider.tokens(provider.call(big(provider)))
    assert reports[-1].decision == "compacted"


def test_the_stream_helper_sends_the_compacted_messages(provider: Provider,
                                                        route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    with provider.resource(client).stream(**provider.call(big(provider))) as stream:
        kinds = [event.type for event in stream]
        final = provider.final_reply(stream)
    assert provider.helper_kinds_ok(kinds)
    assert provider.response_text(final) == "Hello"
    body = sent(route)
    assert body["stream"] is True
    provider.assert_sendable(body, big(provider))
    assert provider.tokens(body) < provider.tokens(provider.call(big(provider)))
    assert reports[-1].decision == "compacted"
    with provider.resource(client).stream(**provider.call(small(provider))) as stream:
        assert provider.helper_text(stream) == "Hello"
    assert sent(route)["messages"] == small(provider) and reports[-1].decision == "unchanged"


def test_parse_compacts_and_returns_the_sdks_parsed_reply(provider: Provider,
                                                          route: respx.Route) -> None:
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    request = provider.call(big(provider))
    parsed = provider.resource(client).parse(**request, **{provider.parse_keyword: Answer})
    assert isinstance(parsed, provider.parsed_type)
    assert provider.parsed_value(parsed) == Answer(answer="42")
    body = sent(route)
    assert provider.asks_for_json(body) and others(request).items() <= body.items()
    provider.assert_sendable(body, big(provider))
    assert provider.tokens(body) < provider.tokens(request)
    assert reports[-1].decision == "compacted"


@pytest.mark.anyio
async def test_async_create_stream_helper_and_parse(provider: Provider,
                                                    route: respx.Route) -> None:
    reports: list[Any] = []
    completions = provider.resource(wrap(provider, provider.async_sdk(), reports))

    response = await completions.create(**provider.call(provider.agent_history(12)))
    assert type(response) is provider.response_type
    assert reports[-1].decision == "compacted"
    unchanged = await completions.create(**provider.call(small(provider)))
    assert type(unchanged) is provider.response_type
    assert sent(route) == provider.call(small(provider)) and reports[-1].decision == "unchanged"

    stream = await completions.create(**provider.call(provider.agent_history(13)), stream=True)
    assert isinstance(stream, provider.module.AsyncStream)
    assert provider.stream_text([event async for event in stream]) == "Hello"
    assert sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

    async with completions.stream(**provider.call(provider.agent_history(14))) as events:
        kinds = [event.type async for event in events]
        final = await provider.final_reply(events)
    assert provider.helper_kinds_ok(kinds) and provider.response_text(final) == "Hello"
    assert sent(route)["stream"] is True
    assert reports[-1].decision == "compacted"

    parsed = await completions.parse(**provider.call(provider.agent_history(15)),
                                     **{provider.parse_keyword: Answer})
    assert provider.parsed_value(parsed) == Answer(answer="42")
    assert reports[-1].decision == "compacted"

    compacted = [body for body in bodies(route) if body["messages"] != small(provider)]
    assert len(compacted) == 4 and len(reports) == 5
    for body, rounds in zip(compacted, (12, 13, 14, 15), strict=True):
        provider.assert_sendable(body, provider.agent_history(rounds))
        assert provider.tokens(body) < TRIGGER


def allowance_cases() -> list[Any]:
    return [pytest.param(provider, field, id=f"{provider.name}-{field}")
            for provider in PROVIDERS.values() for field in provider.allowance_fields]


@pytest.mark.parametrize(("provider", "field"), allowance_cases())
def test_the_reply_allowance_comes_out_of_the_budget(provider: Provider, route: respx.Route,
                                                     field: str) -> None:
    history = provider.agent_history(6)
    size = provider.tokens(provider.call(history))
    reports: list[Any] = []
    # trigger/target as fractions of the budget: the allowance moves them.
    client = wrap(provider, provider.sdk(), reports, window=size + 1_000, trigger=1.0,
                  target=0.8)
    create(provider, client, history, **{field: 500})
    assert reports[-1].prompt_budget == size + 500
    assert reports[-1].decision == "unchanged" and sent(route)["messages"] == history
    assert sent(route)[field] == 500
    create(provider, client, history, **{field: 2_000})
    assert reports[-1].prompt_budget == size - 1_000
    assert reports[-1].decision == "compacted"
    assert sent(route)[field] == 2_000
    assert provider.tokens(sent(route)) <= size - 1_000
    provider.assert_sendable(sent(route), history)


def test_tool_definitions_count_toward_the_prompt(provider: Provider,
                                                  route: respx.Route) -> None:
    tools = provider.tools(3)
    history = provider.agent_history(provider.tool_rounds)
    with_tools = provider.call(history, tools=tools, tool_choice=provider.tool_choice)
    assert provider.tokens(provider.call(history)) < TRIGGER < provider.tokens(with_tools)
    reports: list[Any] = []
    client = wrap(provider, provider.sdk(), reports)
    create(provider, client, history)
    assert reports[-1].decision == "unchanged"
    provider.resource(client).create(**with_tools)
    assert reports[-1].decision == "compacted"
    assert reports[-1].tokens_in == provider.tokens(with_tools)
    body = sent(route)
    assert body["tools"] == tools and body["tool_choice"] == provider.tool_choice
    assert provider.tokens(body) < provider.tokens(with_tools)
    assert provider.tokens(body) <= TRIGGER
    provider.assert_sendable(body, history)


def test_the_window_comes_from_the_table_or_the_caller(provider: Provider,
                                                       route: respx.Route) -> None:
    reports: list[Any] = []
    for window in provider.windows:
        client = provider.wrapper(provider.sdk(), on_call=reports.append, **window.settings)
        with pytest.warns(UserWarning) if window.warns else contextlib.nullcontext():
            create(provider, client, small(provider), **window.fields)
    assert [r.prompt_budget for r in reports] == [w.prompt_budget for w in provider.windows]
    assert all(r.decision == "unchanged" for r in reports)
    assert route.call_count == len(provider.windows)


def unknown_model(provider: Provider) -> Any:
    """Where a model the table and tiktoken do not know warns that it is counted with
    o200k_base (OpenAI), before the missing window is refused."""
    return pytest.warns(UserWarning) if provider.unknown_model_warns else contextlib.nullcontext()


def test_an_unknown_model_without_a_window_fails_before_sending(provider: Provider,
                                                                route: respx.Route) -> None:
    client = provider.wrapper(provider.sdk())
    with unknown_model(provider), pytest.raises(cutctx.ValidationError) as caught:
        create(provider, client, small(provider), model="acme-private-llm")
    assert "acme-private-llm" in str(caught.value)
    assert caught.value.details["model"] == "acme-private-llm"
    assert "window" in str(caught.value)
    assert route.call_count == 0


def test_every_other_attribute_delegates(provider: Provider, api: respx.Router,
                                         route: respx.Route) -> None:
    inner = provider.sdk()
    reports: list[Any] = []
    client = wrap(provider, inner, reports)
    assert client.wrapped is inner
    assert client.api_key == "test"
    assert str(client.base_url) == str(inner.base_url)
    assert str(client.base_url).rstrip("/") == provider.base_url
    assert client.models is inner.models
    assert provider.resource(client).with_raw_response is not None
    for name in provider.delegated:
        assert getattr(provider.resource(client), name) == getattr(provider.resource(inner),
                                                                   name)
    api.get(provider.models_path).respond(json=provider.models_page())
    assert [m.id for m in client.models.list()] == [provider.model]

    faster = client.with_options(timeout=5)
    assert isinstance(faster, provider.wrapper)
    assert faster.timeout == 5 and client.timeout != 5
    create(provider, faster, big(provider))
    assert reports[-1].decision == "compacted"
    assert provider.tokens(sent(route)) < provider.tokens(provider.call(big(provider)))
    assert route.calls.last.request.extensions["timeout"]["read"] == 5
    # The clone shares the sticky state: the same history again reuses the view.
    create(provider, client, big(provider))
    assert reports[-1].decision == "reused"


# --- summaries -----------------------------------------------------------------------------


def summarizing(provider: Provider, reports: list[Any] | None = None, *,
                asynchronous: bool = False, **settings: Any) -> Any:
    """A wrapped client whose summarizer uses a client of the same kind."""
    sdk = provider.async_sdk if asynchronous else provider.sdk
    summarizer = provider.summarizer(sdk(), model=provider.summary_model)
    return wrap(provider, sdk(), reports, summarizer=summarizer, keep_user_turns=False,
                **settings)


def test_a_summarizer_answers_first_then_the_summary_is_sent(provider: Provider,
                                                             route: respx.Route) -> None:
    reports: list[Any] = []
    client = summarizing(provider, reports)
    history = provider.chat_history(provider.chat_rounds)
    request = provider.call(history)
    assert provider.tokens(request) > TRIGGER
    provider.resource(client).create(**request)
    summary_request, main = bodies(route)
    assert summary_request["model"] == provider.summary_model
    assert others(main) == others(request)
    assert provider.system_of(main) == provider.system_of(request)
    provider.assert_sendable(main, history)
    assert main["messages"][-1] == history[-1]
    summaries = [m for m in main["messages"] if SUMMARY_TEXT in json.dumps(m["content"])]
    assert len(summaries) == 1 and summaries[0]["role"] == "user"
    report = reports[-1]
    assert report.decision == "compacted" and report.compaction is not None
    assert "summarizing" in report.compaction.policy_name
    assert len(report.compaction.summary_turn_ids) == 1
    assert provider.tokens(main) < provider.tokens(request)
    # The same span is not summarized twice: the view is reused as the history grows.
    history += [{"role": "assistant", "content": "Finally: yes."},
                {"role": "user", "content": "Thanks."}]
    create(provider, client, history)
    assert len(bodies(route)) == 3 and reports[-1].decision == "appended"


def test_a_failed_summary_raises_and_sends_nothing(provider: Provider,
                                                   api: respx.Router) -> None:
    api.post(provider.endpoint).mock(
        side_effect=lambda request: provider.error(500, f"boom {MARKER}"))
    client = summarizing(provider)
    with pytest.raises(SummarizationFailed) as caught:
        create(provider, client, provider.chat_history(provider.chat_rounds))
    assert caught.value.details["cause"] == "InternalServerError"
    assert MARKER not in str(caught.value) and MARKER not in repr(caught.value.details)
    assert [json.loads(c.request.content)["model"] for c in api.calls] == [
        provider.summary_model]


def test_a_failed_summary_can_fall_back_to_masking_and_dropping(provider: Provider,
                                                                api: respx.Router) -> None:
    def failing_summaries(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == provider.summary_model:
            raise httpx2.ReadTimeout("timed out")
        return httpx.Response(200, json=provider.reply())

    route = api.post(provider.endpoint).mock(side_effect=failing_summaries)
    reports: list[Any] = []
    client = summarizing(provider, reports, on_summary_error="fallback")
    history = provider.chat_history(provider.chat_rounds)
    response = create(provider, client, history)
    assert type(response) is provider.response_type
    [main] = [body for body in bodies(route) if body["model"] != provider.summary_model]
    provider.assert_sendable(main, history)
    assert provider.tokens(main) <= provider.budget
    text = json.dumps(main["messages"])
    for leaked in ("timed out", "Timeout", "Error", "Summary of the earlier"):
        assert leaked not in text
    report = reports[-1]
    assert report.summarization_fallback is True
    assert report.compaction is not None and "summarizing" not in report.compaction.policy_name
    assert report.compaction.summary_turn_ids == ()


@pytest.mark.anyio
async def test_async_client_with_an_async_summarizer(provider: Provider,
                                                     route: respx.Route) -> None:
    reports: list[Any] = []
    completions = provider.resource(summarizing(provider, reports, asynchronous=True))
    history = provider.chat_history(provider.chat_rounds)
    response = await completions.create(**provider.call(history))
    assert type(response) is provider.response_type
    summary_request, main = bodies(route)
    assert summary_request["model"] == provider.summary_model
    assert SUMMARY_TEXT in json.dumps(main["messages"])
    provider.assert_sendable(main, history)
    assert reports[-1].compaction is not None
    assert reports[-1].compaction.summary_turn_ids
    longer = provider.chat_history(provider.chat_rounds + 1)
    async with completions.stream(**provider.call(longer)) as stream:
        await stream.until_done()
    assert [body["model"] for body in bodies(route)][-1] == provider.model
    assert SUMMARY_TEXT in json.dumps(sent(route)["messages"])


# --- what cannot fit -----------------------------------------------------------------------


def test_a_newest_message_over_the_window_is_clipped_and_sent(provider: Provider,
                                                              route: respx.Route) -> None:
    """Never stuck: the paste keeps its head and tail around a marker naming the original."""
    history = provider.with_paste(provider.agent_history(3), "paste " * 7_000 + "END")
    reports: list[Any] = []
    create(provider, wrap(provider, provider.sdk(), reports), history)
    newest = sent(route)["messages"][-1]
    assert "cutctx clipped this message" in json.dumps(newest)
    assert provider.pasted(newest).endswith("END")
    assert reports[-1].protection_relaxed > 0 or reports[-1].replacements


def test_with_strict_nothing_is_sent_when_the_newest_turns_cannot_fit(
        provider: Provider, route: respx.Route) -> None:
    # a recent assistant message no policy may clip
    history = provider.with_ramble(provider.agent_history(3), f"{MARKER} " + "ramble " * 7_000)
    client = wrap(provider, provider.sdk(), strict=True)
    with pytest.raises(BudgetUnsatisfiable) as caught:
        create(provider, client, history)
    err = caught.value
    assert "budget" in str(err)
    assert err.details["max_tokens"] < err.details["untouchable_tokens"]
    assert MARKER not in str(err) and MARKER not in repr(err.details)
    assert route.call_count == 0


@pytest.mark.anyio
async def test_async_budget_and_window_errors_send_nothing(provider: Provider,
                                                           route: respx.Route) -> None:
    history = provider.with_ramble(provider.agent_history(3), "ramble " * 7_000)
    strict = provider.resource(wrap(provider, provider.async_sdk(), strict=True))
    with pytest.raises(BudgetUnsatisfiable):
        await strict.create(**provider.call(history))
    unknown = provider.resource(provider.wrapper(provider.async_sdk()))
    with unknown_model(provider), pytest.raises(cutctx.ValidationError, match="acme-x"):
        await unknown.create(**provider.call(small(provider), model="acme-x"))
    with unknown_model(provider), pytest.raises(cutctx.ValidationError, match="acme-y"):
        async with unknown.stream(**provider.call(small(provider), model="acme-y")):
            pass
    assert route.call_count == 0


def test_errors_from_the_sdk_pass_through_unchanged(provider: Provider,
                                                    api: respx.Router) -> None:
    api.post(provider.endpoint).mock(side_effect=lambda request: provider.error(400,
                                                                                "bad request"))
    with pytest.raises(provider.module.BadRequestError):
        create(provider, wrap(provider, provider.sdk()), big(provider))

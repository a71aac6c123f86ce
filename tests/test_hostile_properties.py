"""Hostile input for every public entry point of the three formats (issue 18, as measured).

Generated histories, some valid and some broken in the ways real callers break them (wrong
types, missing fields, SDK objects with reassigned fields, deep or self-containing values, lone
surrogates, huge numbers, secrets in tool input keys), go through ``compact``, ``plan``,
``count_tokens``, ``validate`` and ``CompactionSession.prepare``. A canary string sits in every
message, name and tool-input key and value. For each call:

* only cutctx errors escape;
* the canary is in no error message, error details, warning or log record;
* the caller's input is not changed;
* what is returned is provider-valid (it validates again) and within the budget, or honestly
  ``budget_unmet``.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessage

from cutctx import CharRatioEstimator, CompactionError
from cutctx_adapters import CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses

CANARY = "CANARY-7c2f"
CHARS = CharRatioEstimator()
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
               max_size=30).map(lambda s: f"{CANARY} {s}")
hostile_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True),
    text, st.just("\ud800" + CANARY), st.binary(max_size=8), st.just(object()),
    st.just(float("inf")))


def secret_input() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(text, st.one_of(text, st.integers()), min_size=1, max_size=3)


@st.composite
def chat_history(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [{"role": "system", "content": draw(text)},
                      {"role": "user", "content": draw(text)}]
    for n in range(draw(st.integers(0, 5))):
        call = f"call_{n}"
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function",
             "function": {"name": f"tool_{n}", "arguments": json.dumps(draw(secret_input()))}}]})
        out.append({"role": "tool", "tool_call_id": call, "content": draw(text) * 20})
        if draw(st.booleans()):
            out.append({"role": "user", "content": draw(text)})
    return out


@st.composite
def anthropic_history(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [{"role": "user", "content": draw(text)}]
    for n in range(draw(st.integers(0, 5))):
        call = f"toolu_{n}"
        out.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": f"tool_{n}", "input": draw(secret_input())}]})
        out.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": draw(text) * 20}]})
    return out


@st.composite
def responses_history(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [{"role": "user", "content": draw(text)}]
    for n in range(draw(st.integers(0, 5))):
        call = f"call_{n}"
        out.append({"type": "function_call", "call_id": call, "name": f"tool_{n}",
                    "arguments": json.dumps(draw(secret_input()))})
        out.append({"type": "function_call_output", "call_id": call,
                    "output": draw(text) * 20})
    return out


@st.composite
def broken(draw: st.DrawFn, history: st.SearchStrategy[list[Any]]) -> list[Any]:
    """A valid history, then (usually) one thing broken in it."""
    items = draw(history)
    how = draw(st.integers(0, 7))
    target = draw(st.integers(0, len(items) - 1))
    item = items[target]
    if how == 1:
        item[draw(st.sampled_from(["content", "role", "tool_calls", "type", "output"]))] = draw(
            hostile_scalar)
    elif how == 2:
        item[f"{CANARY}-key"] = draw(hostile_scalar)
    elif how == 3:
        deep: Any = CANARY
        for _ in range(draw(st.sampled_from([50, 150, 2_000]))):
            deep = [deep]
        item["extra"] = deep
    elif how == 4:
        item["self"] = item
    elif how == 5:
        items[target] = draw(hostile_scalar)
    elif how == 6:
        item.pop(draw(st.sampled_from(["role", "content", "type", "call_id", "tool_call_id"])),
                 None)
    return items


def sdk_message_with_a_reassigned_field() -> ChatCompletionMessage:
    message = ChatCompletionMessage(role="assistant", content=f"{CANARY} hi")
    message.content = object()  # type: ignore[assignment]
    return message


FORMATS: dict[str, tuple[st.SearchStrategy[list[Any]], Any]] = {
    "chat": (chat_history(), chat),
    "anthropic": (anthropic_history(), anthropic_messages),
    "responses": (responses_history(), responses),
}


def entry_points(name: str, items: list[Any], budget: int) -> dict[str, Callable[[], Any]]:
    module = FORMATS[name][1]
    fmt = module.FORMAT
    session = CompactionSession(fmt, model="gpt-4o", window=budget + 1, reserve=1,
                                estimator=CHARS)
    calls: dict[str, Callable[[], Any]] = {
        "compact": lambda: module.compact(items, budget=budget, estimator=CHARS),
        "plan": lambda: module.plan(items, budget=budget, estimator=CHARS),
        "count_tokens": lambda: module.count_tokens(items, estimator=CHARS),
        "validate": lambda: module.validate(items),
        "prepare": lambda: session.prepare({"model": "gpt-4o", fmt.list_key: items}),
    }
    return calls


def no_canary(*texts: object) -> None:
    for value in texts:
        assert CANARY not in str(value), "the canary leaked"


def run_hostile(name: str, items: list[Any], budget: int,
                caplog: pytest.LogCaptureFixture) -> None:
    for entry, call in entry_points(name, items, budget).items():
        frozen = copy.deepcopy(items) if _copyable(items) else None
        caplog.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcome = call()
            except CompactionError as error:
                no_canary(error, error.message, repr(error.details))
                outcome = None
            except Exception as error:  # pragma: no cover - the property's failure
                pytest.fail(f"{entry} raised {type(error).__name__} (not a cutctx error)")
        no_canary(*(w.message for w in caught), *(r.getMessage() for r in caplog.records))
        if frozen is not None:
            assert items == frozen, f"{entry} changed the caller's input"
        if entry == "compact" and outcome is not None:
            _check_result(name, outcome, budget)


def _copyable(items: list[Any]) -> bool:
    """Whether the input is plain JSON data (then a deep copy compares equal to it)."""
    try:
        json.dumps(items, allow_nan=False)
    except (RecursionError, TypeError, ValueError):
        return False
    return True


def _check_result(name: str, result: Any, budget: int) -> None:
    module = FORMATS[name][1]
    if name == "anthropic":
        module.validate(result.messages, system=result.system)
        sent = module.count_tokens(result.messages, system=result.system, estimator=CHARS)
    elif name == "responses":
        module.validate(result.input)
        sent = module.count_tokens(result.input, estimator=CHARS)
    else:
        module.validate(result.messages)
        sent = module.count_tokens(result.messages, estimator=CHARS)
    assert result.report.budget_unmet or sent <= budget


@pytest.mark.parametrize("name", sorted(FORMATS))
@SETTINGS
@given(data=st.data(), budget=st.sampled_from([0, 40, 200, 5_000]))
def test_hostile_histories_meet_only_cutctx_errors_and_never_leak(
        name: str, data: st.DataObject, budget: int, caplog: pytest.LogCaptureFixture) -> None:
    items = data.draw(broken(FORMATS[name][0]))
    with caplog.at_level(logging.DEBUG):
        run_hostile(name, items, budget, caplog)


@pytest.mark.parametrize("name", ["chat"])
def test_an_sdk_object_its_sdk_cannot_serialize_is_a_validation_error(
        name: str, caplog: pytest.LogCaptureFixture) -> None:
    items: list[Any] = [{"role": "user", "content": f"{CANARY} task"},
                        sdk_message_with_a_reassigned_field()]
    with caplog.at_level(logging.DEBUG):
        run_hostile(name, items, 5_000, caplog)


def test_a_secret_tool_input_key_is_named_by_position() -> None:
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": [
                   {"type": "tool_use", "id": "t1", "name": "login",
                    "input": {f"{CANARY}-api-key": float("nan")}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    with pytest.raises(CompactionError) as caught:
        anthropic_messages.compact(history, budget=1_000, estimator=CHARS)
    assert CANARY not in str(caught.value) and CANARY not in repr(caught.value.details)
    assert "<key 0>" in str(caught.value.details.get("field"))

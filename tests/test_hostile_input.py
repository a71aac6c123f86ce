"""Input no API accepts fails early with a cutctx error that names where, never with a
``RecursionError``/``TypeError`` from deep inside, and never echoes the content."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cutctx import CharRatioEstimator, ValidationError
from cutctx_adapters import CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from tests.engine.test_engine_properties import PROPERTY_SETTINGS

MARKER = "SECRET-5d1e"
ESTIMATOR = CharRatioEstimator()
READERS: dict[str, Callable[[list[Any]], Any]] = {
    "chat": lambda history: chat.to_transcript(history, estimator=ESTIMATOR),
    "anthropic": lambda history: anthropic_messages.to_transcript(history, estimator=ESTIMATOR),
    "responses": lambda history: responses.to_transcript(history, estimator=ESTIMATOR),
}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": MARKER}
    for _ in range(depth):
        value = {"x": value}
    return value


def self_containing() -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "content": MARKER}
    message["again"] = message
    return message


def user(**extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": MARKER, **extra}


BAD: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "nested-past-the-recursion-limit": (lambda: user(extra=nested(5_000)), "json_depth"),
    "contains-itself": (self_containing, "json_depth"),
    "nan": (lambda: user(score=math.nan), "json_data"),
    "infinity": (lambda: user(score=-math.inf), "json_data"),
    "int-key": (lambda: user(extra={1: MARKER}), "json_data"),
    "bytes": (lambda: user(extra=MARKER.encode()), "json_data"),
    "set": (lambda: user(extra={MARKER}), "json_data"),
}


@pytest.mark.parametrize("fmt", sorted(READERS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_name_the_message_and_rule(fmt: str, case: str) -> None:
    make, rule = BAD[case]
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
               make()]
    with pytest.raises(ValidationError) as caught:
        READERS[fmt](history)
    error = caught.value
    assert error.details["rule"] == rule and error.details["index"] == 2
    assert MARKER not in str(error)
    assert MARKER not in json.dumps(error.to_dict(), default=str)


def test_a_session_refuses_before_anything_is_sent() -> None:
    session = CompactionSession(chat.FORMAT, window=8_000, estimator=ESTIMATOR)
    with pytest.raises(ValidationError) as caught:
        session.prepare({"model": "gpt-4o", "messages": [user(extra=nested(5_000))]})
    assert caught.value.details["rule"] == "json_depth"
    assert session.stored_views == 0


json_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                        st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=12)
poison = st.sampled_from([math.nan, math.inf, b"x", {1, 2}, object(), 3 + 4j])


@st.composite
def poisoned(draw: st.DrawFn) -> tuple[Any, bool]:
    """A JSON value, and maybe one leaf somewhere in it swapped for something JSON cannot hold."""
    value = draw(json_values)
    if not draw(st.booleans()):
        return value, False
    bad = draw(poison)
    holder: Any = {"k": value, "bad": bad} if draw(st.booleans()) else [value, [bad]]
    return holder, True


@PROPERTY_SETTINGS
@given(poisoned(), st.sampled_from(sorted(READERS)))
def test_any_value_in_an_unknown_field_is_kept_or_refused_by_name(
    drawn: tuple[Any, bool], fmt: str,
) -> None:
    value, is_poisoned = drawn
    history = [user(extra=value)]
    if is_poisoned:
        with pytest.raises(ValidationError) as caught:
            READERS[fmt](history)
        assert caught.value.details["rule"] == "json_data"
        assert caught.value.details["index"] == 0
    else:
        conv = READERS[fmt](history)
        assert conv.render(conv.transcript) is not None


COMPACTS: dict[str, Callable[..., Any]] = {
    "chat": chat.compact, "anthropic": anthropic_messages.compact, "responses": responses.compact,
}
BAD_ARGUMENTS: dict[str, tuple[dict[str, Any], str]] = {
    "tools-as-a-string": ({"tools": MARKER}, "tools"),
    "tool-with-an-int-key": ({"tools": [{1: MARKER}]}, "tool 0"),
    "estimator-without-estimate_tokens": ({"estimator": object()}, "estimator"),
    "summarizer-not-callable": ({"summarizer": MARKER}, "summarizer"),
    "policy-without-decide": ({"policy": object()}, "policy"),
}


@pytest.mark.parametrize("fmt", sorted(COMPACTS))
@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_arguments_are_refused_up_front_by_name(fmt: str, case: str) -> None:
    arguments, named = BAD_ARGUMENTS[case]
    with pytest.raises(ValidationError) as caught:
        COMPACTS[fmt]([user()], budget=1_000, **{"estimator": ESTIMATOR, **arguments})
    error = caught.value
    assert named in str(error) or error.details.get("field") == named
    assert MARKER not in str(error)

"""One settings value, checked when it is made, whichever entry point makes it."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from openai import AsyncOpenAI, OpenAI

from cutctx import CharRatioEstimator, ValidationError
from cutctx_adapters import CallReport, CompactionSession, CompactionSettings
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from cutctx_adapters.openai import CompactingOpenAI, OpenAISummarizer, chat, responses
from cutctx_adapters.settings import (
    PLANNING_NAMES,
    SETTING_NAMES,
    PlanningKeywords,
    SettingsKeywords,
)
from cutctx_adapters.stores import MemoryStore

HISTORY = [{"role": "user", "content": "Fix the failing test."},
           {"role": "assistant", "content": "On it."}]


@pytest.fixture(autouse=True)
def _offline(tiktoken_cache: Path) -> None:
    """Counting uses the seeded tiktoken cache."""


def openai_client() -> OpenAI:
    return OpenAI(api_key="test", base_url="https://api.openai.test/v1")


def every_maker() -> list[tuple[str, Any]]:
    """Each entry point that takes settings, as a callable of the settings keywords."""
    return [
        ("settings", lambda **kw: CompactionSettings(**kw)),
        ("session", lambda **kw: CompactionSession(chat.FORMAT, "gpt-4o", **kw)),
        ("openai", lambda **kw: CompactingOpenAI(openai_client(), **kw)),
        ("anthropic", lambda **kw: CompactingAnthropic(Anthropic(api_key="test"), **kw)),
    ]


MAKERS = every_maker()


def refused(make: Any, **keywords: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        make(**keywords)
    return caught.value


# --- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "make"), MAKERS, ids=[name for name, _ in MAKERS])
def test_a_misspelt_setting_is_named_with_the_one_meant(where: str, make: Any) -> None:
    error = refused(make, windw=6000)
    assert "unknown setting 'windw'" in str(error) and "did you mean 'window'" in str(error)
    assert error.details == {"field": "windw", "rule": "unknown_setting"}


def test_budget_on_a_wrapped_client_points_to_window() -> None:
    error = refused(lambda **kw: CompactingOpenAI(openai_client(), **kw), budget=8000)
    assert "window=" in str(error) and "reserve=" in str(error)


def test_compact_names_its_settings_and_refuses_a_sessions() -> None:
    error = refused(lambda **kw: chat.compact(HISTORY, budget=800, **kw), keep_recnt=2)
    assert "did you mean 'keep_recent'" in str(error)
    error = refused(lambda **kw: chat.compact(HISTORY, budget=800, **kw), trigger=0.9)
    assert error.details["rule"] == "session_setting" and "CompactionSession" in str(error)


def test_the_keyword_lists_are_the_settings_fields() -> None:
    """The typed keywords (for type checkers) and the dataclass are one list of settings."""
    fields = {field.name: field.type for field in dataclasses.fields(CompactionSettings)}
    assert set(SettingsKeywords.__annotations__) == set(SETTING_NAMES) == set(fields)
    assert PLANNING_NAMES == set(PlanningKeywords.__annotations__) < set(SETTING_NAMES)
    names = {"CallReport": CallReport}  # imported for type checkers only there
    hints = typing.get_type_hints(SettingsKeywords, localns=names)
    field_hints = typing.get_type_hints(CompactionSettings, localns=names)
    assert hints == {name: field_hints[name] for name in hints}


def test_a_session_reads_each_setting_as_an_attribute() -> None:
    settings = CompactionSettings(window=9000, keep_recent=6, check_prefix="identity")
    session = CompactionSession(responses.FORMAT, settings=settings)
    for name in SETTING_NAMES:
        assert getattr(session, name) == getattr(settings, name)
    with pytest.raises(AttributeError, match=r"settings\.replace"):
        session.window = 4


def test_keywords_go_over_a_settings_value() -> None:
    base = CompactionSettings(window=9000, target=0.4)
    client = CompactingOpenAI(openai_client(), settings=base, target=0.3)
    assert (client.settings.window, client.settings.target) == (9000, 0.3)
    assert client.sessions["openai-chat"].settings is client.settings
    assert base.target == 0.4


def test_one_value_serves_a_session_a_wrapper_and_compact() -> None:
    settings = CompactionSettings(window=4000, reserve=500, keep_recent=2,
                                  estimator=CharRatioEstimator())
    long = [{"role": "user", "content": "task"},
            *({"role": "assistant" if i % 2 else "user", "content": f"{i} " + "x" * 400}
              for i in range(60))]
    compacted = chat.compact(long, settings=settings)
    assert compacted.prompt_budget == 3500 and not compacted.budget_unmet
    session = CompactionSession(chat.FORMAT, "gpt-4o", settings=settings)
    assert session.prepare(messages=long).report.prompt_budget == 3500


# --- values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("trigger", "target"), [(0.5, 0.5), (0.4, 0.6), (2000, 3000)])
def test_a_trigger_at_or_below_the_target_is_refused(trigger: Any, target: Any) -> None:
    for _, make in MAKERS:
        error = refused(make, trigger=trigger, target=target)
        assert error.details["rule"] == "trigger_above_target"


def test_a_share_trigger_and_a_token_target_are_compared_per_call() -> None:
    assert CompactionSettings(trigger=0.9, target=2000).target == 2000


@pytest.mark.parametrize("target", [1.0, 2, 1, 127])
def test_a_target_no_default_trigger_can_be_above_is_refused(target: Any) -> None:
    """The default trigger is at most the whole budget (issue 39): ``target=1.0`` leaves no room
    to append; an int is a token count, and ``target=2`` is two tokens, not twice the budget."""
    for _, make in MAKERS:
        error = refused(make, target=target)
        assert error.details["field"] == "target"
        assert error.details["rule"] == (
            "trigger_above_target" if isinstance(target, float) else "too_few_tokens")
    assert "a share of the budget is a float" in str(refused(CompactionSettings, target=2))


def test_a_session_refuses_a_target_above_its_formats_default_trigger() -> None:
    error = refused(lambda **kw: CompactionSession(messages.FORMAT, **kw), target=0.97)
    assert error.details["rule"] == "trigger_above_target" and "0.95" in str(error)
    CompactionSession(messages.FORMAT, target=0.97, trigger=0.99)  # with its own trigger
    CompactionSession(chat.FORMAT, target=0.97)  # Chat Completions counts exactly: no margin


@pytest.mark.parametrize(("name", "value"), [
    ("target", 1.5), ("target", 0.0), ("trigger", -0.1), ("max_result_share", 1.2),
    ("window", 0), ("reserve", -1), ("keep_recent", "4"), ("sticky", 1),
    ("check_prefix", "hash"), ("summary_timeout", 0), ("on_summary_error", "ignore"),
    ("windows", {"gpt": "big"}), ("pin", "0"), ("store", {}), ("estimator", object()),
])
def test_a_bad_value_is_refused_naming_the_setting(name: str, value: Any) -> None:
    for _, make in MAKERS:
        error = refused(make, **{name: value})
        assert error.details["field"].startswith(name), (name, error.details)


@pytest.mark.parametrize("name", ["on_compaction", "on_call", "summarizer"])
def test_a_callback_that_cannot_be_called_is_refused(name: str) -> None:
    for _, make in MAKERS:
        error = refused(make, **{name: "print"})
        assert error.details == {"field": name, "rule": "not_callable"}
        assert "got str" in str(error)


@pytest.mark.parametrize(("name", "value"), [
    ("summarizer", OpenAISummarizer), ("store", MemoryStore), ("estimator", CharRatioEstimator),
])
def test_a_class_where_an_instance_belongs_is_refused(name: str, value: type) -> None:
    error = refused(CompactionSettings, **{name: value})
    assert error.details["rule"] == "class_not_instance"
    assert f"the class {value.__name__}" in str(error)


# --- what is wrapped ------------------------------------------------------------------------


def test_the_wrong_sdks_client_is_refused_when_wrapped() -> None:
    error = refused(lambda: CompactingOpenAI(Anthropic(api_key="test")))  # type: ignore[type-var]
    assert "got anthropic.Anthropic (wrap it with CompactingAnthropic)" in str(error)
    error = refused(lambda: CompactingAnthropic(openai_client()))  # type: ignore[type-var]
    assert "wrap it with CompactingOpenAI" in str(error)


def test_a_client_class_or_something_else_is_refused_when_wrapped() -> None:
    error = refused(lambda: CompactingOpenAI(OpenAI))  # type: ignore[type-var]
    assert error.details["rule"] == "class_not_instance" and "pass OpenAI(...)" in str(error)
    error = refused(lambda: CompactingOpenAI("not a client"))  # type: ignore[type-var]
    assert error.details["rule"] == "client_type" and "got builtins.str" in str(error)


def test_both_clients_of_an_sdk_are_accepted() -> None:
    assert CompactingOpenAI(AsyncOpenAI(api_key="test")).wrapped is not None


def test_a_session_needs_a_format() -> None:
    error = refused(lambda: CompactionSession("openai-chat"))  # type: ignore[arg-type]
    assert error.details["rule"] == "format_type" and "chat.FORMAT" in str(error)
    assert messages.FORMAT.name == "anthropic-messages"

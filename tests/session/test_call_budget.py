"""A budget per call (``prepare(budget=...)``): a host whose budget changes from call to call
keeps one live session, its views and what it read, instead of building a new one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cutctx import ValidationError
from cutctx_adapters import CompactionSession
from cutctx_adapters.openai import chat
from tests._support.agents import chat_run

pytestmark = pytest.mark.usefixtures("tiktoken_cache")


def _history() -> list[dict[str, Any]]:
    return chat_run(3, 30).items


def test_a_calls_budget_replaces_the_window_and_sizes_trigger_and_target() -> None:
    session = CompactionSession(chat.FORMAT, "gpt-4o", target=0.5)
    history = _history()
    roomy = session.prepare(messages=history).report
    assert roomy.decision == "unchanged" and roomy.prompt_budget == 128_000 - 4_096
    tight = session.prepare(messages=history, budget=6_000).report
    assert tight.decision == "compacted" and tight.prompt_budget == 6_000
    assert (tight.trigger_tokens, tight.target_tokens) == (6_000, 3_000)
    assert tight.tokens_sent is not None and tight.tokens_sent <= 6_000


def test_one_session_keeps_a_view_per_budget() -> None:
    session = CompactionSession(chat.FORMAT, "gpt-4o")
    history = _history()
    first = session.prepare(messages=history, budget=6_000)
    session.prepare(messages=history, budget=9_000)
    again = session.prepare(messages=history, budget=6_000)
    assert again.report.decision == "reused" and again.messages == first.messages
    grown = [*history, {"role": "assistant", "content": "Done."},
             {"role": "user", "content": "Thanks."}]
    appended = session.prepare(messages=grown, budget=6_000)
    assert appended.report.decision == "appended"
    assert appended.messages[:len(first.messages)] == first.messages


def test_the_async_path_takes_it_too() -> None:
    session = CompactionSession(chat.FORMAT, "gpt-4o")
    prepared = asyncio.run(session.aprepare(messages=_history(), budget=6_000))
    assert prepared.report.prompt_budget == 6_000 and prepared.report.decision == "compacted"


@pytest.mark.parametrize("budget", [0, -5, True, "6000", 6_000.0])
def test_a_budget_that_is_not_tokens_is_refused(budget: Any) -> None:
    session = CompactionSession(chat.FORMAT, "gpt-4o")
    with pytest.raises(ValidationError) as raised:
        session.prepare(messages=_history(), budget=budget)
    assert raised.value.details == {"field": "budget", "rule": "call_budget"}

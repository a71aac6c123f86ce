"""``CompactingOpenAI`` where Chat Completions differs from Messages: a call may leave out the
reply allowance. What every wrapped client does is in ``tests/contracts/test_wrapped_clients.py``.
A real ``openai`` client, HTTP mocked with respx's httpcore2 mocker (``pytest-httpx2``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx

from cutctx_adapters.openai import CompactingOpenAI
from tests._support.http import mocked_http
from tests.contracts.providers import OPENAI

WINDOW = 10_000
SMALL = OPENAI.agent_history(2)


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


@pytest.fixture
def route() -> Iterator[respx.Route]:
    with mocked_http(base_url=OPENAI.base_url,
                    assert_all_called=False) as router:
        yield router.post(OPENAI.endpoint).mock(side_effect=OPENAI.answer)


def wrap(reports: list[Any], **settings: Any) -> CompactingOpenAI[Any]:
    return CompactingOpenAI(OPENAI.sdk(), on_call=reports.append,
                            **{"window": WINDOW, "trigger": 3_000, "target": 2_000, **settings})


def test_without_an_allowance_the_reserve_is_used(route: respx.Route) -> None:
    reports: list[Any] = []
    wrap(reports).chat.completions.create(model=OPENAI.model, messages=SMALL)
    wrap(reports, reserve=1_000).chat.completions.create(model=OPENAI.model, messages=SMALL)
    wrap(reports, reserve=1_000).chat.completions.create(
        model=OPENAI.model, messages=SMALL, max_completion_tokens=None)
    assert [r.prompt_budget for r in reports] == [WINDOW - 4096, WINDOW - 1_000, WINDOW - 1_000]
    assert route.call_count == 3

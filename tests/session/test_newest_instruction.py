"""A session keeps the person's newest instruction in every request (issue 39, item 1).

The README's order — tool results give way first, then the agent's own steps, then what a person
typed — holds in a session as in ``compact``: through a 120-call agent loop at a small window,
with the person's instruction every few calls (text, or text with a screenshot), every request
carries the newest instruction's requirement sentences verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cutctx_adapters import CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from tests._support.agent_loop import agent_loop

MODELS = {"chat": "gpt-4o", "responses": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
FORMATS: dict[str, Any] = {"chat": chat.FORMAT, "responses": responses.FORMAT,
                           "anthropic": anthropic_messages.FORMAT}


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


def _sentences(text: str) -> list[str]:
    """The instruction's two sentences (``agent_loop.instruction``)."""
    first, _, second = text.partition(". ")
    return [first + ".", second]


@pytest.mark.parametrize("screenshots", [False, True], ids=["text", "screenshot"])
@pytest.mark.parametrize("fmt", ["chat", "responses", "anthropic"])
def test_every_request_carries_the_newest_instruction(fmt: str, screenshots: bool) -> None:
    loop = agent_loop(seed=1, turns=120, huge_at=None, follow_up_every=7,
                      screenshots=screenshots)
    session = CompactionSession(FORMATS[fmt], model=MODELS[fmt], window=8_000)
    newest: str | None = None
    compacted = 0
    for number, (side, items) in enumerate(loop.requests(fmt)):
        if number and loop.steps[number - 1].follow_up is not None:
            newest = loop.steps[number - 1].follow_up
        request: dict[str, Any] = {"model": MODELS[fmt], FORMATS[fmt].list_key: items}
        if side is not None:
            request[FORMATS[fmt].side_key] = side
        prepared = session.prepare(request)
        compacted += prepared.report.decision in ("compacted", "recompacted")
        assert not prepared.report.budget_unmet, number
        if newest is None:
            continue
        sent = json.dumps(prepared.request[FORMATS[fmt].list_key])
        for sentence in _sentences(newest):
            assert json.dumps(sentence)[1:-1] in sent, (number, sentence)
    assert compacted >= 10  # the loop runs far over the window, many times

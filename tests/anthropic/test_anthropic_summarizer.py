"""``AnthropicSummarizer`` where Messages differs from Chat Completions: a reply is a list of
blocks, and only its text blocks make the summary. What every provider summarizer does is in
``tests/contracts/test_summarizers.py``. A real ``anthropic`` client, HTTP mocked with respx's
httpcore2 mocker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import respx

from cutctx_adapters.anthropic import AnthropicSummarizer
from tests._support.http import mocked_api
from tests.contracts.providers import ANTHROPIC

BUDGET = 800


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


api = mocked_api(ANTHROPIC.base_url)


def test_only_text_blocks_make_the_summary(api: respx.Router) -> None:
    reply = ANTHROPIC.reply(model=ANTHROPIC.summary_model)
    api.post(ANTHROPIC.endpoint).respond(json={**reply, "content": [
        {"type": "thinking", "thinking": "Let me think.", "signature": "sig"},
        {"type": "text", "text": "Part one. "},
        {"type": "text", "text": "Part two."},
    ]})
    history = ANTHROPIC.summary_history()
    result = ANTHROPIC.compact(history, budget=BUDGET, summarizer=AnthropicSummarizer(
        ANTHROPIC.sdk(), model=ANTHROPIC.summary_model))
    text = json.dumps(result.messages)
    assert "Part one. Part two." in text and "Let me think" not in text
    ANTHROPIC.assert_result_sendable(result, history, BUDGET)

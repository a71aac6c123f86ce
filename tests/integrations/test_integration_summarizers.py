"""Summaries through the framework's own model (issue 26): a LangChain chat model and a
pydantic-ai model summarize a span as the provider summarizers do — cutctx's prompt, the reply
bounded, a reply that did not end on its own refused. Real model classes over a real ``openai``
client, HTTP answered by respx."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import respx

pytest.importorskip("langchain_openai", reason="needs cutctx[langchain] and langchain-openai")
pytest.importorskip("pydantic_ai", reason="needs cutctx[pydantic-ai]")

from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI
from pydantic import SecretStr
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from cutctx_adapters import SummarizationFailed
from cutctx_adapters.integrations.langchain import ChatModelSummarizer
from cutctx_adapters.integrations.pydantic_ai import ModelSummarizer
from cutctx_adapters.openai import chat
from tests._support.http import mocked_api

BASE_URL = "https://api.summaries.test/v1"
SUMMARY = "The user asked for a parser fix; the assistant read parser.py and found the bug."


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Counting with tiktoken from the seeded cache."""


def _completion(text: str, finish: str) -> dict[str, Any]:
    return {"id": "chatcmpl-s", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}


api = mocked_api(BASE_URL)


HISTORY = [{"role": "system", "content": "You are a coding agent."},
           *({"role": "user" if n % 2 == 0 else "assistant",
              "content": f"turn {n}: " + "details of the parser work " * 40} for n in range(12))]


def _summarizers() -> dict[str, Any]:
    client = AsyncOpenAI(api_key="k", base_url=BASE_URL, max_retries=0)
    return {
        "langchain": ChatModelSummarizer(ChatOpenAI(model="gpt-4o-mini", base_url=BASE_URL,
                                                    api_key=SecretStr("k"), max_retries=0)),
        "pydantic-ai": ModelSummarizer(OpenAIChatModel(
            "gpt-4o-mini", provider=OpenAIProvider(openai_client=client))),
    }


@pytest.mark.parametrize("name", ["langchain", "pydantic-ai"])
def test_a_frameworks_model_summarizes_with_cutctx_prompt_and_bound(
        api: respx.Router, name: str) -> None:
    route = api.post("/chat/completions").respond(json=_completion(SUMMARY, "stop"))
    budget = chat.count_tokens(HISTORY, model="gpt-4o") // 2
    result = chat.compact(HISTORY, model="gpt-4o", budget=budget,
                          summarizer=_summarizers()[name])
    assert result.report.summary_turn_ids and not result.budget_unmet
    assert SUMMARY in json.dumps(result.messages)
    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"][0]["role"] == "system"
    assert "quoted data" in body["messages"][0]["content"]  # cutctx's prompt, not the agent's
    bound = body.get("max_tokens", body.get("max_completion_tokens"))
    assert isinstance(bound, int) and 0 < bound < budget


@pytest.mark.parametrize("name", ["langchain", "pydantic-ai"])
def test_a_reply_cut_at_its_bound_is_refused(api: respx.Router, name: str) -> None:
    api.post("/chat/completions").respond(json=_completion("The user asked", "length"))
    budget = chat.count_tokens(HISTORY, model="gpt-4o") // 2
    with pytest.raises(SummarizationFailed) as failed:
        chat.compact(HISTORY, model="gpt-4o", budget=budget, summarizer=_summarizers()[name])
    assert failed.value.details["cause"] == "finish_reason:length"
    fallback = chat.compact(HISTORY, model="gpt-4o", budget=budget,
                            summarizer=_summarizers()[name], on_summary_error="fallback")
    assert fallback.summarization_fallback and not fallback.report.summary_turn_ids

"""cutctx as a LiteLLM call hook: the pre-call hook compacts, LiteLLM sends what it returns."""

from __future__ import annotations

import asyncio
import copy
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm", reason="the hook needs cutctx[litellm]")

from litellm.caching.dual_cache import DualCache  # noqa: E402
from litellm.types.proxy.auth.user_api_key_auth import UserAPIKeyAuth  # noqa: E402

from cutctx_adapters.integrations.litellm import CompactionHook  # noqa: E402
from cutctx_adapters.openai import chat  # noqa: E402
from tests.serve._fake import Fake  # noqa: E402
from tests.serve._histories import SYSTEM, TOOLS_CHAT, chat_turn, messages_turn  # noqa: E402
from tests.serve._served import Served  # noqa: E402


def _data(history: list[Any]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": history, "tools": TOOLS_CHAT, "max_tokens": 400,
            "metadata": {"user_api_key_alias": "team-a"},
            "proxy_server_request": {"headers": {"authorization": "Bearer sk-litellm-virtual",
                                                 "x-claude-code-session-id": "s1"}}}


def test_the_hook_compacts_chat_and_litellm_sends_it(fake: tuple[Fake, Served]) -> None:
    state, served = fake
    hook = CompactionHook(window=6000, reserve=500, salt=b"s")
    user = UserAPIKeyAuth(token="hashed-virtual-key")
    history: list[Any] = [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": "Fix the failing test."}]
    decisions = []

    async def run() -> None:
        nonlocal history
        for turn in range(14):
            history = [*history, *chat_turn(turn)]
            data = _data(history)
            before = copy.deepcopy(data)
            out = await hook.async_pre_call_hook(user, DualCache(), data, "acompletion")
            assert data == before and out is not None
            figures = out["metadata"]["cutctx"]
            decisions.append(figures["decision"])
            assert figures["tokens_sent"] <= 5600 and out["metadata"]["user_api_key_alias"]
            assert chat.count_tokens(out["messages"], model="gpt-4o", tools=TOOLS_CHAT) <= 5600
        assert out is not None  # the last turn's request
        reply = await litellm.acompletion(
            model="openai/gpt-4o", messages=out["messages"], tools=TOOLS_CHAT,
            api_base=f"{served.url}/v1", api_key="sk-upstream", max_tokens=400)
        assert reply.choices[0].message.content.startswith("reply")

    asyncio.run(run())
    assert "compacted" in decisions and "appended" in decisions
    assert state.invalid == [] and len(state.of("/v1/chat/completions")) == 1


def test_the_hook_compacts_anthropic_messages_and_passes_other_calls(
        fake: tuple[Fake, Served]) -> None:
    hook = CompactionHook(window=6000, reserve=500, salt=b"s")
    history: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
    for turn in range(14):
        history += messages_turn(turn)
    data = {"model": "claude-sonnet-4-5", "max_tokens": 400, "system": SYSTEM,
            "messages": history}

    async def run() -> tuple[Any, Any]:
        user = UserAPIKeyAuth(token="t")
        compacted = await hook.async_pre_call_hook(user, DualCache(), data, "anthropic_messages")
        other = await hook.async_pre_call_hook(user, DualCache(), {"input": "x"}, "aembedding")
        return compacted, other

    compacted, other = asyncio.run(run())
    assert compacted["metadata"]["cutctx"]["decision"] == "compacted"
    assert compacted["messages"] != history and other is None

"""A proxy whose shared store dies mid-conversation keeps answering: the store is marked down
once, every request is still compacted and sent, and the metrics say the store is down."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from cutctx_adapters import CompactionSettings
from tests._support.redis_server import RedisServer
from tests.serve._fake import Fake
from tests.serve._histories import SYSTEM, TOOLS_CHAT, chat_turn
from tests.serve._served import Served
from tests.serve.conftest import ProxyFactory


def test_a_store_that_dies_mid_conversation_never_stops_a_request(
        fake: tuple[Fake, Served], proxy: ProxyFactory, fresh_redis: RedisServer) -> None:
    redis_async = pytest.importorskip("redis.asyncio")
    from cutctx_adapters.stores import RedisStore

    state, _ = fake
    summaries: list[int] = []

    def summarize(request: Any, turns: Any) -> str:
        summaries.append(len(turns))
        return "Earlier: files were read."

    client = redis_async.Redis(host="127.0.0.1", port=fresh_redis.port, socket_timeout=1,
                               socket_connect_timeout=1)
    served = proxy(CompactionSettings(window=3000, reserve=500, summarizer=summarize),
                   store=RedisStore(client))
    history: list[Any] = [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": "Fix the failing test."}]
    decisions: list[str] = []
    slowest_after = 0.0
    with httpx2.Client(timeout=30) as http:
        for turn in range(24):
            if turn == 10:
                fresh_redis.kill()
                before = len(summaries)
            history += chat_turn(turn)
            started = time.monotonic()
            response = http.post(
                f"{served.url}/v1/chat/completions",
                json={"model": "gpt-4o", "messages": history, "tools": TOOLS_CHAT,
                      "max_tokens": 400},
                headers={"authorization": "Bearer k"})
            if turn > 10:
                slowest_after = max(slowest_after, time.monotonic() - started)
            assert response.status_code == 200, response.text
            decisions.append(response.headers["x-cutctx-decision"])
        metrics = http.get(f"{served.url}/metrics").text
    assert state.invalid == [] and len(state.of("/v1/chat/completions")) == 24
    assert "recompacted" in decisions[10:] or "compacted" in decisions[10:]
    assert len(summaries) > before  # summaries made locally once the store is gone
    assert "cutctx_proxy_store_up 0.0" in metrics
    assert slowest_after < 10  # no request waits out a store that is down

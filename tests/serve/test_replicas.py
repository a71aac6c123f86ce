"""Two ``cutctx serve`` processes over one real redis-server send what a single one sends."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests._support.redis_server import RedisServer
from tests.serve._fake import Fake
from tests.serve._histories import SYSTEM, TOOLS_CHAT, chat_turn
from tests.serve._served import Served

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(upstream: str, store: str, tiktoken_cache: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    env.pop("CUTCTX_SALT", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "cutctx_adapters", "serve", "--port", str(port),
         "--openai-upstream", upstream, "--anthropic-upstream", upstream, "--store", store,
         "--window", "3000", "--reserve", "500", "--log-level", "warning",
         "--summarizer", "import:tests.serve._pid_summarizer:summarize"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx2.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"cutctx serve did not start: {process.communicate()[0][-2000:]}")


@pytest.fixture
def replicas(fake: tuple[Fake, Served], fresh_redis: RedisServer,
             tiktoken_cache: Path) -> Iterator[list[str]]:
    store = f"redis://127.0.0.1:{fresh_redis.port}/0"
    started = [_start(fake[1].url, store, tiktoken_cache) for _ in range(2)]
    try:
        yield [url for _, url in started]
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(timeout=10)


def _conversation(urls: list[str], credential: str) -> list[str]:
    history: list[Any] = [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": "Fix the failing test."}]
    decisions = []
    with httpx2.Client(timeout=30) as client:
        for turn in range(20):
            history += chat_turn(turn)
            body = {"model": "gpt-4o", "messages": history, "tools": TOOLS_CHAT,
                    "max_tokens": 400}
            response = client.post(f"{urls[turn % len(urls)]}/v1/chat/completions", json=body,
                                   headers={"authorization": f"Bearer {credential}"})
            assert response.status_code == 200, response.text
            decisions.append(response.headers["x-cutctx-decision"])
    return decisions


def test_two_replicas_over_redis_send_the_bytes_one_would(
        fake: tuple[Fake, Served], replicas: list[str]) -> None:
    state, _ = fake
    alternating = _conversation(replicas, "tenant-a")
    half = len(state.received)
    alone = _conversation(replicas[:1], "tenant-b")  # another tenant: summaries made afresh
    bodies = [request.body for request in state.of("/v1/chat/completions")]
    assert state.invalid == [] and "recompacted" in alternating
    found = re.findall(rb"Summary by process (\d+) of span (\S+)\.", b"".join(bodies[:half]))
    assert found, "the window was meant to need summaries"
    by_span: dict[bytes, set[bytes]] = {}
    for pid, span in found:
        by_span.setdefault(span, set()).add(pid)
    assert all(len(pids) == 1 for pids in by_span.values())  # each span produced once

    def unnamed(body: bytes) -> bytes:
        return re.sub(rb"process \d+", b"process P", body)

    # the same bytes; the reports may differ (a replica that did not see an earlier call
    # reports the view it derives as "compacted" where one that did says "appended")
    assert [unnamed(body) for body in bodies[:half]] == [unnamed(b) for b in bodies[half:]]
    assert len(alone) == len(alternating)

"""What ``cutctx serve`` adds to a call: latency per request and throughput, against the fake
upstream called directly in the same run.

Run from the repository root: ``python benchmarks/proxy.py [--calls 60] [--seconds 5]``.
The fake provider (``tests/serve/_fake.py``) and the proxy (``cutctx serve --window 3000``)
each run in a process of their own on 127.0.0.1. For 200- and 2,000-message histories a
conversation first grows past compaction, then each timed call appends two messages (an
appended call on a compacted view, the steady state of an agent); each call is sent to the fake
directly and through the proxy, and the added latency is the difference, call by call (p50,
p99). Beside it, the library's own cost for the same calls (``CompactionSession.aprepare`` in
this process). Throughput: 50 concurrent clients, each its own 200-message conversation, for
``--seconds``, direct and through the proxy. Goal: p50 added under 5 ms on an appended call,
and no worse than the library's own call cost plus reading and writing the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

from cutctx_adapters import CompactionSession, CompactionSettings
from cutctx_adapters.openai import chat

ROOT = Path(__file__).resolve().parents[1]
FAKE = ("import uvicorn, sys; from tests.serve._fake import Fake, fake_app; "
        "uvicorn.run(fake_app(Fake(check=False)), host='127.0.0.1', port=int(sys.argv[1]), "
        "log_level='warning')")


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx2.get(url, timeout=1)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


def _message(n: int) -> dict[str, Any]:
    role = "user" if n % 2 == 0 else "assistant"
    return {"role": role, "content": f"Message {n}: the build step {n} printed "
                                     f"src/module_{n % 17}.py:{n} and moved on to the next one."}


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": messages, "max_tokens": 200}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def latency(direct: str, proxy: str, size: int, calls: int) -> dict[str, float]:
    history = [{"role": "system", "content": "You are a helpful agent."},
               *(_message(n) for n in range(size - 1))]
    session = CompactionSession(chat.FORMAT, settings=CompactionSettings(window=3000))
    added, library = [], []
    with httpx2.Client(timeout=30) as client:
        for call in range(calls + 5):
            history = [*history, _message(size + 2 * call), _message(size + 2 * call + 1)]
            body = _body(history)
            start = time.perf_counter()
            client.post(f"{direct}/v1/chat/completions", json=body,
                        headers={"authorization": "Bearer k"})
            middle = time.perf_counter()
            response = client.post(f"{proxy}/v1/chat/completions", json=body,
                                   headers={"authorization": "Bearer k"})
            end = time.perf_counter()
            before = time.perf_counter()
            asyncio.run(session.aprepare(body))
            own = time.perf_counter() - before
            if response.headers["x-cutctx-decision"] == "appended":  # the steady state
                added.append((end - middle) - (middle - start))
                library.append(own)
    return {"p50": _percentile(added, 0.5) * 1000, "p99": _percentile(added, 0.99) * 1000,
            "library": statistics.median(library) * 1000}


async def _throughput(url: str, seconds: float, clients: int = 50) -> float:
    done = 0
    stop = time.monotonic() + seconds

    async def one(client: httpx2.AsyncClient, n: int) -> None:
        nonlocal done
        history = [{"role": "system", "content": f"Agent {n}."},
                   *(_message(m) for m in range(199))]
        while time.monotonic() < stop:
            history = [*history, _message(len(history)), _message(len(history) + 1)]
            response = await client.post(f"{url}/v1/chat/completions", json=_body(history),
                                         headers={"authorization": f"Bearer k{n}"})
            response.raise_for_status()
            done += 1

    limits = httpx2.Limits(max_connections=clients)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(one(client, n) for n in range(clients)))
    return done / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    fake_port, proxy_port = _port(), _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    direct, proxy = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{proxy_port}"
    processes = [
        subprocess.Popen([sys.executable, "-c", FAKE, str(fake_port)], cwd=ROOT, env=env),
        subprocess.Popen([sys.executable, "-m", "cutctx_adapters", "serve", "--port",
                          str(proxy_port), "--openai-upstream", direct, "--window", "3000",
                          "--log-level", "warning"], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL)]
    try:
        _wait(f"{direct}/v1/models")
        _wait(f"{proxy}/healthz")
        print("baseline: the fake upstream called directly, in the same run")
        print(f"{'messages':>9} {'added p50 ms':>13} {'added p99 ms':>13} "
              f"{'library ms':>11}")
        for size in (200, 2000):
            figures = latency(direct, proxy, size, args.calls)
            print(f"{size:>9} {figures['p50']:>13.2f} {figures['p99']:>13.2f} "
                  f"{figures['library']:>11.2f}")
        direct_rate = asyncio.run(_throughput(direct, args.seconds))
        proxy_rate = asyncio.run(_throughput(proxy, args.seconds))
        print(f"\nthroughput, 50 concurrent clients (200-message conversations): "
              f"direct {direct_rate:.0f} req/s, through the proxy {proxy_rate:.0f} req/s")
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()

"""The proxy's contract over HTTP: streaming untouched, keys and lineages, errors, retries,
bypass, credentials, WebSocket refusal, health and metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import httpx2
import pytest

from cutctx_adapters import CompactionSettings
from cutctx_adapters.openai import chat
from tests.serve._fake import Fake
from tests.serve._histories import SYSTEM, TOOLS_CHAT, chat_turn, messages_turn
from tests.serve._served import Served
from tests.serve.conftest import ProxyFactory

SETTINGS = CompactionSettings(window=6000, reserve=500)
SECRET = "sk-very-secret-credential-123"


def _chat(history: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": history, "tools": TOOLS_CHAT, "max_tokens": 400,
            **extra}


def _history(turns: int, task: str = "Fix the failing test.") -> list[Any]:
    history: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    for turn in range(turns):
        history += chat_turn(turn)
    return history


def test_sse_is_relayed_chunk_by_chunk_with_the_report_first(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    state.gate = threading.Semaphore(0)
    body = _chat(_history(12), stream=True)
    with httpx2.Client(timeout=10) as client, client.stream(
            "POST", f"{served.url}/v1/chat/completions", json=body,
            headers={"authorization": "Bearer k"}) as response:
        assert response.headers["x-cutctx-decision"] == "compacted"  # before any byte
        assert response.headers["x-fake-stream"] == "1"
        received = []
        for chunk in response.iter_raw():
            received.append(chunk)
            state.gate.release()  # the fake sends its next event only now
    text = b"".join(received).decode()
    assert text.count("data: ") == 6 and text.endswith("data: [DONE]\n\n")


def test_fifty_concurrent_conversations_with_one_system_prompt_never_mix(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)

    async def conversation(client: httpx2.AsyncClient, n: int) -> list[str]:
        history = _history(0, task=f"Task number {n}.")
        decisions = []
        for turn in range(3):
            history = [*history, *chat_turn(100 * n + turn)]
            response = await client.post(
                f"{served.url}/v1/chat/completions", json=_chat(history),
                headers={"authorization": f"Bearer key-{n % 5}"})
            assert response.status_code == 200, response.text
            decisions.append(response.headers["x-cutctx-session"])
        return decisions

    async def run() -> list[list[str]]:
        async with httpx2.AsyncClient(timeout=30) as client:
            return await asyncio.gather(*(conversation(client, n) for n in range(50)))

    sessions = asyncio.run(run())
    assert all(len({label.rsplit(".", 1)[0] for label in labels}) == 1 for labels in sessions)
    assert len({labels[0] for labels in sessions}) == 50
    for request in state.of("/v1/chat/completions"):
        messages = request.json["messages"]
        task = messages[1]["content"]
        n = int(task.split()[-1].rstrip("."))
        calls = [m["tool_call_id"] for m in messages if m.get("role") == "tool"]
        assert all(int(call.split("_")[1]) // 100 == n for call in calls)
    assert state.invalid == []


def test_forks_and_a_subagent_keep_their_own_lineages(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    served = proxy(SETTINGS)
    headers = {"authorization": "Bearer k", "x-claude-code-session-id": "conv-1"}
    url = f"{served.url}/v1/chat/completions"
    with httpx2.Client(timeout=10) as client:
        def send(history: list[Any]) -> httpx2.Response:
            response = client.post(url, json=_chat(history), headers=headers)
            assert response.status_code == 200
            return response

        main = _history(12)
        first = send(main)
        assert first.headers["x-cutctx-decision"] == "compacted"
        subagent = [{"role": "system", "content": "You are a search subagent."},
                    {"role": "user", "content": "Find the test."}]
        fork = [*main[:6], {"role": "user", "content": "Try another way."}]
        other_sub = send(subagent).headers["x-cutctx-session"]
        other_fork = send(fork).headers["x-cutctx-session"]
        main += [{"role": "assistant", "content": "Done reading."},
                 {"role": "user", "content": "Go on."}]
        again = send(main)
    assert again.headers["x-cutctx-decision"] == "appended"
    lineage = first.headers["x-cutctx-session"]
    assert again.headers["x-cutctx-session"] == lineage
    assert len({lineage, other_sub, other_fork}) == 3
    assert {label.rsplit(".", 1)[0] for label in (lineage, other_sub, other_fork)} == {
        lineage.rsplit(".", 1)[0]}


@pytest.mark.parametrize("status", [400, 429, 500])
def test_upstream_errors_come_back_with_their_status_and_body(
        fake: tuple[Fake, Served], proxy: ProxyFactory, status: int) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    error = {"error": {"message": f"upstream says {status}", "type": "x", "code": "y"}}
    state.faults.append(("status", (status, error)))
    response = httpx2.post(f"{served.url}/v1/chat/completions", json=_chat(_history(1)),
                           headers={"authorization": "Bearer k"})
    assert response.status_code == status and response.json() == error
    assert response.headers["x-cutctx-decision"] == "unchanged"
    assert len(state.of("/v1/chat/completions")) == 1


def test_a_compressed_upstream_error_comes_back_readable(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    """An error read whole (to see whether it is a context-length error) is passed on as read:
    decoded, so without the upstream's content-encoding."""
    state, _ = fake
    served = proxy(SETTINGS)
    error = {"error": {"message": "upstream says no", "type": "x", "code": "y"}}
    state.faults.append(("gzipped", (400, error)))
    response = httpx2.post(f"{served.url}/v1/chat/completions", json=_chat(_history(1)),
                           headers={"authorization": "Bearer k", "accept-encoding": "gzip"})
    assert response.status_code == 400 and response.json() == error


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_usage_replies_report_corrects_later_estimates(
        fake: tuple[Fake, Served], proxy: ProxyFactory, stream: bool) -> None:
    """As a wrapped client's session does, the proxy's learns from each reply's usage: a
    provider that bills 1.6 times cutctx's count is estimated at 1.6 times from then on."""
    state, _ = fake
    state.billed = 1.6
    served = proxy(SETTINGS)
    history = _history(0)
    ratios = []
    for turn in range(4):
        history = [*history, *chat_turn(turn)]
        with httpx2.Client(timeout=10) as client, client.stream(
                "POST", f"{served.url}/v1/chat/completions",
                json=_chat(history, stream=stream),
                headers={"authorization": "Bearer k"}) as response:
            response.read()
            estimate = int(response.headers["x-cutctx-tokens-sent"])
        sent = state.of("/v1/chat/completions")[-1].json
        ratios.append(estimate / chat.count_tokens(sent["messages"], model="gpt-4o",
                                                   tools=sent["tools"]))
    assert ratios[0] == pytest.approx(1.0, abs=0.02)
    assert ratios[-1] == pytest.approx(1.6, rel=0.05)


def test_a_count_between_two_calls_is_no_step_of_the_lineage(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    """An agent that counts its next request before sending it: the request still continues
    the lineage as sent, its reply resent as it came."""
    served = proxy(SETTINGS)
    history: list[Any] = [{"role": "user", "content": "Fix it."}, *messages_turn(0)]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 400, "messages": history}
    reply = httpx2.post(f"{served.url}/v1/messages", json=body).json()
    history = [*history, {"role": "assistant", "content": reply["content"]},
               {"role": "user", "content": "Go on."}]
    httpx2.post(f"{served.url}/v1/messages/count_tokens",
                json={"model": "claude-sonnet-4-5", "messages": history})
    httpx2.post(f"{served.url}/v1/messages", json={**body, "messages": history})
    metrics = httpx2.get(f"{served.url}/metrics").text
    assert 'cutctx_proxy_replies_resent_total{as_received="true"} 1.0' in metrics
    assert 'as_received="false"' not in metrics


def test_an_upstream_timeout_is_a_504_and_a_dead_upstream_a_502(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS, timeout=0.3)
    state.faults.append(("hang", 2.0))
    response = httpx2.post(f"{served.url}/v1/chat/completions", json=_chat(_history(1)),
                           timeout=10)
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    fake[1].stop()
    response = httpx2.post(f"{served.url}/v1/chat/completions", json=_chat(_history(1)),
                           timeout=10)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_connection"


@pytest.mark.parametrize("kind", ["chat", "messages"])
def test_a_context_length_error_is_retried_once_at_a_lower_budget(
        fake: tuple[Fake, Served], proxy: ProxyFactory, kind: str) -> None:
    state, _ = fake
    served = proxy(CompactionSettings(window=20_000, reserve=500))
    if kind == "chat":
        path, body = "/v1/chat/completions", _chat(_history(12))
    else:
        history: list[Any] = [{"role": "user", "content": "Fix it."}]
        for turn in range(12):
            history += messages_turn(turn)
        path = "/v1/messages"
        body = {"model": "claude-sonnet-4-5", "max_tokens": 400, "messages": history}
    state.limits[body["model"]] = 3000
    response = httpx2.post(f"{served.url}{path}", json=body,
                           headers={"authorization": "Bearer k"}, timeout=30)
    assert response.status_code == 200, response.text
    sent = state.of(path)
    assert len(sent) == 2 and len(sent[1].body) < len(sent[0].body)
    assert response.headers["x-cutctx-decision"] == "compacted"
    assert int(response.headers["x-cutctx-tokens-sent"]) < 3000
    state.limits[body["model"]] = 10  # nothing fits that: the error passes on, not retried
    response = httpx2.post(f"{served.url}{path}", json=body, timeout=30)
    assert response.status_code == 400 and len(state.of(path)) == 3


def test_bypass_forwards_the_very_bytes(fake: tuple[Fake, Served],
                                        proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    raw = json.dumps(_chat(_history(12)), indent=1).encode()
    response = httpx2.post(f"{served.url}/v1/chat/completions", content=raw,
                           headers={"x-cutctx-bypass": "1", "content-type": "application/json"})
    assert response.headers["x-cutctx-decision"] == "bypass"
    sent = state.of("/v1/chat/completions")[-1]
    assert sent.body == raw and "x-cutctx-bypass" not in sent.headers


def test_other_paths_are_forwarded_and_websockets_refused(
        fake: tuple[Fake, Served], proxy: ProxyFactory) -> None:
    state, _ = fake
    served = proxy(SETTINGS)
    response = httpx2.get(f"{served.url}/v1/models?limit=2",
                          headers={"authorization": "Bearer k", "openai-organization": "org"})
    assert response.status_code == 200 and response.json()["data"][0]["id"] == "gpt-4o"
    forwarded = state.of("/v1/models")[-1]
    assert forwarded.headers["openai-organization"] == "org"
    import websockets.sync.client as ws
    with pytest.raises(Exception) as refused:
        ws.connect(served.url.replace("http", "ws") + "/v1/responses", open_timeout=5)
    assert "426" in str(refused.value)


def test_credentials_never_reach_logs_headers_metrics_or_the_store(
        fake: tuple[Fake, Served], proxy: ProxyFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    from cutctx_adapters.stores import MemoryStore

    store = MemoryStore()
    summaries: list[int] = []

    def summarize(request: Any, turns: Any) -> str:
        summaries.append(len(turns))
        return "Earlier: files were read."

    served = proxy(SETTINGS.replace(summarizer=summarize, window=3000), store=store)
    caplog.set_level(logging.DEBUG)
    response = httpx2.post(f"{served.url}/v1/chat/completions", json=_chat(_history(30)),
                           headers={"authorization": f"Bearer {SECRET}"}, timeout=30)
    assert response.status_code == 200
    metrics = httpx2.get(f"{served.url}/metrics").text
    health = httpx2.get(f"{served.url}/healthz").json()
    stored = [key + value.value.decode() for key, value in store._values.items()]
    everything = caplog.text + str(dict(response.headers)) + metrics + json.dumps(stored)
    assert summaries and SECRET not in everything and "src/module_" not in caplog.text
    assert 'cutctx_proxy_requests_total{decision="compacted",endpoint="chat",status="2xx"} 1.0' \
        in metrics
    assert "cutctx_proxy_summaries_total" in metrics and health["status"] == "ok"
    assert all(key.startswith(("t.", "proxy:")) for key in store._values)

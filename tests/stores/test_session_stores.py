"""Sessions in separate processes over one shared store (issue 12): real worker processes take
the calls of one agent run round-robin, each with its own CompactionSession.

* Over a shared SQLiteStore or RedisStore (a real redis-server), every worker sends, call for
  call, the bytes one in-process session sends, and each summary is paid for once in all.
* Without a store, mask/drop sessions (no summarizer) agree all the same: views come from the
  history alone. Summaries are what needs the store: without one each worker pays again.
* The store failing mid-replay (Redis killed, SQLite locked) degrades to summarizing locally: a
  StoreWarning naming the store, never an exception, the same requests, under the budget.
"""

from __future__ import annotations

import functools
import itertools
import json
import multiprocessing
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cutctx import CharRatioEstimator
from cutctx_adapters.history import SUMMARY_HEADER
from cutctx_adapters.openai import chat
from cutctx_adapters.stores import MemoryStore
from tests._support.redis_server import RedisServer
from tests._support.session_workers import FORMATS, Replay, Reply, SpanLog, Workers
from tests._support.store_workers import locked_sqlite

# fork: a worker starts in milliseconds. Workers take plain values only, so "spawn" works too.
CONTEXT = multiprocessing.get_context("fork")
# Per format, a run whose calls compact several times and summarize at least twice, each
# request fitting the 3,000-token window.
SEEDS = {"chat": 0, "responses": 2, "anthropic": 0}
_prefixes = itertools.count()


@dataclass(frozen=True)
class Reference:
    """What one in-process session with a MemoryStore does with every call of a replay."""

    bodies: list[str]
    decisions: list[str]
    spans: list[str]
    """The spans it paid a summary for, in order."""
    summarized_at: list[int]
    """The calls during which it paid for one."""


@functools.cache
def reference(replay: Replay) -> Reference:
    log = SpanLog()
    session = replay.session(MemoryStore(), log)
    bodies: list[str] = []
    decisions: list[str] = []
    summarized_at: list[int] = []
    for index in range(len(replay.calls)):
        paid = len(log.spans)
        prepared = session.prepare(replay.request(index))
        bodies.append(json.dumps(prepared.request))
        decisions.append(prepared.report.decision)
        if len(log.spans) > paid:
            summarized_at.append(index)
    return Reference(bodies, decisions, log.spans, summarized_at)


def replay_of(name: str, summarize: bool = True) -> Replay:
    return Replay(name, seed=SEEDS[name], summarize=summarize)


@pytest.fixture
def where(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The shared store, as workers open it: an SQLite file, or ``port/prefix`` on Redis."""
    if kind == "sqlite":
        return str(tmp_path / "store.db")  # created by the workers themselves
    server: RedisServer = request.getfixturevalue("redis_server")
    return f"{server.port}/sessions{next(_prefixes)}:"


def errors(replies: list[Reply]) -> list[str]:
    return [reply.error for reply in replies if reply.error is not None]


# --- a shared store: the same bytes, each summary paid for once ----------------------------


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
@pytest.mark.parametrize("count", [2, 4])
@pytest.mark.parametrize("name", FORMATS)
def test_workers_sharing_a_store_send_what_one_session_sends(
        name: str, count: int, kind: str, where: str, tmp_path: Path) -> None:
    replay = replay_of(name)
    expected = reference(replay)
    assert len(expected.spans) >= 2
    spans = tmp_path / "spans.txt"
    with Workers(CONTEXT, count, replay, kind, where, str(spans)) as workers:
        replies = workers.replay_all()
    assert errors(replies) == []
    assert [reply.body for reply in replies] == expected.bodies
    assert sorted(SpanLog(str(spans)).spans) == sorted(expected.spans)
    assert len({reply.pid for reply in replies}) == count
    assert [reply.warnings for reply in replies] == [()] * len(replies)


# --- no store --------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 4])
@pytest.mark.parametrize("name", FORMATS)
def test_mask_and_drop_workers_agree_without_a_store(name: str, count: int,
                                                      tmp_path: Path) -> None:
    replay = replay_of(name, summarize=False)
    expected = reference(replay)
    assert {"compacted", "recompacted"} <= set(expected.decisions)
    with Workers(CONTEXT, count, replay, None, "", str(tmp_path / "spans.txt")) as workers:
        replies = workers.replay_all()
    assert errors(replies) == []
    assert [reply.body for reply in replies] == expected.bodies


def test_without_a_shared_store_each_worker_pays_for_summaries_again(tmp_path: Path) -> None:
    replay = replay_of("chat")
    expected = reference(replay)
    spans = tmp_path / "spans.txt"
    with Workers(CONTEXT, 2, replay, None, "", str(spans)) as workers:
        replies = workers.replay_all()
    assert errors(replies) == []
    assert [reply.body for reply in replies] == expected.bodies  # the summarizer is determinate
    paid = SpanLog(str(spans)).spans
    assert set(paid) == set(expected.spans) and len(paid) > len(expected.spans)


# --- faults: the store goes down mid-replay --------------------------------------------------


def fault_point(expected: Reference) -> int:
    """A call after the first summary was shared, with summaries still to come."""
    at = expected.summarized_at[0] + 1
    assert any(index >= at for index in expected.summarized_at)
    return at


def assert_degraded(replay: Replay, replies: list[Reply], fault_at: int, store: str) -> None:
    """Every call answered as a session that never saw the fault answers it, under the budget,
    every message from the history; each warning a StoreWarning naming the store."""
    expected = reference(replay)
    assert errors(replies) == []
    assert [reply.body for reply in replies] == expected.bodies
    for reply, history in zip(replies, replay.calls, strict=True):
        assert reply.body is not None and reply.prompt_budget is not None
        messages = json.loads(reply.body)["messages"]
        assert chat.count_tokens(messages, estimator=CharRatioEstimator()) <= reply.prompt_budget
        assert reply.tokens_sent is not None and reply.tokens_sent <= reply.prompt_budget
        assert_messages_come_from(messages, history)
    warned = [(reply.index, text) for reply in replies for text in reply.warnings]
    assert warned, "no worker noticed the store was down"
    for index, text in warned:
        assert index >= fault_at
        assert text.startswith("StoreWarning: ") and store in text


def assert_messages_come_from(sent: list[dict[str, Any]], history: list[dict[str, Any]]) -> None:
    """Chat messages sent are the history's, in order; the others stand in for some of them: a
    stub keeps its tool message's place and id, a summary says it is one."""
    position = 0
    for message in sent:
        content = message.get("content")
        if isinstance(content, str) and content.startswith(SUMMARY_HEADER):
            continue
        for index in range(position, len(history)):
            original = history[index]
            if original == message or (
                    message["role"] == original["role"] == "tool"
                    and message["tool_call_id"] == original["tool_call_id"]
                    and "cutctx" in message["content"]):
                position = index + 1
                break
        else:
            raise AssertionError(f"a message sent is not from the history (role "
                                 f"{message['role']}, after item {position})")


def test_redis_killed_mid_replay_degrades_with_a_warning(fresh_redis: RedisServer,
                                                        tmp_path: Path) -> None:
    replay = replay_of("chat")
    kill_at = fault_point(reference(replay))
    prefix = "killed:"

    def before(index: int) -> None:
        if index == kill_at:
            fresh_redis.kill()

    with Workers(CONTEXT, 2, replay, "redis", f"{fresh_redis.port}/{prefix}",
                 str(tmp_path / "spans.txt")) as workers:
        replies = workers.replay_all(before)
    assert_degraded(replay, replies, kill_at, f"RedisStore(prefix='{prefix}'")


def test_locked_sqlite_file_degrades_with_a_warning(tmp_path: Path) -> None:
    replay = replay_of("chat")
    lock_at = fault_point(reference(replay))
    path = tmp_path / "store.db"
    with ExitStack() as held:

        def before(index: int) -> None:
            if index == lock_at:
                held.enter_context(locked_sqlite(path))

        with Workers(CONTEXT, 2, replay, "sqlite", str(path), str(tmp_path / "spans.txt"),
                     busy_timeout=0.05) as workers:
            replies = workers.replay_all(before)
    assert_degraded(replay, replies, lock_at, f"SQLiteStore(path={str(path)!r}")

"""Summaries through a session's store never poison a conversation (issue 32: 1, 10, 11).

* Only a summary that passes its checks is stored; a stored one is checked again before use,
  and a bad one (too long, blank, not UTF-8) is replaced, not trusted: in every format, sync and
  async, over MemoryStore, SQLiteStore and RedisStore (a real redis-server).
* An async summarizer given to a sync ``prepare`` is reported as such
  (``AsyncSummarizerInSyncPath``), not as an empty summary with a "never awaited" warning.
* A compaction event that fell back (a transient summarizer error, ``on_summary_error=
  "fallback"``) is not remembered: the next call asks again and sends what a fresh worker sends.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cutctx import CharRatioEstimator, SummarizationRequest, TranscriptTurn
from cutctx_adapters.errors import SummarizationFailed
from cutctx_adapters.session import CompactionSession
from cutctx_adapters.stores import MemoryStore, RedisStore, SQLiteStore, Store
from tests._support.redis_server import RedisServer
from tests._support.session_workers import FORMATS, Replay, SpanLog

SEEDS = {"chat": 0, "responses": 2, "anthropic": 0}
KINDS = ["memory", "sqlite", "redis"]
_prefixes = itertools.count()


@pytest.fixture
def make_store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Store]]:
    """A fresh store of a kind (each SQLite store its own file, each Redis one its prefix)."""
    made: list[Store] = []
    files = itertools.count()

    def make(kind: str) -> Store:
        store: Store
        if kind == "memory":
            store = MemoryStore()
        elif kind == "sqlite":
            store = SQLiteStore(tmp_path / f"store{next(files)}.db")
        else:
            server: RedisServer = request.getfixturevalue("redis_server")
            store = RedisStore(server.client(), prefix=f"summaries{next(_prefixes)}:")
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def session(replay: Replay, store: Store, summarizer: Any, **options: Any) -> CompactionSession:
    return CompactionSession(replay.history_format, model="gpt-4o", window=replay.window,
                             reserve=0, estimator=CharRatioEstimator(), summarizer=summarizer,
                             store=store, **options)


def prepared_body(compactor: CompactionSession, replay: Replay, index: int,
                  asynchronous: bool = False) -> str:
    request = replay.request(index)
    prepared = (asyncio.run(compactor.aprepare(request)) if asynchronous
                else compactor.prepare(request))
    return json.dumps(prepared.request)


class _Recording:
    """A store that notes the keys written to it, passing every call on to ``inner``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.keys: list[str] = []

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.keys.append(key)
        self.inner.put(key, value, ttl=ttl)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@functools.cache
def reference(name: str) -> tuple[Replay, list[str], dict[str, bytes]]:
    """A run whose summarizer always answers well: its bodies, and the summaries it stored."""
    replay = Replay(name, seed=SEEDS[name])
    store = _Recording(MemoryStore())
    compactor = session(replay, store, SpanLog())
    bodies = [prepared_body(compactor, replay, index) for index in range(len(replay.calls))]
    stored = {key: value for key in store.keys if (value := store.inner.get(key)) is not None}
    assert len(stored) >= 2
    return replay, bodies, stored


class TooLongFirst(SpanLog):
    """Answers each span far over its target the first time, well after that."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        span = ",".join(turn.turn_id for turn in turns)
        self.asked.append(span)
        if self.asked.count(span) == 1:
            return "far too long " * request.target_tokens * 4
        return super().__call__(request, turns)


class AsyncSpanLog(SpanLog):
    async def __call__(  # type: ignore[override]
            self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        await asyncio.sleep(0)
        return SpanLog.__call__(self, request, turns)


# --- only checked summaries are stored ------------------------------------------------------


def everywhere(test: Callable[..., None]) -> Callable[..., None]:
    """Run ``test`` in every format, over every kind of store, sync and async."""
    for name, values, ids in (("asynchronous", [False, True], ["sync", "async"]),
                              ("kind", KINDS, None), ("name", list(FORMATS), None)):
        test = pytest.mark.parametrize(name, values, ids=ids)(test)
    return test


@everywhere
def test_a_refused_summary_is_not_stored_and_the_next_call_asks_again(
        name: str, kind: str, asynchronous: bool, make_store: Callable[[str], Store]) -> None:
    replay, expected, _ = reference(name)
    summarizer = TooLongFirst()
    compactor = session(replay, make_store(kind), summarizer, on_summary_error="raise")
    bodies, refused = [], 0
    for index in range(len(replay.calls)):
        try:
            bodies.append(prepared_body(compactor, replay, index, asynchronous))
        except SummarizationFailed as failure:
            assert failure.details["cause"] == "summary_too_long"
            refused += 1
            bodies.append(prepared_body(compactor, replay, index, asynchronous))  # asks again
    assert refused >= 1
    assert bodies == expected


BAD_VALUES = [b"far too long " * 5000, b"\xff\xfe not UTF-8", b"  \n "]
"""Too long for any target, not UTF-8, blank."""


@everywhere
def test_a_bad_stored_summary_is_replaced_not_trusted(
        name: str, kind: str, asynchronous: bool, make_store: Callable[[str], Store]) -> None:
    replay, expected, stored = reference(name)
    store = make_store(kind)
    for key, bad in zip(stored, itertools.cycle(BAD_VALUES)):  # a buggy or older worker's
        store.put(key, bad)
    summarizer = AsyncSpanLog() if asynchronous else SpanLog()
    compactor = session(replay, store, summarizer, on_summary_error="raise")
    bodies = [prepared_body(compactor, replay, index, asynchronous)
              for index in range(len(replay.calls))]
    assert bodies == expected
    assert len(summarizer.spans) == len(stored)  # each span asked once, then taken as stored
    assert {key: store.get(key) for key in stored} == stored


# --- an async summarizer in the sync path --------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_an_async_summarizer_in_sync_prepare_is_reported_as_such(name: str) -> None:
    replay = Replay(name, seed=SEEDS[name])
    compactor = session(replay, MemoryStore(), AsyncSpanLog())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would fail here
        with pytest.raises(SummarizationFailed) as failed:
            for index in range(len(replay.calls)):
                compactor.prepare(replay.request(index))
    assert failed.value.details["cause"] == "AsyncSummarizerInSyncPath"


# --- a fallback is derived, not remembered --------------------------------------------------


class FailingOnce(SpanLog):
    """Raises on its first call (a transient error), answers well after that."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        if not self.failed:
            self.failed = True
            raise ConnectionError("transient")
        return super().__call__(request, turns)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", FORMATS)
def test_after_a_fallback_a_long_lived_session_sends_what_a_fresh_worker_sends(
        name: str, asynchronous: bool) -> None:
    replay = Replay(name, seed=SEEDS[name])
    store = MemoryStore()
    summarizer = FailingOnce()
    long_lived = session(replay, store, summarizer, on_summary_error="fallback")
    fell_back_at = None
    for index in range(len(replay.calls)):
        request = replay.request(index)
        prepared = (asyncio.run(long_lived.aprepare(request)) if asynchronous
                    else long_lived.prepare(request))
        if prepared.report.summarization_fallback and fell_back_at is None:
            fell_back_at = index
            continue  # this call could not have its summary: the fallback is what it sends
        fresh = session(replay, store, SpanLog(), on_summary_error="fallback")
        assert json.dumps(prepared.request) == prepared_body(fresh, replay, index), index
    assert fell_back_at is not None and fell_back_at < len(replay.calls) - 1

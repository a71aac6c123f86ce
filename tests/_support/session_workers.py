"""Worker processes taking the calls of one agent run, each with its own CompactionSession.

A ``Replay`` names the run and the session settings in plain values, so a worker (``fork`` or
``spawn``) rebuilds exactly what the test process builds. ``Workers`` is the load balancer: it
hands call ``i`` to worker ``i % n`` and waits for the answer before the next call, as an agent
waits for each reply. Summarizers note every span they are paid for, in a file shared by all.
"""

from __future__ import annotations

import json
import os
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from multiprocessing.context import ForkContext, SpawnContext
from types import TracebackType
from typing import Any

from cutctx import CharRatioEstimator, SummarizationRequest, TranscriptTurn
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning._format import HistoryFormat
from cutctx_adapters.session import CompactionSession, Prepared
from cutctx_adapters.stores import Store
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run
from tests._support.store_workers import open_store

__all__ = ["FORMATS", "Replay", "Reply", "SpanLog", "Workers", "serve"]

FORMATS: dict[str, tuple[HistoryFormat, Callable[[int, int], AgentRun]]] = {
    "chat": (chat.FORMAT, chat_run),
    "responses": (responses.FORMAT, responses_run),
    "anthropic": (anthropic_messages.FORMAT, anthropic_run),
}


class SpanLog:
    """A deterministic summarizer that notes each span it summarizes (its turn ids): in
    ``path`` (one line a call, appended, so processes share it) or, without one, in memory."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._spans: list[str] = []

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        span = ",".join(turn.turn_id for turn in turns)
        if self.path is None:
            self._spans.append(span)
        else:
            with open(self.path, "a", encoding="utf-8") as log:
                log.write(span + "\n")
        text = " / ".join(" ".join(turn.content.split()[:3]) for turn in turns)
        return text[: request.target_tokens * 3]

    @property
    def spans(self) -> list[str]:
        """The spans summarized so far, in order."""
        if self.path is None:
            return list(self._spans)
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as log:
            return log.read().splitlines()


@dataclass(frozen=True)
class Replay:
    """One agent run (format, seed, rounds) and the settings every session over it uses."""

    format: str
    seed: int = 0
    rounds: int = 24
    window: int = 3_000
    summarize: bool = True

    @cached_property
    def run(self) -> AgentRun:
        return FORMATS[self.format][1](self.seed, self.rounds)

    @cached_property
    def calls(self) -> list[list[dict[str, Any]]]:
        """The histories the agent sends, one a call."""
        return self.run.calls()

    @property
    def history_format(self) -> HistoryFormat:
        return FORMATS[self.format][0]

    def session(self, store: Store | None, summarizer: SpanLog | None) -> CompactionSession:
        return CompactionSession(self.history_format, model="gpt-4o", window=self.window,
                                 reserve=0, estimator=CharRatioEstimator(),
                                 summarizer=summarizer if self.summarize else None, store=store)

    def request(self, index: int) -> dict[str, Any]:
        """Call ``index`` as the agent sends it (fresh objects every time)."""
        fmt = self.history_format
        request: dict[str, Any] = {"model": "gpt-4o",
                                   fmt.list_key: json.loads(json.dumps(self.calls[index]))}
        if fmt.side_key is not None:
            request[fmt.side_key] = self.run.side
        return request


@dataclass(frozen=True)
class Reply:
    """What a worker did with one call: the request it would send (JSON, keys in the order
    sent), the report's figures, the warnings raised meanwhile, or the error it met."""

    index: int
    pid: int
    body: str | None = None
    decision: str | None = None
    tokens_sent: int | None = None
    prompt_budget: int | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None


def reply_for(index: int, prepared: Prepared, caught: Sequence[warnings.WarningMessage]
              ) -> Reply:
    report = prepared.report
    return Reply(index, os.getpid(), json.dumps(prepared.request), report.decision,
                 report.tokens_sent, report.prompt_budget,
                 tuple(f"{w.category.__name__}: {w.message}" for w in caught))


def serve(replay: Replay, kind: str | None, where: str, options: dict[str, Any], spans: str,
          inbox: Any, outbox: Any) -> None:
    """A worker: its own store (``kind`` None: none) and session; answers call indexes from
    ``inbox`` on ``outbox`` until it reads ``None``. Nothing escapes: an error is a reply."""
    store = None if kind is None else open_store(kind, where, **options)
    session = replay.session(store, SpanLog(spans))
    while (index := inbox.get()) is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                reply = reply_for(index, session.prepare(replay.request(index)), caught)
            except BaseException as exc:
                reply = Reply(index, os.getpid(), error=f"{type(exc).__name__}: "
                              + "".join(traceback.format_exception(exc)))
        outbox.put(reply)
    if store is not None:
        store.close()


class Workers:
    """``count`` worker processes over one replay, fed round-robin, one call at a time."""

    def __init__(self, context: ForkContext | SpawnContext, count: int, replay: Replay,
                 kind: str | None, where: str, spans: str, **options: Any) -> None:
        self.replay = replay
        self._inboxes = [context.SimpleQueue() for _ in range(count)]
        self._outbox = context.Queue()
        self._processes = [
            context.Process(target=serve, args=(replay, kind, where, options, spans, inbox,
                                                self._outbox))
            for inbox in self._inboxes]

    def __enter__(self) -> Workers:
        for process in self._processes:
            process.start()
        return self

    def call(self, index: int) -> Reply:
        """Hand call ``index`` to its worker and wait for the answer."""
        self._inboxes[index % len(self._inboxes)].put(index)
        reply: Reply = self._outbox.get(timeout=60)
        assert reply.index == index
        return reply

    def replay_all(self, before: Callable[[int], None] | None = None) -> list[Reply]:
        """Every call of the run in order; ``before(i)`` runs before call ``i`` is handed out."""
        replies = []
        for index in range(len(self.replay.calls)):
            if before is not None:
                before(index)
            replies.append(self.call(index))
        return replies

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for inbox in self._inboxes:
            inbox.put(None)
        for process in self._processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
        if kind is None:
            assert [process.exitcode for process in self._processes] == [0] * len(
                self._processes)

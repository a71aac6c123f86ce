"""Replay a long agent session call by call and measure what each compaction strategy costs.

Run from the repository root: ``python benchmarks/replay.py [--windows 8192,16384,32768]``.
Each call sends the history up to the next assistant message (the request that produced it);
the session is every shared SWE-agent run behind one system prompt (``_histories.py``). The
reply allowance is an eighth of the window (4,096 at 32k).

Strategies: no compaction; LangChain ``trim_messages`` sliding window (optional dependency);
stateless ``chat.compact`` to the budget on every call; ``CompactingOpenAI`` sticky sessions with
the defaults (with the offline summarizer ``_histories.FirstSentences``, and without one), with
0.2.0's trigger/target of 0.9/0.6, and with ``sticky=False``; and N workers (2, 4) taking the
calls round-robin, each with its own session: with no shared state, and sharing a store
(``SQLiteStore`` on one file, ``RedisStore`` on a real ``redis-server`` started for the run,
each worker with its own handle as a separate process would have).

Per strategy: requests over the window; errors raised (a request not sent); tokens sent; tokens
repeating the previous request's prefix (served from a provider's prompt cache); effective cost
with those at 0.1x (relative to no compaction); prefix breaks (calls whose request does not start
with the whole previous request); summarizer calls; stubs whose sha256 names no original tool
output; requests missing the task (the session's first user message).

Targets: no request over the window and no error at any window; at 8k and 16k the session's
effective cost <= 0.4x LangChain's; at 32k no more than 0.2.0's 0.28x; 0 bad stubs; 0 requests
missing the task; N workers without shared state equal the single session (mask/drop); N
workers sharing a store equal the single session with its summarizer (tokens, breaks, summarizer
calls).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _histories import (
    FirstSentences,
    agent_session,
    langchain_counter,
    load_langchain,
    parse_windows,
    print_table,
    requests_of,
    seed_tiktoken,
    start_redis,
)

MODEL = "gpt-4o"
CACHED_PRICE = 0.1
_HASH = re.compile(r"sha256:([0-9a-f]{64})")

Messages = list[dict[str, Any]]


@dataclass
class Outcome:
    """The requests one strategy sent over the replay, and what it cost."""

    name: str
    calls: int = 0
    over_window: int = 0
    errors: int = 0
    sent: int = 0
    cached: int = 0
    breaks: int = 0
    bad_stubs: int = 0
    missing_task: int = 0
    summarizer_calls: int | None = None
    decisions: Counter[str] = field(default_factory=Counter)
    skipped: str | None = None

    @property
    def cost(self) -> float:
        return (self.sent - self.cached) + CACHED_PRICE * self.cached


class Meter:
    """Counts what a strategy sends: tokens, the cached prefix, breaks, faults."""

    def __init__(self, outcome: Outcome, window: int, tokens: Callable[[dict[str, Any]], int],
                 priming: int, originals: set[str], task: dict[str, Any]) -> None:
        self.outcome = outcome
        self.window = window
        self.tokens = tokens
        self.priming = priming
        self.originals = originals
        self.task = task
        self.previous: list[str] = []

    def record(self, messages: Sequence[dict[str, Any]]) -> None:
        keys = [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]
        counts = [self.tokens(m) for m in messages]
        total = sum(counts) + self.priming
        same = 0
        for old, new in zip(self.previous, keys, strict=False):
            if old != new:
                break
            same += 1
        out = self.outcome
        out.calls += 1
        out.sent += total
        out.cached += sum(counts[:same])
        out.over_window += total > self.window
        out.breaks += bool(self.previous) and same < len(self.previous)
        out.bad_stubs += sum(digest not in self.originals for key in keys
                             for digest in _HASH.findall(key))
        out.missing_task += self.task not in messages
        self.previous = keys

    def failed(self) -> None:
        self.outcome.calls += 1
        self.outcome.errors += 1


class Recorder:
    """A real ``OpenAI`` client whose HTTP never leaves the process: each request's JSON body is
    kept (``sent``) and answered with a minimal completion, so a wrapper is measured on what it
    really sends."""

    def __init__(self) -> None:
        import httpx2
        from openai import OpenAI

        self.sent: list[dict[str, Any]] = []

        def answer(request: httpx2.Request) -> httpx2.Response:
            self.sent.append(json.loads(request.content))
            return httpx2.Response(200, json={
                "id": "chatcmpl-replay", "object": "chat.completion", "created": 0,
                "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "ok"}}]})

        self.client = OpenAI(api_key="replay", base_url="http://replay.invalid/v1",
                             max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))

    def messages(self) -> Messages:
        """The messages of the latest request sent."""
        messages: Messages = self.sent[-1]["messages"]
        return messages


def replay_none(requests: Iterable[Messages], meter: Meter) -> None:
    for messages in requests:
        meter.record(messages)


def replay_trim(requests: Sequence[Messages], session: Messages, meter: Meter, budget: int,
                count: Callable[[str], int]) -> None:
    lc = load_langchain()
    if lc is None:
        meter.outcome.skipped = "skipped (langchain_core not installed)"
        return
    converted = lc.convert_to_messages(session)
    origin = {id(message): index for index, message in enumerate(converted)}
    counter = langchain_counter(lc, count)
    for messages in requests:
        kept = lc.trim_messages(converted[:len(messages)], max_tokens=budget,
                                token_counter=counter, strategy="last", include_system=True,
                                start_on="human")
        meter.record([session[origin[id(message)]] for message in kept])


def replay_stateless(requests: Iterable[Messages], meter: Meter, budget: int,
                     estimator: Any) -> None:
    from cutctx import CompactionError
    from cutctx_adapters.openai import chat

    summarizer = FirstSentences()
    for messages in requests:
        try:
            result = chat.compact(messages, model=MODEL, budget=budget, summarizer=summarizer,
                                  estimator=estimator)
        except CompactionError:
            meter.failed()
            continue
        assert result.messages is not None
        meter.record(result.messages)
        meter.outcome.decisions["compacted" if result.compacted else "unchanged"] += 1
    meter.outcome.summarizer_calls = summarizer.calls


def replay_wrappers(requests: Sequence[Messages], meter: Meter, *, workers: int, window: int,
                    reserve: int, estimator: Any, summarize: bool = True,
                    stores: Callable[[], Any] | None = None, **settings: Any) -> None:
    """``workers`` wrapped clients (separate sessions) take the calls in turn; each opens its
    own handle on a shared store when ``stores`` makes them, as separate processes would."""
    from cutctx import CompactionError
    from cutctx_adapters.openai import CompactingOpenAI
    from cutctx_adapters.session import CallReport

    summarizer = FirstSentences() if summarize else None
    reports: list[CallReport] = []
    recorder = Recorder()
    clients = [CompactingOpenAI(recorder.client, window=window, reserve=reserve,
                                summarizer=summarizer, estimator=estimator,
                                on_call=reports.append,
                                **settings, **({"store": stores()} if stores else {}))
               for _ in range(workers)]
    for number, messages in enumerate(requests):
        client = clients[number % workers]
        try:
            client.chat.completions.create(model=MODEL, messages=messages)
        except CompactionError:
            meter.failed()
            continue
        meter.record(recorder.messages())
    out = meter.outcome
    out.summarizer_calls = None if summarizer is None else summarizer.calls
    out.decisions.update(report.decision for report in reports)


def main(argv: Sequence[str] | None = None) -> int:
    windows = parse_windows(__doc__.splitlines()[0], argv)
    seed_tiktoken()

    from cutctx_adapters.openai import chat
    from cutctx_adapters.openai._tokens import REPLY_PRIMING_TOKENS, message_tokens
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator(MODEL)
    scratch = Path(tempfile.mkdtemp(prefix="cutctx-replay-"))
    REDIS.server = start_redis(scratch)
    session = agent_session()
    requests = requests_of(session)
    conv = chat.to_transcript(session, estimator=estimator)
    # what stubs and clip markers name: the sha256 of each original text's UTF-8 bytes
    originals = {hashlib.sha256(turn.content.encode()).hexdigest()
                 for turn in conv.transcript.turns}
    task = next(m for m in session if m["role"] == "user")
    print(f"session: {len(session)} messages, {chat.count_tokens(session, estimator=estimator)} "
          f"tokens; {len(requests)} calls")
    verdicts: list[tuple[str, bool | None, str]] = []
    for window in windows:
        reserve = window // 8
        budget = window - reserve
        print(f"\nwindow {window}, reply allowance {reserve}, prompt budget {budget}")

        def meter(name: str, window: int = window) -> Meter:
            return Meter(Outcome(name), window, lambda message: message_tokens(
                message, estimator), REPLY_PRIMING_TOKENS, originals, task)

        outcomes: list[Outcome] = []
        m = meter("no compaction")
        replay_none(requests, m)
        outcomes.append(m.outcome)
        m = meter("LangChain trim_messages (sliding)")
        replay_trim(requests, session, m, budget, estimator.estimate_tokens)
        outcomes.append(m.outcome)
        m = meter("cutctx compact per call (stateless)")
        replay_stateless(requests, m, budget, estimator)
        outcomes.append(m.outcome)
        rows: list[tuple[str, int, bool, dict[str, Any]]] = [
            ("cutctx session (defaults)", 1, True, {}),
            ("cutctx session, no summarizer", 1, False, {}),
            ("cutctx session, trigger 0.9 / target 0.6 (0.2.0)", 1, True,
             {"trigger": 0.9, "target": 0.6}),
            ("cutctx session, sticky=False", 1, True, {"sticky": False}),
            ("2 workers, no shared state, no summarizer", 2, False, {}),
            ("4 workers, no shared state, no summarizer", 4, False, {}),
            ("4 workers, no shared state", 4, True, {}),
        ]
        for name, workers, summarize, settings in rows:
            m = meter(name)
            replay_wrappers(requests, m, workers=workers, window=window, reserve=reserve,
                            estimator=estimator, summarize=summarize, **settings)
            outcomes.append(m.outcome)
        for name, workers, stores in shared_stores(scratch, window):
            m = meter(name)
            if stores is None:
                m.outcome.skipped = "skipped (redis-server not installed)"
            else:
                replay_wrappers(requests, m, workers=workers, window=window, reserve=reserve,
                                estimator=estimator, stores=stores)
            outcomes.append(m.outcome)
        baseline = outcomes[0].cost
        show(outcomes, baseline, window)
        fixed = message_tokens(session[0], estimator) + message_tokens(task, estimator)
        verdicts.extend(checks(outcomes, window, floor_cost(outcomes[0], fixed)))
    if REDIS.server is not None:
        REDIS.server.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    names = {True: "PASS", False: "FAIL", None: "skipped"}
    print()
    for name, ok, note in verdicts:
        print(f"{names[ok]:7} {name}: {note}")
    return 0 if all(ok is not False for _, ok, _ in verdicts) else 1


def floor_cost(nothing: Outcome, fixed: int) -> float:
    """What no strategy can go below: every appended token sent uncached once (what no
    compaction leaves uncached), and the system prompt and task (``fixed``) cached on every
    call."""
    return (nothing.sent - nothing.cached) + CACHED_PRICE * fixed * nothing.calls


def checks(outcomes: Sequence[Outcome], window: int,
           floor: float) -> list[tuple[str, bool | None, str]]:
    by_name = {out.name: out for out in outcomes}
    session, sliding = by_name["cutctx session (defaults)"], outcomes[1]
    single = by_name["cutctx session, no summarizer"]
    out: list[tuple[str, bool | None, str]] = []
    cutctx = [o for o in outcomes[2:]]
    out.append((f"{window}: no request over the window, no error (cutctx)",
                all(o.over_window == 0 and o.errors == 0 for o in cutctx),
                ", ".join(f"{o.over_window}/{o.errors}" for o in cutctx)))
    out.append((f"{window}: no stub naming an unknown original, no request missing the task",
                all(o.bad_stubs == 0 for o in cutctx)
                and all(o.missing_task == 0 for o in cutctx if "0.2.0" not in o.name),
                ", ".join(f"{o.bad_stubs}/{o.missing_task}" for o in cutctx)))
    for workers in (2, 4):
        row = by_name[f"{workers} workers, no shared state, no summarizer"]
        out.append((f"{window}: {workers} workers send what one session sends (mask/drop)",
                    (row.sent, row.breaks) == (single.sent, single.breaks),
                    f"{row.sent} / {row.breaks} breaks vs {single.sent} / {single.breaks}"))
    if sliding.skipped is None and window <= 16_384:
        ratio = session.cost / sliding.cost
        out.append((f"{window}: session cost <= 0.4x LangChain's", ratio <= 0.4,
                    f"{ratio:.2f}x (no strategy can go below {floor / sliding.cost:.2f}x: "
                    f"appended tokens uncached, system prompt and task cached on every call)"))
    if sliding.skipped is None and window > 16_384:
        ratio = session.cost / sliding.cost
        out.append((f"{window}: session cost <= 0.28x LangChain's (0.2.0's)", ratio <= 0.285,
                    f"{ratio:.3f}x"))
    for name in ("2 workers, SQLiteStore", "4 workers, SQLiteStore", "4 workers, RedisStore"):
        row = by_name[name]
        if row.skipped is not None:
            out.append((f"{window}: {name} equals one session", None, row.skipped))
            continue
        same = ((row.sent, row.breaks, row.summarizer_calls)
                == (session.sent, session.breaks, session.summarizer_calls))
        out.append((f"{window}: {name} equals one session (tokens, breaks, summaries)", same,
                    f"{row.sent} / {row.breaks} / {row.summarizer_calls} vs {session.sent} / "
                    f"{session.breaks} / {session.summarizer_calls}"))
    return out


def shared_stores(scratch: Path, window: int) -> list[tuple[str, int, Callable[[], Any] | None]]:
    """Rows of workers sharing a store: a fresh SQLite file each, and the run's redis-server
    under a fresh key prefix each."""
    from cutctx_adapters.stores import RedisStore, SQLiteStore

    def sqlite(workers: int) -> Callable[[], Any]:
        path = scratch / f"replay-{window}-{workers}.sqlite3"
        return lambda: SQLiteStore(path)

    def redis(workers: int) -> Callable[[], Any] | None:
        server = REDIS.server
        if server is None:
            return None
        return lambda: RedisStore(server.client(), prefix=f"replay:{window}:{workers}:")

    return [("2 workers, SQLiteStore", 2, sqlite(2)), ("4 workers, SQLiteStore", 4, sqlite(4)),
            ("4 workers, RedisStore", 4, redis(4))]


@dataclass
class _Redis:
    """The redis-server the RedisStore rows share (started once for the run)."""

    server: Any = None


REDIS = _Redis()


def show(outcomes: Sequence[Outcome], baseline: float, window: int) -> None:
    header = ["strategy", "calls", "over window", "errors", "tokens sent", "cached prefix",
              "effective cost", "prefix breaks", "summarizer calls", "bad stubs", "no task",
              "decisions"]
    rows: list[list[str]] = []
    for out in outcomes:
        if out.skipped is not None:
            rows.append([out.name, out.skipped, *[""] * (len(header) - 2)])
            continue
        decisions = ", ".join(f"{name} {n}" for name, n in sorted(out.decisions.items()))
        rows.append([
            out.name, str(out.calls), str(out.over_window), str(out.errors), f"{out.sent:,}",
            f"{out.cached:,}", f"{out.cost / baseline:.2f}x ({out.cost / 1e6:.2f}M)",
            str(out.breaks), "-" if out.summarizer_calls is None else str(out.summarizer_calls),
            str(out.bad_stubs), str(out.missing_task), decisions,
        ])
    print_table(f"Replay at a {window:,}-token window: cached tokens priced at {CACHED_PRICE}x",
                header, rows, lambda index: index in (0, len(header) - 1))


if __name__ == "__main__":
    sys.exit(main())

"""Replay a long agent session call by call and measure what each compaction strategy costs.

Run from the repository root: ``python benchmarks/replay.py [--window N] [--reserve N]``.
Each call sends the history up to the next assistant message (the request that produced it);
the session is every shared SWE-agent run behind one system prompt (``_histories.py``).

Strategies: no compaction; LangChain ``trim_messages`` sliding window (optional dependency);
stateless ``chat.compact`` to the budget on every call; ``CompactingOpenAI`` with trigger/target
and ``sticky=False``; the same with ``sticky=True`` (also shown without a summarizer: mask, then
drop). cutctx strategies summarize with a deterministic offline summarizer
(``_histories.FirstSentences``) whose calls are counted.

Per strategy: requests over the window; tokens sent; tokens repeating the previous request's
prefix (the tokens of the leading messages identical to the previous request's, which a provider
serves from its prompt cache); effective cost with those at 0.1x (uncached + 0.1 x cached,
relative to no compaction); prefix breaks (calls whose request does not start with the whole
previous request); summarizer calls.

Targets for the sticky wrapper (issue 7): no request over the window; prefix breaks <= tokens
appended over the session / (trigger - target) + 1; effective cost <= half the sliding window's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _histories import (
    FirstSentences,
    agent_session,
    langchain_counter,
    load_langchain,
    requests_of,
    seed_tiktoken,
)

MODEL = "gpt-4o"
CACHED_PRICE = 0.1

Messages = list[dict[str, Any]]


@dataclass
class Outcome:
    """The requests one strategy sent over the replay, and what it cost."""

    name: str
    calls: int = 0
    over_window: int = 0
    sent: int = 0
    cached: int = 0
    breaks: int = 0
    summarizer_calls: int | None = None
    decisions: Counter[str] = field(default_factory=Counter)
    trigger: int | None = None
    target: int | None = None
    skipped: str | None = None

    @property
    def cost(self) -> float:
        return (self.sent - self.cached) + CACHED_PRICE * self.cached


class Meter:
    """Counts what a strategy sends: tokens, the cached prefix, breaks, requests over the window."""

    def __init__(self, outcome: Outcome, window: int, tokens: Callable[[dict[str, Any]], int],
                 priming: int) -> None:
        self.outcome = outcome
        self.window = window
        self.tokens = tokens
        self.priming = priming
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
        self.previous = keys


class Recorder:
    """A stand-in ``OpenAI`` client: ``chat.completions.create`` hands back what it was sent."""

    def __init__(self) -> None:
        self.chat = self
        self.completions = self

    def create(self, **request: Any) -> dict[str, Any]:
        return request


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
    from cutctx_adapters.openai import chat

    summarizer = FirstSentences()
    for messages in requests:
        result = chat.compact(messages, model=MODEL, budget=budget, summarizer=summarizer,
                              estimator=estimator)
        assert result.messages is not None
        meter.record(result.messages)
        meter.outcome.decisions["compacted" if result.compacted else "unchanged"] += 1
    meter.outcome.summarizer_calls = summarizer.calls


def replay_wrapper(requests: Iterable[Messages], meter: Meter, *, sticky: bool, window: int,
                   reserve: int, trigger: float | int, target: float | int,
                   estimator: Any, summarize: bool = True) -> None:
    from cutctx_adapters._session import CallReport
    from cutctx_adapters.openai import CompactingOpenAI

    summarizer = FirstSentences() if summarize else None
    reports: list[CallReport] = []
    client = CompactingOpenAI(Recorder(), window=window, reserve=reserve, trigger=trigger,
                              target=target, summarizer=summarizer, sticky=sticky,
                              estimator=estimator, on_compaction=reports.append)
    for messages in requests:
        sent = client.chat.completions.create(model=MODEL, messages=messages)
        meter.record(sent["messages"])
    out = meter.outcome
    out.summarizer_calls = None if summarizer is None else summarizer.calls
    out.decisions.update(report.decision for report in reports)
    out.trigger, out.target = reports[-1].trigger_tokens, reports[-1].target_tokens


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=32_768, help="context window (tokens)")
    parser.add_argument("--reserve", type=int, default=4_096,
                        help="reply allowance: the prompt budget is window - reserve")
    parser.add_argument("--trigger", type=float, default=0.9,
                        help="wrappers: compact over this (fraction of the budget, or tokens)")
    parser.add_argument("--target", type=float, default=0.6,
                        help="wrappers: compact down to this (fraction of the budget, or tokens)")
    args = parser.parse_args(argv)
    seed_tiktoken()

    from cutctx_adapters.openai import chat
    from cutctx_adapters.openai._tokens import REPLY_PRIMING_TOKENS, message_tokens
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator(MODEL)
    session = agent_session()
    requests = requests_of(session)
    budget = args.window - args.reserve
    trigger: float | int = args.trigger if args.trigger <= 1 else int(args.trigger)
    target: float | int = args.target if args.target <= 1 else int(args.target)
    first = chat.count_tokens(requests[0], estimator=estimator)
    last = chat.count_tokens(requests[-1], estimator=estimator)
    print(f"session: {len(session)} messages, {chat.count_tokens(session, estimator=estimator)} "
          f"tokens; {len(requests)} calls; window {args.window}, prompt budget {budget}")

    def meter(name: str) -> Meter:
        return Meter(Outcome(name), args.window, lambda m: message_tokens(m, estimator),
                     REPLY_PRIMING_TOKENS)

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
    for name, sticky, summarize in (("sticky=False", False, True),
                                    ("sticky=True, no summarizer", True, False),
                                    ("sticky=True", True, True)):
        m = meter(f"cutctx wrapper, trigger/target, {name}")
        replay_wrapper(requests, m, sticky=sticky, window=args.window, reserve=args.reserve,
                       trigger=trigger, target=target, estimator=estimator,
                       summarize=summarize)
        outcomes.append(m.outcome)

    baseline = outcomes[0].cost
    show(outcomes, baseline)
    sticky_out, sliding = outcomes[-1], outcomes[1]
    assert sticky_out.trigger is not None and sticky_out.target is not None
    appended = last - first
    gap = sticky_out.trigger - sticky_out.target
    bound = appended / gap + 1 if gap > 0 else float("inf")
    checks: list[tuple[str, bool | None, str]] = [
        ("sticky: no request over the window", sticky_out.over_window == 0,
         f"{sticky_out.over_window} over"),
        ("sticky: prefix breaks <= appended / (trigger - target) + 1", sticky_out.breaks <= bound,
         f"{sticky_out.breaks} <= {appended} / ({sticky_out.trigger} - {sticky_out.target}) + 1"
         f" = {bound:.1f}"),
    ]
    if sliding.skipped is None:
        checks.append(("sticky: effective cost <= half the sliding window's",
                       sticky_out.cost <= sliding.cost / 2,
                       f"{sticky_out.cost / baseline:.2f}x vs {sliding.cost / baseline:.2f}x / 2"))
    else:
        checks.append(("sticky: effective cost <= half the sliding window's", None, "skipped"))
    verdicts = {True: "PASS", False: "FAIL", None: "skipped"}
    for name, ok, note in checks:
        print(f"{verdicts[ok]:7} {name}: {note}")
    return 0 if all(ok is not False for _, ok, _ in checks) else 1


def show(outcomes: Sequence[Outcome], baseline: float) -> None:
    header = ["strategy", "calls", "over window", "tokens sent", "cached prefix",
              "effective cost", "prefix breaks", "summarizer calls", "decisions"]
    rows: list[list[str]] = []
    for out in outcomes:
        if out.skipped is not None:
            rows.append([out.name, out.skipped, *[""] * (len(header) - 2)])
            continue
        decisions = ", ".join(f"{name} {n}" for name, n in sorted(out.decisions.items()))
        rows.append([
            out.name, str(out.calls), str(out.over_window), f"{out.sent:,}", f"{out.cached:,}",
            f"{out.cost / baseline:.2f}x ({out.cost / 1e6:.2f}M)", str(out.breaks),
            "-" if out.summarizer_calls is None else str(out.summarizer_calls), decisions,
        ])
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        return
    table = Table(title=f"Replay: cached tokens priced at {CACHED_PRICE}x")
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if index in (0, len(header) - 1) else "right")
    for row in rows:
        table.add_row(*row)
    Console(width=180).print(table)


if __name__ == "__main__":
    sys.exit(main())

"""What a compaction keeps: facts planted in generated conversations, replayed under windows.

Run from the repository root: ``python benchmarks/retention.py``. Conversations (``_planted``:
an agent with bulky tool outputs, a chat with long answers, a mix; ~30k tokens and longer) carry
unique codes: requirements in the first user turns, a later correction overriding one of them,
codes in tool outputs (early, middle, recent) and an assistant's conclusion. Each is replayed call
by call (the history before every assistant message, then the whole conversation) at windows of
32k, 24k, 16k and 8k (an eighth reserved for the reply), through: stateless ``chat.compact``;
a ``CompactionSession`` with the defaults, with each of ``keep_task``, ``keep_user_turns`` and
``digest_tokens`` off, and as 0.2.0 had it (trigger/target 0.9/0.6, all three off); and
LangChain ``trim_messages`` (if installed).

Per strategy and window: facts kept in the last request, by kind (a fact is kept when its code
is in the request), tokens sent over the replay, effective cost with cached prefix tokens at 0.1x
(``replay.py``'s meter) and prefix breaks.

Targets (issue 17): every user-turn fact (requirements, corrections) kept at every window where
the user turns alone fit; at least half of the tool-output facts kept at 16k and above; the
session sends no more tokens than 0.2.0's session (and, printed beside it, costs no more).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _histories import langchain_counter, load_langchain, requests_of, seed_tiktoken
from _planted import FACT_KINDS, Conversation, conversation
from replay import CACHED_PRICE, Meter, Outcome, Recorder

MODEL = "gpt-4o"
OLD = "session as in 0.2.0 (0.9/0.6, no task, no user-last, no digest)"
WINDOWS = (32_768, 24_576, 16_384, 8_192)
CONVERSATIONS = (("agent", 24), ("chat", 40), ("mixed", 32), ("agent", 60))
USER_KINDS = ("requirement", "correction")
TOOL_KINDS = ("tool early", "tool middle", "tool recent")

Messages = list[dict[str, Any]]
Strategy = Callable[[Sequence[Messages], int, Meter], Messages | None]


@dataclass
class Row:
    """One strategy at one window, over every conversation."""

    kept: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    planted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    user_fit_misses: int = 0
    """User-turn facts lost where the user turns alone fit the budget."""
    sent: int = 0
    cost: float = 0.0
    breaks: int = 0
    skipped: str | None = None


def calls_of(conv: Conversation) -> list[Messages]:
    return [*requests_of(conv.messages), list(conv.messages)]


def stateless(estimator: Any) -> Strategy:
    from cutctx_adapters.openai import chat

    def run(calls: Sequence[Messages], budget: int, meter: Meter) -> Messages | None:
        last = None
        for messages in calls:
            result = chat.compact(messages, model=MODEL, budget=budget, estimator=estimator)
            assert result.messages is not None
            meter.record(result.messages)
            last = result.messages
        return last

    return run


def session(estimator: Any, **settings: Any) -> Strategy:
    from cutctx_adapters.openai import CompactingOpenAI

    def run(calls: Sequence[Messages], budget: int, meter: Meter) -> Messages | None:
        window = meter.window
        recorder = Recorder()
        client = CompactingOpenAI(recorder.client, window=window, reserve=window - budget,
                                  estimator=estimator, **settings)
        last = None
        for messages in calls:
            client.chat.completions.create(model=MODEL, messages=messages)
            last = recorder.messages()
            meter.record(last)
        return last

    return run


def langchain(estimator: Any) -> Strategy | None:
    lc = load_langchain()
    if lc is None:
        return None
    counter = langchain_counter(lc, estimator.estimate_tokens)

    def run(calls: Sequence[Messages], budget: int, meter: Meter) -> Messages | None:
        last = None
        for messages in calls:
            converted = lc.convert_to_messages(messages)
            origin = {id(message): index for index, message in enumerate(converted)}
            kept = lc.trim_messages(converted, max_tokens=budget, token_counter=counter,
                                    strategy="last", include_system=True, start_on="human")
            last = [messages[origin[id(message)]] for message in kept]
            meter.record(last)
        return last

    return run


def user_turns_fit(conv: Conversation, budget: int, estimator: Any) -> bool:
    from cutctx_adapters.openai import chat

    users = [m for m in conv.messages if m["role"] in ("system", "user")]
    return chat.count_tokens(users, estimator=estimator) <= budget


def main() -> int:
    seed_tiktoken()
    from cutctx_adapters.openai import chat
    from cutctx_adapters.openai._tokens import REPLY_PRIMING_TOKENS, message_tokens
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator(MODEL)
    conversations = [conversation(shape, rounds) for shape, rounds in CONVERSATIONS]
    for conv in conversations:
        print(f"{conv.name}: {len(conv.messages)} messages, "
              f"{chat.count_tokens(conv.messages, estimator=estimator):,} tokens, "
              f"{len(conv.facts)} facts")
    strategies: dict[str, Strategy | None] = {
        "cutctx compact per call (stateless)": stateless(estimator),
        "cutctx session (defaults)": session(estimator),
        "session, keep_task=False": session(estimator, keep_task=False),
        "session, keep_user_turns=False": session(estimator, keep_user_turns=False),
        "session, digest_tokens=0": session(estimator, digest_tokens=0),
        OLD: session(estimator, trigger=0.9, target=0.6, keep_task=False,
                     keep_user_turns=False, digest_tokens=0),
        "LangChain trim_messages (sliding)": langchain(estimator),
    }
    table: dict[tuple[str, int], Row] = {}
    for window in WINDOWS:
        budget = window - window // 8
        for name, strategy in strategies.items():
            row = table[name, window] = Row()
            if strategy is None:
                row.skipped = "skipped (langchain_core not installed)"
                continue
            for conv in conversations:
                outcome = Outcome(name)
                meter = Meter(outcome, window, lambda m: message_tokens(m, estimator),
                              REPLY_PRIMING_TOKENS, set(), conv.messages[1])
                last = strategy(calls_of(conv), budget, meter)
                text = json.dumps(last or [], ensure_ascii=False)
                fits = user_turns_fit(conv, budget, estimator)
                for fact in conv.facts:
                    row.planted[fact.kind] += 1
                    kept = fact.code in text
                    row.kept[fact.kind] += kept
                    row.user_fit_misses += fits and fact.kind in USER_KINDS and not kept
                row.sent += outcome.sent
                row.cost += outcome.cost
                row.breaks += outcome.breaks
    show(table, strategies)
    verdicts = checks(table)
    print()
    for name, ok, note in verdicts:
        print(f"{'PASS' if ok else 'FAIL':7} {name}: {note}")
    return 0 if all(ok for _, ok, _ in verdicts) else 1


def show(table: dict[tuple[str, int], Row], strategies: dict[str, Any]) -> None:
    header = ["window", "strategy", *FACT_KINDS, "tokens sent", "eff. cost", "breaks"]
    rows: list[list[str]] = []
    for window in WINDOWS:
        for name in strategies:
            row = table[name, window]
            if row.skipped is not None:
                rows.append([f"{window // 1024}k", name, row.skipped])
                continue
            rows.append([f"{window // 1024}k", name,
                         *(f"{row.kept[k]}/{row.planted[k]}" for k in FACT_KINDS),
                         f"{row.sent:,}", f"{row.cost / 1e6:.2f}M", str(row.breaks)])
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for line in [header, *rows]:
            print("  ".join(line))
        return
    out = Table(title=f"Facts kept in the last request (cached tokens at {CACHED_PRICE}x)")
    for index, name in enumerate(header):
        out.add_column(name, justify="left" if index < 2 else "right")
    for line in rows:
        out.add_row(*line, *[""] * (len(header) - len(line)))
    Console(width=200).print(out)


def checks(table: dict[tuple[str, int], Row]) -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = []
    default, old = "cutctx session (defaults)", OLD
    misses = {window: table[default, window].user_fit_misses for window in WINDOWS}
    out.append(("every user-turn fact kept where the user turns fit (session)",
                all(n == 0 for n in misses.values()),
                ", ".join(f"{w // 1024}k: {n} lost" for w, n in misses.items())))
    for window in (w for w in WINDOWS if w >= 16_384):
        row = table[default, window]
        kept = sum(row.kept[k] for k in TOOL_KINDS)
        planted = sum(row.planted[k] for k in TOOL_KINDS)
        out.append((f"{window // 1024}k: at least half the tool-output facts kept (session)",
                    2 * kept >= planted, f"{kept}/{planted}"))
    for window in WINDOWS:
        new, then = table[default, window], table[old, window]
        out.append((f"{window // 1024}k: session sends no more tokens than 0.2.0's",
                    new.sent <= then.sent, f"{new.sent:,} vs {then.sent:,}"))
        out.append((f"{window // 1024}k: session costs no more than 0.2.0's",
                    new.cost <= then.cost, f"{new.cost / 1e6:.3f}M vs {then.cost / 1e6:.3f}M"))
    return out


if __name__ == "__main__":
    sys.exit(main())

"""Cold and warm ``chat.compact`` against LangChain's ``trim_messages`` on a long agent session.

Run from the repository root: ``python benchmarks/openai_chat.py [--budget N] [--repeat N]``.
The history is every shared SWE-agent run behind one system prompt (``_histories.py``).

* cold tiktoken pass: ``encode_ordinary`` over every string of every message, once;
* cold ``compact``: a fresh ``TiktokenEstimator`` (empty count cache), the whole pipeline, with
  the default policy for no summarizer (mask, then drop: what ``trim_messages`` compares with)
  and, for reference, with the offline summarizer;
* warm estimation / warm ``count_tokens`` / warm ``compact``: the same estimator, the history
  plus 2 new messages (estimation = every message's token count; ``count_tokens`` also converts
  and validates the history);
* ``trim_messages`` (optional, needs ``langchain-core``), strategy "last", with a tiktoken
  counter implementing the same per-message recipe over the same encoding: once recounting with
  tiktoken on every call (the counter LangChain's docs show), once through a fresh
  ``TiktokenEstimator`` whose cache the binary search then hits.

Targets (issue 3): warm estimation <= 5% of the cold tiktoken pass; cold ``compact`` >= 3x faster
than ``trim_messages`` with the same counter.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

from _histories import (
    agent_session,
    first_sentences,
    langchain_counter,
    load_langchain,
    seed_tiktoken,
)
from _timing import Case, measure, strings_of

MODEL = "gpt-4o"


def new_turn(number: int) -> list[dict[str, Any]]:
    """Two messages an agent appends: its reply and the next observation."""
    return [
        {"role": "assistant", "content": f"Let's look at the next file ({number})."},
        {"role": "user", "content": f"Observation {number}: the command ran; nothing printed."},
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=28_672,
                        help="prompt budget in tokens (default 28672 = 32k window - 4096)")
    parser.add_argument("--repeat", type=int, default=9,
                        help="interleaved rounds (best and median shown)")
    args = parser.parse_args(argv)
    seed_tiktoken()

    import tiktoken

    from cutctx_adapters.openai import chat
    from cutctx_adapters.openai._tokens import message_tokens
    from cutctx_adapters.tiktoken import TiktokenEstimator

    history = agent_session()
    grown = [*history, *new_turn(1)]
    encoding = tiktoken.encoding_for_model(MODEL)
    encoding.encode_ordinary("warm up the encoder")
    strings = [s for message in history for s in strings_of(message)]
    tokens = chat.count_tokens(history, model=MODEL)
    print(f"history: {len(history)} messages, {tokens} tokens (gpt-4o), "
          f"{sum(map(len, strings))} characters; budget {args.budget}")

    def compact_with(estimator: TiktokenEstimator, messages: list[dict[str, Any]],
                     summarize: bool = False) -> Any:
        return chat.compact(messages, model=MODEL, budget=args.budget, estimator=estimator,
                            summarizer=first_sentences() if summarize else None)

    warm_estimator = TiktokenEstimator(MODEL)
    compact_with(warm_estimator, history)
    cold_pass = Case("cold tiktoken pass (encode every string once)",
                     lambda _: [encoding.encode_ordinary(s) for s in strings])
    cold = Case("cold compact (fresh estimator; mask, then drop)",
                lambda est: compact_with(est, history), lambda: TiktokenEstimator(MODEL))
    cold_summary = Case("cold compact (fresh estimator; offline summarizer)",
                        lambda est: compact_with(est, history, True),
                        lambda: TiktokenEstimator(MODEL))
    warm_estimate = Case("warm estimation (every message's tokens, +2 messages)",
                         lambda _: [message_tokens(m, warm_estimator) for m in grown])
    warm_count = Case("warm count_tokens (convert + validate + count, +2 messages)",
                      lambda _: chat.count_tokens(grown, model=MODEL, estimator=warm_estimator))
    warm = Case("warm compact (+2 messages; mask, then drop)",
                lambda _: compact_with(warm_estimator, grown))
    cases = [cold_pass, cold, cold_summary, warm_estimate, warm_count, warm]
    notes: dict[str, str] = {}
    for case, summarize in ((cold, False), (cold_summary, True)):
        result = compact_with(TiktokenEstimator(MODEL), history, summarize)
        notes[case.name] = f"{len(result.messages)} msgs, {result.tokens_after} tokens"

    lc = load_langchain()
    trim_plain = trim_cached = None
    if lc is not None:
        lc_history = lc.convert_to_messages(history)

        def trim(counter: Callable[[list[Any]], int]) -> list[Any]:
            kept: list[Any] = lc.trim_messages(
                lc_history, max_tokens=args.budget, token_counter=counter, strategy="last",
                include_system=True, start_on="human")
            return kept

        def plain_counter() -> Callable[[list[Any]], int]:
            return langchain_counter(lc, lambda text: len(encoding.encode_ordinary(text)))

        def cached_counter() -> Callable[[list[Any]], int]:
            return langchain_counter(lc, TiktokenEstimator(MODEL).estimate_tokens)

        trim_plain = Case("trim_messages, tiktoken counter", trim, plain_counter)
        trim_cached = Case("trim_messages, counter via a fresh TiktokenEstimator", trim,
                           cached_counter)
        cases += [trim_plain, trim_cached]
        kept = trim(plain_counter())
        notes[trim_plain.name] = f"{len(kept)} msgs, {plain_counter()(kept)} tokens"
    else:
        print("langchain_core not installed: trim_messages skipped")

    measure(cases, args.repeat)
    for case in (warm_estimate, warm_count):
        notes[case.name] = f"{case.best / cold_pass.best:.1%} of the cold pass"
    rows = [(case.name, case.best, statistics.median(case.times), notes.get(case.name, ""))
            for case in cases]
    checks: list[tuple[str, bool | None, str]] = [
        ("warm estimation <= 5% of a cold tiktoken pass",
         warm_estimate.best <= 0.05 * cold_pass.best,
         f"{warm_estimate.best * 1e3:.2f} ms vs {cold_pass.best * 1e3:.1f} ms "
         f"({warm_estimate.best / cold_pass.best:.1%})"),
        ("  same, whole count_tokens (conversion and validation included)",
         warm_count.best <= 0.05 * cold_pass.best,
         f"{warm_count.best * 1e3:.2f} ms ({warm_count.best / cold_pass.best:.1%})"),
    ]
    if trim_plain is not None and trim_cached is not None:
        checks.append(("cold compact >= 3x faster than trim_messages (tiktoken counter)",
                       trim_plain.best >= 3 * cold.best, f"{trim_plain.best / cold.best:.2f}x"))
        checks.append(("  same, counter through a fresh TiktokenEstimator (cached)",
                       trim_cached.best >= 3 * cold.best, f"{trim_cached.best / cold.best:.2f}x"))
    else:
        checks.append(("cold compact >= 3x faster than trim_messages", None, "skipped"))
    show(rows, checks, args.repeat)
    return 0 if all(ok is not False for _, ok, _ in checks) else 1


def show(rows: list[tuple[str, float, float, str]],
         checks: list[tuple[str, bool | None, str]], repeat: int) -> None:
    verdicts = {True: "PASS", False: "FAIL", None: "skipped"}
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(f"{'':60} {'best CPU ms':>11} {'median':>8}  (of {repeat}, interleaved)")
        for name, best, median, note in rows:
            print(f"{name:60} {best * 1e3:11.2f} {median * 1e3:8.2f}  {note}")
        for name, ok, note in checks:
            print(f"{verdicts[ok]:7} {name}: {note}")
        return
    table = Table(title=f"OpenAI chat: compaction timings ({repeat} interleaved rounds)")
    table.add_column("what")
    table.add_column("best CPU ms", justify="right")
    table.add_column("median CPU ms", justify="right")
    table.add_column("note")
    for name, best, median, note in rows:
        table.add_row(name, f"{best * 1e3:.2f}", f"{median * 1e3:.2f}", note)
    console = Console(width=120)
    console.print(table)
    for name, ok, note in checks:
        console.print(f"{verdicts[ok]:7} {name}: {note}", highlight=False)


if __name__ == "__main__":
    sys.exit(main())

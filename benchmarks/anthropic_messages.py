"""Cold and warm ``messages.compact`` (Anthropic) on the long agent session.

Run from the repository root: ``python benchmarks/anthropic_messages.py [--budget N]``. The
history is the shared SWE-agent session (``_histories.py``) as Messages: tool calls as
``tool_use``, results as ``tool_result`` blocks. Baseline: one cold tiktoken pass over every
string (what any local estimate must at least pay once). Targets as for the chat adapter: warm
estimation <= 5% of the cold pass; cold ``compact`` within a small multiple of it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from _histories import agent_session, as_anthropic, seed_tiktoken
from _timing import Case, measure, strings_of

MODEL = "claude-sonnet-4-5"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=28_672)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    seed_tiktoken()

    import tiktoken

    from cutctx_adapters.anthropic import messages
    from cutctx_adapters.anthropic._tokens import AnthropicTokenCounter
    from cutctx_adapters.tiktoken import TiktokenEstimator

    system, history = as_anthropic(agent_session())
    grown = [*history, {"role": "assistant", "content": "Next, the tests."},
             {"role": "user", "content": "Observation: 3 passed."}]
    encoding = tiktoken.get_encoding("o200k_base")
    strings = [s for message in history for s in strings_of(message)]

    def compact_with(estimator: TiktokenEstimator, items: list[dict[str, Any]]) -> Any:
        return messages.compact(items, system=system, model=MODEL, budget=args.budget,
                                estimator=estimator)

    warm_estimator = TiktokenEstimator(encoding="o200k_base")
    warm_counter = AnthropicTokenCounter(warm_estimator, model=MODEL)
    first = compact_with(warm_estimator, history)
    print(f"history: {len(history)} messages, {first.tokens_before} estimated tokens, "
          f"{sum(map(len, strings))} characters; budget {args.budget}")
    cold_pass = Case("cold tiktoken pass (encode every string once)",
                     lambda _: [encoding.encode_ordinary(s) for s in strings])
    cold = Case("cold compact (fresh estimator; mask, then drop)",
                lambda est: compact_with(est, history),
                lambda: TiktokenEstimator(encoding="o200k_base"))
    warm_estimate = Case("warm estimation (every message's tokens, +2 messages)",
                         lambda _: [warm_counter.message(m) for m in grown])
    warm = Case("warm compact (+2 messages)", lambda _: compact_with(warm_estimator, grown))
    cases = [cold_pass, cold, warm_estimate, warm]
    measure(cases, args.repeat)
    print(f"{'what':<58} {'best CPU ms':>12} {'median':>9}")
    for case in cases:
        median = statistics.median(case.times)
        print(f"{case.name:<58} {case.best * 1e3:>12.2f} {median * 1e3:>9.2f}")
    ratio = warm_estimate.best / cold_pass.best
    verdict = "PASS" if ratio <= 0.05 else "FAIL"
    print(f"{verdict}    warm estimation <= 5% of a cold tiktoken pass: {ratio:.1%}")
    print(f"info    cold compact = {cold.best / cold_pass.best:.2f}x the cold tiktoken pass; "
          f"result {first.report.turns_after} turns, {first.measured_tokens} tokens")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

"""How close to its goal a compaction with a summary lands (issue 15: a small overshoot must not
summarize almost everything).

Run from the repository root: ``python benchmarks/summary_fit.py``. Histories: the bundled
coding-agent example and every shared SWE-agent run (``../shared/histories/openai-chat``), each
compacted with ``chat.compact`` at a sweep of budgets (30% to 98% of its size). The summarizer
fills its ``target_tokens`` (so the figure measures the plan, not a terse model). Whenever the
plan holds a summary, ``tokens after / budget`` is recorded.

Rows: the adapters' chain (just-enough spans, ``SpanSummarizingPolicy``) and, as the baseline in
the same run, 0.1.0's ``default_chain`` (``SummarizingPolicy``: the oldest span, whole).
Target: every compaction with a summary ends within 15% below its budget (ratio 0.85 to 1.0).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from _histories import REPO, _runs, seed_tiktoken

from cutctx import SummarizationRequest, TokenEstimator, TranscriptTurn

MODEL = "gpt-4o"
SHARES = [0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.85, 0.90, 0.95, 0.98]
LOW, HIGH = 0.85, 1.0


class Filling:
    """A summarizer whose text is as long as the plan allows (the turns' words, repeated)."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        words = " ".join(turn.content for turn in turns).split() or ["summary"]
        text, low, high = "", 1, len(words) * 4 + 16
        while low <= high:  # the most words that stay within the target
            middle = (low + high) // 2
            candidate = " ".join(words[i % len(words)] for i in range(middle))
            if self.estimator.estimate_tokens(candidate) <= request.target_tokens:
                text, low = candidate, middle + 1
            else:
                high = middle - 1
        return text or words[0]


def histories() -> list[tuple[str, list[dict[str, Any]]]]:
    bundled = json.loads((REPO / "examples" / "histories" / "coding_agent.openai_chat.json")
                         .read_text(encoding="utf-8"))
    return [("bundled coding agent", bundled["messages"]), *_runs()]


def ratios(policy: Any, estimator: TokenEstimator) -> tuple[list[float], int]:
    """``tokens after / budget`` of every compaction that planned a summary, and the count of
    compactions in all."""
    from cutctx_adapters.openai import chat

    summarizer = Filling(estimator)
    out: list[float] = []
    runs = 0
    for _name, messages in histories():
        total = chat.count_tokens(messages, estimator=estimator)
        for share in SHARES:
            budget = int(total * share)
            try:
                result = chat.compact(messages, budget=budget, model=MODEL, estimator=estimator,
                                      summarizer=summarizer, policy=policy)
            except Exception:  # a budget below what must stay: not a summary's doing
                continue
            runs += 1
            if result.plan.summarization_requests:
                out.append(result.tokens_after / budget)
    return out, runs


def main() -> int:
    seed_tiktoken()
    from cutctx import default_chain
    from cutctx_adapters.prompts import DEFAULT_PROMPT_ID
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator(MODEL)
    rows = [("adapters' chain (just-enough spans)", None),
            ("0.1.0 default_chain (baseline)", default_chain(prompt_id=DEFAULT_PROMPT_ID))]
    print(f"{'policy':38} {'runs':>5} {'summaries':>9} {'min':>6} {'p10':>6} {'median':>6} "
          f"{'max':>6} {'in 0.85-1.0':>11}")
    verdict = True
    for name, policy in rows:
        found, runs = ratios(policy, estimator)
        if not found:
            print(f"{name:38} {runs:>5} {0:>9}")
            continue
        ordered = sorted(found)
        inside = sum(LOW <= r <= HIGH for r in found)
        p10 = ordered[len(ordered) // 10]
        print(f"{name:38} {runs:>5} {len(found):>9} {ordered[0]:6.2f} {p10:6.2f} "
              f"{statistics.median(found):6.2f} {ordered[-1]:6.2f} {inside:>5}/{len(found):<5}")
        if policy is None:
            verdict = inside == len(found)
    print(f"\n{'PASS' if verdict else 'FAIL':7} every compaction with a summary ends within 15% "
          "below its budget (adapters' chain)")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())

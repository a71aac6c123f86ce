"""What a process keeps of the conversations it compacted (issue 39: 27).

Run from the repository root: ``python benchmarks/memory.py [--calls 150]``. Stateless
``chat.compact`` calls, each on a fresh history holding one ~170 KB tool result of its own, the
caller dropping everything after each call. Printed every 25 calls: the process's resident size
and the bytes still allocated (``tracemalloc``), for cutctx as it is, beside a named baseline run
in the same process: the same calls counting with one process-wide ``TiktokenEstimator`` (its
default count cache of 65,536 texts: what the shared estimators were before).

Target: flat. After the last call, cutctx keeps under 5 MB more than after the first.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from _histories import print_table, seed_tiktoken


def history(tag: int) -> list[dict[str, Any]]:
    result = "\n".join(f"{tag}:{line}: checked path/to/module_{line % 97}.py, value {line * 7}"
                       for line in range(3_000))
    return [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Task {tag}: fix the failing test."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{tag}", "type": "function",
                 "function": {"name": "run_tests", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call_{tag}", "content": result},
            {"role": "assistant", "content": "Reading the failures."}]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(calls: int, compact: Callable[[int], object]) -> list[tuple[int, float, float]]:
    """(call, peak RSS MB, MB still allocated) every 25 calls."""
    compact(-1)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = []
    for tag in range(calls):
        compact(tag)
        if (tag + 1) % 25 == 0 or tag == 0:
            gc.collect()
            out.append((tag + 1, rss_mb(), (tracemalloc.get_traced_memory()[0] - base) / 1e6))
    tracemalloc.stop()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args(argv)
    seed_tiktoken()
    from cutctx_adapters.openai import chat
    from cutctx_adapters.tiktoken import TiktokenEstimator

    ours = run(args.calls, lambda tag: chat.compact(history(tag), model="gpt-4o", budget=4_000))
    shared = TiktokenEstimator("gpt-4o")
    baseline = run(args.calls, lambda tag: chat.compact(history(tag), model="gpt-4o",
                                                        budget=4_000, estimator=shared))
    rows = [(str(a[0]), f"{a[2]:.1f}", f"{b[2]:.1f}", f"{a[1]:.0f}")
            for a, b in zip(ours, baseline, strict=True)]
    print_table("bytes still allocated after stateless compact calls (MB)",
                ["calls", "cutctx", "process-wide count cache", "peak RSS (MB)"], rows,
                lambda index: index == 0)
    growth = ours[-1][2] - ours[0][2]
    ok = growth < 5
    print(f"{'PASS' if ok else 'FAIL':7} flat: {growth:.1f} MB kept from the first call to the "
          f"last (baseline {baseline[-1][2] - baseline[0][2]:.1f} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

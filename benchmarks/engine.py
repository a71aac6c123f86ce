"""Plan and apply times of every policy on agent-shaped transcripts of 1k / 10k / 50k turns.

Run: ``python benchmarks/engine.py`` (add ``--quick`` to skip 50k, ``--profile`` to print a
cProfile of the default chain at 10k, ``--cpu`` to time with ``time.process_time`` instead of
``time.perf_counter`` when the machine is busy, ``--gc-off`` to pause CPython's cyclic garbage
collector while timing).

Why ``--gc-off`` exists: a decide allocates one action per turn, and at 50k turns that crosses
CPython's threshold for a full (generation-2) collection, which walks every object in the
process, the caller's transcript included. That adds a fixed ~30 ms at 50k that 10k runs never
pay, so the 50k/10k ratio looks superlinear; with the collector paused it is ~5x.

Transcripts are deterministic (seeded ``random.Random``): a system turn, then rounds of user ->
assistant issuing 1-3 tool calls (one ``tool_call_id``) -> its tool results (300-3000 tokens
each, content of matching size: 4 characters a token) -> assistant answer. The budget is a third
of the total; ``protected_recent_turns=4``.

For comparison it also runs a named baseline in the same process, "naive re-scan": a
straightforward drop-oldest that finds each exchange by scanning the whole transcript and
recomputes the total from scratch after every drop (quadratic; run up to 10k only), and prints
the cutctx 0.1.0 reference figures from issue 2 for the default chain.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cutctx import (  # the repository root is put on the path above
    Action,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    Role,
    SummarizingPolicy,
    Transcript,
    TranscriptTurn,
    default_chain,
)

SIZES = (1_000, 10_000, 50_000)
RUNS = {1_000: 7, 10_000: 5, 50_000: 3}
PROMPT_ID = "cutctx/summary@1"
CHARS_PER_TOKEN = 4
NAIVE_MAX_SIZE = 10_000

# cutctx 0.1.0 on this machine class, default chain (issue 2): plan and apply, in seconds
REFERENCE_010 = {
    1_000: (0.026, 0.018),
    10_000: (0.310, 0.170),
    50_000: (1.2, 0.580),
}

POLICIES: dict[str, Callable[[], CompactionPolicy]] = {
    "drop_oldest": DropOldestPolicy,
    "observation_masking": ObservationMaskingPolicy,
    "summarizing": lambda: SummarizingPolicy(PROMPT_ID),
    "default_chain": lambda: default_chain(prompt_id=PROMPT_ID),
}


# --------------------------------------------------------------------------------------------
# transcripts
# --------------------------------------------------------------------------------------------


def agent_transcript(turn_count: int, seed: int = 2) -> Transcript:
    """System first, then user -> assistant(1-3 calls) -> results -> answer, until full."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "  \n{}:,\"'"
    base = "".join(rng.choice(alphabet) for _ in range(3000 * CHARS_PER_TOKEN + 4096))

    def text(tokens: int) -> str:
        start = rng.randrange(4096)
        return base[start:start + tokens * CHARS_PER_TOKEN]

    turns: list[TranscriptTurn] = [
        TranscriptTurn("t0", Role.SYSTEM, text(400), 400),
    ]
    round_index = 0

    def add(role: Role, tokens: int, call_id: str | None = None) -> None:
        turns.append(TranscriptTurn(f"t{len(turns)}", role, text(tokens), tokens, call_id))

    while len(turns) < turn_count:
        round_index += 1
        add(Role.USER, rng.randint(10, 200))
        call_id = f"call_{round_index}"
        add(Role.ASSISTANT, rng.randint(20, 150), call_id)
        for _ in range(rng.randint(1, 3)):
            add(Role.TOOL, rng.randint(300, 3000), call_id)
        add(Role.ASSISTANT, rng.randint(20, 300))
    return Transcript(tuple(turns[:turn_count]))


# --------------------------------------------------------------------------------------------
# the baseline: a naive, quadratic drop-oldest
# --------------------------------------------------------------------------------------------


def naive_drop_oldest(transcript: Transcript, budget: CompactionBudget) -> set[str]:
    """Drop-oldest the straightforward way: rescan for each exchange, re-add the total each time.

    Returns the dropped turn ids (it makes the same decisions as ``DropOldestPolicy``).
    """
    turns = transcript.turns
    first_protected = len(turns) - min(budget.protected_recent_turns, len(turns))
    dropped: set[str] = set()

    def untouchable(position: int) -> bool:
        turn = turns[position]
        return turn.role is Role.SYSTEM or turn.pinned or position >= first_protected

    for position, turn in enumerate(turns):
        total = sum(t.token_estimate for t in turns if t.turn_id not in dropped)
        if total <= budget.max_tokens:
            break
        if turn.turn_id in dropped:
            continue
        members = [p for p, other in enumerate(turns)
                   if p == position or (turn.tool_call_id is not None
                                        and other.tool_call_id == turn.tool_call_id)]
        if members[0] != position or any(untouchable(p) for p in members):
            continue  # not the exchange's earliest turn, or not removable
        dropped.update(turns[p].turn_id for p in members)
    return dropped


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


def summaries_for(plan: CompactionPlan) -> dict[str, str]:
    return {r.group_id: "s" * (r.target_tokens * CHARS_PER_TOKEN)
            for r in plan.summarization_requests}


CLOCK: Callable[[], float] = time.perf_counter
PAUSE_GC = False


def time_policy(
    make: Callable[[], CompactionPolicy], transcript: Transcript, budget: CompactionBudget,
    runs: int,
) -> tuple[float, float, CompactionPlan]:
    """Best-of-``runs`` decide and apply times, each run on a fresh ``Transcript`` of the same
    turns (so no fact derived and kept by an earlier run helps). Each apply gets a freshly
    decided plan, so the plan's canonical JSON (cached on the plan) is computed inside it."""
    best_plan = best_apply = float("inf")
    plan: CompactionPlan | None = None
    executor = CompactionExecutor()
    for _ in range(runs):
        policy = make()
        fresh = Transcript(transcript.turns)  # cold: nothing derived from an earlier run
        gc.collect()
        if PAUSE_GC:
            gc.disable()
        started = CLOCK()
        plan = policy.decide(fresh, budget)
        decided = CLOCK()
        executor.apply(fresh, plan, summaries_for(plan))
        applied = CLOCK()
        gc.enable()
        best_plan = min(best_plan, decided - started)
        best_apply = min(best_apply, applied - decided)
    assert plan is not None
    return best_plan, best_apply, plan


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms"


def describe(plan: CompactionPlan) -> str:
    counts = {kind: 0 for kind in Action}
    for action in plan.actions:
        counts[action.action] += 1
    parts = [f"{counts[k]} {k.value}" for k in Action if counts[k] and k is not Action.KEEP]
    verdict = " UNMET" if plan.budget_unmet else ""
    return ((", ".join(parts) or "keep all") + f"; {plan.tokens_before:,} -> "
         f"{plan.tokens_after_estimate:,}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 50k transcript")
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of the default chain at 10k")
    parser.add_argument("--cpu", action="store_true",
                        help="time with process_time (CPU) instead of perf_counter (wall)")
    parser.add_argument("--gc-off", action="store_true",
                        help="pause the cyclic garbage collector while timing")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    global CLOCK, PAUSE_GC
    if args.cpu:
        CLOCK = time.process_time
    PAUSE_GC = args.gc_off

    runs = ", ".join(f"{size // 1000}k: {count}" for size, count in RUNS.items())
    clock = "process_time (CPU)" if args.cpu else "perf_counter (wall)"
    collector = "garbage collector paused while timing" if PAUSE_GC else "garbage collector on"
    print(f"Python {sys.version.split()[0]}; {clock}; {collector}; best of ({runs}) runs\n")
    results: dict[tuple[str, int], tuple[float, float]] = {}
    header = (f"{'policy':<22}{'turns':>7}  {'plan':>10}{'apply':>10}  "
              f"{'0.1.0 plan':>11}{'0.1.0 apply':>12}  {'speedup plan/apply':>19}  outcome")
    print(header)
    print("-" * len(header))
    for size in sizes:
        transcript = agent_transcript(size)
        budget = CompactionBudget(transcript.token_estimate() // 3, protected_recent_turns=4)
        for name, make in POLICIES.items():
            plan_s, apply_s, plan = time_policy(make, transcript, budget, RUNS[size])
            results[(name, size)] = (plan_s, apply_s)
            ref_plan = ref_apply = None
            speedup = ""
            if name == "default_chain":
                ref_plan, ref_apply = REFERENCE_010[size]
                speedup = f"{ref_plan / plan_s:.1f}x / {ref_apply / apply_s:.1f}x"
            print(f"{name:<22}{size:>7,}  {fmt_time(plan_s):>10}{fmt_time(apply_s):>10}  "
                  f"{fmt_time(ref_plan):>11}{fmt_time(ref_apply):>12}  {speedup:>19}  "
                  f"{describe(plan)}")
        if size <= NAIVE_MAX_SIZE:
            started = CLOCK()
            dropped = naive_drop_oldest(transcript, budget)
            naive_s = CLOCK() - started
            ours = DropOldestPolicy().decide(transcript, budget)
            same = dropped == {a.turn_id for a in ours.actions if a.action is Action.DROP}
            results[("naive re-scan", size)] = (naive_s, 0.0)
            ratio = naive_s / results[("drop_oldest", size)][0]
            print(f"{'naive re-scan (base)':<22}{size:>7,}  {fmt_time(naive_s):>10}"
                  f"{'-':>10}  {'':>11}{'':>12}  {'':>19}  "
                  f"drop_oldest is {ratio:,.0f}x faster; same decisions: {same}")
        print()

    print("scaling (time ratio; linear = 10.0x for 10k/1k and 5.0x for 50k/10k)")
    print(f"{'policy':<22}{'plan 10k/1k':>14}{'apply 10k/1k':>14}"
          f"{'plan 50k/10k':>14}{'apply 50k/10k':>15}")
    for name in (*POLICIES, "naive re-scan"):
        cells: list[str] = []
        for low, high in ((1_000, 10_000), (10_000, 50_000)):
            if (name, low) in results and (name, high) in results:
                plan_lo, apply_lo = results[(name, low)]
                plan_hi, apply_hi = results[(name, high)]
                cells.append(f"{plan_hi / plan_lo:.1f}x")
                cells.append(f"{apply_hi / apply_lo:.1f}x" if apply_lo else "-")
            else:
                cells.extend(["-", "-"])
        print(f"{name:<22}{cells[0]:>14}{cells[1]:>14}{cells[2]:>14}{cells[3]:>15}")

    if args.profile:
        transcript = agent_transcript(10_000)
        budget = CompactionBudget(transcript.token_estimate() // 3, protected_recent_turns=4)
        profiler = cProfile.Profile()
        profiler.enable()
        plan = default_chain(prompt_id=PROMPT_ID).decide(transcript, budget)
        CompactionExecutor().apply(transcript, plan, summaries_for(plan))
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        print("\ncProfile, default chain at 10k (decide + apply), by own time:")
        print(out.getvalue())


if __name__ == "__main__":
    main()

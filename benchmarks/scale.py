"""Big inputs stay linear in time and memory; a store that is down is noticed once (issue 29).

Run from the repository root: ``python benchmarks/scale.py [--results 750] [--megabytes 25]
[--summaries 20]``. Three parts, each against a baseline measured in the same run:

* ``compact``: a chat history of N tool results of ~11 KB each, at 1x, 2x and 4x N (750, 1,500,
  3,000 by default), compacted to 100,000 tokens by the library (``chat.compact`` with the CLI's
  offline summarizer, after reading the file) and by the CLI (``cutctx compact``), each in a
  process of its own: CPU time and peak memory side by side, and how both grow from 1x to 4x.
* ``count``: ``cutctx count`` on one message of 25, 50 and 100 MB, beside a process that reads
  the same file and has tiktoken encode the text once.
* a store that is down: a session replays the shared SWE-agent run until it has asked for
  ``--summaries`` summaries (each standing for a model call of 50 ms), with no shared store, then
  with a ``RedisStore`` whose server was killed (a real ``redis-server`` started and killed by
  the run): with a client that fails fast, as ``docs/stores.md`` advises, and, for information,
  with redis-py's own retries.

Targets: CLI ``compact`` at 4x within 1.5x of the library's time, at 4x within 4.5x of its time
at 1x, peak memory <= 10x the input file; ``count`` at 100 MB within 1.5x of tiktoken encoding
the text once, peak memory <= 5x the input; the run with a dead store (fast-failing client)
within 1.5x of the run with no store.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _histories import REPO, agent_session, requests_of, seed_tiktoken, start_redis

MODEL = "gpt-4o"
BUDGET = 100_000
SIZES = (1, 2, 4)
_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
          "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"]


@dataclass(frozen=True)
class Run:
    """One child process: its CPU time (user + system), wall time and peak resident memory."""

    cpu: float
    wall: float
    peak: int
    code: int


# A child's peak is its own address space's high-water mark, written as it exits: Linux carries
# the parent's peak over into a child's ru_maxrss (kept across fork and exec).
_PEAK = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nPEAK {peak}\\n")
atexit.register(_peak)
"""


def child(code: str, *args: str) -> Run:
    """Run ``code`` in a fresh interpreter (``sys.argv[1:]`` = ``args``), output discarded."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", _PEAK + code, *args], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode not in (0, 1) or "\nPEAK " not in errors:
        raise SystemExit(f"child failed ({process.returncode}): {errors.strip()[-800:]}")
    peak = int(errors.rsplit("\nPEAK ", 1)[1].split()[0]) * 1024
    return Run(usage.ru_utime + usage.ru_stime, wall, peak, process.returncode)


LIBRARY_COMPACT = f"""
import json, sys
from cutctx_adapters.counting._estimators import estimator_for
from cutctx_adapters.cli._offline import OfflineSummarizer
from cutctx_adapters.openai import chat
history = json.loads(open(sys.argv[1], encoding="utf-8").read())
chat.compact(history, model={MODEL!r}, budget={BUDGET},
             summarizer=OfflineSummarizer(estimator_for({MODEL!r})))
"""
CLI = """
import sys
from cutctx_adapters.cli import main
sys.exit(main(sys.argv[1:]))
"""
TIKTOKEN_ONCE = """
import json, sys, tiktoken
text = json.loads(open(sys.argv[1], encoding="utf-8").read())[0]["content"]
tiktoken.get_encoding("o200k_base").encode_ordinary(text)
"""


def tool_history(results: int, seed: int = 0) -> list[dict[str, Any]]:
    """A task, ``results`` read_file calls answered by ~11 KB of text each, a user turn."""
    rng = random.Random(seed)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug in the parser."}]
    for index in range(results):
        call = f"call_{index}"
        history.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call, "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{index}.py"})}}]})
        text = " ".join(f"{rng.choice(_WORDS)}{rng.randrange(1000)}" for _ in range(1_300))
        history.append({"role": "tool", "tool_call_id": call,
                        "content": f"File f{index}.py line 1. {text}"[:11_000]})
    history.append({"role": "user", "content": "Now fix the failing test."})
    return history


def long_message(megabytes: int, seed: int = 0) -> list[dict[str, Any]]:
    """One user message of about ``megabytes`` MB of words, numbers, spaces and newlines."""
    rng = random.Random(seed)
    words = [f"{word}{number}" for word in _WORDS for number in range(50)]
    target, parts, size = megabytes * 1_000_000, [], 0
    while size < target:
        chunk = " ".join(rng.choices(words, k=2_000)) + "\n"
        parts.append(chunk)
        size += len(chunk)
    return [{"role": "user", "content": "".join(parts)}]


def written(directory: Path, stem: str, make: Callable[[int], Any]
            ) -> list[tuple[int, Path, int]]:
    """The input at each size, written as JSON: its factor, path and bytes."""
    inputs = []
    for factor in SIZES:
        path = directory / f"{stem}{factor}.json"
        path.write_text(json.dumps(make(factor)), encoding="utf-8")
        inputs.append((factor, path, path.stat().st_size))
    return inputs


def mb(count: float) -> str:
    return f"{count / 1e6:,.0f} MB"


@dataclass(frozen=True)
class Row:
    """One input size: the file's bytes, the baseline's run and the subject's."""

    factor: int
    size: int
    baseline: Run
    subject: Run


def side_by_side(names: tuple[str, str], inputs: Sequence[tuple[int, Path, int]],
                 measure: Callable[[Path, int], tuple[Run, Run]]) -> list[Row]:
    """Measure the baseline and the subject on each input; print them side by side, then how
    each grows from the first input to the last."""
    print(f"{'size':>4} {'file':>7} {names[0]:>14} {'peak':>8} {names[1]:>14} {'peak':>8} "
          f"{'ratio':>7} {'peak/file':>10}")
    rows = []
    for factor, path, size in inputs:
        baseline, subject = measure(path, size)
        rows.append(Row(factor, size, baseline, subject))
        print(f"{factor:>3}x {mb(size):>7} {baseline.cpu:>13.2f}s {mb(baseline.peak):>8} "
              f"{subject.cpu:>13.2f}s {mb(subject.peak):>8} {subject.cpu / baseline.cpu:>6.2f}x "
              f"{subject.peak / size:>9.1f}x", flush=True)
    first, last = rows[0], rows[-1]
    print(f"growth {last.factor}x/{first.factor}x: time {names[0]} "
          f"{last.baseline.cpu / first.baseline.cpu:.2f}x, {names[1]} "
          f"{last.subject.cpu / first.subject.cpu:.2f}x; peak {names[0]} "
          f"{last.baseline.peak / first.baseline.peak:.2f}x, {names[1]} "
          f"{last.subject.peak / first.subject.peak:.2f}x\n")
    return rows


def compact_part(directory: Path, results: int) -> list[tuple[str, bool]]:
    print(f"compact: chat histories of {results:,} x size tool results (~11 KB each), "
          f"budget {BUDGET:,}; CPU time of the whole process")
    inputs = written(directory, "history", lambda factor: tool_history(results * factor))
    rows = side_by_side(("library", "CLI"), inputs, lambda path, size: (
        child(LIBRARY_COMPACT, str(path)),
        child(CLI, "compact", str(path), "--budget", str(BUDGET), "--max-bytes", str(4 * size),
              "--summarizer", "offline", "-o", str(directory / "out.json"))))
    first, last = rows[0], rows[-1]
    return [
        (f"compact: CLI at {last.factor}x within 1.5x of the library "
         f"({last.subject.cpu / last.baseline.cpu:.2f}x)",
         last.subject.cpu <= 1.5 * last.baseline.cpu),
        (f"compact: CLI at {last.factor}x within 4.5x of 1x "
         f"({last.subject.cpu / first.subject.cpu:.2f}x)",
         last.subject.cpu <= 4.5 * first.subject.cpu),
        (f"compact: CLI peak memory <= 10x the file ({last.subject.peak / last.size:.1f}x)",
         last.subject.peak <= 10 * last.size),
    ]


def count_part(directory: Path, megabytes: int) -> list[tuple[str, bool]]:
    print(f"count: one message of {megabytes} MB x size; CPU time of the whole process")
    inputs = written(directory, "message", lambda factor: long_message(megabytes * factor))
    rows = side_by_side(("tiktoken once", "cutctx count"), inputs, lambda path, size: (
        child(TIKTOKEN_ONCE, str(path)),
        child(CLI, "count", str(path), "--max-bytes", str(4 * size))))
    last = rows[-1]
    return [
        (f"count: {mb(last.size)} within 1.5x of tiktoken encoding it once "
         f"({last.subject.cpu / last.baseline.cpu:.2f}x)",
         last.subject.cpu <= 1.5 * last.baseline.cpu),
        (f"count: peak memory <= 5x the file ({last.subject.peak / last.size:.1f}x)",
         last.subject.peak <= 5 * last.size),
    ]


class _Slow:
    """The CLI's offline summarizer, as slow as a (fast) model call; counts its calls."""

    def __init__(self, latency: float) -> None:
        from cutctx_adapters.cli._offline import OfflineSummarizer
        from cutctx_adapters.counting._estimators import estimator_for

        self.inner = OfflineSummarizer(estimator_for(MODEL))
        self.latency = latency
        self.calls = 0

    def __call__(self, request: Any, turns: Sequence[Any]) -> str:
        self.calls += 1
        time.sleep(self.latency)
        return self.inner(request, turns)


def summaries_run(requests: Sequence[list[dict[str, Any]]], store: Any, summaries: int,
                  latency: float) -> tuple[float, int]:
    """Wall time of a session replaying the agent's requests until it has asked for
    ``summaries`` summaries; and how many it asked for."""
    from cutctx_adapters.openai import chat
    from cutctx_adapters.session import CompactionSession

    summarizer = _Slow(latency)
    session = CompactionSession(chat.FORMAT, model=MODEL, window=4_096, reserve=512,
                                summarizer=summarizer, store=store)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for request in requests:
            session.prepare(model=MODEL, messages=request)
            if summarizer.calls >= summaries:
                break
    return time.perf_counter() - start, summarizer.calls


def store_part(directory: Path, summaries: int, latency: float) -> list[tuple[str, bool]]:
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from cutctx_adapters.stores import RedisStore

    server = start_redis(directory)
    if server is None:
        print("a store that is down: skipped (redis-server is not installed)\n")
        return []
    port = server.port
    server.kill()  # the server is gone: connections are refused

    def dead(**options: Any) -> RedisStore:
        import redis

        return RedisStore(redis.Redis(host="127.0.0.1", port=port, **options), prefix="scale:")

    requests = requests_of(agent_session())
    summaries_run(requests, None, summaries, 0.0)  # warm: tokenizer loaded, counts cached
    none, asked = summaries_run(requests, None, summaries, latency)
    fast, _ = summaries_run(requests, dead(socket_timeout=2, socket_connect_timeout=1,
                                           retry=Retry(NoBackoff(), 0)), summaries, latency)
    default, _ = summaries_run(requests, dead(socket_timeout=2), summaries, latency)
    print(f"a store that is down: a session asking for {asked} summaries ({latency * 1000:.0f} ms "
          f"each)")
    print(f"{'no shared store':<48} {none:>7.2f}s")
    print(f"{'dead Redis, client failing fast':<48} {fast:>7.2f}s {fast / none:>6.2f}x")
    print(f"{'dead Redis, redis-py retries (socket_timeout=2)':<48} {default:>7.2f}s "
          f"{default / none:>6.2f}x  (a refusal retried for seconds, once a back-off)\n")
    return [(f"dead store: a {asked}-summary run within 1.5x of no store ({fast / none:.2f}x)",
             fast <= 1.5 * none)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=750, help="tool results at 1x")
    parser.add_argument("--megabytes", type=int, default=25, help="message size at 1x")
    parser.add_argument("--summaries", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05,
                        help="seconds each summary takes (a model call)")
    args = parser.parse_args(argv)
    seed_tiktoken()
    verdicts: list[tuple[str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="cutctx-scale-") as temporary:
        directory = Path(temporary)
        verdicts += compact_part(directory, args.results)
        verdicts += count_part(directory, args.megabytes)
        verdicts += store_part(directory, args.summaries, args.latency)
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}    {text}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

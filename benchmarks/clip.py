"""How fast one huge tool result is clipped: its salient lines read, then head and tail cut.

Run: ``python benchmarks/clip.py`` (``--mb 25`` the size of each text, ``--rounds 3``).

For each kind of text (a build log with few salient lines, the agent-loop log of
``tests/_support``, Python source, one-line JSON, prose, a log with non-ASCII marks), it times in
the same run, best of ``--rounds`` (CPU time):

* ``baseline``: the previous implementation, kept below: each pattern run over the whole text
  with ``re.finditer``, the line of every match found by ``rfind`` (``reference_lines``);
* ``lines_of``: the engine's search for the same lines (literal searches for places a match
  could be, the pattern tried only on the lines holding one);
* ``clip``: ``plan_clip`` of the whole text to 4,000 tokens (hash, line counts and cuts
  included): the figure issue 39 asks to be >= 50 MB/s.

Every row checks that ``lines_of`` finds exactly the baseline's lines. The one-line JSON's
baseline is quadratic (every match looks back to the start of its line): it runs on a 1 MB
slice and its throughput is that slice's.
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cutctx import CharRatioEstimator  # the repository root is put on the path above
from cutctx._clipping import plan_clip
from cutctx._digest import _CODE, _SALIENT, _SEEN, Lines, _edge_line, _line_at, lines_of
from tests._support.agent_loop import _text as agent_log

MEGABYTE = 1_000_000
CLIP_TOKENS = 4_000


# --------------------------------------------------------------------------------------------
# the baseline: the previous implementation (one finditer over the whole text per pattern)
# --------------------------------------------------------------------------------------------


def reference_matching_lines(content: str, pattern: re.Pattern[str]) -> tuple[tuple[int, int], ...]:
    """The lines where ``pattern`` matches within their first ``LINE_CHARS`` characters."""
    out: list[tuple[int, int]] = []
    last_start = -1
    for match in pattern.finditer(content):
        line_start = content.rfind("\n", 0, match.start()) + 1
        if line_start == last_start:
            continue
        last_start = line_start
        span = _line_at(content, line_start)
        if span is not None and span[0] <= match.start() and match.end() <= span[1]:
            out.append(span)
            if len(out) >= _SEEN:
                break
    return tuple(out)


def reference_lines(content: str) -> Lines:
    """``lines_of`` as it was before issue 39."""
    return Lines(_edge_line(content, forward=True), _edge_line(content, forward=False),
                 reference_matching_lines(content, _SALIENT),
                 reference_matching_lines(content, _CODE))


# --------------------------------------------------------------------------------------------
# texts
# --------------------------------------------------------------------------------------------


def _lines_until(size: int, line: Callable[[int], str]) -> str:
    out: list[str] = []
    total = 0
    number = 0
    while total < size:
        text = line(number)
        out.append(text)
        total += len(text) + 1
        number += 1
    return "\n".join(out)


def build_log(size: int, rng: random.Random) -> str:
    """Timestamped build output, one warning in ~500 lines."""
    words = ("compiling", "module", "linking", "object", "cache", "hit", "miss", "target",
             "scanning", "dependencies", "generated", "bytes", "writing", "reading")

    def line(number: int) -> str:
        if number % 500 == 499:
            return f"2024-05-01 12:{number % 60:02d}:07,123 WARN deprecated flag in step {number}"
        return (f"2024-05-01 12:{number % 60:02d}:{number % 60:02d},{number % 1000:03d} INFO "
                + " ".join(rng.choice(words) for _ in range(rng.randint(4, 10))))
    return _lines_until(size, line)


def python_source(size: int, rng: random.Random) -> str:
    """Indented code: attribute access, snake_case names, few digits."""
    names = ("self.value", "config.window", "session_store", "render_view", "parser.tokens",
             "budget_left", "items", "cache.get(key)", "len(items)", "module_name")

    def line(number: int) -> str:
        indent = "    " * rng.randint(0, 3)
        if number % 7 == 0:
            return f"{indent}def handle_{rng.choice(('read', 'write', 'close'))}(self, item):"
        return f"{indent}{rng.choice(names)} = {rng.choice(names)} + {rng.choice(names)}"
    return _lines_until(size, line)


def one_line_json(size: int, rng: random.Random) -> str:
    """A minified JSON array on one line."""
    item = '{{"id":{},"status":"ok","value":"{}"}}'
    parts: list[str] = []
    total = 0
    while total < size:
        part = item.format(rng.randint(1, 10**6), "x" * rng.randint(5, 40))
        parts.append(part)
        total += len(part) + 1
    return "[" + ",".join(parts) + "]"


def prose(size: int, rng: random.Random) -> str:
    """Paragraphs of plain sentences."""
    words = ("the", "agent", "reads", "a", "file", "and", "then", "writes", "its", "answer",
             "to", "user", "who", "asked", "for", "change", "in", "code", "review", "today")

    def line(_number: int) -> str:
        return ". ".join(" ".join(rng.choice(words) for _ in range(rng.randint(6, 14)))
                         for _ in range(rng.randint(2, 6))) + "."
    return _lines_until(size, line)


def marked_log(size: int, rng: random.Random) -> str:
    """Test output with non-ASCII marks (✓, ×, →), a failure in ~300 lines."""
    def line(number: int) -> str:
        if number % 300 == 299:
            return f"  × test_case_{number} FAILED → expected 3, got 4"
        return f"  ✓ test_case_{number} ({rng.randint(1, 90)} ms) → ok"
    return _lines_until(size, line)


TEXTS: dict[str, Callable[[int, random.Random], str]] = {
    "build log": build_log,
    "agent-loop log": lambda size, rng: agent_log(rng, size, "$ cat build.log"),
    "python source": python_source,
    "one-line json": one_line_json,
    "prose": prose,
    "non-ascii log": marked_log,
}


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


def best_of(rounds: int, action: Callable[[], object]) -> float:
    """Best CPU time of ``rounds`` runs, the garbage collector paused while timing."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        started = time.process_time()
        action()
        best = min(best, time.process_time() - started)
        gc.enable()
    return best


def row(name: str, text: str, rounds: int) -> float:
    """Print one text's row; return its clip throughput (MB/s)."""
    estimator = CharRatioEstimator()
    megabytes = len(text.encode("utf-8")) / MEGABYTE
    sample = text if name != "one-line json" else text[:MEGABYTE]
    sample_mb = len(sample.encode("utf-8")) / MEGABYTE
    base_s = best_of(rounds if sample is text else 1, lambda: reference_lines(sample))
    ours_s = best_of(rounds, lambda: lines_of(text))
    clip_s = best_of(rounds, lambda: plan_clip(text, len(text) // 4, CLIP_TOKENS, estimator))
    ours = lines_of(text)
    same = ours == reference_lines(text) if sample is text else (
        lines_of(sample) == reference_lines(sample))
    base_rate, ours_rate, clip_rate = sample_mb / base_s, megabytes / ours_s, megabytes / clip_s
    print(f"{name:<16}{base_rate:>10.1f} MB/s{ours_rate:>10.1f} MB/s"
          f"{ours_rate / base_rate:>8.1f}x{clip_rate:>10.1f} MB/s"
          f"{len(ours.salient):>9}{len(ours.codes):>7}  {same}")
    return clip_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=25.0, help="size of each text, in MB")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = int(args.mb * MEGABYTE)
    print(f"Python {sys.version.split()[0]}; texts of {args.mb:g} MB; CPU time, best of "
          f"{args.rounds}; clip to {CLIP_TOKENS:,} tokens\n")
    header = (f"{'text':<16}{'baseline':>16}{'lines_of':>16}{'speedup':>9}{'clip':>16}"
              f"{'salient':>9}{'codes':>7}  same lines")
    print(header)
    print("-" * len(header))
    slowest = min(row(name, make(size, random.Random(7)), args.rounds)
                  for name, make in TEXTS.items())
    print(f"\nslowest clip: {slowest:.1f} MB/s (target >= 50 MB/s)")


if __name__ == "__main__":
    main()

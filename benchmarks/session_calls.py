"""The per-call cost of a sticky session as the history grows (issue 12: O(appended) calls).

Run from the repository root: ``python benchmarks/session_calls.py [--sizes 500,2000,10000,50000]
[--format chat|anthropic]``.
For each size, the history is the shared SWE-agent session repeated to that many messages (tool
ids made unique); a ``CompactionSession`` for gpt-4o (128k window) sees it once, then ``--calls``
calls that each append one message (a user observation, then an assistant reply, alternating),
with each way of telling the history extends the last one (``check_prefix``): ``identity`` (the
items already read are the same objects: a call reads only what was appended) and ``content``
(the default: every dict already read is compared with its copy, so in-place edits are seen),
and ``fresh``: ``content`` with every call given fresh copies of the whole history (as a
service that parses each request's JSON body does), so no item is the very one read before.
Timed: the median CPU time of those calls, beside a cold tiktoken pass (``encode_ordinary``
over every string of every message, once) over the same history, in the same run.

The garbage collector is off while calls are timed (one full collection before): a collection
walks every live object of the process (the caller's history itself), whatever the call does,
and a full one before each call also evicts the CPU caches, which a small heap survives and a
50,000-message one does not. Its figure is printed apart: ``identity`` calls each preceded by
``gc.collect()``. Also printed: the first call, where the session sees the whole history for the
first time (a new worker, a restart) and compacts at each earlier point it could have ended.

Targets (``identity``): at 10,000 messages a call costs <= 5% of the cold pass; flat: the call
at 50,000 messages within 1.5x of the call at 2,000. ``fresh``: at 10,000 messages a call costs
<= 2% of the cold pass (issue 39: the exact comparison must run at C speed).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from _histories import agent_session, as_anthropic, seed_tiktoken
from _timing import strings_of

MODEL = "gpt-4o"


def history_of(size: int) -> list[dict[str, Any]]:
    """The shared session, repeated behind its one system prompt to ``size`` messages, cut at a
    point where no tool call is left open."""
    base = agent_session()
    system, rest = base[0], base[1:]
    out = [system]
    round_ = 0
    while len(out) < size:
        for message in rest:
            copy = dict(message)
            if isinstance(copy.get("tool_calls"), list):
                copy["tool_calls"] = [{**c, "id": f"{c['id']}_x{round_}"}
                                      for c in copy["tool_calls"]]
            if isinstance(copy.get("tool_call_id"), str):
                copy["tool_call_id"] = f"{copy['tool_call_id']}_x{round_}"
            out.append(copy)
        round_ += 1
    out = out[:size]
    while out[-1]["role"] != "user" or out[-1].get("tool_call_id"):
        out.pop()
    return out


def appended(number: int) -> dict[str, Any]:
    if number % 2:
        return {"role": "assistant", "content": f"Looking at the next file ({number})."}
    return {"role": "user", "content": f"Observation {number}: the command ran; nothing printed."}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000,10000,50000")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--format", choices=("chat", "anthropic"), default="chat",
                        help="the history as Chat Completions messages, or as Anthropic "
                             "messages (tool calls as tool_use/tool_result blocks)")
    args = parser.parse_args(argv)
    seed_tiktoken()

    import tiktoken

    from cutctx_adapters.anthropic import messages as anthropic_messages
    from cutctx_adapters.openai import chat
    from cutctx_adapters.session import CompactionSession
    from cutctx_adapters.tiktoken import TiktokenEstimator

    fmt = chat.FORMAT if args.format == "chat" else anthropic_messages.FORMAT
    rows: list[tuple[int, float, float, float, float, float]] = []
    print(f"{'messages':>9} {'cold pass':>10} {'identity':>9} {'(% cold)':>8} {'content':>9} "
          f"{'(% cold)':>8} {'fresh':>9} {'(% cold)':>8} {'identity, gc.collect() first':>29} "
          f"{'first sight':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        system: Any = None
        history = history_of(size)
        if args.format == "anthropic":
            system, history = as_anthropic(history)
        encoding = tiktoken.get_encoding("o200k_base")
        strings = [s for message in history for s in strings_of(message)]
        start = time.process_time()
        for text in strings:
            encoding.encode_ordinary(text)
        cold = time.process_time() - start
        extra = {} if system is None else {"system": system}
        medians: dict[str, float] = {}
        firsts: dict[str, float] = {}
        for check in ("identity", "content", "fresh", "identity+gc"):
            session = CompactionSession(fmt, model=MODEL, estimator=TiktokenEstimator(MODEL),
                                        check_prefix="content" if check in ("content", "fresh")
                                        else "identity")
            grown = list(history)
            start = time.process_time()
            session.prepare(model=MODEL, messages=grown, **extra)  # first sight: a full pass
            firsts[check] = time.process_time() - start
            times = []
            gc.collect()
            if check != "identity+gc":
                gc.disable()
            try:
                for number in range(args.calls):
                    grown.append(appended(number))
                    given = json.loads(json.dumps(grown)) if check == "fresh" else grown
                    if check == "identity+gc":
                        gc.collect()
                    start = time.process_time()
                    session.prepare(model=MODEL, messages=given, **extra)
                    times.append(time.process_time() - start)
            finally:
                gc.enable()
            medians[check] = statistics.median(times)
        rows.append((len(history) + args.calls, cold, medians["identity"], medians["content"],
                     medians["identity"] / cold, medians["fresh"] / cold))
        print(f"{len(history) + args.calls:>9,} {cold * 1000:>8.1f}ms "
              f"{medians['identity'] * 1000:>7.2f}ms {medians['identity'] / cold:>8.1%} "
              f"{medians['content'] * 1000:>7.2f}ms {medians['content'] / cold:>8.1%} "
              f"{medians['fresh'] * 1000:>7.2f}ms {medians['fresh'] / cold:>8.1%} "
              f"{medians['identity+gc'] * 1000:>27.2f}ms {firsts['identity'] * 1000:>10.0f}ms",
              flush=True)
    verdicts: list[tuple[str, bool]] = []
    ten = next((r for r in rows if 9_000 <= r[0] <= 11_000), None)
    if ten is not None:
        verdicts.append((f"identity: a call at 10k messages <= 5% of the cold pass "
                         f"({ten[4]:.1%})", ten[4] <= 0.05))
        verdicts.append((f"fresh: a call at 10k messages on fresh copies <= 2% of the cold "
                         f"pass ({ten[5]:.1%})", ten[5] <= 0.02))
    small = next((r for r in rows if 1_500 <= r[0] <= 2_500), None)
    large = next((r for r in rows if r[0] >= 45_000), None)
    if small is not None and large is not None:
        ratio = large[2] / small[2]
        verdicts.append((f"identity: flat, 50k within 1.5x of 2k ({ratio:.2f}x)", ratio <= 1.5))
        print(f"(content, the default: 50k is {large[3] / small[3]:.2f}x 2k)")
    for name, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL':7} {name}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

"""An agent loop through a session: does one huge result cost the conversation, do compactions
land on target, does the prompt cache hold? (issue 31)

Run from the repository root: ``python benchmarks/agent_loop.py [--windows 16000,64000,128000]
[--formats chat,responses,anthropic,gemini] [--turns 60]``. The loop
(``tests/_support/agent_loop.py``) makes one tool call a turn, results of 2–20k characters (a
fifth of them repeats), and at turn 30
one result of about a million characters. Each request goes through one ``CompactionSession``
(the wrapped clients' own path) with the default settings; the baseline beside it is stateless
``compact`` of the same history to the session's target.

Per format and window: requests sharing a prefix with the one before (the whole previous request
is the start of this one), compactions landing within 10% below their target, effective cost
(tokens sent, the shared prefix at 0.1x), and after the huge result the fewest turns a request
kept against the fewest stateless ``compact`` kept at the target.

Also (issue 38): the floor (every call a pure append: the tokens it shares in size with the
request before at 0.1x, the rest in full), the recompactions and their mean ``prefix_kept``; a
compaction's target is where it aimed (``report.goal_tokens``: the target, or lower when the
history grows fast). ``--windows 8000 --turns 120``: the 120-call loop at 8k. ``fewest``: a
lower bound on the recompactions any session could make on this loop (each one landing at the
first request's size plus the newest turn, clipped to a result's share, then growing as the
history does): where it is above the target, the target cannot be met by planning.

Targets: at 16k, >= 80% of consecutive requests share a prefix and >= 90% of compactions land
within 10% of target; at 8k over 120 calls, <= 30 recompactions keeping a mean prefix of >= 0.6;
at every window, turns kept after the huge result >= stateless compact's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _histories import seed_tiktoken

from tests._support.agent_loop import agent_loop

CACHED_PRICE = 0.1
MODELS = {"chat": "gpt-4o", "responses": "gpt-4o", "anthropic": "claude-sonnet-4-5",
          "gemini": "gemini-2.5-flash"}


@dataclass
class Row:
    """What one format at one window did over the loop."""

    fmt: str
    window: int
    calls: int = 0
    shared: int = 0
    compactions: int = 0
    on_target: int = 0
    sent: int = 0
    cached: int = 0
    kept_after_huge: int | None = None
    stateless_after_huge: int | None = None
    over_budget: int = 0
    last_tokens: int = 0
    landings: list[float] = field(default_factory=list)
    prefix_kept: list[float] = field(default_factory=list)
    fewest: int = 0
    """The fewest recompactions any session could make: each landing at the least a request can
    hold (the first request, with the newest turn clipped to a result's share of the budget)
    and growing by what each call appends (a lower bound: no rule of what must be kept held)."""
    floor: float = 0.0
    """The cost if every call were a pure append: the tokens the previous request shares with
    this one's size at 0.1x, what it adds beyond it in full."""
    seconds: float = 0.0

    @property
    def cost(self) -> float:
        return (self.sent - self.cached) + CACHED_PRICE * self.cached


def _module(fmt: str) -> Any:
    if fmt == "gemini":
        from cutctx_adapters.gemini import contents
        return contents
    if fmt == "anthropic":
        from cutctx_adapters.anthropic import messages
        return messages
    from cutctx_adapters.openai import chat, responses
    return chat if fmt == "chat" else responses


def _fields(fmt: str, side: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    request: dict[str, Any] = {"model": MODELS[fmt]}
    if fmt == "chat":
        request["messages"] = items
    elif fmt == "responses":
        request.update(input=items, instructions=side)
    elif fmt == "gemini":
        request.update(contents=items, config={"system_instruction": side})
    else:
        request.update(messages=items, system=side)
    return request


def _sent_items(fmt: str, request: dict[str, Any]) -> list[Any]:
    key = {"responses": "input", "gemini": "contents"}.get(fmt, "messages")
    return list(request[key])


def _stateless_kept(fmt: str, side: Any, items: list[dict[str, Any]], target: int) -> int:
    module = _module(fmt)
    if fmt == "chat":
        result = module.compact(items, model=MODELS[fmt], budget=target)
        return len(result.messages)
    if fmt == "responses":
        result = module.compact(items, instructions=side, model=MODELS[fmt], budget=target)
        return len(result.input)
    if fmt == "gemini":
        result = module.compact(items, config={"system_instruction": side},
                                model=MODELS[fmt], budget=target)
        return len(result.contents)
    result = module.compact(items, system=side, model=MODELS[fmt], budget=target)
    return len(result.messages)


def run(fmt: str, window: int, turns: int, huge_at: int, **settings: Any) -> Row:
    from cutctx_adapters import CompactionSession

    module = _module(fmt)
    loop = agent_loop(turns=turns, huge_at=huge_at)
    session = CompactionSession(module.FORMAT, model=MODELS[fmt], window=window, **settings)
    row = Row(fmt, window)
    previous: list[str] | None = None
    least = grown = held = 0  # the first request's size, the history's, the bound's request
    started = time.perf_counter()
    for number, (side, items) in enumerate(loop.requests(fmt)):
        prepared = session.prepare(_fields(fmt, side, items))
        report = prepared.report
        sent = [json.dumps(item, sort_keys=True) for item in _sent_items(fmt, prepared.request)]
        sizes = [len(item) for item in sent]
        tokens = report.tokens_sent or 0
        common = _common(previous or [], sent)
        row.calls += 1
        row.sent += tokens
        row.shared += previous is not None and common == len(previous)
        # the prefix a provider serves from its cache: the leading items the two requests share
        row.cached += round(tokens * sum(sizes[:common]) / max(1, sum(sizes)))
        row.over_budget += report.budget_unmet
        before = row.last_tokens
        row.floor += (CACHED_PRICE * min(before, tokens) + max(0, tokens - before))
        row.last_tokens = tokens
        if report.decision == "recompacted" and report.prefix_kept is not None:
            row.prefix_kept.append(report.prefix_kept)
        if report.decision in ("compacted", "recompacted"):
            row.compactions += 1
            target = report.goal_tokens or report.target_tokens or 0
            row.landings.append(tokens / max(1, target))
            row.on_target += 0.9 * target <= tokens <= target or (
                report.tokens_in is not None and report.tokens_in <= target)
        if huge_at < number <= huge_at + 5:  # the calls right after the huge result
            goal = report.goal_tokens or report.target_tokens or 0
            stateless = _stateless_kept(fmt, side, items, goal)
            row.kept_after_huge = min(len(sent), row.kept_after_huge or len(sent))
            row.stateless_after_huge = min(stateless, row.stateless_after_huge or stateless)
        growth, grown = (report.tokens_in or 0) - grown, report.tokens_in or 0
        least = least or grown
        held += growth
        if number and held > (report.trigger_tokens or held):
            row.fewest += 1
            held = least + min(growth, (report.prompt_budget or 0) // 4)
        previous = sent
    row.seconds = time.perf_counter() - started
    return row


def _common(before: list[str], after: list[str]) -> int:
    count = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="16000,64000,128000")
    parser.add_argument("--formats", default="chat,responses,anthropic,gemini")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--huge-at", type=int, default=30)
    parser.add_argument("--target", type=float, default=None, help="the sessions' target")
    args = parser.parse_args(argv)
    seed_tiktoken()
    windows = [int(w) for w in args.windows.split(",")]
    formats = args.formats.split(",")
    print(f"agent loop: {args.turns} turns, a ~1M-character result at turn {args.huge_at}")
    print(f"{'format':10} {'window':>7} {'shared prefix':>14} {'on target':>10} "
          f"{'landing':>13} {'cost':>10} {'floor':>10} {'recompacted':>12} {'fewest':>7} "
          f"{'prefix kept':>12} "
          f"{'kept after huge':>16} {'over':>5} {'s':>6}")
    ok = True
    for fmt in formats:
        for window in windows:
            settings = {} if args.target is None else {"target": args.target}
            row = run(fmt, window, args.turns, args.huge_at, **settings)
            pairs = max(1, row.calls - 1)
            share = row.shared / pairs
            target = row.on_target / max(1, row.compactions)
            landing = (f"{min(row.landings):.2f}-{max(row.landings):.2f}" if row.landings
                       else "-")
            kept = f"{row.kept_after_huge} vs {row.stateless_after_huge}"
            recompacted = len(row.prefix_kept)
            kept_prefix = (f"{sum(row.prefix_kept) / recompacted:.2f}" if recompacted else "-")
            print(f"{fmt:10} {window:>7} {row.shared:>3}/{pairs:<3} {share:>5.0%} "
                  f"{row.on_target:>3}/{row.compactions:<3}{target:>4.0%} {landing:>13} "
                  f"{row.cost:>10,.0f} {row.floor:>10,.0f} {recompacted:>5}/{row.calls:<6} "
                  f"{row.fewest:>7} {kept_prefix:>12} {kept:>16} {row.over_budget:>5} "
                  f"{row.seconds:>6.1f}")
            if window <= 8_000 and args.turns >= 120:
                ok &= recompacted <= 30 and kept_prefix != "-" and float(kept_prefix) >= 0.6
            elif window <= 16_000:
                ok &= share >= 0.8 and target >= 0.9
            ok &= (row.kept_after_huge or 0) >= (row.stateless_after_huge or 0)
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

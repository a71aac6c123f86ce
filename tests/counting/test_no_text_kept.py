"""A process keeps no conversation text after a call (issue 39: 27): counts are remembered per
call or per session, never by the estimators a process shares; the engine's caches likewise."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

from cutctx_adapters.counting import CountCache, chosen_estimator, estimator_for
from cutctx_adapters.openai import chat


def _history(tag: int) -> list[dict[str, object]]:
    """A tool result of ~400 KB, its text unique to ``tag``."""
    result = "\n".join(f"line {line} of run {tag}: value={line * tag}" for line in range(12_000))
    return [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{tag}", "type": "function",
                 "function": {"name": "run", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call_{tag}", "content": result},
            {"role": "assistant", "content": "Looking."}]


def _retained(calls: int, call: Callable[[int], object]) -> int:
    """Bytes still allocated after ``calls`` calls whose results were all dropped."""
    call(-1)  # the tokenizer and the modules are loaded outside the measure
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for tag in range(calls):
            call(tag)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_stateless_compact_calls_keep_no_text_after_they_return(tiktoken_cache: object) -> None:
    retained = _retained(12, lambda tag: chat.compact(_history(tag), model="gpt-4o",
                                                      budget=4_000))
    assert retained < 1_000_000  # 12 calls on ~400 KB each: nothing of them kept


def test_the_shared_estimator_counts_without_holding_text(tiktoken_cache: object) -> None:
    shared = estimator_for("gpt-4o")
    retained = _retained(20, lambda tag: shared.estimate_tokens(f"{tag} " * 50_000))
    assert retained < 200_000


def test_a_call_remembers_its_counts_within_its_bound(tiktoken_cache: object) -> None:
    counter = chosen_estimator(None, "gpt-4o")
    assert isinstance(counter, CountCache)
    assert counter.estimate_tokens("tiktoken is great!") == 6 == counter.estimate_tokens(
        "tiktoken is great!")
    small = CountCache(estimator_for("gpt-4o"), max_bytes=40)
    for text in ("a" * 20, "b" * 20, "c" * 20):
        small.estimate_tokens(text)
    assert small.size <= 40

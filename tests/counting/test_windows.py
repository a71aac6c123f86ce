"""The built-in context windows and input limits, and how a prompt budget comes from them."""

from __future__ import annotations

import pytest

from cutctx_adapters.counting._windows import (
    CONTEXT_WINDOWS,
    INPUT_LIMITS,
    context_window,
    input_limit,
    prompt_budget,
)


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-4o-2024-08-06", 128_000),
    ("chatgpt-4o-latest", 128_000),
    ("gpt-5", 400_000),
    ("gpt-5-mini-2025-08-07", 400_000),
    ("gpt-5-chat-latest", 128_000),
    ("gpt-5.1-chat-latest", 128_000),
    ("gpt-5.2-chat-latest", 128_000),
    ("gpt-5.3-chat-latest", 128_000),
    ("gpt-5.2-2025-12-11", 400_000),
    ("gpt-5.4", 1_050_000),
    ("gpt-5.4-mini-2026-03-17", 400_000),
    ("gpt-6-sol", 1_050_000),
    ("o1-mini", 128_000),
    ("o3-mini", 200_000),
    ("ft:gpt-4.1-mini:acme::abc", 1_047_576),
    ("claude-sonnet-4-5", 200_000),
    ("claude-opus-4-5-20251101", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-sonnet-4-6", 1_000_000),
    ("claude-opus-4-8", 1_000_000),
    ("claude-sonnet-5-5", 1_000_000),
    ("claude-haiku-5-5", 1_000_000),
    ("claude-fable-5-2", 1_000_000),
    ("claude-mythos-5-1", 1_000_000),
    ("acme-llm", None),
    (None, None),
])
def test_windows_by_longest_prefix(model: str | None, window: int | None) -> None:
    assert context_window(model) == window


def test_caller_overrides_win_over_the_table() -> None:
    assert context_window("gpt-4o", {"gpt-4o": 64_000}) == 64_000
    assert context_window("gpt-4o-mini", {"gpt-4o": 64_000}) == 64_000


def test_every_input_limit_is_below_its_window() -> None:
    for prefix, limit in INPUT_LIMITS.items():
        window = context_window(prefix)
        assert window is not None and limit < window, prefix
    assert all(window > 0 for window in CONTEXT_WINDOWS.values())


@pytest.mark.parametrize(("model", "allowance", "budget"), [
    ("gpt-4o", 1_000, 127_000),
    ("gpt-5", 1_000, 272_000),  # capped: GPT-5 takes 272K in, whatever the reply allowance
    ("gpt-5", 200_000, 200_000),  # a large allowance leaves less than the cap
    ("gpt-5.2-chat-latest", 1_000, 127_000),
    ("gpt-6-luna", 4_096, 922_000),
    ("claude-sonnet-4-6", 64_000, 936_000),
    ("acme-llm", 1_000, None),
])
def test_the_built_in_window_is_capped_by_the_input_limit(
    model: str, allowance: int, budget: int | None,
) -> None:
    assert prompt_budget(model, allowance) == budget


def test_a_window_the_caller_gives_is_taken_as_it_is() -> None:
    assert prompt_budget("gpt-5", 1_000, window=350_000) == 349_000
    assert prompt_budget("gpt-5-mini", 1_000, overrides={"gpt-5": 350_000}) == 349_000
    assert prompt_budget("gpt-4o", 1_000, overrides={"gpt-5": 350_000}) == 127_000
    assert prompt_budget("gpt-4o", 200_000) == 0
    assert input_limit(None) is None

"""A recompaction keeps the cached prefix, and the report says how much (issue 38).

Through the agent loop of one tool call a turn, a session's recompactions keep most of the
request sent before as a byte-identical prefix (``prefix_kept``), every request still holds the
system prompt, the task and the newest result, and no tool call or result is orphaned; the
report carries the session's running share of pure appends and where each compaction aimed.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutctx_adapters import CompactionSession
from cutctx_adapters.openai import chat
from cutctx_adapters.reports import CHANGED, CallReport
from cutctx_adapters.session._hysteresis import APPENDS, FLOOR, aimed
from tests._support.agent_loop import agent_loop


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


def _replay(window: int, turns: int = 60, seed: int = 0
            ) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]], CallReport]]:
    session = CompactionSession(chat.FORMAT, model="gpt-4o", window=window)
    out = []
    for _, items in agent_loop(seed=seed, turns=turns).requests("chat"):
        prepared = session.prepare(model="gpt-4o", messages=items)
        out.append((items, prepared.request["messages"], prepared.report))
    return out


def test_a_recompaction_keeps_most_of_the_prefix_sent_before() -> None:
    """Planned afresh, the loop's recompactions at 8k kept 0.19 of the request before on
    average; keeping the prefix, more than half."""
    kept = [report.prefix_kept for _, _, report in _replay(8000)
            if report.decision == "recompacted"]
    assert kept and all(share is not None for share in kept)
    shares = [share for share in kept if share is not None]
    assert sum(shares) / len(shares) >= 0.5


def test_prefix_kept_is_what_was_sent_again() -> None:
    """``prefix_kept`` is the share of the previous request's items sent again unchanged."""
    calls = _replay(16000, turns=40)
    for (_, before, _), (_, sent, report) in pairwise(calls):
        if report.decision != "recompacted":
            continue
        same = 0
        for old, new in zip(before, sent, strict=False):
            if old != new:
                break
            same += 1
        assert report.prefix_kept == pytest.approx(same / len(before))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_rules_hold_while_the_prefix_is_kept(seed: int) -> None:
    """Every request: the system prompt and the task first, the newest result there, every
    tool result answering a call of the request and every call answered."""
    for items, sent, report in _replay(8000, turns=50, seed=seed):
        assert sent[:2] == items[:2]
        if items[-1]["role"] == "tool":
            assert sent[-1]["tool_call_id"] == items[-1]["tool_call_id"]
        calls = {call["id"] for message in sent for call in message.get("tool_calls") or ()}
        answers = {message["tool_call_id"] for message in sent if message["role"] == "tool"}
        assert calls == answers
        assert not report.budget_unmet


def test_append_share_is_the_running_share_of_pure_appends() -> None:
    """Each call's report holds the share of the session's calls so far that changed nothing
    sent before; the log line says it too."""
    calls = _replay(16000, turns=30)
    appends = 0
    for number, (_, _, report) in enumerate(calls, start=1):
        appends += report.decision not in CHANGED
        assert report.append_share == pytest.approx(appends / number)
        if report.decision in CHANGED:
            assert f"appends {report.append_share:.0%} of calls" in str(report)
            assert report.goal_tokens is not None
            assert report.goal_tokens <= (report.target_tokens or 0) + 64


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=2, max_size=12),
       st.integers(1_000, 100_000), st.floats(0.1, 0.9))
def test_a_compaction_aims_at_the_target_or_below_it(growth: list[int], budget: int,
                                                     share: float) -> None:
    """Never above the target, never below its floor; at the target while the history grows
    slowly enough for ``APPENDS`` calls to fit between it and the trigger."""
    target = int(budget * share)
    sums = [0]
    for step in growth:
        sums.append(sums[-1] + step)
    boundaries = [(index, index) for index in range(1, len(sums))]
    goal = aimed(boundaries, sums, len(boundaries) - 1, budget, target)
    assert int(target * FLOOR) <= goal <= target
    if max(growth[-6:]) * APPENDS <= budget - target:
        assert goal == target

"""benchmarks/scale.py stays runnable and measures what it says (issue 29)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from scale import child, long_message, tool_history, written

from cutctx_adapters.openai import chat


def test_its_histories_are_valid_and_sized_as_said(tmp_path: Path) -> None:
    history = tool_history(3)
    chat.validate(history)
    assert len(history) == 2 + 2 * 3 + 1
    assert all(len(m["content"]) <= 11_000 for m in history if m["role"] == "tool")
    (message,) = long_message(1)
    assert 1_000_000 <= len(message["content"]) < 1_100_000
    inputs = written(tmp_path, "h", lambda factor: tool_history(factor))
    assert [(factor, path.stat().st_size) for factor, path, _size in inputs] == [
        (factor, size) for factor, _path, size in inputs]
    assert json.loads(inputs[-1][1].read_text()) == tool_history(4)


def test_a_child_reports_its_own_peak_memory_not_its_parents() -> None:
    ballast = bytearray(300 * 1024 * 1024)  # the parent's peak, which ru_maxrss would carry over
    small = child("pass")
    large = child("x = bytearray(200 * 1024 * 1024)")
    del ballast
    assert small.code == 0 and small.peak < 100 * 1024 * 1024
    assert large.peak - small.peak >= 190 * 1024 * 1024

"""Lossless before lossy (issue 39): an exact copy is deduplicated before anything is clipped.

A deduplicated result loses nothing (its later copy is in the request); a clip loses what it
elides. So a file read twice is one pointer and one clip, never two clips of the same text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cutctx import CharRatioEstimator
from cutctx_adapters.openai import chat

CHARS = CharRatioEstimator()


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache."""


def _read(call_id: str, text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": "app.py"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": text}]


FILE = "\n".join(f"{n:4d}  def handler_{n}(request): return render(request, 'page_{n}')"
                 for n in range(200))


@pytest.mark.parametrize("between", [0, 1, 3])
def test_a_file_read_twice_is_one_pointer_and_one_clip(between: int) -> None:
    history = [{"role": "system", "content": "You are a coding agent."},
               {"role": "user", "content": "Fix the handler for page 7."}, *_read("c1", FILE)]
    for number in range(between):
        history += [{"role": "assistant", "content": f"Step {number}: thinking."},
                    {"role": "user", "content": f"Go on ({number})."}]
    history += _read("c2", FILE)
    assert chat.count_tokens(history[2:4], model="gpt-4o") > 2_000  # each copy ~2.4k
    result = chat.compact(history, model="gpt-4o", budget=2_000)
    report = result.report
    assert not report.budget_unmet
    first, second = 3, len(history) - 1
    assert report.deduplicated_turn_ids == (f"m{first}",)
    assert report.clipped_turn_ids == (f"m{second}",)
    assert result.messages is not None
    assert "identical to the result of tool call c2" in str(result.messages[first]["content"])
    assert "cutctx clipped this tool result" in str(result.messages[-1]["content"])

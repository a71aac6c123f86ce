"""Compact the bundled coding-agent history (OpenAI Chat Completions) offline; print the report.

Run from the repository root: ``python examples/openai_chat.py [BUDGET]``. Token counts use
tiktoken; without network it needs the BPE file in ``TIKTOKEN_CACHE_DIR`` (see README).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _offline import first_sentences, print_report

from cutctx_adapters.openai import chat

HISTORY = Path(__file__).parent / "histories" / "coding_agent.openai_chat.json"


def main(argv: list[str]) -> int:
    body = json.loads(HISTORY.read_text(encoding="utf-8"))
    budget = int(argv[0]) if argv else 12_000
    before = chat.count_tokens(body["messages"], model=body["model"], tools=body["tools"])
    result = chat.compact(body["messages"], model=body["model"], tools=body["tools"],
                          budget=budget, summarizer=first_sentences)
    print_report(result, before, budget)
    return 1 if result.budget_unmet else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

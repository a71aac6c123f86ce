"""Compact the bundled coding-agent history (Anthropic Messages) offline; print the report.

Run from the repository root: ``python examples/anthropic_messages.py [BUDGET]``. Claude has no
public local tokenizer: counts are tiktoken's, calibrated (see docs/anthropic.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _offline import first_sentences, print_report

from cutctx_adapters.anthropic import messages

HISTORY = Path(__file__).parent / "histories" / "coding_agent.anthropic.json"


def main(argv: list[str]) -> int:
    body = json.loads(HISTORY.read_text(encoding="utf-8"))
    budget = int(argv[0]) if argv else 15_000
    request = {"system": body["system"], "model": body["model"], "tools": body["tools"]}
    before = messages.count_tokens(body["messages"], **request)
    result = messages.compact(body["messages"], budget=budget, summarizer=first_sentences,
                              **request)
    print_report(result, before, budget)
    return 1 if result.budget_unmet else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

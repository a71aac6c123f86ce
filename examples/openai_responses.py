"""Compact the bundled coding-agent history (OpenAI Responses ``input``) offline; print the report.

Run from the repository root: ``python examples/openai_responses.py [BUDGET]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _offline import first_sentences, print_report

from cutctx_adapters.openai import responses

HISTORY = Path(__file__).parent / "histories" / "coding_agent.openai_responses.json"


def main(argv: list[str]) -> int:
    body = json.loads(HISTORY.read_text(encoding="utf-8"))
    budget = int(argv[0]) if argv else 15_000
    before = responses.count_tokens(body["input"], instructions=body["instructions"],
                                    model=body["model"], tools=body["tools"])
    result = responses.compact(body["input"], instructions=body["instructions"],
                               model=body["model"], tools=body["tools"], budget=budget,
                               summarizer=first_sentences)
    print_report(result, before, budget)
    return 1 if result.budget_unmet else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

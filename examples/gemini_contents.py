"""Compact the bundled coding-agent history (Gemini ``contents``) offline; print the report.

Run from the repository root: ``python examples/gemini_contents.py [BUDGET]``. Gemini has no
public local tokenizer: counts are tiktoken's, calibrated (see docs/gemini.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _offline import first_sentences, print_report

from cutctx_adapters.gemini import contents

HISTORY = Path(__file__).parent / "histories" / "coding_agent.gemini.json"


def main(argv: list[str]) -> int:
    body = json.loads(HISTORY.read_text(encoding="utf-8"))
    budget = int(argv[0]) if argv else 15_000
    before = contents.count_tokens(body["contents"], model=body["model"], config=body["config"])
    result = contents.compact(body["contents"], model=body["model"], config=body["config"],
                              budget=budget, summarizer=first_sentences)
    print_report(result, before, budget)
    return 1 if result.budget_unmet else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

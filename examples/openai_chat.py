"""Compact the bundled coding-agent history (OpenAI Chat Completions) offline; print the report.

Run from the repository root: ``python examples/openai_chat.py [BUDGET]``. Token counts use
tiktoken; without network it needs the BPE file in ``TIKTOKEN_CACHE_DIR`` (see README).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from cutctx import SummarizationRequest, TranscriptTurn
from cutctx_adapters.openai import chat

HISTORY = Path(__file__).parent / "histories" / "coding_agent.openai_chat.json"


def first_sentences(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """A deterministic stand-in for a model: the first sentence of each folded turn."""
    lines = [f"{turn.role.value}: {turn.content.split('. ')[0][:160]}" for turn in turns]
    return "\n".join(lines)[: max(80, request.target_tokens * 4)]


def main(argv: list[str]) -> int:
    body = json.loads(HISTORY.read_text(encoding="utf-8"))
    messages, tools = body["messages"], body.get("tools")
    budget = int(argv[0]) if argv else 12_000
    before = chat.count_tokens(messages, model=body["model"], tools=tools)
    result = chat.compact(messages, model=body["model"], tools=tools, budget=budget,
                          summarizer=first_sentences)
    after = chat.count_tokens(result.messages, model=body["model"], tools=tools)
    report = result.report
    print(f"history: {len(messages)} messages, {before} prompt tokens; budget {budget}")
    print(f"policy:  {report.policy_name}")
    print(f"after:   {len(result.messages)} messages, {after} prompt tokens "
          f"({'budget unmet' if report.budget_unmet else 'fits'})")
    print(f"masked {len(report.masked_turn_ids)}, summarized {len(report.summarized_turn_ids)} "
          f"into {len(report.summary_turn_ids)} summary, dropped {len(report.dropped_turn_ids)}")
    print(f"plan hash: {report.plan_hash}")
    return 1 if report.budget_unmet else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The planted-facts benchmark stays runnable and keeps measuring what it says (issue 17)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _planted import FACT_KINDS, conversation


def test_conversations_are_deterministic_and_carry_every_kind_of_fact() -> None:
    first, again = conversation("mixed", 20), conversation("mixed", 20)
    assert first.messages == again.messages and first.facts == again.facts
    assert {fact.kind for fact in first.facts} == set(FACT_KINDS)
    text = json.dumps(first.messages)
    assert all(text.count(fact.code) >= 1 for fact in first.facts)


@pytest.mark.usefixtures("tiktoken_cache")
def test_a_session_keeps_the_user_facts_at_a_small_window() -> None:
    from replay import Meter, Outcome
    from retention import calls_of, session, user_turns_fit

    from cutctx_adapters.openai._tokens import REPLY_PRIMING_TOKENS, message_tokens
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator("gpt-4o")
    conv = conversation("agent", 16)
    window, budget = 8_192, 7_168
    assert user_turns_fit(conv, budget, estimator)
    meter = Meter(Outcome("session"), window, lambda m: message_tokens(m, estimator),
                  REPLY_PRIMING_TOKENS, set(), conv.messages[1])
    last = session(estimator)(calls_of(conv), budget, meter)
    text = json.dumps(last)
    for fact in conv.facts:
        if fact.kind in ("requirement", "correction"):
            assert fact.code in text, fact.kind
    assert meter.outcome.over_window == 0

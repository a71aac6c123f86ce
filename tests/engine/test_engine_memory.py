"""Nothing of a conversation outlives the objects the caller holds (issue 39.27).

What the engine finds in texts (identifiers, the names later turns refer back to) is remembered
for one caller's transcript and the views a chain plans over it, never in a process-wide cache:
a service compacting one tenant's request keeps none of its text after the request.
"""

from __future__ import annotations

import gc
import types
import uuid

from cutctx import (
    CharRatioEstimator,
    CompactionBudget,
    CompactionExecutor,
    PolicyChain,
    Role,
    ToolResultMaskingPolicy,
    Transcript,
    TranscriptTurn,
    UserLastDropPolicy,
)
from cutctx._digest import identifiers, text_facts

CHARS = CharRatioEstimator()


def _result(marker: str, number: int) -> str:
    """A tool result naming paths, symbols and an error, with the caller's marker in it."""
    return "\n".join([
        f"Traceback (most recent call last): run {marker}",
        f'  File "src/module_{number}.py", line {100 + number}, in load_config_{number}',
        f"KeyError: 'home_{number}' at 0x{number:04x}ffff",
        f"see docs/{marker}.md and TOOL-{number}A2B for step_{number}",
    ] * 20)


def _conversation(marker: str) -> Transcript:
    turns = [TranscriptTurn("s", Role.SYSTEM, "You are an agent.", 5),
             TranscriptTurn("u", Role.USER, "Fix the failing load.", 5)]
    for number in range(6):
        text = _result(marker, number)
        turns.append(TranscriptTurn(f"a{number}", Role.ASSISTANT,
                                    f"read src/module_{number}.py", 6, f"c{number}"))
        turns.append(TranscriptTurn(f"r{number}", Role.TOOL, text, CHARS.estimate_tokens(text),
                                    f"c{number}"))
    turns.append(TranscriptTurn("u2", Role.USER, "Now fix load_config_1 in src/module_1.py", 9))
    return Transcript(tuple(turns))


def _decide_and_apply(transcript: Transcript) -> None:
    chain = PolicyChain([
        ToolResultMaskingPolicy(1, digest_tokens=40, digest="identifiers", order="value"),
        UserLastDropPolicy(order="value"),
    ])
    budget = CompactionBudget(transcript.token_estimate() // 5, protected_recent_turns=1)
    plan = chain.decide(transcript, budget)
    CompactionExecutor().apply(transcript, plan)


def _holders(text: str) -> list[object]:
    """The containers still referring to ``text`` (frames aside: the test's own locals)."""
    gc.collect()
    return [holder for holder in gc.get_referrers(text)
            if not isinstance(holder, types.FrameType)]


def test_no_engine_state_keeps_a_text_after_the_caller_drops_its_transcript() -> None:
    marker = uuid.uuid4().hex
    transcript = _conversation(marker)
    texts = [turn.content for turn in transcript.turns]
    _decide_and_apply(transcript)
    del transcript
    for text in texts:
        assert _holders(text) == [texts]


def test_what_a_decision_found_stays_with_the_callers_transcript() -> None:
    transcript = _conversation(uuid.uuid4().hex)
    _decide_and_apply(transcript)
    facts = text_facts(transcript)
    assert facts.identifiers and facts.names  # remembered for this transcript's next decision
    result = transcript.turns[3].content
    assert facts.identifiers[result] == identifiers(result)


def test_texts_found_alike_by_a_fresh_transcript_of_the_same_turns() -> None:
    transcript = _conversation("same")
    _decide_and_apply(transcript)
    again = Transcript(transcript.turns)
    assert not text_facts(again).identifiers  # a transcript of its own: found afresh
    _decide_and_apply(again)
    assert text_facts(again).names == text_facts(transcript).names

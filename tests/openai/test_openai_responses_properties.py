"""Property tests: generated Responses histories × policies × budgets always render inputs the
API accepts, keep what they must, and round-trip exactly when nothing is compacted.

``api_problems`` is an independent checker written from the API's documented rules and error
texts (``tests/data/requests/invalid/openai_responses_*``), not from the codec's own
``validate``, so a bug the two share still shows up.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactionBudget,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    SummarizationRequest,
    SummarizingPolicy,
    TranscriptTurn,
    default_chain,
)
from cutctx_adapters.openai import responses
from cutctx_adapters.openai.chat import SUMMARY_HEADER
from tests._support.plain import dicts

CHARS = CharRatioEstimator()
STUB = "[tool result masked by cutctx]"
CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
OUTPUTS = {output: call for call, output in CALLS.items()}


# --- the independent checker ---------------------------------------------------------------

def _caller_supplied(item: dict[str, Any]) -> bool:
    if item.get("type", "message") == "message":
        return item.get("role") in ("user", "system", "developer")
    return str(item.get("type")).endswith("_output")


def api_problems(items: Sequence[Any]) -> list[str]:
    """What the Responses API would reject in ``items``, as short texts (empty if valid).

    * "No tool output found for function call X": every call has a later output;
    * "No tool call found for function call output with call_id X": every output has an
      earlier call of its kind, and answers it once;
    * "Item 'rs_..' of type 'reasoning' was provided without its required following item":
      a reasoning item is followed by another item of the model's, not by caller input;
    * no two items share an ``id``; every item is an object.
    """
    problems: list[str] = []
    calls: dict[str, tuple[str, int]] = {}
    answered: set[str] = set()
    ids: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(f"{index}: not an object")
            continue
        if isinstance(item.get("id"), str):
            if item["id"] in ids:
                problems.append(f"{index}: duplicate id")
            ids.add(item["id"])
        kind = item.get("type", "message")
        if kind in CALLS:
            calls[item["call_id"]] = (kind, index)
        elif kind in OUTPUTS:
            call = calls.get(item["call_id"])
            if call is None or call[0] != OUTPUTS[kind]:
                problems.append(f"{index}: output without its call")
            elif item["call_id"] in answered:
                problems.append(f"{index}: call answered twice")
            answered.add(item["call_id"])
        elif kind == "reasoning":
            following = items[index + 1] if index + 1 < len(items) else None
            if not isinstance(following, dict) or _caller_supplied(following):
                problems.append(f"{index}: reasoning without its following item")
        elif kind == "message" and not isinstance(item.get("content"), str | list):
            problems.append(f"{index}: message without content")
    problems += [f"{index}: call without output" for call_id, (_, index) in calls.items()
                 if call_id not in answered]
    return problems


def reasoning_of(items: Sequence[dict[str, Any]]) -> dict[str, str]:
    """For each model item with an id, the reasoning item of its response it cannot go without
    ("Item 'fc_..' of type 'function_call' was provided without its required 'reasoning'
    item")."""
    needs: dict[str, str] = {}
    current: str | None = None
    for item in items:
        if _caller_supplied(item):
            current = None
        elif item.get("type") == "reasoning":
            current = current or item["id"]
        elif current is not None and isinstance(item.get("id"), str):
            needs[item["id"]] = current
    return needs


# --- generated histories -------------------------------------------------------------------

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "tests", "fail", "import", "x=1"])


def text(min_words: int = 1, max_words: int = 30) -> st.SearchStrategy[str]:
    return st.lists(WORDS, min_size=min_words, max_size=max_words).map(" ".join)


def bulky(max_repeats: int = 300) -> st.SearchStrategy[str]:
    """Tool output: a phrase repeated up to ``max_repeats`` times (sizes vary widely)."""
    return st.tuples(text(1, 5), st.integers(0, max_repeats)).map(lambda p: (p[0] + "\n") * p[1])


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    """A developer message maybe, then user turns each answered by 1-4 model responses:
    reasoning (or not), then a message, parallel function calls, or a custom tool call, with
    their outputs (in any order). Plus a few pinned indexes."""
    items: list[dict[str, Any]] = []
    serial = iter(range(10_000))
    if draw(st.booleans()):
        items.append({"role": "developer", "content": draw(text())})
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            items.append({"role": "user", "content": draw(text())})
        else:
            items.append({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": draw(text())}]})
        steps = draw(st.integers(1, 4))
        for step in range(steps):
            if draw(st.booleans()):
                summary = [] if draw(st.booleans()) else [
                    {"type": "summary_text", "text": draw(text())}]
                items.append({"type": "reasoning", "id": f"rs_{next(serial)}",
                              "summary": summary,
                              "encrypted_content": "gAAAA" + "e" * draw(st.integers(0, 400))})
            last = step == steps - 1
            action = "message" if last else draw(st.sampled_from(["calls", "custom", "both"]))
            if action in ("message", "both") or (draw(st.booleans()) and not last):
                items.append({"type": "message", "id": f"msg_{next(serial)}",
                              "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": draw(text()),
                                           "annotations": []}]})
            if action == "message":
                continue
            answers: list[dict[str, Any]] = []
            for _ in range(draw(st.integers(1, 3))):
                call_id = f"call_{next(serial)}"
                custom = action == "custom" or (action == "both" and draw(st.booleans()))
                if custom:
                    items.append({"type": "custom_tool_call", "id": f"ctc_{call_id}",
                                  "call_id": call_id, "name": "patch", "input": draw(text())})
                    answers.append({"type": "custom_tool_call_output", "call_id": call_id,
                                    "output": draw(bulky())})
                else:
                    items.append({"type": "function_call", "id": f"fc_{call_id}",
                                  "call_id": call_id, "name": "read", "arguments": "{}",
                                  "status": "completed"})
                    output: Any = draw(bulky())
                    if draw(st.booleans()):
                        output = [{"type": "input_text", "text": output}]
                    answers.append({"type": "function_call_output", "call_id": call_id,
                                    "output": output})
            items.extend(draw(st.permutations(answers)))
    pins = draw(st.lists(st.integers(0, len(items) - 1), max_size=2, unique=True))
    return items, pins


def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{len(turns)} earlier items."


POLICIES: dict[str, tuple[CompactionPolicy | None, bool]] = {
    "mask_only": (ObservationMaskingPolicy(0), False),
    "mask_then_drop": (None, False),
    "drop": (DropOldestPolicy(), False),
    "default_chain": (default_chain(prompt_id="cutctx.summary.v1"), True),
    "summarize_only": (SummarizingPolicy("p", min_span_turns=2), True),
    "summarize_then_drop": (PolicyChain([SummarizingPolicy("p", min_span_turns=2),
                                         DropOldestPolicy()]), True),
}


def budget_for(items: list[dict[str, Any]], instructions: str | None, pins: list[int],
               keep_recent: int, fraction: float) -> int:
    """The untouchable turns' tokens plus ``fraction`` of the rest (mostly satisfiable)."""
    conv = responses.to_transcript(items, instructions=instructions, estimator=CHARS, pin=pins)
    turns = conv.transcript.turns
    recent = {turn.turn_id for turn in turns[len(turns) - keep_recent:]} if keep_recent else set()
    fixed = sum(turn.token_estimate for turn in turns
                if turn.role.value == "system" or turn.pinned or turn.turn_id in recent)
    return fixed + int((conv.transcript.token_estimate() - fixed) * fraction)


def _is_masked_version(item: dict[str, Any], original: dict[str, Any]) -> bool:
    if set(item) != set(original) or item.get("call_id") != original.get("call_id"):
        return False
    body = item.get("output")
    if isinstance(body, list) and isinstance(original.get("output"), list):
        # a body of parts stays parts when it is clipped: the marker is a text part of its own
        body = "\n".join(part.get("text", "") for part in body)
    replaced = isinstance(body, str) and (body.startswith((STUB, "[duplicate tool result:"))
                                          or "[... cutctx clipped this tool result:" in body)
    return (replaced and
         {k: v for k, v in item.items() if k != "output"} ==
         {k: v for k, v in original.items() if k != "output"})


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), policy=st.sampled_from(sorted(POLICIES)),
       fraction=st.sampled_from([0.0, 0.05, 0.2, 0.4, 0.7, 1.0]),
       keep_recent=st.integers(0, 4), instructions=st.sampled_from([None, "Be careful."]))
def test_compacted_inputs_are_always_valid(history: tuple[list[dict[str, Any]], list[int]],
                                           policy: str, fraction: float, keep_recent: int,
                                           instructions: str | None) -> None:
    items, pins = history
    assert api_problems(items) == []
    before = copy.deepcopy(items)
    chosen, summarizes = POLICIES[policy]
    budget = CompactionBudget(budget_for(items, instructions, pins, keep_recent, fraction),
                              keep_recent)
    try:
        result = responses.compact(items, instructions=instructions, budget=budget,
                                   estimator=CHARS, policy=chosen, pin=pins,
                                   summarizer=summarize if summarizes else None)
    except BudgetUnsatisfiable:
        return
    assert items == before
    assert result.instructions == instructions
    sent = dicts(result.input)
    assert api_problems(sent) == []
    responses.validate(sent, instructions=result.instructions)
    measured = responses.count_tokens(sent, instructions=instructions, estimator=CHARS)
    assert result.measured_tokens == measured
    assert result.prompt_budget == budget.max_tokens + 3  # + 3: the reply priming
    if not result.budget_unmet:
        # The verdict is honest about what is sent: the rendered request is measured, and the
        # pipeline re-plans tighter when the plan's estimate undercounted it.
        assert measured <= budget.max_tokens + 3
    assert json.loads(json.dumps(sent)) == sent
    if not result.compacted:
        assert sent == items
    # Every item is an original (in order), a masked original, or a summary message.
    position = 0
    kept_ids: set[str] = set()
    for item in sent:
        if isinstance(item.get("content"), str) and item["content"].startswith(SUMMARY_HEADER):
            assert item == {"role": "user", "content": item["content"]}
            continue
        while position < len(items) and not (items[position] == item
                                             or _is_masked_version(item, items[position])):
            position += 1
        assert position < len(items), "an item the input did not have"
        if isinstance(item.get("id"), str):
            kept_ids.add(item["id"])
        position += 1
    for index in pins:
        assert items[index] in sent
    for item in items:
        if item.get("role") == "developer":
            assert item in sent
    for item_id, reasoning_id in reasoning_of(items).items():
        if item_id in kept_ids:
            assert reasoning_id in kept_ids, "a model item without its reasoning"


@settings(max_examples=100, deadline=None)
@given(history=histories())
def test_all_keep_round_trips_and_ids_are_stable(
        history: tuple[list[dict[str, Any]], list[int]]) -> None:
    items, pins = history
    conv = responses.to_transcript(items, instructions="I.", estimator=CHARS, pin=pins)
    assert conv.render(conv.transcript) == ("I.", items)
    longer = responses.to_transcript([*items, {"role": "user", "content": "more"}],
                                     instructions="I.", estimator=CHARS)
    assert longer.transcript.turn_ids()[:-1] == conv.transcript.turn_ids()


@pytest.mark.parametrize("case", [
    [{"role": "user", "content": "a"}, {"type": "reasoning", "id": "rs", "summary": []}],
    [{"role": "user", "content": "a"}, {"type": "function_call", "id": "fc", "call_id": "c",
                                        "name": "n", "arguments": "{}"}],
    [{"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c",
                                        "output": "o"}],
])
def test_the_checker_flags_what_the_api_rejects(case: list[dict[str, Any]]) -> None:
    assert api_problems(case)

"""Property: whatever the history, policy and budget, Anthropic compaction output is sendable.

Generated histories have user text (sometimes with images), assistant turns with thinking, text
and parallel ``tool_use``, the next user message with the results (some errors, some with block
content) and sometimes trailing text, up to four ``cache_control`` markers, and pins. Each is
compacted by masking only, dropping, the default chain with a deterministic summarizer, and
summarizing only, at budgets from nothing to everything. The output must pass ``validate``
(pairing, results first, markers, the final tool loop's thinking, unmodified latest thinking),
respect the budget or say it could not, and leave the input untouched.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutctx import (
    BudgetUnsatisfiable,
    CharRatioEstimator,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    SummarizationRequest,
    SummarizingPolicy,
    TranscriptTurn,
    ValidationError,
)
from cutctx_adapters import DEFAULT_PROMPT_ID
from cutctx_adapters.anthropic import messages

CHARS = CharRatioEstimator()
THINKING = {"type": "enabled", "budget_tokens": 2048}


def png(width: int, height: int) -> str:
    """Base64 of a PNG header big enough for the size reader."""
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    return base64.b64encode(header + struct.pack(">II", width, height) + b"\x08\x02\0\0\0" +
                            b"\0" * 16).decode()


def summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{len(turns)} turns about {turns[0].role.value} matters"


def assert_sendable(system: Any, out: Sequence[Mapping[str, Any]], original: Sequence[Any], *,
                    tools: Sequence[Any] | None = None, thinking: Any = None) -> None:
    """What the Messages API asks of a request, checked on a compaction's output."""
    messages.validate(out, system=system, tools=tools, thinking=thinking, original=original)
    assert out, "a request needs at least one message"
    assert out[0]["role"] == "user"
    for before, after in itertools.pairwise(out):
        if before["role"] == after["role"]:  # only as the caller wrote them, never made so
            made = "consecutive same-role messages made by compaction"
            assert _given_neighbours(original, before, after), made
    markers = 0
    if isinstance(system, list):
        markers += sum("cache_control" in block for block in system)
    for message in out:
        content = message["content"]
        assert content, "empty content"
        for block in content if isinstance(content, list) else []:
            if block["type"] == "text":
                assert block["text"], "empty text block"
            markers += "cache_control" in block
            if block["type"] == "tool_result" and isinstance(block.get("content"), list):
                markers += sum("cache_control" in item for item in block["content"])
    markers += sum("cache_control" in tool for tool in tools or [])
    assert markers <= messages.MAX_CACHE_BREAKPOINTS
    # The output converts again (sticky sessions re-read their own views).
    messages.to_transcript(out, system=system, estimator=CHARS)


def _as_blocks(content: Any) -> list[Any]:
    """Content as blocks, each by what names it (a masked result keeps its id, not its body)."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    return [(b.get("type"), b.get("tool_use_id"), b.get("id"),
             b.get("text") if b.get("type") == "text" else None) for b in blocks]


def _given_neighbours(original: Sequence[Any], before: Mapping[str, Any],
                      after: Mapping[str, Any]) -> bool:
    """``after`` is a message of the history that followed a message of its own role there
    (``before`` stands for that one: kept, masked, clipped or merged onto earlier ones), kept,
    clipped, or with what was left of later messages of its role merged onto its end."""
    clipped = "cutctx clipped this" in json.dumps(after["content"])
    shown = _as_blocks(after["content"])
    return any((clipped or shown[:len(_as_blocks(message["content"]))]
                == _as_blocks(message["content"]))
               and previous.get("role") == message.get("role") == after.get("role")
               == before.get("role")
               for previous, message in itertools.pairwise(original))


# ----------------------------------------------------------------------------------------------
# generated histories


@st.composite
def histories(draw: st.DrawFn) -> dict[str, Any]:
    thinking = draw(st.booleans())
    words = st.text(alphabet="abcdefgh xyz", min_size=1, max_size=60).filter(str.strip)
    counter = iter(range(10_000))
    out: list[dict[str, Any]] = []

    def user_text() -> dict[str, Any]:
        text = draw(words)
        if draw(st.integers(0, 4)) == 0:
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": png(draw(st.integers(10, 3000)),
                                                             draw(st.integers(10, 3000)))}}
            return {"role": "user", "content": [image, {"type": "text", "text": text}]}
        return {"role": "user", "content": text}

    out.append(user_text())
    after_results = False
    for _ in range(draw(st.integers(0, 7))):
        blocks: list[dict[str, Any]] = []
        if thinking and not after_results:
            blocks.append({"type": "thinking", "thinking": draw(words),
                           "signature": f"sig{next(counter)}"})
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(words)})
        calls = draw(st.integers(0, 3))
        ids = [f"toolu_{next(counter)}" for _ in range(calls)]
        blocks += [{"type": "tool_use", "id": i, "name": draw(st.sampled_from(["read", "run"])),
                    "input": {"arg": draw(words)}} for i in ids]
        if not blocks:
            blocks.append({"type": "text", "text": draw(words)})
        out.append({"role": "assistant", "content": blocks})
        if not ids:
            out.append(user_text())
            after_results = False
            continue
        results: list[dict[str, Any]] = []
        for call_id in ids:
            body: Any = draw(words) * draw(st.integers(1, 20))
            if draw(st.integers(0, 3)) == 0:
                body = [{"type": "text", "text": body}]
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id,
                                      "content": body}
            if draw(st.integers(0, 4)) == 0:
                result["is_error"] = True
            results.append(result)
        note = draw(st.integers(0, 5))
        if note == 0:
            results.append({"type": "text", "text": draw(words)})
            after_results = False
        else:
            after_results = True
        out.append({"role": "user", "content": results})
        if note == 1:  # the user's note as a message of its own, after the results message
            out.append(user_text())
            after_results = False
    if draw(st.integers(0, 3)) == 0 and out[-1]["role"] == "user":
        out.append(user_text())  # two user messages in a row, as some apps send them
    if draw(st.integers(0, 3)) == 0 and out[-1]["role"] == "user":
        out.append({"role": "assistant", "content": [{"type": "text", "text": draw(words)}]})
    # Up to four cache_control markers on list-content blocks.
    slots = [(i, k) for i, m in enumerate(out) if isinstance(m["content"], list)
             for k in range(len(m["content"]))]
    system: Any = draw(st.sampled_from([None, "Be a careful agent.",
                                        [{"type": "text", "text": "Rules.",
                                          "cache_control": {"type": "ephemeral"}}]]))
    room = 3 if isinstance(system, list) else 4
    if slots:
        for i, k in draw(st.lists(st.sampled_from(slots), max_size=room, unique=True)):
            out[i]["content"][k]["cache_control"] = {"type": "ephemeral"}
    pins = draw(st.lists(st.integers(0, len(out) - 1), max_size=2, unique=True))
    return {"messages": out, "system": system, "thinking": THINKING if thinking else None,
            "pin": pins}


def policies() -> dict[str, CompactionPolicy | None]:
    return {
        "mask": ObservationMaskingPolicy(0),
        "drop": DropOldestPolicy(),
        "default": None,
        "summarize": SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=2),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=histories(), fraction=st.sampled_from([0.0, 0.05, 0.2, 0.4, 0.7, 1.0, 1.5]),
       keep_recent=st.integers(0, 4))
def test_every_policy_and_budget_gives_a_sendable_request(case: dict[str, Any], fraction: float,
                                                          keep_recent: int) -> None:
    history, system, thinking = case["messages"], case["system"], case["thinking"]
    messages.validate(history, system=system, thinking=thinking)  # the generator's contract
    frozen = copy.deepcopy(case)
    total = messages.count_tokens(history, system=system, estimator=CHARS)
    budget = int(total * fraction)
    for name, policy in policies().items():
        try:
            result = messages.compact(history, system=system, thinking=thinking, budget=budget,
                                      policy=policy, summarizer=summarize, estimator=CHARS,
                                      pin=case["pin"], keep_recent=keep_recent)
        except BudgetUnsatisfiable:
            continue
        assert result.messages is not None
        assert_sendable(result.system, result.messages, history, thinking=thinking)
        sent = (result.measured_tokens if result.measured_tokens is not None
                else result.tokens_after)  # fit is judged on what is sent
        assert sent <= budget or result.budget_unmet, name
        assert case == frozen, f"{name} changed its input"
        if fraction >= 1.0:
            assert (result.system, result.messages) == (system, history), name
    # Without summaries or a caller's policy the estimate covers what is really sent: the
    # masked results' framing, the note put before an assistant left first.
    for policy in (None, DropOldestPolicy()):
        try:
            result = messages.compact(history, system=system, thinking=thinking, budget=budget,
                                      policy=policy, estimator=CHARS, pin=case["pin"],
                                      keep_recent=keep_recent)
        except BudgetUnsatisfiable:
            continue
        measured = result.measured_tokens  # the rendered request, message by message
        assert measured is not None
        assert measured <= messages.count_tokens(result.messages or [], system=result.system,
                                                 estimator=CHARS)
        assert measured <= budget or result.budget_unmet


@settings(max_examples=40, deadline=None)
@given(case=histories())
def test_all_keep_is_lossless_and_ids_are_stable(case: dict[str, Any]) -> None:
    history, system = case["messages"], case["system"]
    conv = messages.to_transcript(history, system=system, estimator=CHARS)
    assert conv.render(conv.transcript) == (system, history)
    whole = conv.transcript.turn_ids()
    for cut in range(1, len(history)):
        try:  # a prefix ending on a tool call is not a request; the others are
            prefix = messages.to_transcript(history[:cut], system=system, estimator=CHARS)
        except ValidationError:
            continue
        assert whole[: len(prefix.transcript.turns)] == prefix.transcript.turn_ids()
    assert json.dumps(case["messages"])  # still plain JSON, untouched


@pytest.mark.parametrize("summary_role", ["user", "assistant"])
@settings(max_examples=25, deadline=None)
@given(case=histories(), fraction=st.sampled_from([0.1, 0.3, 0.6]))
def test_summaries_land_where_the_api_takes_them(case: dict[str, Any], fraction: float,
                                                 summary_role: str) -> None:
    history, system = case["messages"], case["system"]
    total = messages.count_tokens(history, system=system, estimator=CHARS)
    policy = SummarizingPolicy(DEFAULT_PROMPT_ID, min_span_turns=1)
    try:
        result = messages.compact(history, system=system, thinking=case["thinking"],
                                  budget=int(total * fraction), policy=policy,
                                  summarizer=summarize, estimator=CHARS, keep_recent=1,
                                  summary_role=summary_role)
    except BudgetUnsatisfiable:
        return
    assert result.messages is not None
    assert_sendable(result.system, result.messages, history, thinking=case["thinking"])

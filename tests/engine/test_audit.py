"""An audit that tells the truth (issue 24) and the defects adversarial testing found in what
compaction writes (issue 32: stubs naming their copy, clips keeping media and graphemes, hashes
a user can check, a small budget's clip).

* Six fates, reported once each: every input turn in exactly one of kept, masked, clipped,
  deduplicated, summarized and dropped, in the engine's report and a session's call report.
* Plans hold decisions, not text: no message text in ``repr(plan)`` or ``plan.to_dict()``.
* Summaries before drops; the task gives way last, its image kept where it fits.
"""

from __future__ import annotations

import base64
import hashlib
import json
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutctx import (
    Action,
    CharRatioEstimator,
    SummarizationRequest,
    TranscriptTurn,
    ValidationError,
    plan_clip,
)
from cutctx._clipping import _joins
from cutctx_adapters import CompactionResult, CompactionSession
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run

CHARS = CharRatioEstimator()
CANARY = "CANARY-9f1b"
FATES = ("kept", "masked", "clipped", "deduplicated", "summarized", "dropped")
MODULES: dict[str, Any] = {"chat": chat, "responses": responses,
                           "anthropic": anthropic_messages}
RUNS: dict[str, Callable[[int, int], AgentRun]] = {
    "chat": chat_run, "responses": responses_run, "anthropic": anthropic_run}


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Anthropic counts calibrate tiktoken: the seeded cache, never the network."""


def _compact(fmt: str, items: list[dict[str, Any]], side: Any, budget: int,
             **options: Any) -> CompactionResult:
    module = MODULES[fmt]
    if side is not None:
        options["instructions" if fmt == "responses" else "system"] = side
    return module.compact(items, model="gpt-4o", budget=budget,  # type: ignore[no-any-return]
                          estimator=CHARS, **options)


def _summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return " ".join(f"turn {turn.turn_id} said something." for turn in turns)[
        : request.target_tokens * 3]


def _with_canary(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every text in the history carries the canary."""
    def plant(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: (f"{CANARY} {item}" if key in ("text", "content", "output")
                          and isinstance(item, str) else plant(item))
                    for key, item in value.items()}
        if isinstance(value, list):
            return [plant(item) for item in value]
        return value

    return [plant(item) for item in items]


# --- six fates, once each; plans without text ------------------------------------------------

@pytest.mark.parametrize("fmt", sorted(MODULES))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rounds=st.integers(3, 12),
       fraction=st.sampled_from([0.1, 0.25, 0.45, 0.7]), summarize=st.booleans())
def test_every_turn_meets_exactly_one_fate_and_plans_hold_no_text(
        fmt: str, seed: int, rounds: int, fraction: float, summarize: bool) -> None:
    run = RUNS[fmt](seed, rounds)
    items = _with_canary(run.items)
    total = _compact(fmt, items, run.side, 10**9).measured_tokens or 0
    try:
        result = _compact(fmt, items, run.side, max(1, int(total * fraction)),
                          summarizer=_summarizer if summarize else None)
    except Exception as refused:
        assert type(refused).__name__ == "BudgetUnsatisfiable"
        return
    report = result.report.to_dict()
    lists = [report[f"{fate}_turn_ids"] for fate in FATES]
    ids = [turn_id for group in lists for turn_id in group]
    assert sorted(ids) == sorted(result.conversion.transcript.turn_ids())
    assert len(ids) == len(set(ids))
    for action in result.plan.actions:
        assert action.turn_id in report[f"{_fate(action.action)}_turn_ids"]
    assert CANARY not in repr(result.plan) and CANARY not in json.dumps(result.plan.to_dict())
    assert CANARY not in result.plan.canonical_json()


def _fate(action: Action) -> str:
    return {Action.KEEP: "kept", Action.MASK: "masked", Action.CLIP: "clipped",
            Action.DEDUPLICATE: "deduplicated", Action.SUMMARIZE: "summarized",
            Action.DROP: "dropped"}[action]


def test_a_clipped_result_and_a_clipped_task_are_reported_as_clipped() -> None:
    history = [{"role": "system", "content": "You are an agent."},
               {"role": "user", "content": "The task: " + "read the logs and report. " * 400},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "logs", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "log line\n" * 3_000}]
    result = chat.compact(history, budget=1_000, estimator=CHARS)
    assert not result.budget_unmet
    assert result.report.clipped_turn_ids == ("m1", "m3")
    assert "m1" not in result.report.kept_turn_ids and not result.report.masked_turn_ids
    assert "m1" in result.last_resort  # the task, only as a last resort


@pytest.mark.parametrize("fmt", sorted(MODULES))
def test_a_sessions_call_report_names_every_turns_fate(fmt: str) -> None:
    run = RUNS[fmt](7, 30)
    module = MODULES[fmt]
    session = CompactionSession(module.FORMAT, model="gpt-4o", window=4_000, reserve=0,
                                estimator=CHARS)
    reports = []
    for items in run.calls():
        request: dict[str, Any] = {"model": "gpt-4o", module.FORMAT.list_key: items}
        if module.FORMAT.side_key is not None:
            request[module.FORMAT.side_key] = run.side
        reports.append((items, session.prepare(request).report))
    compacted = [(items, r) for items, r in reports if r.decision == "recompacted"]
    assert compacted
    for items, report in compacted:
        assert report.turns is not None
        fates = report.turns.to_dict()
        ids = [turn_id for fate in FATES for turn_id in fates[fate]]
        conv = module.to_transcript(items, estimator=CHARS, **(
            {} if run.side is None else {"instructions" if fmt == "responses" else "system":
                                         run.side}))
        assert sorted(ids) == sorted(conv.transcript.turn_ids())
        assert report.to_dict()["turns"] == fates
    assert any(r.turns is not None and r.turns.masked for _, r in compacted)


# --- summaries before drops -------------------------------------------------------------------

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
          "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo")


def _alternating(fmt: str) -> tuple[Any, list[dict[str, Any]]]:
    """24 alternating user and assistant messages of about 70 words each (issue 24.3)."""
    texts = [" ".join(_WORDS[(n * 7 + k) % len(_WORDS)] for k in range(70)) for n in range(24)]
    return None, [{"role": "user" if n % 2 == 0 else "assistant", "content": text}
                  for n, text in enumerate(texts)]


@pytest.mark.parametrize("fraction", [0.35, 0.45, 0.6])
@pytest.mark.parametrize("fmt", sorted(MODULES))
def test_with_a_summarizer_alternating_turns_are_summarized_not_dropped(
        fmt: str, fraction: float) -> None:
    side, items = _alternating(fmt)
    total = _compact(fmt, items, side, 10**9).measured_tokens or 0
    calls: list[SummarizationRequest] = []

    def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        calls.append(request)
        return _summarizer(request, turns)

    result = _compact(fmt, items, side, int(total * fraction), summarizer=summarizer)
    assert calls and result.report.summary_turn_ids
    assert result.report.dropped_turn_ids == ()
    assert not result.budget_unmet


# --- the task gives way last, whole blocks first ----------------------------------------------

def test_a_tasks_image_is_kept_where_it_fits_and_the_older_reply_goes_first() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 200).decode()
    task: dict[str, Any] = {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "text", "text": "Fix the plotting code. " + "The requirement in detail. " * 150}]}
    history = [task, {"role": "assistant", "content": "Here is what I see: " + "analysis " * 200},
               {"role": "user", "content": "Now fix it please."}]
    total = anthropic_messages.count_tokens(history, model="claude-sonnet-4-5")
    roomy = anthropic_messages.compact(history, model="claude-sonnet-4-5",
                                       budget=int(total * 0.8))
    tight = anthropic_messages.compact(history, model="claude-sonnet-4-5",
                                       budget=int(total * 0.45))
    for result in (roomy, tight):
        assert not result.budget_unmet and result.messages is not None
        assert result.report.clipped_turn_ids == ("m0",)  # a clip is reported as a clip
        assert result.report.dropped_turn_ids == ("m1",)  # the older reply went first
    assert roomy.messages is not None and tight.messages is not None
    roomy_task, tight_task = roomy.messages[0]["content"], tight.messages[0]["content"]
    assert isinstance(roomy_task, list) and isinstance(tight_task, list)
    assert roomy_task[0] == task["content"][0]  # the image, whole
    assert all(block["type"] == "text" for block in tight_task)
    assert "cutctx clipped this message: 1 [image] elided;" in json.dumps(tight.messages)


# --- wrong types --------------------------------------------------------------------------

def test_wrong_typed_tools_and_request_fields_are_validation_errors() -> None:
    session = CompactionSession(anthropic_messages.FORMAT, model="claude-sonnet-4-5")
    with pytest.raises(ValidationError) as tools:
        session.prepare({"messages": [{"role": "user", "content": "hi"}], "tools": 5})
    assert tools.value.details["field"] == "tools"
    for module in (chat, responses):
        with pytest.raises(ValidationError):
            module.compact([{"role": "user", "content": "hi"}], budget=100, tools=5)
    with pytest.raises(ValidationError) as request:
        SummarizationRequest("g", None, 1, "p")  # type: ignore[arg-type]
    assert request.value.details["field"] == "turn_ids"


# --- stubs and clips (issue 32) --------------------------------------------------------------

def _tool_round(call_id: str, output: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call_id, "content": output}]


def test_a_deduplicated_stub_names_its_copy_by_tool_call_and_never_a_missing_one() -> None:
    same = "\n".join(f"line {n} of config.yaml" for n in range(200))
    history = [{"role": "system", "content": "agent"}, {"role": "user", "content": "Go."},
               *_tool_round("call_a", same), *_tool_round("call_b", "other " * 300),
               *_tool_round("call_c", same), {"role": "user", "content": "Next."}]
    total = chat.count_tokens(history, estimator=CHARS)
    light = chat.compact(history, budget=total - 300, estimator=CHARS, keep_recent=1)
    assert light.report.deduplicated_turn_ids == ("m3",)
    assert light.messages is not None
    stub = light.messages[3]["content"]
    assert isinstance(stub, str)
    assert "identical to the result of tool call call_c" in stub and "m7" not in stub
    assert light.messages[7]["content"] == same  # the copy it names is whole
    hard = chat.compact(history, budget=total // 5, estimator=CHARS, keep_recent=1,
                        keep_recent_results=0)
    assert hard.messages is not None
    # lossless first: the copy is clipped (still there, its marker naming the same original)
    # and the first read points at it rather than being clipped too
    assert hard.report.deduplicated_turn_ids == ("m3",) and "m7" in hard.report.clipped_turn_ids
    assert hashlib.sha256(same.encode()).hexdigest() in str(hard.messages[7]["content"])
    gone = chat.compact(history, budget=total // 12, estimator=CHARS, keep_recent=1,
                        keep_recent_results=0)
    assert gone.messages is not None
    assert "m7" in gone.report.masked_turn_ids  # the copy went: no stub points at it
    assert "identical to" not in json.dumps(gone.messages)


@pytest.mark.parametrize("fmt", ["anthropic", "responses"])
def test_a_clipped_result_keeps_its_image_where_it_fits(fmt: str) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 120).decode()
    long_text = "\n".join(f"row {n}: value {n * 7}" for n in range(1_500))
    result: CompactionResult  # each format's own; its history is read as JSON, by path
    sent: Any
    if fmt == "anthropic":
        body: list[dict[str, Any]] = [
            {"type": "text", "text": "Screenshot of the dashboard:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png}},
            {"type": "text", "text": long_text}]
        history: list[dict[str, Any]] = [
            {"role": "user", "content": "Check the dashboard."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": body}]},
            {"role": "assistant", "content": "Looking."},
            {"role": "user", "content": "Go on."}]
        result = anthropic_messages.compact(history, model="claude-sonnet-4-5", budget=5_000)
        sent = result.messages
        blocks = sent[2]["content"][0]["content"]
    else:
        body = [{"type": "input_text", "text": "Screenshot of the dashboard:"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{png}"},
                {"type": "input_text", "text": long_text}]
        history = [{"role": "user", "content": "Check the dashboard."},
                   {"type": "function_call", "call_id": "c1", "name": "shot",
                    "arguments": "{}"},
                   {"type": "function_call_output", "call_id": "c1", "output": body},
                   {"role": "assistant", "content": "Looking."},
                   {"role": "user", "content": "Go on."}]
        result = responses.compact(history, model="gpt-4o", budget=5_000)
        sent = result.input
        blocks = sent[2]["output"]
    assert not result.budget_unmet and result.report.clipped_turn_ids
    assert body[1] in blocks  # the image, whole
    assert any("cutctx clipped this tool result" in block.get("text", "") for block in blocks)
    assert blocks[0] == body[0] and blocks[-1]["text"].endswith("row 1499: value 10493")


def test_a_small_budget_clips_a_result_rather_than_dropping_its_exchange() -> None:
    line = "result: " + " ".join(f"value{n}" for n in range(300))
    history = [{"role": "system", "content": "You are an agent."},
               {"role": "user", "content": "Do it."}, *_tool_round("c1", line),
               {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    result = chat.compact(history, model="gpt-4o", budget=300)
    assert not result.budget_unmet and result.report.clipped_turn_ids == ("m3",)
    assert result.report.dropped_turn_ids == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["e\u0301", "👩\u200d💻", "🇫🇷", "a", " ", "\n", "ok ",
                                 "\u0915\u094d\u0937", "x\ufe0f", "👍🏽"]),
                min_size=80, max_size=400))
def test_clips_never_cut_through_a_grapheme_cluster(pieces: list[str]) -> None:
    text = "".join(pieces)
    tokens = CHARS.estimate_tokens(text)
    clip = plan_clip(text, tokens, max(60, tokens // 3), CHARS)
    if clip is None:
        return
    for start, end in clip.excerpt:
        for cut in (start, end):
            if 0 < cut < len(text):
                assert not _joins(text[cut - 1], text[cut]), (cut, text[cut - 1:cut + 1])
        piece = text[start:end]
        assert not piece or unicodedata.combining(piece[0]) == 0


def test_stubs_and_markers_name_the_sha256_a_user_can_check() -> None:
    output = "\n".join(f"entry {n}: ok" for n in range(2_000))
    parts = [{"type": "text", "text": output}]
    history = [{"role": "user", "content": "Go."}, *_tool_round("c1", output),
               *_tool_round("c2", "short"), {"role": "user", "content": "Next."}]
    result = chat.compact(history, budget=600, estimator=CHARS, keep_recent=1,
                          keep_recent_results=0)
    assert hashlib.sha256(output.encode()).hexdigest() in json.dumps(result.messages)
    history[2] = {**history[2], "content": parts}
    result = chat.compact(history, budget=600, estimator=CHARS, keep_recent=1,
                          keep_recent_results=0)
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest() in json.dumps(result.messages)


def test_a_thinking_loop_is_clipped_not_refused() -> None:
    """Point 16: thinking stays whole, the results of the final tool loop give way."""
    big = "\n".join(f"line {n}: output of the third tool call" for n in range(160))
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Task: " + "do the thing carefully " * 60},
        {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Go."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Three files to read.", "signature": "sig1"},
            *({"type": "tool_use", "id": f"t{k}", "name": "read", "input": {"k": k}}
              for k in range(3))]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t0", "content": "short 0"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "short 1"},
            {"type": "tool_result", "tool_use_id": "t2", "content": big}]}]
    session = CompactionSession(anthropic_messages.FORMAT, model="claude-sonnet-4-5",
                                window=3_024)
    prepared = session.prepare(model="claude-sonnet-4-5", max_tokens=1_024,
                               system="You are careful. " * 60, messages=history,
                               thinking={"type": "enabled", "budget_tokens": 512})
    assert not prepared.report.budget_unmet
    assert prepared.report.turns is not None and prepared.report.turns.clipped == ("m4.2",)
    sent = prepared.request["messages"]
    assert sent[-2]["content"][0] == history[3]["content"][0]  # the thinking block, whole
    anthropic_messages.validate(sent, system=prepared.request["system"],
                                thinking={"type": "enabled", "budget_tokens": 512})

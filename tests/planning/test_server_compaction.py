"""The providers' own compaction: Anthropic ``compaction`` blocks and Responses ``compaction``
items are boundaries kept verbatim, what the latest one covers gives way first, and a request
that turns the server's compaction on is left to the server while it fits the model's own limit.

Histories are built from the SDKs' own param types (``BetaCompactionBlockParam``,
``ResponseCompactionItemParamParam``, ...); every output passes the format's validator.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest
import respx
from anthropic import Anthropic
from anthropic.types.beta import (
    BetaAssistantMessageParam,
    BetaCompact20260112EditParam,
    BetaCompactionBlockParam,
    BetaContextManagementConfigParam,
    BetaMessage,
    BetaTextBlockParam,
    BetaToolResultBlockParam,
    BetaToolUseBlockParam,
    BetaUserMessageParam,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import OpenAI
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseCompactionItemParamParam,
    ResponseFunctionToolCallParam,
    ResponseInputItemParam,
    ResponseOutputMessageParam,
)
from openai.types.responses.response_create_params import ContextManagement
from openai.types.responses.response_input_item_param import CompactionTrigger, FunctionCallOutput

from cutctx import (
    Action,
    BudgetUnsatisfiable,
    CharRatioEstimator,
    Role,
    SummarizationRequest,
    TranscriptTurn,
    ValidationError,
)
from cutctx_adapters import CompactionResult, CompactionSession
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from cutctx_adapters.anthropic._tokens import AnthropicTokenCounter
from cutctx_adapters.openai import CompactingOpenAI, responses
from cutctx_adapters.openai._responses_tokens import ENCRYPTED_CHARS_PER_TOKEN, ITEM_TOKENS
from tests._support.http import mocked_api
from tests._support.plain import dicts
from tests.anthropic.test_anthropic_properties import histories

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

CLAUDE = "claude-sonnet-4-5"  # a 200K window
GPT = "gpt-5"  # 272K of input
SUMMARY = "The agent read the parser, found the off-by-one and fixed it; tests pass."
SHARES = (0.15, 0.35, 0.60)


class Recorder:
    """A summarizer that records every turn it is shown."""

    def __init__(self) -> None:
        self.turns: list[TranscriptTurn] = []

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.turns.extend(turns)
        return "Earlier: the agent worked through several files."


def sent(result: CompactionResult) -> list[dict[str, Any]]:
    """The Messages history a compaction returned."""
    return dicts(result.messages)


def never(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    raise AssertionError("the summarizer was called")


# --- Anthropic histories ---------------------------------------------------------------------

BLOCK = BetaCompactionBlockParam(type="compaction", content=SUMMARY,
                                 encrypted_content="EnC" + "q" * 600, signature="sig-cmp-1")
OLD_BLOCK = BetaCompactionBlockParam(type="compaction", content="An older summary.",
                                     encrypted_content="EnC" + "o" * 300, signature="sig-cmp-0")


def a_round(n: int, size: int) -> list[Any]:
    """An assistant tool call and the user message with its result."""
    return [
        BetaAssistantMessageParam(role="assistant", content=[
            BetaTextBlockParam(type="text", text=f"Step {n}."),
            BetaToolUseBlockParam(type="tool_use", id=f"toolu_{n}", name="read_file",
                                  input={"path": f"f{n}.py"})]),
        BetaUserMessageParam(role="user", content=[
            BetaToolResultBlockParam(type="tool_result", tool_use_id=f"toolu_{n}",
                                     content=f"contents of f{n}.py " + "code line " * size)]),
    ]


def anthropic_history(before: int = 6, after: int = 4, size: int = 120,
                      older: bool = False) -> list[Any]:
    """A task, rounds the server compacted, the assistant message the server's
    ``compact_20260112`` edit returned (its compaction block first), and rounds since."""
    history: list[Any] = [
        BetaUserMessageParam(role="user", content="Fix the failing parser test.")]
    for n in range(before):
        history += a_round(n, size)
        if older and n == 1:
            history.append(BetaAssistantMessageParam(role="assistant", content=[
                copy.deepcopy(OLD_BLOCK), BetaTextBlockParam(type="text", text="Going on.")]))
            history.append(BetaUserMessageParam(role="user", content="Continue."))
    history.append(BetaAssistantMessageParam(role="assistant", content=[
        copy.deepcopy(BLOCK), BetaTextBlockParam(type="text", text="Continuing the fix."),
        BetaToolUseBlockParam(type="tool_use", id="toolu_c", name="run_tests", input={})]))
    history.append(BetaUserMessageParam(role="user", content=[
        BetaToolResultBlockParam(type="tool_result", tool_use_id="toolu_c",
                                 content="3 failed " + "trace " * size)]))
    for n in range(before, before + after):
        history += a_round(n, size)
    history.append(BetaUserMessageParam(role="user", content="Now make the tests pass."))
    return history


def boundary_index(history: Sequence[Any]) -> int:
    return next(index for index, message in enumerate(history)
                if isinstance(message["content"], list)
                and any(block.get("type") == "compaction" and block.get("content") == SUMMARY
                        for block in message["content"]))


def anthropic_total(history: Sequence[Any]) -> int:
    return messages.count_tokens(history, model=CLAUDE)


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("summarized", [False, True])
def test_an_anthropic_compaction_block_stays_first_and_whole_and_what_it_covers_goes(
        share: float, summarized: bool) -> None:
    history = anthropic_history(older=True)
    snapshot = copy.deepcopy(history)
    recorder = Recorder() if summarized else None
    budget = int(anthropic_total(history) * share)
    result = messages.compact(history, model=CLAUDE, budget=budget, summarizer=recorder,
                              keep_recent=2)
    assert history == snapshot
    messages.validate(sent(result))
    assert sent(result)[0]["content"][0] == BLOCK  # verbatim, the conversation's first block
    blocks = [block for message in sent(result) if isinstance(message["content"], list)
              for block in message["content"]]
    assert [block for block in blocks if block.get("type") == "compaction"] == [BLOCK]
    cut = boundary_index(history)
    conv = messages.to_transcript(history)
    assert set(result.covered) == {turn.turn_id for turn in conv.transcript.turns
                                   if conv.parts[turn.turn_id].index < cut}
    assert "Fix the failing parser test." not in json.dumps(sent(result))
    assert not result.budget_unmet
    if recorder is not None:
        assert all(turn.role is not Role.SYSTEM for turn in recorder.turns)
        assert not any(SUMMARY in turn.content for turn in recorder.turns)
        assert not set(result.covered) & {turn.turn_id for turn in recorder.turns}


def test_what_the_compaction_covers_is_the_first_thing_to_give_way() -> None:
    """Dropping the covered messages alone fits: nothing after the block is touched."""
    history = anthropic_history()
    cut = boundary_index(history)
    after = anthropic_total(history[cut:])
    result = messages.compact(history, model=CLAUDE, budget=after + 50, keep_recent=2)
    assert sent(result) == history[cut:]
    assert not result.replacements and result.compacted
    assert len(result.covered) == 1 + 2 * 6  # the task, 6 calls, 6 results


def test_a_history_that_fits_still_sends_its_compaction_block_first() -> None:
    history = anthropic_history()
    result = messages.compact(history, model=CLAUDE, budget=190_000)
    assert sent(result) == history[boundary_index(history):]
    messages.validate(sent(result))


def test_the_api_s_placement_rules_are_the_validator_s() -> None:
    history = anthropic_history()
    with pytest.raises(ValidationError) as misplaced:
        messages.validate(history)
    assert misplaced.value.details["rule"] == "compaction_block_misplaced"
    two: list[Any] = [BetaAssistantMessageParam(role="assistant", content=[copy.deepcopy(BLOCK)]),
           BetaUserMessageParam(role="user", content="ok"),
           BetaAssistantMessageParam(role="assistant", content=[copy.deepcopy(BLOCK)]),
           BetaUserMessageParam(role="user", content="go on")]
    with pytest.raises(ValidationError) as ambiguous:
        messages.validate(two)
    assert ambiguous.value.details["rule"] == "compaction_block_ambiguous"
    result = messages.compact(two, model=CLAUDE, budget=10_000)
    assert sent(result) == two[2:]
    messages.validate(sent(result))
    in_system = [BetaUserMessageParam(role="user", content="hi"),
                 {"role": "system", "content": [dict(BLOCK)]}]
    with pytest.raises(ValidationError) as system:
        messages.to_transcript(in_system)
    assert system.value.details["rule"] == "compaction_block_misplaced"
    with pytest.raises(ValidationError) as empty:
        messages.to_transcript([{"role": "assistant", "content": [
            {"type": "compaction", "content": ""}]}])
    assert empty.value.details["rule"] == "compaction_content"


def test_a_failed_compaction_covers_nothing() -> None:
    """A block with null content is a no-op for the server: it stays with its message."""
    history = anthropic_history()
    cut = boundary_index(history)
    history[cut]["content"][0] = BetaCompactionBlockParam(type="compaction", content=None)
    result = messages.compact(history, model=CLAUDE, budget=190_000)
    assert sent(result) == history and not result.covered


def test_a_compaction_block_is_counted_at_its_real_size() -> None:
    counter = AnthropicTokenCounter(CharRatioEstimator(1.0), calibration=1.0)
    bare = counter.block({"type": "compaction", "content": "abcd"})
    sealed = counter.block(dict(BLOCK))
    assert bare == 4
    assert sealed >= len(SUMMARY) + len(BLOCK["encrypted_content"] or "") * 3 // 4 // 4


def test_a_compaction_block_after_other_blocks_covers_them_too() -> None:
    history = anthropic_history()
    cut = boundary_index(history)
    history[cut]["content"].insert(0, BetaTextBlockParam(type="text", text="Before it."))
    result = messages.compact(history, model=CLAUDE, budget=190_000)
    assert sent(result)[0]["content"][0] == BLOCK
    assert "Before it." not in json.dumps(sent(result))
    messages.validate(sent(result))


def closing_history() -> list[Any]:
    """The latest compaction block closes an assistant message after its ``tool_use``, the
    call's result in the next message."""
    history: list[Any] = [BetaUserMessageParam(role="user", content="Fix the failing test.")]
    for n in range(3):
        history += a_round(n, 40)
    history.append(BetaAssistantMessageParam(role="assistant", content=[
        BetaTextBlockParam(type="text", text="Running the tests."),
        BetaToolUseBlockParam(type="tool_use", id="toolu_c", name="run_tests", input={}),
        copy.deepcopy(BLOCK)]))
    history.append(BetaUserMessageParam(role="user", content=[
        BetaToolResultBlockParam(type="tool_result", tool_use_id="toolu_c",
                                 content="3 failed")]))
    history += a_round(3, 40)
    history.append(BetaUserMessageParam(role="user", content="Go on."))
    return history


def test_a_compaction_block_after_a_tool_use_opens_the_request_its_call_after_it() -> None:
    """What the block covers is left out; the call whose result follows stays, after the block
    (as a response that compacted has it), and no note goes before the block."""
    history = closing_history()
    cut = boundary_index(history)
    expected = [{"role": "assistant", "content": [BLOCK, *history[cut]["content"][:2]]},
                *history[cut + 1:]]
    result = messages.compact(history, model=CLAUDE, budget=100_000)
    prepared = CompactionSession(messages.FORMAT, model=CLAUDE).prepare(
        messages=history, max_tokens=1_000)
    for out in (sent(result), prepared.messages):
        assert out == expected
        messages.validate(out)
    assert result.tokens_sent == messages.count_tokens(expected, model=CLAUDE)


THINKING_ON = {"type": "enabled", "budget_tokens": 2_048}


def thinking_loop_history(across: bool) -> list[Any]:
    """A tool loop with thinking that the server compacted: its response opens with the
    compaction block, then its thinking (``[compaction, thinking, tool_use]``). ``across``:
    the loop began before the compaction (no user message between)."""
    history: list[Any] = [BetaUserMessageParam(role="user", content="Fix the failing test.")]
    for n in range(3):
        history.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"Step {n}.", "signature": f"sig-{n}"},
            BetaToolUseBlockParam(type="tool_use", id=f"toolu_{n}", name="read_file",
                                  input={"n": n})]})
        history.append(BetaUserMessageParam(role="user", content=[
            BetaToolResultBlockParam(type="tool_result", tool_use_id=f"toolu_{n}",
                                     content="code line " * 40)]))
    if not across:
        history[-1]["content"].append(BetaTextBlockParam(type="text", text="Now run them."))
    history.append({"role": "assistant", "content": [
        copy.deepcopy(BLOCK),
        {"type": "thinking", "thinking": "From the summary.", "signature": "sig-c"},
        BetaToolUseBlockParam(type="tool_use", id="toolu_c", name="run_tests", input={})]})
    history.append(BetaUserMessageParam(role="user", content=[
        BetaToolResultBlockParam(type="tool_result", tool_use_id="toolu_c",
                                 content="3 failed")]))
    return history


@pytest.mark.parametrize("across", [False, True])
def test_thinking_after_the_server_s_compaction_opens_the_loop(across: bool) -> None:
    """The API takes a compaction block first, then the thinking: compact, sessions and
    validate agree, and nothing the block covers is sent before it."""
    history = thinking_loop_history(across)
    cut = boundary_index(history)
    messages.validate(history[cut:], thinking=THINKING_ON)
    result = messages.compact(history, model=CLAUDE, budget=100_000, thinking=THINKING_ON)
    prepared = CompactionSession(messages.FORMAT, model=CLAUDE).prepare(
        messages=history, max_tokens=4_096, thinking=THINKING_ON)
    for out in (sent(result), prepared.messages):
        assert out == history[cut:]
        messages.validate(out, thinking=THINKING_ON, original=history)
    growing = CompactionSession(messages.FORMAT, model=CLAUDE)  # read call by call
    for end in range(1, len(history) + 1, 2):
        out = growing.prepare(messages=history[:end], max_tokens=4_096,
                              thinking=THINKING_ON).messages
        messages.validate(out, thinking=THINKING_ON, original=history[:end])
    assert out == history[cut:]


def test_a_loop_opened_after_a_compaction_without_thinking_is_refused() -> None:
    history = thinking_loop_history(across=False)
    cut = boundary_index(history)
    del history[cut]["content"][1]
    for check in (lambda: messages.validate(history[cut:], thinking=THINKING_ON),
                  lambda: messages.compact(history, model=CLAUDE, thinking=THINKING_ON)):
        with pytest.raises(ValidationError) as refused:
            check()
        assert refused.value.details["rule"] == "thinking_not_first"
        assert refused.value.details["index"] in (0, cut)


# --- Responses histories ---------------------------------------------------------------------

ITEM = ResponseCompactionItemParamParam(type="compaction", id="cmp_2",
                                        encrypted_content="gAAAAB" + "c" * 800)
OLD_ITEM = ResponseCompactionItemParamParam(type="compaction", id="cmp_1",
                                            encrypted_content="gAAAAB" + "o" * 400)


def r_round(n: int, size: int) -> list[Any]:
    return [
        ResponseFunctionToolCallParam(type="function_call", id=f"fc_{n}", call_id=f"c{n}",
                                      name="read_file", arguments=json.dumps({"n": n}),
                                      status="completed"),
        FunctionCallOutput(type="function_call_output", call_id=f"c{n}",
                           output=f"contents {n} " + "code line " * size),
    ]


def said(text: str, item_id: str) -> ResponseOutputMessageParam:
    return ResponseOutputMessageParam(
        type="message", id=item_id, role="assistant", status="completed",
        content=[{"type": "output_text", "text": text, "annotations": []}])


def responses_history(before: int = 6, after: int = 4, size: int = 120,
                      older: bool = False) -> list[Any]:
    """A developer message, a task, rounds the server compacted (with the users' messages
    between them), the compaction item, and rounds since."""
    items: list[Any] = [
        EasyInputMessageParam(role="developer", content="You are a careful coding agent."),
        EasyInputMessageParam(role="user", content="Fix the failing parser test.")]
    for n in range(before):
        items += r_round(n, size)
        if n % 2:
            items.append(said(f"Progress {n}.", f"msg_{n}"))
            items.append(EasyInputMessageParam(role="user", content=f"Keep going {n}."))
        if older and n == 2:
            items.append(copy.deepcopy(OLD_ITEM))
    items.append(copy.deepcopy(ITEM))
    for n in range(before, before + after):
        items += r_round(n, size)
    items.append(EasyInputMessageParam(role="user", content="Now make the tests pass."))
    return items


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("summarized", [False, True])
def test_a_responses_compaction_item_stays_whole_in_place_and_what_it_covers_goes(
        share: float, summarized: bool) -> None:
    items = responses_history(older=True)
    snapshot = copy.deepcopy(items)
    recorder = Recorder() if summarized else None
    budget = int(responses.count_tokens(items) * share)
    result = responses.compact(items, budget=budget, summarizer=recorder, keep_recent=2)
    assert items == snapshot
    assert isinstance(result.input, list)
    responses.validate(result.input)
    assert [item for item in result.input if item.get("type") == "compaction"] == [ITEM]
    cut = dicts(result.input).index(dict(ITEM))
    covered = {f"i{index}" for index, item in enumerate(items[:items.index(ITEM)])
               if item.get("role") not in ("user", "developer")}
    assert set(result.covered) == covered
    assert all(item.get("role") in ("user", "developer") for item in result.input[:cut])
    assert result.input[0] == items[0]  # the developer message is never taken
    assert not result.budget_unmet
    if recorder is not None:
        assert all(turn.role is not Role.SYSTEM for turn in recorder.turns)
        assert not covered & {turn.turn_id for turn in recorder.turns}


def test_responses_covered_items_give_way_before_anything_after_the_compaction() -> None:
    items = responses_history()
    cut = items.index(ITEM)
    kept = [item for item in items[:cut] if item.get("role") in ("user", "developer")]
    budget = responses.count_tokens([*kept, *items[cut:]]) + 20
    result = responses.compact(items, budget=budget, keep_recent=2)
    assert result.input == [*kept, *items[cut:]]
    assert not result.replacements


def test_the_compaction_trigger_stays_last_and_nowhere_else() -> None:
    items: list[ResponseInputItemParam] = [*responses_history(),
                                           CompactionTrigger(type="compaction_trigger")]
    result = responses.compact(items, budget=int(responses.count_tokens(items) * 0.3),
                               keep_recent=2, defer_to_server=False)
    assert isinstance(result.input, list)
    assert result.input[-1] == {"type": "compaction_trigger"}
    responses.validate(result.input)
    with pytest.raises(ValidationError) as early:
        responses.validate([*items, EasyInputMessageParam(role="user", content="more")])
    assert early.value.details["rule"] == "compaction_trigger_not_last"


def test_a_compaction_item_is_a_system_turn_counted_with_its_encrypted_content() -> None:
    conv = responses.to_transcript([ITEM, EasyInputMessageParam(role="user", content="hi")])
    turn = conv.transcript.turns[0]
    assert turn.role is Role.SYSTEM and turn.content == "[compaction]"
    sealed = len(ITEM["encrypted_content"])
    assert turn.token_estimate == ITEM_TOKENS + -(-sealed // ENCRYPTED_CHARS_PER_TOKEN)


def test_compacting_what_responses_compact_returned_keeps_it_as_the_server_gave_it() -> None:
    """``responses.compact`` returns the user messages and one compaction item: nothing there
    is covered, and the item is never summarized."""
    output: list[Any] = [  # as the API returns them
        {"type": "message", "id": "msg_u1", "role": "user", "status": "completed",
         "content": [{"type": "input_text", "text": "Fix the failing parser test."}]},
        {"type": "compaction", "id": "cmp_9", "encrypted_content": "gAAAAB" + "z" * 4000}]
    items: list[Any] = copy.deepcopy(output)
    for n in range(8):
        items += r_round(n, 200)
    items.append(EasyInputMessageParam(role="user", content="Go on."))
    recorder = Recorder()
    result = responses.compact(items, budget=3_000, summarizer=recorder, keep_recent=2)
    assert isinstance(result.input, list)
    assert result.input[:2] == output
    assert not result.covered
    assert not any("compaction" in turn.content for turn in recorder.turns)
    responses.validate(result.input)


# --- deferring to the server's compaction: compact --------------------------------------------

def test_compact_defers_to_server_compaction_within_the_model_s_own_limit() -> None:
    items = responses_history(older=True)
    management = [ContextManagement(type="compaction", compact_threshold=50_000)]
    result = responses.compact(items, budget=2_000, summarizer=never,
                               context_management=management)
    assert result.deferred == "server-side compaction is on (context_management)"
    assert set(result.covered) and not result.replacements
    assert isinstance(result.input, list) and ITEM in result.input
    plain = responses.compact(items, budget=800, context_management=management,
                              defer_to_server=False)
    assert plain.deferred is None
    assert any(action.action is not Action.KEEP for action in plain.plan.actions)
    history = anthropic_history()
    edit = BetaContextManagementConfigParam(edits=[BetaCompact20260112EditParam(
        type="compact_20260112")])
    deferred = messages.compact(history, model=CLAUDE, budget=2_000, summarizer=never,
                                context_management=edit)
    assert deferred.deferred is not None and "compact_20260112" in deferred.deferred
    assert sent(deferred) == history[boundary_index(history):]


def test_compact_refuses_a_defer_setting_that_is_not_a_bool() -> None:
    with pytest.raises(ValidationError) as bad:
        responses.compact([EasyInputMessageParam(role="user", content="hi")], budget=100,
                          defer_to_server="yes")  # type: ignore[arg-type]
    assert bad.value.details["field"] == "defer_to_server"


# --- deferring to the server's compaction: sessions -------------------------------------------

def chat_rounds(tokens: int, estimator: Any) -> list[EasyInputMessageParam]:
    """Plain user/assistant talk of about ``tokens`` tokens (nothing to mask: only a summary
    or a drop could shrink it)."""
    out: list[EasyInputMessageParam] = []
    n = 0
    while estimator.estimate_tokens(" ".join(str(m["content"]) for m in out)) < tokens:
        out.append(EasyInputMessageParam(role="user", content=f"question {n} " + "why " * 500))
        out.append(EasyInputMessageParam(role="assistant",
                                         content=f"answer {n} " + "yes " * 500))
        n += 1
    out.append(EasyInputMessageParam(role="user", content="And finally?"))
    return out


CHARS = CharRatioEstimator()


@pytest.mark.parametrize("provider", ["responses", "anthropic"])
def test_a_session_sends_a_history_under_the_model_s_limit_unchanged_and_says_deferred(
        provider: str) -> None:
    history = chat_rounds(50_000, CHARS)
    session, request = _deferring(provider, history)
    prepared = session.prepare(request)
    assert prepared.report.decision == "deferred"
    assert "server-side compaction is on" in prepared.report.reason
    assert prepared.request[session.format.list_key] == history
    assert prepared.report.tokens_sent is not None and prepared.report.tokens_sent > 30_000
    again = session.prepare({**request, session.format.list_key: [
        *history, EasyInputMessageParam(role="assistant", content="ok"),
        EasyInputMessageParam(role="user", content="more")]})
    assert again.report.decision == "deferred"
    off = _deferring(provider, history, defer_to_server=False, summarizer=None)[0]
    compacted = off.prepare(request).report
    assert compacted.decision == "compacted"
    assert compacted.tokens_sent is not None and compacted.tokens_sent <= 30_000


@pytest.mark.parametrize("provider", ["responses", "anthropic"])
def test_a_session_fits_a_history_over_the_model_s_limit_without_a_summary(
        provider: str) -> None:
    limit = 272_000 if provider == "responses" else 200_000
    history = chat_rounds(limit + 20_000, CHARS)
    session, request = _deferring(provider, history)
    prepared = session.prepare(request)
    report = prepared.report
    assert report.decision == "compacted"
    assert "over the model's own limit" in report.reason
    assert report.prompt_budget is not None and report.prompt_budget > 150_000
    assert report.tokens_sent is not None and 30_000 < report.tokens_sent <= report.prompt_budget
    assert not report.budget_unmet and not report.summarization_fallback


def _deferring(provider: str, history: list[Any], **settings: Any
               ) -> tuple[CompactionSession, dict[str, Any]]:
    """A session with ``window=30_000`` and a summarizer that must not be called, and a
    request turning the server's compaction on."""
    settings = {"summarizer": never, **settings}
    if provider == "responses":
        session = CompactionSession(responses.FORMAT, window=30_000,
                                    **settings)
        return session, {"model": GPT, "input": history, "context_management": [
            ContextManagement(type="compaction", compact_threshold=100_000)]}
    session = CompactionSession(messages.FORMAT, window=30_000, **settings)
    edit = BetaContextManagementConfigParam(edits=[BetaCompact20260112EditParam(
        type="compact_20260112")])
    return session, {"model": CLAUDE, "max_tokens": 4_096, "context_management": edit,
                     "messages": history}


def test_a_deferring_session_still_leaves_out_what_the_latest_compaction_covers() -> None:
    items = responses_history(older=True)
    session = CompactionSession(responses.FORMAT, window=30_000, summarizer=never)
    prepared = session.prepare(model=GPT, input=items, context_management=[
        ContextManagement(type="compaction")])
    assert prepared.report.decision == "deferred"
    assert prepared.input == [item for index, item in enumerate(items)
                              if f"i{index}" not in prepared.report.covered]
    assert ITEM in prepared.input and OLD_ITEM not in prepared.input
    responses.validate(prepared.input)


def test_a_compaction_trigger_in_the_request_is_left_to_the_server() -> None:
    items = [*chat_rounds(40_000, CHARS), CompactionTrigger(type="compaction_trigger")]
    session = CompactionSession(responses.FORMAT, window=30_000, summarizer=never,
                                estimator=CHARS)
    prepared = session.prepare(model=GPT, input=items)
    assert prepared.report.decision == "deferred"
    assert prepared.input == items


def test_a_session_never_sends_a_summary_of_a_compaction_block() -> None:
    recorder = Recorder()
    session = CompactionSession(messages.FORMAT, window=6_000, summarizer=recorder,
                                reserve=1_000)
    history: list[Any] = anthropic_history(before=4, after=0, size=60)
    for n in range(12):  # talk after the block: only a summary (or a drop) shrinks it
        history.append(BetaAssistantMessageParam(role="assistant",
                                                 content=f"Answer {n}: " + "because " * 400))
        history.append(BetaUserMessageParam(role="user", content=f"Question {n}: why?"))
    prepared = session.prepare(model=CLAUDE, messages=history)
    assert prepared.report.decision == "compacted"
    assert prepared.messages[0]["content"][0] == BLOCK
    messages.validate(prepared.messages)
    assert recorder.turns and not any(SUMMARY in turn.content for turn in recorder.turns)
    assert all(turn.role is not Role.SYSTEM for turn in recorder.turns)


def test_an_anthropic_session_sends_the_block_first_even_below_its_trigger() -> None:
    history = anthropic_history()
    session = CompactionSession(messages.FORMAT, model=CLAUDE)
    prepared = session.prepare(messages=history, max_tokens=1_000)
    cut = boundary_index(history)
    assert prepared.report.decision == "compacted"  # changed: never reported as unchanged
    assert prepared.messages == history[cut:]
    assert len(prepared.report.covered) == 1 + 2 * 6
    assert prepared.report.tokens_sent == messages.count_tokens(history[cut:], model=CLAUDE)


# --- the wrapped clients, against the real SDKs ------------------------------------------------

OPENAI_URL = "https://api.openai.test/v1"
ANTHROPIC_URL = "https://api.anthropic.test"
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
         "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


api = mocked_api()


def test_a_wrapped_openai_client_sends_what_responses_compact_returned_as_it_was(
        api: respx.Router) -> None:
    compacted = {"id": "resp_c", "created_at": 1, "object": "response.compaction",
                 "usage": USAGE, "output": [
                     {"type": "message", "id": "msg_u1", "role": "user", "status": "completed",
                      "content": [{"type": "input_text", "text": "Fix the parser."}]},
                     {"type": "compaction", "id": "cmp_1",
                      "encrypted_content": "gAAAAB" + "k" * 2_000}]}
    reply = {"id": "resp_2", "object": "response", "created_at": 2, "model": GPT,
             "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "output": [
                 {"type": "message", "id": "msg_a", "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": "ok", "annotations": []}]}]}
    api.post(f"{OPENAI_URL}/responses/compact").respond(200, json=compacted)
    route = api.post(f"{OPENAI_URL}/responses").respond(200, json=reply)
    sdk = OpenAI(api_key="test", base_url=OPENAI_URL, max_retries=0)
    history: list[Any] = list(sdk.responses.compact(model=GPT, input="...").output)
    history += chat_rounds(40_000, CHARS)
    reports: list[Any] = []
    client = CompactingOpenAI(sdk, window=30_000, on_call=reports.append)
    client.responses.create(model=GPT, input=history, context_management=[
        {"type": "compaction", "compact_threshold": 60_000}])
    body = json.loads(route.calls.last.request.content)
    assert body["input"][:2] == compacted["output"]
    assert len(body["input"]) == len(history)
    assert reports[-1].decision == "deferred"


def test_a_wrapped_anthropic_client_sends_the_server_s_compaction_block_first(
        api: respx.Router) -> None:
    """The server compacts (``compact_20260112``) and returns the block; appended to the
    history, it goes first on the next call, what it covers left out."""
    block = {"type": "compaction", "content": SUMMARY, "encrypted_content": "EnC" + "w" * 400,
             "signature": "sig-live"}
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": CLAUDE,
             "content": [block, {"type": "text", "text": "Picking up from the summary."}],
             "stop_reason": "end_turn", "stop_sequence": None,
             "usage": {"input_tokens": 1, "output_tokens": 1}}
    route = api.post(f"{ANTHROPIC_URL}/v1/messages").respond(200, json=reply)
    sdk = Anthropic(api_key="test", base_url=ANTHROPIC_URL, max_retries=0)
    reports: list[Any] = []
    client = CompactingAnthropic(sdk, window=30_000, on_call=reports.append)
    edit = BetaContextManagementConfigParam(edits=[BetaCompact20260112EditParam(
        type="compact_20260112")])
    history: list[Any] = [dict(message) for message in chat_rounds(40_000, CHARS)]
    response = client.beta.messages.create(model=CLAUDE, max_tokens=1_024, messages=history,
                                           context_management=edit,
                                           betas=["compact-2026-01-12"])
    first = json.loads(route.calls.last.request.content)
    assert first["messages"] == history and reports[-1].decision == "deferred"
    assert isinstance(response, BetaMessage)
    history = [*history, response, {"role": "user", "content": "Go on."}]
    client.beta.messages.create(model=CLAUDE, max_tokens=1_024, messages=history,
                                context_management=edit, betas=["compact-2026-01-12"])
    second = json.loads(route.calls.last.request.content)
    assert second["messages"][0] == {"role": "assistant", "content": [
        block, {"type": "text", "text": "Picking up from the summary."}]}
    assert second["messages"][1:] == [{"role": "user", "content": "Go on."}]
    assert reports[-1].decision == "deferred"
    assert len(reports[-1].covered) == len(history) - 2
    messages.validate(second["messages"])


def test_the_reports_say_what_was_left_out_in_ids_only() -> None:
    history = anthropic_history()
    prepared = CompactionSession(messages.FORMAT, model=CLAUDE).prepare(
        messages=history, max_tokens=1_000)
    text = json.dumps([prepared.report.reason, prepared.report.covered])
    assert "Fix the failing" not in text and SUMMARY not in text


# --- property: any history, any policy, any budget ---------------------------------------------

@st.composite
def compacted_histories(draw: st.DrawFn) -> dict[str, Any]:
    """The Anthropic property histories, with a server tool's call and result put in some
    assistant messages and a compaction block in one of them: opening it (before its thinking,
    as the server puts it when it compacts inside a tool loop), or closing it after its calls
    (their results in the next message)."""
    case = draw(histories())
    history = case["messages"]
    counter = iter(range(10_000))
    for message in history:
        if (message["role"] == "assistant" and isinstance(message["content"], list)
                 and draw(st.integers(0, 2)) == 0):
            tool_id = f"srvtoolu_{next(counter)}"
            at = 1 if message["content"][0]["type"] == "thinking" else 0
            message["content"][at:at] = [
                {"type": "server_tool_use", "id": tool_id, "name": "web_fetch", "input": {}},
                {"type": "web_fetch_tool_result", "tool_use_id": tool_id, "content": {
                    "type": "web_fetch_result", "url": f"https://x.example/{tool_id}",
                    "content": {"type": "document", "source": {
                        "type": "text", "media_type": "text/plain",
                        "data": "page text " * draw(st.integers(1, 80))}}}}]
    candidates = [index for index, message in enumerate(history)
                  if index and message["role"] == "assistant"
                  and isinstance(message["content"], list)]
    cut: int | None = None
    if draw(st.booleans()) and candidates:
        cut = draw(st.sampled_from(candidates))
        content = history[cut]["content"]
        if case["thinking"] and content[0]["type"] != "thinking":
            # with thinking on, a response that compacted goes on with its thinking
            content.insert(0, {"type": "thinking", "thinking": "after the compaction",
                               "signature": f"sig-after-{cut}"})
        closing = content[-1]["type"] == "tool_use" and draw(st.booleans())
        content.insert(len(content) if closing else 0, dict(BLOCK))
    return {**case, "cut": cut}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=compacted_histories(), fraction=st.sampled_from([0.05, 0.15, 0.35, 0.6, 1.0, 1.5]),
       keep_recent=st.integers(1, 4))
def test_any_history_with_a_compaction_block_or_server_tools_compacts_to_a_valid_request(
        case: dict[str, Any], fraction: float, keep_recent: int) -> None:
    history, system, thinking = case["messages"], case["system"], case["thinking"]
    frozen = copy.deepcopy(history)
    total = messages.count_tokens(history, system=system, estimator=CHARS)
    for policy in (None, "summarize"):
        try:
            result = messages.compact(
                history, system=system, thinking=thinking, budget=int(total * fraction),
                summarizer=summarize_any if policy else None, estimator=CHARS,
                pin=case["pin"], keep_recent=keep_recent)
        except BudgetUnsatisfiable:
            continue
        out = sent(result)
        assert history == frozen
        messages.validate(out, system=result.system, thinking=thinking, original=history)
        assert out[0]["role"] == "user" or out[0]["content"][0] == BLOCK
        if case["cut"] is not None:
            assert out[0]["content"][0] == BLOCK
            assert len(result.covered) >= case["cut"]
        # judged on what is sent (measured after rendering), as budget_unmet is: the plan's
        # own estimate (tokens_after) may count a stub's framing a little high
        assert result.tokens_sent <= int(total * fraction) or result.budget_unmet
        session = CompactionSession(messages.FORMAT, window=max(1, int(total * fraction)),
                                    reserve=0, estimator=CHARS, pin=case["pin"],
                                    keep_recent=keep_recent,
                                    summarizer=summarize_any if policy else None)
        try:
            prepared = session.prepare(messages=history, system=system, thinking=thinking)
        except BudgetUnsatisfiable:
            continue
        assert history == frozen
        messages.validate(prepared.messages, system=prepared.system, thinking=thinking,
                          original=history)
        if case["cut"] is not None:
            assert prepared.messages[0]["content"][0] == BLOCK


def summarize_any(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{len(turns)} earlier turns."

"""Server-tool and MCP results give way like tool results (deduplicated, clipped, masked to a
stub keeping the block's type, ids and required fields); an MCP approval response is not a
user turn; a beta system message may carry no content; a session never sends more than four
``cache_control`` markers, tools included.

Histories are built from the SDKs' own param types; stubs are checked against them too.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
import respx
from anthropic import Anthropic
from anthropic.types.beta import (
    BetaAssistantMessageParam,
    BetaBashCodeExecutionResultBlockParam,
    BetaBashCodeExecutionToolResultBlockParam,
    BetaCacheControlEphemeralParam,
    BetaCodeExecutionResultBlockParam,
    BetaCodeExecutionToolResultBlockParam,
    BetaEncryptedCodeExecutionResultBlockParam,
    BetaMCPToolUseBlockParam,
    BetaPlainTextSourceParam,
    BetaRequestDocumentBlockParam,
    BetaRequestMCPToolResultBlockParam,
    BetaServerToolUseBlockParam,
    BetaSystemMessageParam,
    BetaTextBlockParam,
    BetaTextEditorCodeExecutionStrReplaceResultBlockParam,
    BetaTextEditorCodeExecutionToolResultBlockParam,
    BetaTextEditorCodeExecutionViewResultBlockParam,
    BetaToolParam,
    BetaToolReferenceBlockParam,
    BetaToolSearchToolResultBlockParam,
    BetaToolSearchToolSearchResultBlockParam,
    BetaUserMessageParam,
    BetaWebFetchBlockParam,
    BetaWebFetchToolResultBlockParam,
    BetaWebSearchResultBlockParam,
    BetaWebSearchToolResultBlockParam,
)
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseCodeInterpreterToolCallParam,
    ResponseFileSearchToolCallParam,
    ResponseFunctionWebSearchParam,
)
from openai.types.responses.response_input_item_param import (
    ImageGenerationCall,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
)

from cutctx import Role, ToolResultMaskingPolicy, ValidationError
from cutctx_adapters import CompactionResult, CompactionSession
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from cutctx_adapters.openai import responses
from tests._support.http import mocked_api
from tests._support.plain import dicts

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

CLAUDE = "claude-sonnet-4-5"
BIG = "\n".join(f"line {n}: the quick brown fox jumps over the lazy dog" for n in range(400))
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAAB"
       "JRU5ErkJggg==")


def sent(result: CompactionResult) -> list[dict[str, Any]]:
    """The Messages history a compaction returned."""
    return dicts(result.messages)


def conforms(param_type: Any, value: Any) -> None:
    """``value`` validates against the SDK's own param type (its required fields and types)."""
    pydantic.TypeAdapter(param_type).validate_python(value, strict=False)


# --- Anthropic: one history per result type -------------------------------------------------

def _use(tool_id: str, name: Any) -> BetaServerToolUseBlockParam:
    return BetaServerToolUseBlockParam(type="server_tool_use", id=tool_id, name=name,
                                       input={"query": "x"})


def web_fetch(tool_id: str = "srvtoolu_f1", text: str = BIG) -> Any:
    return BetaWebFetchToolResultBlockParam(
        type="web_fetch_tool_result", tool_use_id=tool_id,
        content=BetaWebFetchBlockParam(
            type="web_fetch_result", url="https://docs.example/parser", retrieved_at="2026-11-02",
            content=BetaRequestDocumentBlockParam(
                type="document", title="Parser docs",
                source=BetaPlainTextSourceParam(type="text", media_type="text/plain",
                                                data=text))))


def web_search(tool_id: str = "srvtoolu_s1") -> Any:
    return BetaWebSearchToolResultBlockParam(
        type="web_search_tool_result", tool_use_id=tool_id, content=[
            BetaWebSearchResultBlockParam(type="web_search_result", url=f"https://r{k}.example",
                                          title=f"Result {k}", encrypted_content="E" * 3_000)
            for k in range(4)])


def code_execution(tool_id: str = "srvtoolu_c1") -> Any:
    return BetaCodeExecutionToolResultBlockParam(
        type="code_execution_tool_result", tool_use_id=tool_id,
        content=BetaCodeExecutionResultBlockParam(
            type="code_execution_result", stdout=BIG, stderr="warning: slow", return_code=3,
            content=[{"type": "code_execution_output", "file_id": "file_1"}]))


def encrypted_execution(tool_id: str = "srvtoolu_e1") -> Any:
    return BetaCodeExecutionToolResultBlockParam(
        type="code_execution_tool_result", tool_use_id=tool_id,
        content=BetaEncryptedCodeExecutionResultBlockParam(
            type="encrypted_code_execution_result", encrypted_stdout="S" * 8_000,
            stderr="", return_code=0, content=[]))


def bash(tool_id: str = "srvtoolu_b1") -> Any:
    return BetaBashCodeExecutionToolResultBlockParam(
        type="bash_code_execution_tool_result", tool_use_id=tool_id,
        content=BetaBashCodeExecutionResultBlockParam(
            type="bash_code_execution_result", stdout=BIG, stderr="", return_code=1,
            content=[]))


def editor_view(tool_id: str = "srvtoolu_v1") -> Any:
    return BetaTextEditorCodeExecutionToolResultBlockParam(
        type="text_editor_code_execution_tool_result", tool_use_id=tool_id,
        content=BetaTextEditorCodeExecutionViewResultBlockParam(
            type="text_editor_code_execution_view_result", content=BIG, file_type="text",
            num_lines=400, start_line=1, total_lines=400))


def editor_replace(tool_id: str = "srvtoolu_r1") -> Any:
    return BetaTextEditorCodeExecutionToolResultBlockParam(
        type="text_editor_code_execution_tool_result", tool_use_id=tool_id,
        content=BetaTextEditorCodeExecutionStrReplaceResultBlockParam(
            type="text_editor_code_execution_str_replace_result", lines=BIG.split("\n"),
            new_lines=400, new_start=1, old_lines=3, old_start=1))


def mcp_result(tool_id: str = "mcptoolu_1") -> Any:
    return BetaRequestMCPToolResultBlockParam(type="mcp_tool_result", tool_use_id=tool_id,
                                              content=[BetaTextBlockParam(type="text",
                                                                          text=BIG)],
                                              is_error=False)


RESULTS: dict[str, tuple[Callable[..., Any], str, Any]] = {
    "web_fetch": (web_fetch, "web_fetch", BetaWebFetchToolResultBlockParam),
    "web_search": (web_search, "web_search", BetaWebSearchToolResultBlockParam),
    "code_execution": (code_execution, "code_execution", BetaCodeExecutionToolResultBlockParam),
    "encrypted_execution": (encrypted_execution, "code_execution",
                            BetaCodeExecutionToolResultBlockParam),
    "bash": (bash, "bash_code_execution", BetaBashCodeExecutionToolResultBlockParam),
    "editor_view": (editor_view, "text_editor_code_execution",
                    BetaTextEditorCodeExecutionToolResultBlockParam),
    "editor_replace": (editor_replace, "text_editor_code_execution",
                       BetaTextEditorCodeExecutionToolResultBlockParam),
    "mcp": (mcp_result, "mcp", BetaRequestMCPToolResultBlockParam),
}


def server_history(result: Any, name: str, log: bool = True) -> list[Any]:
    """A question, the assistant's server call with its (large) result and an answer, then
    talk ending with a large user message: the result is the one thing a policy may replace,
    and smaller than what a budget leaves once that message is counted."""
    call: Any = (BetaMCPToolUseBlockParam(type="mcp_tool_use", id=result["tool_use_id"],
                                          name="lookup", server_name="kb", input={"q": "x"})
                 if name == "mcp" else _use(result["tool_use_id"], name))
    history: list[Any] = [
        BetaUserMessageParam(role="user", content="How does the parser handle tabs?"),
        BetaAssistantMessageParam(role="assistant", content=[
            BetaTextBlockParam(type="text", text="Let me look."), call, result,
            BetaTextBlockParam(type="text", text="Tabs are expanded to four spaces.")])]
    for n in range(3):
        history.append(BetaUserMessageParam(role="user", content=f"Follow-up {n}?"))
        history.append(BetaAssistantMessageParam(role="assistant", content=f"Answer {n}."))
    history.append(BetaUserMessageParam(role="user", content="Thanks, go on." + (
        " Here is my own log, which has to stay:\n" + BIG if log else "")))
    return history


def budget_for(history: list[Any], share: float) -> int:
    return int(messages.count_tokens(history, model=CLAUDE) * share)


@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_an_anthropic_server_result_is_masked_to_a_stub_of_its_own_type(kind: str) -> None:
    make, name, param_type = RESULTS[kind]
    original = make()
    history = server_history(original, name)
    snapshot = copy.deepcopy(history)
    tokens = messages.to_transcript(history, model=CLAUDE).transcript.turns[2].token_estimate
    budget = messages.count_tokens(history, model=CLAUDE) - tokens // 2
    # masking alone (the default chain would give the rest of the room back as a clip)
    result = messages.compact(history, model=CLAUDE, budget=budget,
                              policy=ToolResultMaskingPolicy(0))
    assert history == snapshot
    messages.validate(sent(result))
    assert [r.kind for r in result.replacements] == ["masked"]
    content = sent(result)[1]["content"]
    stub = content[2]
    assert content[1] == history[1]["content"][1]  # the call stays, before its result
    assert (stub["type"], stub["tool_use_id"]) == (original["type"], original["tool_use_id"])
    conforms(param_type, stub)
    assert "tool result masked by cutctx" in json.dumps(content)
    assert content[-1] == history[1]["content"][-1]
    _kept_fields(kind, original, stub)


def _kept_fields(kind: str, original: Any, stub: Any) -> None:
    """The fields the API requires (and the ones a reader needs) survive the stub."""
    if kind == "web_fetch":
        assert stub["content"]["url"] == original["content"]["url"]
        assert stub["content"]["content"]["title"] == "Parser docs"
    elif kind in ("code_execution", "encrypted_execution", "bash"):
        assert stub["content"]["return_code"] == original["content"]["return_code"]
        assert stub["content"]["content"] == original["content"]["content"]
    elif kind == "web_search":
        assert stub["content"] == []
    elif kind == "editor_view":
        assert stub["content"]["file_type"] == "text"
    elif kind == "mcp":
        assert stub["is_error"] is False


@pytest.mark.parametrize("kind", ["web_fetch", "code_execution", "bash", "editor_view", "mcp"])
def test_an_oversized_anthropic_server_result_is_clipped_to_its_head_and_tail(
        kind: str) -> None:
    make, name, param_type = RESULTS[kind]
    history = server_history(make(), name)
    result = messages.compact(history, model=CLAUDE, budget=budget_for(history, 0.8),
                              max_result_share=0.2)
    assert [r.kind for r in result.replacements] == ["clipped"]
    stub = sent(result)[1]["content"][2]
    conforms(param_type, stub)
    text = json.dumps(stub)
    assert "line 0:" in text and "line 399:" in text and "line 200:" not in text
    messages.validate(sent(result))


def test_a_repeated_web_fetch_is_deduplicated_to_a_pointer_at_the_later_one() -> None:
    history = server_history(web_fetch("srvtoolu_f1"), "web_fetch")
    history += [BetaAssistantMessageParam(role="assistant", content=[
        _use("srvtoolu_f2", "web_fetch"), web_fetch("srvtoolu_f2"),
        BetaTextBlockParam(type="text", text="Same page again.")]),
        BetaUserMessageParam(role="user", content="ok")]
    result = messages.compact(history, model=CLAUDE, budget=budget_for(history, 0.7))
    assert [(r.turn_id, r.kind) for r in result.replacements] == [("m1.1", "deduplicated")]
    first = sent(result)[1]["content"][2]
    assert first["content"]["url"] == "https://docs.example/parser"
    assert "identical to turn m" in json.dumps(first)
    assert sent(result)[-2]["content"][1] == history[-2]["content"][1]
    messages.validate(sent(result))


def test_tool_search_results_stay_whole_because_they_load_tools() -> None:
    search = BetaToolSearchToolResultBlockParam(
        type="tool_search_tool_result", tool_use_id="srvtoolu_t1",
        content=BetaToolSearchToolSearchResultBlockParam(
            type="tool_search_tool_search_result",
            tool_references=[BetaToolReferenceBlockParam(type="tool_reference",
                                                         tool_name="parse_file")]))
    history = server_history(search, "tool_search_tool_regex")
    conv = messages.to_transcript(history)
    assert [turn.role for turn in conv.transcript.turns][1] is Role.ASSISTANT
    assert len([t for t in conv.transcript.turns if t.turn_id.startswith("m1")]) == 1


def test_an_unexpected_result_shape_is_never_rewritten() -> None:
    odd = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_f1",
           "content": {"type": "web_fetch_tool_result_error", "error_code": "unavailable"}}
    history = server_history(odd, "web_fetch")
    conv = messages.to_transcript(history)
    assert all(turn.role is not Role.TOOL for turn in conv.transcript.turns)


def test_an_empty_final_assistant_message_is_still_a_turn() -> None:
    history: list[Any] = [BetaUserMessageParam(role="user", content="Hi."),
               BetaAssistantMessageParam(role="assistant", content=[])]
    conv = messages.to_transcript(history)
    assert conv.transcript.turn_ids() == ("m0", "m1")
    assert conv.render(conv.transcript)[1] == history


# --- Responses: built-in and MCP tool items ---------------------------------------------------

def responses_items(item: Any) -> list[Any]:
    out: list[Any] = [EasyInputMessageParam(role="user", content="Investigate the parser."),
                      item]
    for n in range(3):
        out.append(EasyInputMessageParam(role="assistant", content=f"Answer {n}."))
        out.append(EasyInputMessageParam(role="user", content=f"Follow-up {n}?"))
    return out


ITEMS: dict[str, tuple[Any, Any, str]] = {
    "code_interpreter_call": (ResponseCodeInterpreterToolCallParam(
        type="code_interpreter_call", id="ci_1", code="print(parse())", container_id="cntr_1",
        status="completed", outputs=[{"type": "logs", "logs": BIG}]),
        ResponseCodeInterpreterToolCallParam, "outputs"),
    "mcp_call": (McpCall(type="mcp_call", id="mcp_1", name="lookup", server_label="kb",
                         arguments="{}", output=BIG, status="completed"), McpCall, "output"),
    "file_search_call": (ResponseFileSearchToolCallParam(
        type="file_search_call", id="fs_1", queries=["tabs"], status="completed",
        results=[{"file_id": f"file_{k}", "filename": f"doc{k}.md", "text": BIG}
                 for k in range(2)]), ResponseFileSearchToolCallParam, "results"),
    "image_generation_call": (ImageGenerationCall(
        type="image_generation_call", id="ig_1", status="completed", result=PNG * 400),
        ImageGenerationCall, "result"),
    "web_search_call": (ResponseFunctionWebSearchParam(
        type="web_search_call", id="ws_1", status="completed", action={
            "type": "search", "query": "parser tabs",
            "sources": [{"type": "url", "url": f"https://r{k}.example/{'p' * 80}"}
                        for k in range(60)]}),
        ResponseFunctionWebSearchParam, "action"),
}


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_a_responses_tool_item_gives_way_like_a_tool_output(kind: str) -> None:
    item, param_type, field = ITEMS[kind]
    items = responses_items(item)
    snapshot = copy.deepcopy(items)
    conv = responses.to_transcript(items)
    assert conv.transcript.turns[1].role is Role.TOOL
    budget = responses.count_tokens(items) - conv.transcript.turns[1].token_estimate // 2
    result = responses.compact(items, budget=budget, keep_recent_results=0,
                               max_result_share=1.0)
    assert items == snapshot
    assert isinstance(result.input, list)
    responses.validate(result.input)
    stub = dicts(result.input)[1]
    assert {key: stub[key] for key in ("type", "id", "status")} == {
        key: item[key] for key in ("type", "id", "status")}
    assert stub[field] != item[field]
    conforms(param_type, stub)
    assert [r.turn_id for r in result.replacements] == ["i1"]


def test_an_mcp_approval_response_is_not_a_user_turn() -> None:
    items = [
        EasyInputMessageParam(role="user", content="Look it up."),
        McpApprovalRequest(type="mcp_approval_request", id="mcpr_1", name="lookup",
                           server_label="kb", arguments="{}"),
        McpApprovalResponse(type="mcp_approval_response", approval_request_id="mcpr_1",
                            approve=True),
        McpCall(type="mcp_call", id="mcp_1", name="lookup", server_label="kb",
                arguments="{}", output="found", approval_request_id="mcpr_1"),
        EasyInputMessageParam(role="user", content="Thanks."),
    ]
    conv = responses.to_transcript(items, keep_task=True)
    turns = conv.transcript.turns
    assert turns[2].role is Role.ASSISTANT
    assert len({turns[1].tool_call_id, turns[2].tool_call_id, turns[3].tool_call_id}) == 1
    assert conv.task_turn_id == "i0"
    only_approval = responses.to_transcript(items[1:3], keep_task=True)
    assert only_approval.task_turn_id is None


# --- a beta system message without content ----------------------------------------------------

def test_a_system_message_with_only_its_output_config_is_accepted() -> None:
    history: list[Any] = [
        BetaUserMessageParam(role="user", content="Summarize the log."),
        BetaSystemMessageParam(role="system", clear_at="next_user_message",
                               output_config={"effort": "low"}),
        BetaAssistantMessageParam(role="assistant", content="Done."),
        BetaUserMessageParam(role="user", content="Thanks."),
    ]
    conv = messages.to_transcript(history)
    assert conv.render(conv.transcript)[1] == history
    assert conv.transcript.turns[1].role is Role.SYSTEM
    messages.validate(history)
    result = messages.compact(history, model=CLAUDE, budget=10_000)
    assert sent(result) == history
    with pytest.raises(ValidationError) as neither:
        messages.to_transcript([history[0], {"role": "system", "clear_at": "never"}])
    assert neither.value.details["rule"] == "missing_content"


# --- at most four cache_control markers, tools included (issue 32, point 9) -------------------

MARK = BetaCacheControlEphemeralParam(type="ephemeral")
TOOL = BetaToolParam(name="read_file", description="Read a file.", cache_control=MARK,
                     input_schema={"type": "object", "properties": {}})


def marked(count: int) -> list[Any]:
    """A history with ``count`` cache_control markers in its messages."""
    history: list[Any] = []
    for n in range(5):
        block = BetaTextBlockParam(type="text", text=f"Question {n}.")
        if n < count:
            block["cache_control"] = MARK
        history.append(BetaUserMessageParam(role="user", content=[block]))
        history.append(BetaAssistantMessageParam(role="assistant", content=f"Answer {n}."))
    history.append(BetaUserMessageParam(role="user", content="Last."))
    return history


def test_compact_and_sessions_refuse_a_fifth_marker_on_a_tool() -> None:
    history = marked(4)
    with pytest.raises(ValidationError) as compacted:
        messages.compact(history, model=CLAUDE, budget=10_000, tools=[TOOL])
    assert compacted.value.details["rule"] == "too_many_cache_breakpoints"
    session = CompactionSession(messages.FORMAT, model=CLAUDE)
    with pytest.raises(ValidationError) as prepared:
        session.prepare(messages=history, tools=[TOOL], max_tokens=100)
    assert prepared.value.details == compacted.value.details
    fine = session.prepare(messages=marked(3), tools=[TOOL], max_tokens=100)
    assert json.dumps(fine.request).count('"cache_control"') == 4


def test_a_session_reading_on_counts_the_new_markers_with_the_tools() -> None:
    session = CompactionSession(messages.FORMAT, model=CLAUDE)
    history = marked(3)
    session.prepare(messages=history, tools=[TOOL], max_tokens=100)
    more = [*history, BetaAssistantMessageParam(role="assistant", content=[
        BetaTextBlockParam(type="text", text="Noted.", cache_control=MARK)]),
        BetaUserMessageParam(role="user", content="And?")]
    with pytest.raises(ValidationError) as refused:
        session.prepare(messages=more, tools=[TOOL], max_tokens=100)
    assert refused.value.details["rule"] == "too_many_cache_breakpoints"


api = mocked_api()


def test_a_wrapped_anthropic_client_never_sends_five_markers(api: respx.Router) -> None:
    route = api.post("https://api.anthropic.test/v1/messages").respond(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": CLAUDE,
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})
    client = CompactingAnthropic(Anthropic(api_key="test", base_url="https://api.anthropic.test",
                                           max_retries=0))
    with pytest.raises(ValidationError):
        client.messages.create(model=CLAUDE, max_tokens=100, messages=marked(4), tools=[TOOL])
    assert not route.called
    client.messages.create(model=CLAUDE, max_tokens=100, messages=marked(3), tools=[TOOL])
    assert route.calls.last.request.content.count(b'"cache_control"') == 4


# --- every type at once, at 15%, 35% and 60%, with and without a summarizer -------------------

def _summarize(request: Any, turns: Any) -> str:
    return f"Earlier: {len(turns)} turns of research on the parser."


def all_anthropic_results() -> list[Any]:
    history: list[Any] = [BetaUserMessageParam(role="user", content="Research the parser.")]
    for kind in sorted(RESULTS):
        make, name, _ = RESULTS[kind]
        history += server_history(make(), name, log=False)[1:]
    return history


def _anthropic_results_checked(out: list[dict[str, Any]]) -> None:
    """Every result block that was sent has its call before it in its message and validates
    against its SDK param type."""
    types = {make()["type"]: param for make, _, param in RESULTS.values()}
    for message in out:
        content = message["content"]
        for position, block in enumerate(content if isinstance(content, list) else []):
            if block["type"] in types:
                conforms(types[block["type"]], block)
                assert any(earlier.get("id") == block["tool_use_id"]
                           for earlier in content[:position])


@pytest.mark.parametrize("share", [0.15, 0.35, 0.60])
@pytest.mark.parametrize("summarized", [False, True])
def test_anthropic_server_results_stay_valid_at_any_budget(share: float,
                                                           summarized: bool) -> None:
    history = all_anthropic_results()
    result = messages.compact(history, model=CLAUDE, budget=budget_for(history, share),
                              summarizer=_summarize if summarized else None)
    messages.validate(sent(result))
    _anthropic_results_checked(sent(result))
    assert not result.budget_unmet
    assert result.replacements  # the tool items gave way first


@pytest.mark.parametrize("share", [0.15, 0.35, 0.60])
@pytest.mark.parametrize("summarized", [False, True])
def test_responses_tool_items_stay_valid_at_any_budget(share: float, summarized: bool) -> None:
    items: list[Any] = [EasyInputMessageParam(role="user", content="Research the parser.")]
    for kind in sorted(ITEMS):
        items += responses_items(copy.deepcopy(ITEMS[kind][0]))[1:]
    budget = int(responses.count_tokens(items) * share)
    result = responses.compact(items, budget=budget,
                               summarizer=_summarize if summarized else None)
    assert isinstance(result.input, list)
    responses.validate(result.input)
    types = {item["type"]: param for item, param, _ in ITEMS.values()}
    for item in result.input:
        if item.get("type") in types:
            conforms(types[item["type"]], item)
    assert not result.budget_unmet
    assert result.replacements  # the tool items gave way first

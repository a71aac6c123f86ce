"""OpenAI Responses ``instructions`` + ``input`` items ↔ ``Transcript``, token counts, compaction.

One item is one turn, and ``instructions`` one more: a SYSTEM turn with the id ``instructions``.
user → USER; system/developer messages and items → SYSTEM; assistant messages and the model's
items (reasoning, tool calls) → ASSISTANT; tool outputs → TOOL. Exchanges: a call with its output
(by ``call_id``), an MCP approval request with its response, and a reasoning item with the rest of
its response (see ``_parts``). Kept items render back as they came, unknown keys and types too.

>>> conv = to_transcript("Hi", instructions="Be brief.", estimator=_Chars())
>>> conv.render(conv.transcript)
('Be brief.', 'Hi')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias, Unpack

from cutctx import Role, TokenEstimator, ValidationError

from ..counting import chosen_estimator
from ..history import (
    BOUNDARY_KIND,
    SUMMARY_HEADER,
    Conversion,
    Growing,
    Part,
    PinSpec,
    check_call_pairs,
    convert,
    copy_plain,
    extend,
    invalid,
    plain_tools,
    to_plain,
)
from ..planning import (
    FormatResult,
    HistoryFormat,
    Job,
    acompacted,
    compacted,
    deferral,
    deferred_budget,
    given,
    reply_allowance,
    resolve_budget,
    server_held,
    start,
)
from ..settings import CompactKeywords, PlanKeywords, budget_or_window, settings_of
from ..tiktoken import TiktokenEstimator
from ._responses_tokens import (
    ITEM_TOKENS,
    counter_for,
    describe,
    item_tokens,
    request_tools_tokens,
)
from ._tokens import REPLY_PRIMING_TOKENS

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputItemParam

__all__ = [
    "DEFAULT_MODEL",
    "FORMAT",
    "INSTRUCTIONS_TURN_ID",
    "ResponsesCodec",
    "ResponsesCompactKeywords",
    "ResponsesKeywords",
    "ResponsesResult",
    "acompact",
    "compact",
    "count_tokens",
    "overhead_tokens",
    "plan",
    "to_transcript",
    "validate",
]

Rendered: TypeAlias = tuple[str | None, str | list[dict[str, Any]]]
"""``(instructions, input)``, ready for ``client.responses.create``."""

INSTRUCTIONS_TURN_ID = "instructions"
"""The turn id of the request's ``instructions`` (a SYSTEM turn)."""
DEFAULT_MODEL = "gpt-5"
"""The model counts are for when a call names none (``result.model`` says so)."""
_NOUN = "item"
SUMMARY_ROLES = ("user", "assistant", "system", "developer")

_MESSAGE_ROLES = {
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
}
_CALL_OUTPUTS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
"""Calls the client executes, which the API requires answered, and the item answering each."""
_ANSWERS = {output: call for call, output in _CALL_OUTPUTS.items()}
_LOOSE_PAIRS = {
    "tool_search_call": "tool_search",
    "tool_search_output": "tool_search",
    "program": "program",
    "program_output": "program",
}
"""Items paired by ``call_id`` that travel together when both are present, but need not be."""
_MASK_FIELDS = {
    "function_call_output": "output",
    "custom_tool_call_output": "output",
    "local_shell_call_output": "output",
    "apply_patch_call_output": "output",
    "shell_call_output": "output",
    "program_output": "result",
}
"""Outputs whose body can hold the masking stub, and the field it replaces. The others (a
computer screenshot, loaded tool definitions) are USER turns, which the masking policy skips."""
_SERVER_RESULTS = {
    "code_interpreter_call": "outputs",
    "mcp_call": "output",
    "image_generation_call": "result",
    "file_search_call": "results",
    "web_search_call": "action",
}
"""Built-in and MCP tool items that carry their own result, and the field holding it: TOOL
turns (deduplicated, clipped or masked like a function output) when that field has content."""
_SYSTEM_ITEMS = frozenset({"additional_tools", "configuration_update", "compaction_trigger"})
_LABELS = {
    "computer_call": "computer",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "apply_patch_call": "apply_patch",
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "tool_search_call": "tool_search",
}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})


class _Chars:
    """A tiny estimator for doctests (4 characters a token)."""

    def estimate_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4


class ResponsesCodec:
    """The Responses format: what is specific to it, and nothing else."""

    noun = _NOUN
    id_prefix = "i"

    def __init__(self, summary_role: str = "user", *, text_input: bool = False) -> None:
        if summary_role not in SUMMARY_ROLES:
            raise invalid("option", 0, "summary_role", "summary_role",
                          f"summary_role must be one of {', '.join(SUMMARY_ROLES)}")
        self.summary_role = summary_role
        self.text_input = text_input

    def render_masked(self, part: Part, stub: str) -> Any:
        payload = copy_plain(part.payload)
        if part.kind in _SERVER_RESULTS:
            return _server_result_stub(payload, stub)
        if part.kind == "shell_call_output":
            outcome = payload["output"][-1]["outcome"]
            payload["output"] = [{"stdout": stub, "stderr": "", "outcome": outcome}]
        elif part.kind in _MASK_FIELDS:
            payload[_MASK_FIELDS[part.kind]] = stub
        elif part.kind in ("message", "text"):
            payload["content"] = stub
        else:
            raise invalid(_NOUN, part.index, "type", "unmaskable_item",
                          f"a {part.kind} item has no body a stub can replace")
        return payload

    def body(self, part: Part) -> Any:
        field = _SERVER_RESULTS.get(part.kind) or _MASK_FIELDS.get(part.kind, "content")
        return part.payload.get(field)

    def kept_before_boundary(self, part: Part) -> bool:
        """What a compaction item does not cover: user messages (``responses.compact``
        returns them all before its compaction item), and system/developer messages and
        configuration items (instructions and tools, which cutctx never drops)."""
        if part.role is Role.USER:
            return part.kind in ("message", "text")
        return part.role is Role.SYSTEM and part.kind != BOUNDARY_KIND

    def content(self, part: Part) -> Any:
        if part.kind == "shell_call_output":
            return None  # chunks of stdout and stderr, not parts: clipped as plain text
        return self.body(part)

    def with_content(self, part: Part, content: Any) -> Any:
        return {**copy_plain(part.payload), _MASK_FIELDS.get(part.kind, "content"): content}

    def piece(self, block: Any) -> tuple[str, str | None]:
        kind = block.get("type") if isinstance(block, dict) else None
        key = "text" if kind in _TEXT_PARTS else "refusal" if kind == "refusal" else None
        if key is not None and isinstance(block.get(key), str):
            return block[key], key
        return f"[{kind}]", None

    def text_block(self, text: str) -> Any:
        return {"type": "input_text", "text": text}

    def render_summary(self, text: str, replaced: int) -> Any:
        return {"role": self.summary_role, "content": SUMMARY_HEADER + text}

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> Rendered:
        instructions: str | None = None
        items: list[dict[str, Any]] = []
        for part, payload in rendered:
            if part is not None and part.turn_id == INSTRUCTIONS_TURN_ID:
                instructions = payload
            else:
                items.append(payload)
        if self.text_input and len(items) == 1 and rendered[-1][0] is not None \
                and rendered[-1][0].kind == "text":
            return instructions, items[0]["content"]
        return instructions, items


def _server_result_stub(payload: dict[str, Any], stub: str) -> dict[str, Any]:
    """A built-in or MCP tool item with its result replaced: its type, ids, call (code,
    arguments, query) and status kept; the stub (or clip) where the result was, where the item
    has a text field for it (a generated image or a search's sources just go)."""
    kind = payload["type"]
    if kind == "code_interpreter_call":
        payload["outputs"] = [{"type": "logs", "logs": stub}]
    elif kind == "mcp_call":
        payload["output"] = stub
    elif kind == "file_search_call":
        payload["results"] = [{"text": stub}]
    elif kind == "image_generation_call":
        payload["result"] = None
    else:  # web_search_call: the sources it read
        payload["action"] = {key: value for key, value in payload["action"].items()
                             if key != "sources"}
    return payload


def _server_result_text(item: Mapping[str, Any], kind: str) -> str | None:
    """The result a built-in or MCP tool item carries, as text; None when it carries none (it
    is then an ASSISTANT turn like any other call)."""
    body = item.get(_SERVER_RESULTS[kind])
    if kind == "code_interpreter_call" and isinstance(body, list) and body:
        return "\n".join(str(output["logs"]) if isinstance(output.get("logs"), str)
                         else f"[{output.get('type')}]"
                         for output in body if isinstance(output, Mapping)) or None
    if kind == "mcp_call" and isinstance(body, str) and body:
        return body
    if kind == "image_generation_call" and isinstance(body, str) and body:
        return "[generated image]"
    if kind == "file_search_call" and isinstance(body, list) and body:
        return "\n".join(str(result.get("text", "")) for result in body
                         if isinstance(result, Mapping)) or None
    if kind == "web_search_call" and isinstance(body, Mapping) \
            and isinstance(body.get("sources"), list) and body["sources"]:
        return "\n".join(str(source.get("url", "")) for source in body["sources"]
                         if isinstance(source, Mapping)) or None
    return None


@dataclass(frozen=True, slots=True)
class _Item:
    """What one item is, before the links that depend on its neighbours."""

    role: Role
    text: str
    kind: str
    output_side: bool
    """Produced by the model (as opposed to supplied by the caller): extends a response."""
    call: str | None = None
    answer: str | None = None
    links: tuple[str, ...] = ()
    label: str | None = None


def _string(item: Mapping[str, Any], index: int, field: str, rule: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value:
        raise invalid(_NOUN, index, field, rule, f"{field} must be a non-empty string")
    return value


def _content_text(content: Any, index: int, field: str) -> str:
    """Content as a model reads it: text parts' text, other parts as ``[type]`` placeholders."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(_NOUN, index, field, "content_type",
                      f"{field} must be a string or a list of parts")
    pieces: list[str] = []
    for position, part in enumerate(content):
        where = f"{field}[{position}]"
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise invalid(_NOUN, index, where, "part_type", "a content part needs a string 'type'")
        kind = part["type"]
        key = "text" if kind in _TEXT_PARTS else "refusal" if kind == "refusal" else None
        if key is None:
            pieces.append(f"[{kind}]")
        elif not isinstance(part.get(key), str):
            raise invalid(_NOUN, index, f"{where}.{key}", "part_text",
                          f"a {kind} part needs a string {key!r}")
        else:
            pieces.append(part[key])
    return "\n".join(pieces)


def _message(item: Mapping[str, Any], index: int) -> _Item:
    role_name = item.get("role")
    role = _MESSAGE_ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise invalid(_NOUN, index, "role", "unknown_role",
                      "role must be user, assistant, system or developer")
    if "content" not in item:
        raise invalid(_NOUN, index, "content", "missing_content", "content is required")
    text = _content_text(item["content"], index, "content")
    return _Item(role, text, "message", output_side=role is Role.ASSISTANT)


def _call(item: Mapping[str, Any], index: int, kind: str) -> _Item:
    call_id = _string(item, index, "call_id", "missing_id")
    if kind in ("function_call", "custom_tool_call"):
        name = _string(item, index, "name", "missing_name")
        field = "arguments" if kind == "function_call" else "input"
        body = item.get(field)
        if not isinstance(body, str):
            raise invalid(_NOUN, index, field, f"{field}_type", f"{field} must be a string")
        text = f"[tool call {name}: {body}]"
    else:
        name = _LABELS[kind]
        text = f"[{kind}] {describe(item)}"
    return _Item(Role.ASSISTANT, text, kind, True, call=f"{kind}:{call_id}", label=name)


def _output(item: Mapping[str, Any], index: int, kind: str) -> _Item:
    id_field = "id" if kind == "local_shell_call_output" and "call_id" not in item else "call_id"
    call_id = _string(item, index, id_field, "missing_id")
    body = item.get("output")
    maskable = kind in _MASK_FIELDS
    if kind in ("function_call_output", "custom_tool_call_output"):
        if "output" not in item:
            raise invalid(_NOUN, index, "output", "missing_output", "output is required")
        text = _content_text(body, index, "output")
    elif kind == "computer_call_output":
        if not isinstance(body, Mapping):
            raise invalid(_NOUN, index, "output", "output_type", "output must be a screenshot")
        text = "[computer_screenshot]"
    elif kind == "shell_call_output":
        chunks = body if isinstance(body, list) else []
        maskable = bool(chunks) and all(isinstance(chunk, Mapping) for chunk in chunks) \
            and isinstance(chunks[-1].get("outcome"), Mapping)
        text = "\n".join(chunk[key] for chunk in chunks if isinstance(chunk, Mapping)
                         for key in ("stdout", "stderr") if isinstance(chunk.get(key), str))
    else:
        text = body if isinstance(body, str) else f"[{kind}]"
    role = Role.TOOL if maskable else Role.USER
    return _Item(role, text, kind, False, answer=f"{_ANSWERS[kind]}:{call_id}")


def _reasoning(item: Mapping[str, Any], index: int) -> _Item:
    texts: list[str] = []
    for field in ("summary", "content"):
        parts = item.get(field)
        if parts is None:
            continue
        if not isinstance(parts, list):
            raise invalid(_NOUN, index, field, f"{field}_type", f"{field} must be a list")
        if parts:
            texts.append(_content_text(parts, index, field))
    sealed = item.get("encrypted_content")
    if sealed is not None and not isinstance(sealed, str):
        raise invalid(_NOUN, index, "encrypted_content", "encrypted_content_type",
                      "encrypted_content must be a string")
    return _Item(Role.ASSISTANT, "\n\n".join(texts) or "[reasoning]", "reasoning", True)


def _other(item: Mapping[str, Any], index: int, kind: str) -> _Item:
    """Built-in tool calls, MCP items, programs, references and unknown types."""
    links: tuple[str, ...] = ()
    label = _LABELS.get(kind)
    if kind in _LOOSE_PAIRS and isinstance(item.get("call_id"), str):
        links = (f"{_LOOSE_PAIRS[kind]}:{item['call_id']}",)
    if kind == "mcp_approval_request":
        links = (f"approval:{_string(item, index, 'id', 'missing_id')}",)
    elif kind == "mcp_approval_response":
        links = (f"approval:{_string(item, index, 'approval_request_id', 'missing_id')}",)
    elif kind == "mcp_call" and isinstance(item.get("approval_request_id"), str):
        links = (f"approval:{item['approval_request_id']}",)
    elif kind == "item_reference":
        _string(item, index, "id", "missing_id")
    if kind.startswith("mcp_") and isinstance(item.get("name"), str):
        label = f"{item.get('server_label')}.{item['name']}"
    result = _server_result_text(item, kind) if kind in _SERVER_RESULTS else None
    if kind in _SYSTEM_ITEMS or kind == BOUNDARY_KIND:
        # A compaction is kept verbatim where it stands (``covered_turns``: what it covers).
        role, output_side = Role.SYSTEM, False
    elif kind == "mcp_approval_response":
        role, output_side = Role.ASSISTANT, False  # the caller's tool plumbing, not a person
    elif kind.endswith(("_output", "_response")):
        role, output_side = Role.USER, False
    else:
        role, output_side = Role.TOOL if result is not None else Role.ASSISTANT, True
    if kind == "program_output" and isinstance(item.get("result"), str):
        role, text = Role.TOOL, item["result"]
    elif kind == "item_reference":
        text = "[item_reference]"
    elif result is not None:
        text = result
    elif kind == BOUNDARY_KIND:
        text = "[compaction]"
    else:
        text = f"[{kind}] {describe(item)}"
    return _Item(role, text, kind, output_side, links=links, label=label)


def _read(item: Any, index: int) -> _Item:
    if not isinstance(item, Mapping):
        raise invalid(_NOUN, index, "", "item_type", "an item must be an object")
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None and item.get("object") == "response":
        raise invalid(_NOUN, index, "", "response_not_item",
                      "this is a whole Response: add its output items to the input "
                      "(input += response.output), not the response")
    if kind is None and "id" in item:
        kind = "item_reference"  # the API's own default for an item with only an id
    if not isinstance(kind, str) or not kind:
        raise invalid(_NOUN, index, "type", "item_type", "an item needs a string type or a role")
    if kind == "message":
        return _message(item, index)
    if kind in _CALL_OUTPUTS:
        return _call(item, index, kind)
    if kind in _ANSWERS:
        return _output(item, index, kind)
    if kind == "reasoning":
        return _reasoning(item, index)
    return _other(item, index, kind)


@dataclass
class _Reading:
    """What reading the items so far leaves for the items after them."""

    issued: dict[str, str | None] = dataclasses.field(default_factory=dict)
    approvals: set[str] = dataclasses.field(default_factory=set)
    references: list[str] = dataclasses.field(default_factory=list)
    seen_ids: set[str] = dataclasses.field(default_factory=set)
    response: str | None = None
    unfollowed: int | None = None
    linked: bool = False
    """Whether an item was linked by a program's caller id (links may reach later items)."""
    pending: set[str] = dataclasses.field(default_factory=set)
    """Calls not answered yet."""
    trigger: int | None = None
    """Index of a ``compaction_trigger`` item read (it must be the last item)."""

    def resumable(self) -> bool:
        """Whether the items read so far can be followed by a separate reading of the rest:
        nothing a later item could still attach to (a response run, approvals, references)."""
        return (self.response is None and self.unfollowed is None and not self.approvals
                and not self.references and not self.linked and not self.pending)

    def copy(self) -> _Reading:
        return _Reading(dict(self.issued), set(self.approvals), list(self.references),
                        set(self.seen_ids), self.response, self.unfollowed, self.linked,
                        set(self.pending), self.trigger)


def _parts(
    items: Sequence[Any], instructions: str | None, counter: TiktokenEstimator, *, text: bool,
    start: int = 0, reading: _Reading | None = None,
) -> list[Part]:
    """Read and validate every item; link what must travel together.

    A *response* is a run of consecutive model-produced items (assistant messages, reasoning,
    calls, references, unknown items); it ends at the next caller-supplied item (a user, system
    or developer message, any ``*_output`` or ``*_response`` item, a configuration item, a
    compaction) or at the end. A reasoning item links to every item after it in its response,
    and must be followed there by a non-reasoning item, as the API requires.
    """
    parts: list[Part] = []
    if instructions is not None and start == 0:
        tokens = item_tokens(_as_message(instructions, "developer"), counter)
        parts.append(Part(-1, Role.SYSTEM, instructions, instructions, tokens, "instructions",
                          turn_id=INSTRUCTIONS_TURN_ID))
    state = reading if reading is not None else _Reading()
    issued, approvals, references = state.issued, state.approvals, state.references
    seen_ids = state.seen_ids
    response, unfollowed = state.response, state.unfollowed
    for index, raw in enumerate(items[start:], start=start):
        if state.trigger is not None:
            raise invalid(_NOUN, state.trigger, "type", "compaction_trigger_not_last",
                          "a compaction_trigger item must be the last input item")
        item = _read(raw, index)
        if item.kind == "compaction_trigger":
            state.trigger = index
        links = list(item.links)
        if item.kind != "item_reference" and isinstance(raw.get("id"), str):
            if raw["id"] in seen_ids:
                raise invalid(_NOUN, index, "id", "duplicated_item_id", "item id used twice")
            seen_ids.add(raw["id"])
        if item.output_side:
            if item.kind == "reasoning":
                response = response or f"response:{index}"
                unfollowed = index if unfollowed is None else unfollowed
            else:
                unfollowed = None
            if response is not None:
                links.append(response)
        else:
            _check_followed(unfollowed)
            response = unfollowed = None
        calls: tuple[str, ...] = ()
        answers: tuple[str, ...] = ()
        label = item.label
        if item.kind == "item_reference":
            references.append(f"reference:{index}")
            links.append(references[-1])
        if item.call is not None:
            calls = (item.call,)
            issued[item.call] = item.label
            state.pending.add(item.call)
        if isinstance(raw.get("caller"), Mapping) and isinstance(raw["caller"].get("caller_id"),
                                                                 str):
            links.append(f"program:{raw['caller']['caller_id']}")
            state.linked = True
        unknown = item.answer is not None and item.answer not in issued
        if item.kind == "mcp_approval_request":
            approvals.add(item.links[0])
        elif item.kind == "mcp_approval_response" and item.links[0] not in approvals:
            unknown = True
            if not references:
                raise invalid(_NOUN, index, "approval_request_id", "orphaned_approval_response",
                              "approval response answers no earlier approval request")
        if unknown and references:
            # It answers an item we cannot see (stored server-side, named by a reference).
            links.extend(references)
        elif item.answer is not None:
            answers = (item.answer,)
            label = issued.get(item.answer)
            state.pending.discard(item.answer)
        parts.append(Part(index, item.role, item.text, raw, item_tokens(raw, counter),
                          "text" if text else item.kind, calls, answers,
                          tuple(dict.fromkeys(links)), label))
    _check_followed(unfollowed)
    state.response, state.unfollowed = response, unfollowed
    check_call_pairs(parts, _NOUN, "call_id", "call_id")
    return parts


def _check_followed(reasoning_index: int | None) -> None:
    if reasoning_index is not None:
        raise invalid(_NOUN, reasoning_index, "type", "reasoning_without_following_item",
                      "reasoning item has no following item from the same response")


def _as_message(text: str, role: str) -> dict[str, Any]:
    return {"role": role, "content": text}


def _plain_input(input_items: Any) -> tuple[list[Any], bool]:
    """The items as plain data, and whether ``input`` was a string (one user message)."""
    if isinstance(input_items, str):
        return [_as_message(input_items, "user")], True
    if isinstance(input_items, bytes | Mapping) or not isinstance(input_items, Sequence):
        raise invalid(_NOUN, 0, "input", "input_type", "input must be a string or a list of items")
    plain = [to_plain(item, where=f"{_NOUN} {index}", index=index)
             for index, item in enumerate(input_items)]
    return plain, False


def _checked_instructions(instructions: Any) -> str | None:
    if instructions is not None and not isinstance(instructions, str):
        raise ValidationError("instructions must be a string or None",
                              {"field": "instructions", "rule": "instructions_type"})
    return instructions


def to_transcript(
    input_items: str | Sequence[Any],
    *,
    instructions: str | None = None,
    model: str | None = None,
    estimator: TokenEstimator | None = None,
    pin: PinSpec = None,
    summary_role: str = "user",
    keep_task: bool = False,
) -> Conversion[Rendered]:
    """Convert a Responses request's ``input`` (a string, or items as dicts or SDK objects).

    Validates it on the way; ``render`` gives back ``(instructions, input)``. ``pin`` names
    items by their index in ``input``; ``keep_task`` pins the first user message too.
    """
    plain, text = _plain_input(input_items)
    counter = counter_for(chosen_estimator(estimator, model), model)
    reading = _Reading()
    parts = _parts(plain, _checked_instructions(instructions), counter, text=text,
                   reading=reading)
    conv = convert(ResponsesCodec(summary_role, text_input=text), parts, plain, pin, keep_task,
                   count_text=counter.estimate_tokens)
    return conv if text else replace(conv, reading=reading)


def _extended(previous: Conversion[Rendered] | Growing[Rendered], items: Sequence[Any],
              known: int, estimator: TokenEstimator, pin: PinSpec,
              keep_task: bool) -> Growing[Rendered] | None:
    """``previous`` (of ``items[:known]``, plain) continued by the rest, reading only the rest;
    None where a later item could still attach to an earlier one (or the input was a string)."""
    reading = previous.reading
    if not isinstance(reading, _Reading) or not reading.resumable():
        return None
    reading = reading.copy()
    counter = counter_for(chosen_estimator(estimator, None), None)
    parts = _parts(items, None, counter, text=False, start=known, reading=reading)
    return extend(previous, parts, items, pin, keep_task, reading,
                  count_text=counter.estimate_tokens)


class _Zero:
    def estimate_tokens(self, text: str) -> int:
        return 0


def validate(input_items: str | Sequence[Any], *, instructions: str | None = None) -> None:
    """Raise ``cutctx.ValidationError`` if the API would reject this input's structure."""
    plain, text = _plain_input(input_items)
    _parts(plain, _checked_instructions(instructions), counter_for(_Zero(), None), text=text)


def overhead_tokens(tools: Sequence[Any] | None, estimator: TokenEstimator,
                    model: str | None = None) -> int:
    """Tokens of a request outside its items: reply priming plus tool definitions."""
    return REPLY_PRIMING_TOKENS + request_tools_tokens(plain_tools(tools),
                                                       counter_for(estimator, model))


def count_tokens(
    input_items: str | Sequence[Any],
    *,
    instructions: str | None = None,
    model: str | None = DEFAULT_MODEL,
    tools: Sequence[Any] | None = None,
    estimator: TokenEstimator | None = None,
) -> int:
    """The request's estimated prompt tokens: instructions, every item, priming and tools."""
    counter = chosen_estimator(estimator, model)
    conv = to_transcript(input_items, instructions=instructions, model=model, estimator=counter)
    return conv.transcript.token_estimate() + overhead_tokens(tools, counter, model)


class ResponsesKeywords(PlanKeywords, total=False):
    """``plan``'s keywords for Responses: the request's ``instructions`` and
    ``context_management`` too."""

    instructions: str | None
    context_management: Sequence[Any] | None


class ResponsesCompactKeywords(ResponsesKeywords, CompactKeywords, total=False):
    """``compact``'s keywords for Responses."""


_OWN = ("instructions", "context_management")


def plan(input_items: str | Sequence[Any], **options: Unpack[ResponsesKeywords]) -> Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    An int ``budget`` is the whole prompt's: the items get it minus priming and tools (the
    instructions are a turn of the transcript, so they count there); None: the model's window
    less ``reserve``. The other settings are ``CompactionSettings`` fields (``settings=`` and/or
    keywords). ``context_management`` is the request's: when it turns the server's compaction
    on (or the input ends with a ``compaction_trigger``), the history is left to the server
    while it fits the model's own limit (``result.deferred`` says why), and fitted without
    summaries above it; ``defer_to_server=False`` compacts as usual.
    """
    chosen = settings_of(options, "responses.compact", _OWN)
    model = options.get("model", DEFAULT_MODEL)
    goal, summarizer = budget_or_window(options.get("budget"), chosen, model), chosen.summarizer
    request = {"context_management": options.get("context_management"), "input": input_items}
    deferred = deferral(request, _server_compaction, chosen.defer_to_server)
    if deferred is not None:
        goal, summarizer = deferred_budget(goal, model, chosen.reserve), None
    counter = chosen_estimator(chosen.estimator, model)
    conv = to_transcript(input_items, instructions=options.get("instructions"), model=model,
                         estimator=counter, pin=chosen.pin,
                         summary_role=options.get("summary_role", "user"),
                         keep_task=chosen.keep_task)
    overhead = overhead_tokens(options.get("tools"), counter, model)
    return start(
        conv,
        resolve_budget(goal, overhead, chosen.keep_recent),
        policy=chosen.policy,
        summarizer=summarizer,
        estimator=counter,
        overhead=overhead,
        result_fields=lambda rendered: {"instructions": rendered[0], "input": rendered[1]},
        options=chosen,
        deferred=deferred,
        **_planning(conv, counter_for(counter, model), overhead),
    )


def _planning(_conv: Conversion[Any], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults: exact stub framing and a fresh measure."""
    counter = counter_for(estimator, getattr(estimator, "model", None))
    return {
        "stub_pad": ITEM_TOKENS,  # a masked output is its item framing plus the stub's text
        "measure": lambda rendered: _measure(rendered, counter, overhead),
    }


def _measure(rendered: Rendered, counter: TiktokenEstimator, overhead: int) -> int:
    """Estimated prompt tokens of a rendered request, counted afresh from what will be sent."""
    instructions, items = rendered
    if isinstance(items, str):
        items = [_as_message(items, "user")]
    total = overhead + sum(item_tokens(item, counter) for item in items)
    if instructions is not None:
        total += item_tokens(_as_message(instructions, "developer"), counter)
    return total


@dataclass(frozen=True, slots=True)
class ResponsesResult(FormatResult):
    """``compact``'s result: ``instructions`` and ``input`` ready for
    ``client.responses.create`` (``input`` stays a string if it was one and was kept)."""

    instructions: str | None = None
    input: str | list[ResponseInputItemParam] = ""


def compact(input_items: str | Sequence[Any],
            **options: Unpack[ResponsesCompactKeywords]) -> ResponsesResult:
    """Compact a Responses ``input`` to ``budget`` prompt tokens.

    Without a summarizer old tool outputs are masked, then the oldest exchanges dropped; with
    one, the default chain also folds a span into a summary. See ``plan`` for the settings.
    """
    return compacted(plan, input_items, options, ResponsesResult, DEFAULT_MODEL)


async def acompact(input_items: str | Sequence[Any],
                   **options: Unpack[ResponsesCompactKeywords]) -> ResponsesResult:
    """``compact`` with an async (or sync) summarizer; summary requests run concurrently."""
    return await acompacted(plan, input_items, options, ResponsesResult, DEFAULT_MODEL)


def _server_compaction(request: Mapping[str, Any]) -> str | None:
    """Why a request leaves compaction to the server: ``context_management`` turns its
    compaction on, or the input ends with a ``compaction_trigger`` (compact now)."""
    entries = given(request.get("context_management"))
    if isinstance(entries, Sequence) and not isinstance(entries, str | bytes):
        for entry in entries:
            kind = entry.get("type") if isinstance(entry, Mapping) else getattr(entry, "type",
                                                                                None)
            if kind == "compaction":
                return "server-side compaction is on (context_management)"
    items = given(request.get("input"))
    if isinstance(items, Sequence) and not isinstance(items, str | bytes) and items:
        last = items[-1]
        kind = last.get("type") if isinstance(last, Mapping) else getattr(last, "type", None)
        if kind == "compaction_trigger":
            return "the input ends with a compaction_trigger item"
    return None


def _unsupported(request: Mapping[str, Any]) -> str | None:
    for key in ("previous_response_id", "conversation"):
        if given(request.get(key)) is not None:
            return server_held(key)
    return None


FORMAT = HistoryFormat(
    name="openai-responses",
    list_key="input",
    side_key="instructions",
    to_transcript=lambda items, side, estimator, pin, keep_task: to_transcript(
        items, instructions=given(side), estimator=estimator, pin=pin, keep_task=keep_task),
    split=lambda rendered: rendered,
    overhead=lambda request, estimator: overhead_tokens(
        given(request.get("tools")), estimator, given(request.get("model"))),
    output_allowance=reply_allowance("max_output_tokens"),
    unsupported=_unsupported,
    planning=_planning,
    extend=lambda previous, items, known, _side, estimator, pin, keep_task: _extended(
        previous, items, known, estimator, pin, keep_task),
    safety_margin=0.02,
    server_compaction=_server_compaction,
)
"""How Responses requests carry their history (for sessions and the client wrapper)."""

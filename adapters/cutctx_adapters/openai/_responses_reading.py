"""Reading a Responses ``input``: each item validated and made a ``Part``, with the exchanges
it belongs to (a call and its output, an approval and its response, a reasoning item and the
rest of its response)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cutctx import Role, ValidationError

from ..history import BOUNDARY_KIND, Part, check_call_pairs, invalid, not_an_entry
from ..tiktoken import TiktokenEstimator
from ._responses_codec import INSTRUCTIONS_TURN_ID, MASK_FIELDS, NOUN, SERVER_RESULTS, TEXT_PARTS
from ._responses_tokens import describe, item_tokens
from ._shared import content_text, plain_items

__all__ = ["Reading", "as_message", "checked_instructions", "parts_of", "plain_input"]


def as_message(text: str, role: str) -> dict[str, Any]:
    """A plain message of ``role`` saying ``text`` (a string ``input`` or the instructions)."""
    return {"role": role, "content": text}


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


def _server_result_text(item: Mapping[str, Any], kind: str) -> str | None:
    """The result a built-in or MCP tool item carries, as text; None when it carries none (it
    is then an ASSISTANT turn like any other call)."""
    body = item.get(SERVER_RESULTS[kind])
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
    if (kind == "web_search_call" and isinstance(body, Mapping)
            and isinstance(body.get("sources"), list) and body["sources"]):
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
        raise invalid(NOUN, index, field, rule, f"{field} must be a non-empty string")
    return value


def _content_text(content: Any, index: int, field: str) -> str:
    """Content as a model reads it: text parts' text, other parts as ``[type]`` placeholders."""
    return content_text(content, NOUN, index, field, TEXT_PARTS)

def _message(item: Mapping[str, Any], index: int) -> _Item:
    role_name = item.get("role")
    role = _MESSAGE_ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise invalid(NOUN, index, "role", "unknown_role",
                      "role must be user, assistant, system or developer")
    if "content" not in item:
        raise invalid(NOUN, index, "content", "missing_content", "content is required")
    text = _content_text(item["content"], index, "content")
    return _Item(role, text, "message", output_side=role is Role.ASSISTANT)


def _call(item: Mapping[str, Any], index: int, kind: str) -> _Item:
    call_id = _string(item, index, "call_id", "missing_id")
    if kind in ("function_call", "custom_tool_call"):
        name = _string(item, index, "name", "missing_name")
        field = "arguments" if kind == "function_call" else "input"
        body = item.get(field)
        if not isinstance(body, str):
            raise invalid(NOUN, index, field, f"{field}_type", f"{field} must be a string")
        text = f"[tool call {name}: {body}]"
    else:
        name = _LABELS[kind]
        text = f"[{kind}] {describe(item)}"
    return _Item(Role.ASSISTANT, text, kind, True, call=f"{kind}:{call_id}", label=name)


def _output(item: Mapping[str, Any], index: int, kind: str) -> _Item:
    id_field = "id" if kind == "local_shell_call_output" and "call_id" not in item else "call_id"
    call_id = _string(item, index, id_field, "missing_id")
    body = item.get("output")
    maskable = kind in MASK_FIELDS
    if kind in ("function_call_output", "custom_tool_call_output"):
        if "output" not in item:
            raise invalid(NOUN, index, "output", "missing_output", "output is required")
        text = _content_text(body, index, "output")
    elif kind == "computer_call_output":
        if not isinstance(body, Mapping):
            raise invalid(NOUN, index, "output", "output_type", "output must be a screenshot")
        text = "[computer_screenshot]"
    elif kind == "shell_call_output":
        chunks = body if isinstance(body, list) else []
        maskable = (bool(chunks) and all(isinstance(chunk, Mapping) for chunk in chunks)
                    and isinstance(chunks[-1].get("outcome"), Mapping))
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
            raise invalid(NOUN, index, field, f"{field}_type", f"{field} must be a list")
        if parts:
            texts.append(_content_text(parts, index, field))
    sealed = item.get("encrypted_content")
    if sealed is not None and not isinstance(sealed, str):
        raise invalid(NOUN, index, "encrypted_content", "encrypted_content_type",
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
    result = _server_result_text(item, kind) if kind in SERVER_RESULTS else None
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
        raise not_an_entry(NOUN, index, item, "item_type")
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None and item.get("object") == "response":
        raise invalid(NOUN, index, "", "response_not_item",
                      "this is a whole Response: add its output items to the input "
                      "(input += response.output), not the response")
    if kind is None and "id" in item:
        kind = "item_reference"  # the API's own default for an item with only an id
    if not isinstance(kind, str) or not kind:
        raise invalid(NOUN, index, "type", "item_type", "an item needs a string type or a role")
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
class Reading:
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

    def copy(self) -> Reading:
        return Reading(dict(self.issued), set(self.approvals), list(self.references),
                        set(self.seen_ids), self.response, self.unfollowed, self.linked,
                        set(self.pending), self.trigger)


def parts_of(
    items: Sequence[Any], instructions: str | None, counter: TiktokenEstimator, *, text: bool,
    start: int = 0, reading: Reading | None = None,
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
        tokens = item_tokens(as_message(instructions, "developer"), counter)
        parts.append(Part(-1, Role.SYSTEM, instructions, instructions, tokens, "instructions",
                          turn_id=INSTRUCTIONS_TURN_ID))
    state = reading if reading is not None else Reading()
    issued, approvals, references = state.issued, state.approvals, state.references
    seen_ids = state.seen_ids
    response, unfollowed = state.response, state.unfollowed
    for index, raw in enumerate(items[start:], start=start):
        if state.trigger is not None:
            raise invalid(NOUN, state.trigger, "type", "compaction_trigger_not_last",
                          "a compaction_trigger item must be the last input item")
        item = _read(raw, index)
        if item.kind == "compaction_trigger":
            state.trigger = index
        links = list(item.links)
        if item.kind != "item_reference" and isinstance(raw.get("id"), str):
            if raw["id"] in seen_ids:
                raise invalid(NOUN, index, "id", "duplicated_item_id", "item id used twice")
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
                raise invalid(NOUN, index, "approval_request_id", "orphaned_approval_response",
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
    check_call_pairs(parts, NOUN, "call_id", "call_id")
    return parts


def _check_followed(reasoning_index: int | None) -> None:
    if reasoning_index is not None:
        raise invalid(NOUN, reasoning_index, "type", "reasoning_without_following_item",
                      "reasoning item has no following item from the same response")


def plain_input(input_items: Any) -> tuple[list[Any], bool]:
    """The items as plain data, and whether ``input`` was a string (one user message)."""
    if isinstance(input_items, str):
        return [as_message(input_items, "user")], True
    return plain_items(input_items, NOUN, "input", " or a string"), False


def checked_instructions(instructions: Any) -> str | None:
    if instructions is not None and not isinstance(instructions, str):
        raise ValidationError("instructions must be a string or None",
                              {"field": "instructions", "rule": "instructions_type"})
    return instructions

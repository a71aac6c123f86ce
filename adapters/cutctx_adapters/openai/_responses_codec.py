"""The Responses codec: an item kept, masked, clipped or summarized, rendered back as the API
takes it (``instructions`` apart, a string ``input`` kept a string)."""

from __future__ import annotations

from typing import Any, TypeAlias

from cutctx import Role

from ..history import BOUNDARY_KIND, Part, copy_plain, invalid
from ._shared import OpenAICodec

__all__ = [
    "INSTRUCTIONS_TURN_ID",
    "MASK_FIELDS",
    "NOUN",
    "SERVER_RESULTS",
    "TEXT_PARTS",
    "Rendered",
    "ResponsesCodec",
]

Rendered: TypeAlias = tuple[str | None, str | list[dict[str, Any]]]
"""``(instructions, input)``, ready for ``client.responses.create``."""

INSTRUCTIONS_TURN_ID = "instructions"
"""The turn id of the request's ``instructions`` (a SYSTEM turn)."""
NOUN = "item"
"""What the format calls one entry of its history."""


MASK_FIELDS = {
    "function_call_output": "output",
    "custom_tool_call_output": "output",
    "local_shell_call_output": "output",
    "apply_patch_call_output": "output",
    "shell_call_output": "output",
    "program_output": "result",
}
"""Outputs whose body can hold the masking stub, and the field it replaces. The others (a
computer screenshot, loaded tool definitions) are USER turns, which the masking policy skips."""


SERVER_RESULTS = {
    "code_interpreter_call": "outputs",
    "mcp_call": "output",
    "image_generation_call": "result",
    "file_search_call": "results",
    "web_search_call": "action",
}
"""Built-in and MCP tool items that carry their own result, and the field holding it: TOOL
turns (deduplicated, clipped or masked like a function output) when that field has content."""


TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
"""Content parts whose ``text`` a model reads."""


class ResponsesCodec(OpenAICodec):
    """The Responses format: what is specific to it, and nothing else."""

    noun = NOUN
    id_prefix = "i"
    text_kinds = TEXT_PARTS

    def __init__(self, summary_role: str = "user", *, text_input: bool = False) -> None:
        super().__init__(summary_role)
        self.text_input = text_input

    def render_masked(self, part: Part, stub: str) -> Any:
        payload = copy_plain(part.payload)
        if part.kind in SERVER_RESULTS:
            return _server_result_stub(payload, stub)
        if part.kind == "shell_call_output":
            outcome = payload["output"][-1]["outcome"]
            payload["output"] = [{"stdout": stub, "stderr": "", "outcome": outcome}]
        elif part.kind in MASK_FIELDS:
            payload[MASK_FIELDS[part.kind]] = stub
        elif part.kind in ("message", "text"):
            payload["content"] = stub
        else:
            raise invalid(NOUN, part.index, "type", "unmaskable_item",
                          f"a {part.kind} item has no body a stub can replace")
        return payload

    def body(self, part: Part) -> Any:
        field = SERVER_RESULTS.get(part.kind) or MASK_FIELDS.get(part.kind, "content")
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
        return {**copy_plain(part.payload), MASK_FIELDS.get(part.kind, "content"): content}

    def text_block(self, text: str) -> Any:
        return {"type": "input_text", "text": text}

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> Rendered:
        instructions: str | None = None
        items: list[dict[str, Any]] = []
        for part, payload in rendered:
            if part is not None and part.turn_id == INSTRUCTIONS_TURN_ID:
                instructions = payload
            else:
                items.append(payload)
        last = rendered[-1][0]
        if self.text_input and len(items) == 1 and last is not None and last.kind == "text":
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

"""The way back for Gemini ``contents``: turns regrouped into contents, stubs in place.

A content split into several turns (its function responses, a model's code results) is put back
as one content, its parts in their order; a replaced part keeps every field but what it said
(its ``thought_signature`` too). Nothing is merged or reordered: Gemini takes consecutive contents
of one role as they are. A model content left first gets a short user note before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from cutctx import Role

from ..history import OMITTED_NOTE, SUMMARY_HEADER, Part, copy_plain
from ._parts import field, function_response_text, is_text, key_of, part_text, stub_response

__all__ = ["DEFAULT_MODEL", "FUNCTION_RESPONSE", "NOUN", "SERVER_RESULTS",
           "ContentsCodec", "Rendered", "omitted_note"]

Rendered: TypeAlias = "list[dict[str, Any]] | str"

DEFAULT_MODEL = "gemini-2.5-flash"
"""The model counts are for when a call names none (``result.model`` says so)."""
NOUN = "content"
FUNCTION_RESPONSE = "function_response"
SERVER_RESULTS = frozenset({"tool_response", "code_execution_result"})
"""Model-side results a stub can stand for: a server tool's response, code execution output."""


def _response_body(part: Part) -> Any:
    """The ``function_response`` object of a function response turn."""
    return field(part.payload["parts"][0], FUNCTION_RESPONSE)


def _media_parts(part: Part) -> list[Any]:
    media = field(_response_body(part), "parts")
    return list(media) if isinstance(media, list) else []


class ContentsCodec:
    """The Gemini ``contents`` format: what is specific to it, and nothing else."""

    noun = NOUN
    id_prefix = "c"

    def __init__(self, *, starts_with_user: bool = True, as_string: str | None = None) -> None:
        self.starts_with_user = starts_with_user
        """Whether the history opened with a user content (a note then keeps it so)."""
        self.as_string = as_string
        """The string ``contents`` was given as, if it was one (rendered back as it was)."""

    def render_masked(self, part: Part, stub: str) -> Any:
        """A response keeps its part's fields and its ``id``/``name`` with the stub as
        ``{"output": stub}``, its media parts removed; a code result its outcome with the stub
        as output; anything else becomes the stub as text."""
        payload = copy_plain(part.payload)
        if part.kind == FUNCTION_RESPONSE or part.kind == "tool_response":
            block = payload["parts"][0]
            key = key_of(block, part.kind)
            block[key] = {name: value for name, value in block[key].items()
                          if name not in ("response", "parts")}
            block[key]["response"] = stub_response(stub)
        elif part.kind == "code_execution_result":
            block = payload["parts"][0]
            key = key_of(block, part.kind)
            block[key] = {**block[key], "output": stub}
        elif part.role is Role.ASSISTANT:
            calls = [p for p in payload["parts"] if field(p, "function_call") is not None]
            payload["parts"] = [{"text": stub}, *calls]
        else:
            payload["parts"] = [{"text": stub}]
        return payload

    def body(self, part: Part) -> Any:
        block = part.payload["parts"][0]
        if part.kind == FUNCTION_RESPONSE:
            return [field(_response_body(part), "response"), _media_parts(part)]
        if part.kind in SERVER_RESULTS:
            value = field(block, part.kind)
            return [field(value, "response"), field(value, "output"), field(value, "outcome")]
        return part.payload.get("parts")

    def content(self, part: Part) -> Any:
        if part.kind == FUNCTION_RESPONSE:
            text = function_response_text({"response": field(_response_body(part),
                                                             "response")})
            media = _media_parts(part)
            return [{"text": text}, *media] if media else text
        if part.role is Role.USER:
            return part.payload.get("parts")
        return None  # model-side results: stubs of their own (render_masked)

    def with_content(self, part: Part, content: Any) -> Any:
        payload = copy_plain(part.payload)
        if part.kind != FUNCTION_RESPONSE:
            payload["parts"] = content
            return payload
        block = payload["parts"][0]
        key = key_of(block, FUNCTION_RESPONSE)
        kept = {name: value for name, value in block[key].items()
                if name not in ("response", "parts")}
        items = content if isinstance(content, list) else [{"text": content}]
        texts = [item["text"] for item in items if is_text(item)]
        media = [item for item in items if not is_text(item)]
        block[key] = {**kept, "response": stub_response("\n".join(texts)),
                      **({"parts": media} if media else {})}
        return payload

    def piece(self, block: Any) -> tuple[str, str | None]:
        if is_text(block):
            return field(block, "text"), key_of(block, "text")
        return (part_text(block) if isinstance(block, Mapping) else ""), None

    def text_block(self, text: str) -> Any:
        return {"text": text}

    def render_summary(self, text: str, replaced: int) -> Any:
        return {"role": "user", "parts": [{"text": SUMMARY_HEADER + text}]}

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> Rendered:
        contents: list[dict[str, Any]] = []
        last: int | None = None  # the source index of ``contents[-1]``, if it has one
        for part, payload in rendered:
            source = None if part is None else part.index
            if source is not None and source == last:
                contents[-1]["parts"].extend(payload["parts"])  # one content, split in turns
            else:
                contents.append(payload)
            last = source
        if (self.starts_with_user and contents and contents[0].get("role") == "model"):
            contents.insert(0, omitted_note())
        if (self.as_string is not None and len(contents) == 1
                and contents[0].get("parts") == [{"text": self.as_string}]):
            return self.as_string
        return contents


def omitted_note() -> dict[str, Any]:
    """The user content put first when compaction leaves a model content at the start."""
    return {"role": "user", "parts": [{"text": OMITTED_NOTE}]}

"""What a Gemini ``Part`` carries, read the way the SDK reads it: either key spelling, and text.

The SDK takes a part's fields in snake_case (``function_call``) or by their wire names
(``functionCall``), and dumps its own objects by wire name; a history may hold both. Reading goes
through ``field``; a rewritten part keeps the spelling its caller used (``key_of``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["DATA_FIELDS", "data_kind", "field", "function_response_text", "is_text", "key_of",
           "part_text", "response_text", "stub_response", "wire_name"]

DATA_FIELDS = ("text", "inline_data", "file_data", "function_call", "function_response",
               "executable_code", "code_execution_result", "tool_call", "tool_response")
"""The fields of a ``Part`` that hold its data (google-genai 3.6: at most one is set); the rest
(``thought``, ``thought_signature``, ``video_metadata``, ``media_resolution``, ``part_metadata``,
the media metadata) qualify it."""


def wire_name(name: str) -> str:
    """``function_call`` -> ``functionCall``: the field's wire (and alias) name."""
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def key_of(mapping: Mapping[str, Any], name: str) -> str:
    """The key ``mapping`` holds ``name`` under (its snake or wire spelling); snake if neither."""
    if name in mapping:
        return name
    wire = wire_name(name)
    return wire if wire in mapping else name


def field(mapping: Any, name: str) -> Any:
    """``mapping``'s value for ``name`` in either spelling (None if absent or not a mapping)."""
    if not isinstance(mapping, Mapping):
        return None
    value = mapping.get(name)
    return value if value is not None else mapping.get(wire_name(name))


def data_kind(part: Mapping[str, Any]) -> str:
    """The data field a part carries (``DATA_FIELDS``), or ``"empty"`` for one that carries
    none (a bare ``thought_signature``, metadata only)."""
    for name in DATA_FIELDS:
        if field(part, name) is not None:
            return name
    return "empty"


def is_text(part: Any) -> bool:
    """Whether ``part`` is plain text a model reads as it is (not a thought summary)."""
    return (isinstance(part, Mapping) and isinstance(field(part, "text"), str)
            and field(part, "thought") is not True and data_kind(part) == "text")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def response_text(response: Any) -> str:
    """A function or tool response as read: its one string value (``{"output": "..."}``), else
    its JSON; an ``error`` key is flagged."""
    if isinstance(response, Mapping) and len(response) == 1:
        (key, value), = response.items()
        if isinstance(value, str):
            return f"[error] {value}" if key == "error" else value
    return _json(response) if response is not None else ""


def stub_response(stub: str) -> dict[str, Any]:
    """What a masked response carries instead of its own."""
    return {"output": stub}


def _media(kind: str, data: Any) -> str:
    mime = field(data, "mime_type")
    name = field(data, "display_name") or field(data, "file_uri")
    label = f"{kind} {mime}" if isinstance(mime, str) else kind
    return f"[{label}: {name}]" if isinstance(name, str) and kind == "file" else f"[{label}]"


def part_text(part: Mapping[str, Any]) -> str:
    """A part as a model reads it: text as it is, calls and results as short lines, media and
    opaque payloads as placeholders."""
    kind = data_kind(part)
    value = field(part, kind) if kind != "empty" else None
    if kind == "text":
        return f"[thought] {value}" if field(part, "thought") is True else str(value)
    if kind == "inline_data":
        return _media("inline", value)
    if kind == "file_data":
        return _media("file", value)
    if kind == "function_call":
        return f"[function call {field(value, 'name')}: {_json(field(value, 'args'))}]"
    if kind == "function_response":
        return function_response_text(value)
    if kind == "executable_code":
        return f"[code]\n{field(value, 'code') or ''}"
    if kind == "code_execution_result":
        return f"[code result {field(value, 'outcome')}]\n{field(value, 'output') or ''}"
    if kind == "tool_call":
        return f"[tool call {field(value, 'tool_type')}: {_json(field(value, 'args'))}]"
    if kind == "tool_response":
        return response_text(field(value, "response"))
    return ""


def function_response_text(value: Any) -> str:
    """A ``function_response`` as read: its response, then a placeholder per media part."""
    text = response_text(field(value, "response"))
    media = field(value, "parts")
    lines = [text] if text else []
    for item in media if isinstance(media, list) else []:
        kind = "inline" if field(item, "inline_data") is not None else "file"
        lines.append(_media(kind, field(item, f"{kind}_data")))
    return "\n".join(lines)

"""A caller's values as plain JSON data: fresh copies, SDK objects dumped as their SDK sends
them, and the error that names where a history is invalid (never its content)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from cutctx import ValidationError

__all__ = ["FIELD_NAMES", "MAX_DEPTH", "ToolRule", "copy_plain", "invalid", "not_a_list",
           "not_an_entry", "plain_tools", "string_field", "to_plain"]


def to_plain(value: Any, *, where: str = "history", index: int | None = None) -> Any:
    """A fresh plain-JSON copy of ``value``; SDK objects are dumped as the SDK itself sends them.

    The SDKs serialize a pydantic object with ``exclude_unset`` in JSON mode, by wire name (a
    field such as ``from_`` is sent as its alias ``from``), so a response message appended to a
    history round-trips to exactly what the SDK would have sent. ``str`` and ``int`` subclasses
    (``StrEnum`` roles, say) become plain ``str`` and ``int``.

    This is the one boundary between a caller's values and cutctx: anything that is not JSON
    data — an object the SDK cannot serialize, a value nested past ``MAX_DEPTH`` or containing
    itself, NaN — is a ``ValidationError`` naming ``where``/``index`` and a field path (keys of
    free-form data by position, not by name), never the value, and no warning escapes.
    """
    try:
        return _plain(value, 0)
    except _TooDeep:
        problem, details = "nested too deeply, or contains itself", {"rule": "json_depth"}
    except RecursionError:  # a model_dump recursing through a self-referencing object
        problem, details = "nested too deeply, or contains itself", {"rule": "json_depth"}
    except _NotJson:
        field, kind = _first_bad(value, "", 0)
        problem = f"value of type {kind} at {field or 'top level'!r} is not JSON data"
        details = {"field": field, "type": kind, "rule": "json_data"} if field else {
            "type": kind, "rule": "json_data"}
    located: dict[str, Any] = {"where": where, **details}
    if index is not None:
        located["index"] = index
    raise ValidationError(f"{where}: {problem} (rule {details['rule']})", located)


MAX_DEPTH = 100
"""How deeply a provider value may nest (dicts and lists). Deeper is refused at the boundary
(rule ``json_depth``), so nothing that walks it later (hashing, token readers) can overflow."""


ToolRule: TypeAlias = Callable[[Mapping[str, Any]], tuple[str, str] | None]
"""A format's rule for one tool definition: the field it lacks (or has wrong) and what the
format requires there; None when the definition has what the format requires."""


def plain_tools(tools: Any, rule: ToolRule | None = None) -> list[Any] | None:
    """A request's tool definitions as plain JSON copies (None when it has none), each an
    object that ``rule`` (the format's) accepts."""
    if tools is None:
        return None
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise ValidationError(
            f"tools must be a list of tool definitions, got {type(tools).__name__} "
            "(field 'tools', rule tools_type)", {"field": "tools", "rule": "tools_type"})
    plain = [to_plain(tool, where=f"tool {index}", index=index)
             for index, tool in enumerate(tools)]
    for index, tool in enumerate(plain):
        if not isinstance(tool, dict):
            raise invalid("tool", index, "", "tool_definition", "a tool definition must be an "
                          f"object, got {type(tool).__name__}", type=type(tool).__name__)
        broken = rule(tool) if rule is not None else None
        if broken is not None:
            raise invalid("tool", index, broken[0], "tool_definition", broken[1])
    return plain


def string_field(value: Mapping[str, Any], path: str) -> bool:
    """Whether ``value`` holds a non-empty string at ``path`` (``function.name``)."""
    found: Any = value
    for key in path.split("."):
        if not isinstance(found, Mapping):
            return False
        found = found.get(key)
    return isinstance(found, str) and bool(found)


def copy_plain(value: Any, where: str = "history") -> Any:
    """Copy mappings and lists recursively (strings and numbers are shared, being immutable)."""
    return to_plain(value, where=where)


class _NotJson(Exception):
    pass


class _TooDeep(Exception):
    pass


_SCALARS = frozenset({str, int, bool, type(None)})


def _plain(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth >= MAX_DEPTH:
        raise _TooDeep
    if kind is dict:  # the common case, without the ABC checks below
        return _plain_object(value, depth + 1)
    if kind is list:
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        raise _NotJson  # NaN and infinities have no JSON form; the SDKs refuse them too
    if isinstance(value, str):
        return str.__str__(value)  # a subclass (StrEnum, a framework's text type) as plain str
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Mapping):
        return _plain_object(value, depth + 1)
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    dumped = _dumped(value)
    if dumped is None:
        raise _NotJson
    return _plain(dumped, depth)


def _dumped(value: Any) -> Any | None:
    """An SDK (pydantic) object as the SDK sends it; None if it is not one or cannot be dumped.

    Serialization warnings are turned off: pydantic's carry the offending value (content)."""
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        return None
    options: dict[str, Any] = {"mode": "json", "exclude_unset": True, "by_alias": True,
                               "exclude": getattr(value, "__api_exclude__", None)}
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        options["warnings"] = False
    try:
        return dump(**options)
    except RecursionError:
        raise
    except Exception:  # the SDK's own serializer refused it (a reassigned field, bad text)
        return None


def _plain_object(value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    out = {key: _plain(item, depth) for key, item in value.items()}
    for key in out:
        if type(key) is not str:  # rare: rebuild with plain keys, or refuse
            return {_plain_key(key): item for key, item in out.items()}
    return out


def _plain_key(key: Any) -> str:
    """A str subclass key as a plain str; any other key is not JSON (the SDK would silently
    change it)."""
    if isinstance(key, str):
        return str.__str__(key)
    raise _NotJson


FIELD_NAMES = frozenset({
    "role", "content", "type", "text", "name", "id", "input", "output", "arguments", "function",
    "tool_calls", "tool_call_id", "tool_use_id", "call_id", "function_call", "refusal", "audio",
    "image_url", "url", "detail", "source", "data", "media_type", "file", "file_id",
    "file_data", "filename", "input_audio", "format", "is_error", "cache_control", "citations",
    "thinking", "signature", "summary", "encrypted_content", "status", "action", "results",
    "instructions", "system", "messages", "tools", "parameters", "description", "annotations",
    "stdout", "stderr", "outcome", "reasoning", "title", "context", "image", "document",
})
"""Keys a field path names as they are: the providers' own field names. Any other key (of tool
input, metadata: free-form, possibly secret) is named by its position, as ``<key 2>``."""


def _key_label(key: Any, position: int) -> str:
    return key if key in FIELD_NAMES else f"<key {position}>"


def _first_bad(value: Any, path: str, depth: int) -> tuple[str, str]:
    """Where the first non-JSON value sits (only walked once something failed)."""
    if depth > MAX_DEPTH:
        return path, "nesting"
    if isinstance(value, Mapping):
        for position, (key, item) in enumerate(value.items()):
            label = _key_label(key, position)
            if not isinstance(key, str):
                return path, f"{type(key).__name__} key"
            found = _first_bad(item, f"{path}.{label}" if path else label, depth + 1)
            if found[1]:
                return found
        return path, ""
    if isinstance(value, list | tuple):
        for position, item in enumerate(value):
            found = _first_bad(item, f"{path}[{position}]", depth + 1)
            if found[1]:
                return found
        return path, ""
    if isinstance(value, float) and not math.isfinite(value):
        return path, "non-finite float"
    if isinstance(value, str | int | float | bool) or value is None:
        return path, ""
    if callable(getattr(value, "model_dump", None)):
        dumped = _dumped(value)
        if dumped is None:
            return path, f"{type(value).__name__} (its SDK could not serialize it)"
        return _first_bad(dumped, path, depth)
    return path, type(value).__name__


def invalid(noun: str, index: int, field: str, rule: str, problem: str,
            **ids: Any) -> ValidationError:
    """A ValidationError naming where (``message 3``), the field and the rule; never content.
    An empty ``field``: the entry as a whole (no field is named)."""
    if not field:
        return ValidationError(f"{noun} {index}: {problem} (rule {rule})",
                               {"index": index, "rule": rule, **ids})
    return ValidationError(
        f"{noun} {index}: {problem} (field {field!r}, rule {rule})",
        {"index": index, "field": field, "rule": rule, **ids},
    )


def not_an_entry(noun: str, index: int, value: Any, rule: str) -> ValidationError:
    """The error for an entry of a history that is not an object: what it is instead."""
    return invalid(noun, index, "", rule,
                   f"each {noun} must be an object (a dict or an SDK {noun}), got "
                   f"{type(value).__name__}", type=type(value).__name__)


def not_a_list(field: str, noun: str, value: Any, alternative: str = "") -> ValidationError:
    """The error for a history that is not a list (``field``: its name in a request): what was
    given, and what to pass instead — a whole request's own list, or a list around one
    ``noun``. ``alternative``: what else the field takes (``or a string``)."""
    kind = type(value).__name__
    fix = ""
    if isinstance(value, Mapping) and field in value:
        fix = f"; that is a whole request: pass its list, request[{field!r}]"
    elif isinstance(value, Mapping):
        fix = f"; a mapping is one {noun}: pass a list of them"
    return ValidationError(f"{field} must be a list of {noun}s{alternative}, got {kind}{fix}",
                           {"field": field, "rule": f"{field}_type", "type": kind})

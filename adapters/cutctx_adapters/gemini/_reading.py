"""The way in for Gemini ``contents``: read and validate a history into parts, one engine turn
each, with its exchanges (a model turn and the function responses answering it) and its current
turn (what the API validates thought signatures on)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cutctx import CharRatioEstimator, Role, TokenEstimator, ValidationError

from ..history import (
    Conversion,
    CountText,
    Growing,
    Part,
    PinSpec,
    convert,
    extend,
    invalid,
    to_plain,
)
from ..planning import given
from ._codec import (
    FUNCTION_RESPONSE,
    NOUN,
    SERVER_RESULTS,
    ContentsCodec,
    Rendered,
)
from ._parts import DATA_FIELDS, field, part_text
from ._tokens import GeminiTokenCounter

__all__ = ["Config", "Reading", "as_contents", "config_field", "conversion_of", "current_turn",
           "extended", "plain_contents", "read_config", "read_content", "read_parts", "read_tools",
           "to_transcript", "validate"]

_ROLES = ("user", "model")
_MODEL_ONLY = frozenset({"function_call", "executable_code", "code_execution_result",
                         "tool_call", "tool_response"})
_CONTENT_KEYS = frozenset({"role", "parts"})


# ----------------------------------------------------------------------------------------------
# the request around the history


@dataclass(frozen=True, slots=True)
class Config:
    """What a ``GenerateContentConfig`` says that cutctx reads: what the prompt spends outside
    ``contents`` (plain copies; Python functions among the tools kept as they are)."""

    system_instruction: Any = None
    tools: tuple[Any, ...] = ()
    tool_config: Any = None


def config_field(config: Any, name: str) -> Any:
    """A config's field, from a mapping (either spelling) or a ``GenerateContentConfig``."""
    if isinstance(config, Mapping):
        return given(field(config, name))
    return given(getattr(config, name, None))


def _tool_of(tool: Any, index: int) -> Any:
    """A tool as counted: its plain JSON, or the object itself where the SDK takes one that is
    not JSON (a Python function it declares, an MCP session), counted by what it says of
    itself."""
    if callable(tool) and not hasattr(tool, "model_dump"):
        return tool
    try:
        return to_plain(tool, where=f"tool {index}", index=index)
    except ValidationError:
        return tool


def read_config(config: Any) -> Config:
    """The parts of a config (a dict or an SDK ``GenerateContentConfig``) that count."""
    if config is None:
        return Config()
    system = config_field(config, "system_instruction")
    return Config(
        None if system is None else to_plain(_bytes_free(system), where="system_instruction"),
        read_tools(config_field(config, "tools")),
        to_plain(config_field(config, "tool_config"), where="tool_config"),
    )


def read_tools(tools: Any, noun: str = "config") -> tuple[Any, ...]:
    """Tools as counted (see ``_tool_of``), from a config or given beside it (``noun``)."""
    if tools is None:
        return ()
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise invalid(noun, 0, "tools", "tools_type", "tools must be a list")
    return tuple(_tool_of(tool, index) for index, tool in enumerate(tools))


# ----------------------------------------------------------------------------------------------
# one content


def _bytes_free(value: Any, depth: int = 0) -> Any:
    """``value`` with every ``bytes`` (inline data, a signature) as URL-safe base64 text, as the
    SDK sends it: the very value where it holds none, else copied where it changed (the
    caller's containers are never changed). Past ``_BYTES_DEPTH`` left for ``to_plain``'s
    depth rule."""
    if isinstance(value, bytes | bytearray):
        return base64.urlsafe_b64encode(bytes(value)).decode("ascii")
    if depth > _BYTES_DEPTH:
        return value
    if isinstance(value, Mapping):
        items = {key: _bytes_free(item, depth + 1) for key, item in value.items()}
        changed = any(items[key] is not item for key, item in value.items())
        return items if changed else value
    if isinstance(value, list | tuple):
        copied = [_bytes_free(item, depth + 1) for item in value]
        changed = any(new is not old for new, old in zip(copied, value, strict=True))
        return copied if changed else value
    return value


_BYTES_DEPTH = 8
"""How deep in a content raw bytes are looked for (a part's fields are a few levels down)."""


def read_content(item: Any, index: int) -> Any:
    """A content as the caller gave it, made ready for ``to_plain``: a whole
    ``GenerateContentResponse`` appended to the history becomes its first candidate's content,
    and raw bytes in a dict become the base64 text the SDK would send."""
    candidates = None if isinstance(item, Mapping) else getattr(item, "candidates", None)
    if candidates and getattr(candidates[0], "content", None) is not None:
        item = candidates[0].content
    if not isinstance(item, Mapping) and hasattr(item, "parts") and hasattr(item, "role"):
        # A role the SDK class defaults (``UserContent``) is sent although it was never set.
        role = item.role
        return {"parts": item.parts} if role is None else {"parts": item.parts, "role": role}
    return _bytes_free(item) if isinstance(item, Mapping) else item


def as_contents(value: Any) -> Any:
    """A string as the one user content the SDK sends it as; anything else as it is."""
    return [{"role": "user", "parts": [{"text": value}]}] if isinstance(value, str) else value


def plain_contents(contents: Any) -> tuple[list[dict[str, Any]], str | None]:
    """Plain copies of the caller's contents, and the string they were given as (if one)."""
    if isinstance(contents, str):
        return as_contents(contents), contents
    if isinstance(contents, bytes | Mapping) or not isinstance(contents, Sequence):
        raise invalid(NOUN, 0, "contents", "contents_type",
                      "contents must be a string or a list of contents")
    out: list[dict[str, Any]] = []
    for index, item in enumerate(contents):
        plain = to_plain(read_content(item, index), where=f"{NOUN} {index}", index=index)
        out.append(plain)
    return out, None


def _check_part(part: Any, index: int, where: str, role: str) -> str:
    """Check one part; return the data field it carries."""
    if not isinstance(part, Mapping):
        raise invalid(NOUN, index, where, "part_type", "a part must be an object")
    present = [name for name in DATA_FIELDS if field(part, name) is not None]
    if len(present) > 1:
        raise invalid(NOUN, index, where, "part_data",
                      f"a part carries one of its data fields, not {len(present)}")
    kind = present[0] if present else "empty"
    if kind in _MODEL_ONLY and role != "model":
        raise invalid(NOUN, index, f"{where}.{kind}", "part_role",
                      f"a {kind} part may only appear in a model content")
    if kind == FUNCTION_RESPONSE and role != "user":
        raise invalid(NOUN, index, f"{where}.{kind}", "part_role",
                      "a function_response part may only appear in a user content")
    value = field(part, kind) if kind != "empty" else None
    if kind == "text" and not isinstance(value, str):
        raise invalid(NOUN, index, f"{where}.text", "text_type", "text must be a string")
    if kind in ("function_call", FUNCTION_RESPONSE):
        if not isinstance(value, Mapping):
            raise invalid(NOUN, index, f"{where}.{kind}", "part_type",
                          f"{kind} must be an object")
        name = field(value, "name")
        if not isinstance(name, str) or not name:
            raise invalid(NOUN, index, f"{where}.{kind}.name", "missing_name",
                          f"a {kind} needs a non-empty string 'name'")
        inner = "args" if kind == "function_call" else "response"
        if field(value, inner) is not None and not isinstance(field(value, inner), Mapping):
            raise invalid(NOUN, index, f"{where}.{kind}.{inner}", f"{inner}_type",
                          f"{inner} must be an object")
        call_id = field(value, "id")
        if call_id is not None and not isinstance(call_id, str):
            raise invalid(NOUN, index, f"{where}.{kind}.id", "id_type", "id must be a string")
    return kind


def _check_content(content: Any, index: int) -> tuple[str, list[Any], list[str]]:
    """The role, parts and part kinds of a content whose structure (not pairing) is valid."""
    if not isinstance(content, Mapping):
        raise invalid(NOUN, index, "", "content_type", "a content must be an object")
    if not content or not set(content) <= _CONTENT_KEYS:
        raise invalid(NOUN, index, "", "bare_part",
                      "a content is an object with 'role' and 'parts' (the SDK's shorthand of "
                      "bare parts and strings in a list is not read: wrap them in a content)")
    role = content.get("role")
    if role is None:
        role = "user"  # the API reads a content without a role as the user's
    if role not in _ROLES:
        raise invalid(NOUN, index, "role", "unknown_role", "role must be 'user' or 'model'")
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise invalid(NOUN, index, "parts", "parts_type", "parts must be a list")
    if not parts and role != "model":
        raise invalid(NOUN, index, "parts", "empty_content",
                      "a user content needs at least one part")
    kinds = [_check_part(part, index, f"parts[{k}]", role) for k, part in enumerate(parts)]
    return role, parts, kinds


# ----------------------------------------------------------------------------------------------
# a history: exchanges and the current turn


@dataclass(frozen=True, slots=True)
class _Call:
    key: str
    call_id: str | None
    name: str
    taken: bool = False


@dataclass
class Reading:
    """What reading a history found beyond its parts: how many turns its current turn holds
    (everything from its last user content that is not only function responses on), and
    whether it ended on a user content (then more contents read on from a fresh state)."""

    current_turn: int = 0
    settled: bool = False


def _genuine_user(role: str, kinds: Sequence[str]) -> bool:
    """A user content that starts a turn: one that is not only function responses."""
    return role == "user" and any(kind != FUNCTION_RESPONSE for kind in kinds)


def _match(calls: list[_Call], response: Mapping[str, Any], index: int, where: str) -> _Call:
    """The open call ``response`` answers: by id when it has one, else the first of its name."""
    response_id, name = field(response, "id"), field(response, "name")
    for position, call in enumerate(calls):
        if call.taken:
            continue
        if (call.call_id == response_id) if response_id is not None else call.name == name:
            calls[position] = replace(call, taken=True)
            return call
    if not calls:
        raise invalid(NOUN, index, f"{where}.function_response", "orphaned_function_response",
                      "a function response answers no function call of the model turn right "
                      "before it")
    if all(call.taken for call in calls):
        raise invalid(NOUN, index, f"{where}.function_response", "function_response_count",
                      f"more function responses than the {len(calls)} function call(s) of the "
                      "model turn before it")
    rule = "function_response_id" if response_id is not None else "function_response_name"
    raise invalid(NOUN, index, f"{where}.function_response.{'id' if response_id else 'name'}",
                  rule, "a function response matches no open function call of the model turn "
                  "before it")


def _call_keys(parts: list[Any], kinds: list[str], start: int,
               seen: dict[str, int]) -> list[_Call]:
    calls = []
    for part, kind in zip(parts, kinds, strict=True):
        if kind != "function_call":
            continue
        value = field(part, "function_call")
        name, call_id = field(value, "name"), field(value, "id")
        count = seen[name] = seen.get(name, 0) + 1
        key = f"{start}:{call_id}" if call_id is not None else f"{start}:{name}#{count}"
        calls.append(_Call(key, call_id, name))
    return calls


def _segments(role: str, parts: list[Any], kinds: list[str]
              ) -> list[tuple[str, list[Any]]]:
    """A content's parts as the turns they read as, in order: each function response (user) or
    server result (model) alone, runs of the other parts together."""
    alone = {FUNCTION_RESPONSE} if role == "user" else SERVER_RESULTS
    out: list[tuple[str, list[Any]]] = []
    for part, kind in zip(parts, kinds, strict=True):
        if kind in alone:
            out.append((kind, [part]))
        elif out and out[-1][0] == role:
            out[-1][1].append(part)
        else:
            out.append((role, [part]))
    return out or [(role, [])]


def _text(parts: Sequence[Any]) -> str:
    return "\n".join(part_text(part) for part in parts)


def _labels(parts: Sequence[Any]) -> str | None:
    names = [str(field(field(part, "function_call"), "name")) for part in parts
             if field(part, "function_call") is not None]
    return ", ".join(names) or None


def read_parts(contents: Sequence[dict[str, Any]], counter: GeminiTokenCounter,
               start: int = 0, before: Reading | None = None) -> tuple[list[Part], Reading]:
    """Validate ``contents[start:]`` and read them into parts; ``before``: the reading of
    ``contents[:start]``, which must have ended settled."""
    out: list[Part] = []
    calls: list[_Call] = []  # of the latest model turn, until answered
    answering: int | None = None  # the first index of that turn
    run_start: int | None = None  # the first index of the model turn being read
    names: dict[str, int] = {}
    current: int | None = None  # where the current turn starts in ``out``
    for index in range(start, len(contents)):
        content = contents[index]
        role, parts, kinds = _check_content(content, index)
        if role == "model":
            if run_start is None:
                if any(not call.taken for call in calls):
                    _unanswered(calls, answering)
                run_start, calls, names = index, [], {}
            issued = _call_keys(parts, kinds, run_start, names)
            calls.extend(issued)
            link = f"gemini:turn:{run_start}"
        else:
            issued = []
            if run_start is not None:
                answering, run_start = run_start, None
            if FUNCTION_RESPONSE not in kinds and any(not call.taken for call in calls):
                _unanswered(calls, answering)
            link = f"gemini:turn:{answering}"  # what a function response travels with
        if _genuine_user(role, kinds):
            current = len(out)
        out.extend(_content_parts(content, index, role, parts, kinds, counter, calls, issued,
                                  link))
    if any(not call.taken for call in calls):
        _unanswered(calls, answering if run_start is None else run_start)
    tail = len(out) - current if current is not None else len(out) + (
        before.current_turn if before is not None else 0)
    settled = bool(contents) and contents[-1].get("role", "user") == "user"
    return out, Reading(tail, settled)


def _unanswered(calls: list[_Call], index: int | None) -> None:
    open_calls = [call for call in calls if not call.taken]
    raise invalid(NOUN, index or 0, "parts.function_call", "unanswered_function_call",
                  f"{len(open_calls)} function call(s) of this model turn have no "
                  "function_response in the user content right after it",
                  call_id=open_calls[0].call_id)


def _content_parts(content: dict[str, Any], index: int, role: str, parts: list[Any],
                   kinds: list[str], counter: GeminiTokenCounter, calls: list[_Call],
                   issued: list[_Call], link: str) -> list[Part]:
    """A content as engine turns: one, or one per segment (``_segments``). ``issued``: the
    content's own function calls, in order; ``calls``: every call its responses may answer."""
    keys = iter(call.key for call in issued)
    segments = _segments(role, parts, kinds)
    model = role == "model"
    base = {key: value for key, value in content.items() if key != "parts"}
    out: list[Part] = []
    for sub, (kind, blocks) in enumerate(segments):
        whole = len(segments) == 1
        payload = content if whole else {**base, "parts": blocks}
        tokens = (counter.content(content) if whole
                  else sum(counter.part(block) for block in blocks)
                  + (counter.framing if not sub else 0))
        common: dict[str, Any] = {"sub": None if whole else sub}
        if kind == FUNCTION_RESPONSE:
            value = field(blocks[0], FUNCTION_RESPONSE)
            call = _match(calls, value, index, f"parts[{parts.index(blocks[0])}]")
            out.append(Part(index, Role.TOOL, part_text(blocks[0]), payload, tokens, kind,
                            answers=(call.key,), links=(link,), label=call.name, **common))
        elif kind in SERVER_RESULTS:
            out.append(Part(index, Role.TOOL, part_text(blocks[0]), payload, tokens, kind,
                            links=(link,), label=kind.replace("_", " "), **common))
        elif model:
            made = tuple(next(keys) for block in blocks
                         if field(block, "function_call") is not None)
            out.append(Part(index, Role.ASSISTANT, _text(blocks), payload, tokens, "model",
                            calls=made, links=(link,), label=_labels(blocks), **common))
        else:
            out.append(Part(index, Role.USER, _text(blocks), payload, tokens, "user",
                            **common))
    return out


def conversion_of(contents: list[dict[str, Any]], as_string: str | None,
                  parts: Sequence[Part], reading: Reading, pin: PinSpec, keep_task: bool,
                  count_text: CountText | None) -> Conversion[Rendered]:
    """The conversion of parts read from ``contents`` (``read_parts``), with their reading."""
    codec = ContentsCodec(starts_with_user=not contents or contents[0].get("role") != "model",
                          as_string=as_string)
    conv = convert(codec, parts, contents, pin, keep_task, count_text=count_text)
    return replace(conv, reading=reading)


def to_transcript(
    contents: Any,
    *,
    model: str | None = None,
    estimator: TokenEstimator | None = None,
    pin: PinSpec = None,
    keep_task: bool = False,
    calibration: float | None = None,
) -> Conversion[Rendered]:
    """Convert Gemini ``contents`` (a string, or a list of contents as dicts or SDK objects);
    validates them. ``render`` gives back the contents (the string, if they were one).

    ``model`` picks the media rules; ``calibration`` scales the text estimates (default 1.2).
    """
    plain, as_string = plain_contents(contents)
    counter = GeminiTokenCounter(estimator, model=model, calibration=calibration)
    parts, reading = read_parts(plain, counter)
    return conversion_of(plain, as_string, parts, reading, pin, keep_task, counter.text)


def extended(previous: Conversion[Rendered] | Growing[Rendered], items: Sequence[dict[str, Any]],
             known: int, estimator: TokenEstimator, pin: PinSpec,
             keep_task: bool) -> Growing[Rendered] | None:
    """``previous`` (of ``items[:known]``, plain, as a session converts them) continued by the
    rest, reading only the rest; None unless the known contents ended on a user content (a
    model content after a model one would join its turn)."""
    reading = previous.reading
    if not isinstance(reading, Reading) or not reading.settled or not 0 < known < len(items):
        return None
    counter = GeminiTokenCounter(estimator)
    parts, state = read_parts(items, counter, start=known, before=reading)
    return extend(previous, parts, items, pin, keep_task, state, count_text=counter.text)


def current_turn(conv: Conversion[Any] | Growing[Any]) -> int:
    """How many turns at the end of ``conv`` make its current turn (0 if it was not read here)."""
    reading = conv.reading
    return reading.current_turn if isinstance(reading, Reading) else 0


def validate(contents: Any) -> None:
    """Raise ``cutctx.ValidationError`` if the API would reject these contents' structure.

    Checks roles, part shapes (one data field a part; calls only from the model, function
    responses only from the user), and that a model turn's N function calls are answered by
    exactly N function responses in the user content right after it (by id where they have
    one, else by name).
    """
    plain, _ = plain_contents(contents)
    read_parts(plain, GeminiTokenCounter(CharRatioEstimator(), calibration=1.0))  # no tiktoken

"""What a compacted Gemini request must be, checked against the history it came from."""

from __future__ import annotations

import base64
import json
from typing import Any

from cutctx_adapters.gemini import contents

RESULT_FIELDS = ("function_response", "functionResponse", "tool_response", "toolResponse",
                 "code_execution_result", "codeExecutionResult")


def _bytes(text: str) -> bytes:
    """Base64 text in either alphabet (the SDK sends URL-safe) as bytes."""
    plain = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(plain + "=" * (-len(plain) % 4))


def _signature(part: dict[str, Any]) -> bytes | None:
    value = part.get("thought_signature", part.get("thoughtSignature"))
    return None if value is None else _bytes(value)


def _normal(value: Any, key: str = "") -> Any:
    """``value`` with wire-spelt keys and base64 payloads as hex: the same part, however it
    was spelt and encoded."""
    if isinstance(value, dict):
        out = {}
        for name, item in value.items():
            head, *rest = name.split("_")
            wire = head + "".join(word.capitalize() for word in rest)
            out[wire] = _normal(item, wire)
        return out
    if isinstance(value, list):
        return [_normal(item) for item in value]
    if key in ("thoughtSignature", "data") and isinstance(value, str):
        return _bytes(value).hex()
    return value


def _canonical(part: dict[str, Any]) -> str:
    """A part as compared across spellings and base64 alphabets."""
    return json.dumps(_normal(part), sort_keys=True)


def _is_result(part: dict[str, Any]) -> bool:
    return any(key in part for key in RESULT_FIELDS)


def current_turn(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's current turn: from its last user content that is not only function
    responses."""
    for index in range(len(history) - 1, -1, -1):
        content = history[index]
        if content.get("role", "user") == "user" and any(
                not ("function_response" in part or "functionResponse" in part)
                for part in content["parts"]):
            return history[index:]
    return history


def check_request(sent: list[dict[str, Any]], original: list[dict[str, Any]], *,
                  current_kept: bool = True) -> None:
    """``sent`` is a valid Gemini request derived from ``original`` by the rules: pairs whole
    (validate), each model content the original's with its parts in order (only results
    replaced), signatures byte-identical where they were, the current turn as it was."""
    contents.validate(sent)
    models = [[_canonical(part) for part in content["parts"]]
              for content in original if content.get("role") == "model"]
    for content in sent:
        if content.get("role") != "model":
            continue
        mine = [_canonical(part) for part in content["parts"]]
        assert any(len(mine) == len(theirs) and all(
            a == b or (_is_result(part) and _is_result(json.loads(b)))
            for a, b, part in zip(mine, theirs, content["parts"], strict=True))
            for theirs in models), "a model content was changed beyond its results"
        for part in content["parts"]:
            if _signature(part) is not None:
                assert any(_canonical(part) in theirs for theirs in models)
    if current_kept:
        tail = current_turn(original)
        assert [[_canonical(p) for p in c["parts"]] for c in sent[-len(tail):]] == [
            [_canonical(p) for p in c["parts"]] for c in tail], "the current turn was touched"

"""What the Chat Completions and Responses formats share: the roles a summary may speak in,
the codec's common half, plain copies of a history's items, and a count of nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..history import SUMMARY_HEADER, invalid, not_a_list, to_plain

__all__ = ["NO_COUNT", "SUMMARY_ROLES", "OpenAICodec", "content_text", "plain_items", "text_key"]

SUMMARY_ROLES = ("user", "assistant", "system", "developer")
"""The roles a summary may be rendered as (``summary_role``)."""


def text_key(kind: object, text_kinds: frozenset[str]) -> str | None:
    """The key a content part of ``kind`` holds its text under: ``text`` for the text kinds,
    ``refusal`` for a refusal; None for a part that is not text."""
    if kind in text_kinds:
        return "text"
    return "refusal" if kind == "refusal" else None


def content_text(content: Any, noun: str, index: int, field: str,
                 text_kinds: frozenset[str]) -> str:
    """Content as a model reads it: a string, or its text parts' text with other parts as
    ``[type]`` placeholders (never their data); anything else refused, naming where."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(noun, index, field, "content_type",
                      f"{field} must be a string or a list of parts, got {type(content).__name__}")
    pieces: list[str] = []
    for position, part in enumerate(content):
        where = f"{field}[{position}]"
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise invalid(noun, index, where, "part_type", "a content part needs a string 'type'")
        kind = part["type"]
        key = text_key(kind, text_kinds)
        if key is None:
            pieces.append(f"[{kind}]")
        elif not isinstance(part.get(key), str):
            raise invalid(noun, index, f"{where}.{key}", "part_text",
                          f"a {kind} part needs a string {key!r}")
        else:
            pieces.append(part[key])
    return "\n".join(pieces)


class OpenAICodec:
    """The half of a codec both OpenAI formats share: a summary is a message of
    ``summary_role`` headed ``SUMMARY_HEADER``; a body part's text is under its text key."""

    text_kinds: frozenset[str] = frozenset({"text"})
    """The content part types whose ``text`` a model reads."""

    def __init__(self, summary_role: str = "user") -> None:
        if summary_role not in SUMMARY_ROLES:
            raise invalid("option", 0, "summary_role", "summary_role",
                          f"summary_role must be one of {', '.join(SUMMARY_ROLES)}")
        self.summary_role = summary_role

    def render_summary(self, text: str, replaced: int) -> Any:
        return {"role": self.summary_role, "content": SUMMARY_HEADER + text}

    def piece(self, block: Any) -> tuple[str, str | None]:
        kind = block.get("type") if isinstance(block, dict) else None
        key = text_key(kind, self.text_kinds)
        if key is not None and isinstance(block.get(key), str):
            return block[key], key
        return f"[{kind}]", None


def plain_items(items: Any, noun: str, field: str, alternative: str = "") -> list[Any]:
    """``items`` as plain JSON copies (SDK objects dumped as their SDK sends them); anything
    but a list is refused, naming ``field``, what was given and what to pass."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise not_a_list(field, noun, items, alternative)
    return [to_plain(item, where=f"{noun} {index}", index=index)
            for index, item in enumerate(items)]


class _NoCount:
    """Counts nothing: for reading a history only to validate it."""

    def estimate_tokens(self, text: str) -> int:
        return 0


NO_COUNT = _NoCount()
"""An estimator that counts every text as 0 tokens (``validate`` reads without counting)."""

"""What the Chat Completions and Responses formats share: the roles a summary may speak in,
the codec's common half, plain copies of a history's items, and a count of nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..history import SUMMARY_HEADER, invalid, not_a_list, to_plain

__all__ = ["NO_COUNT", "SUMMARY_ROLES", "OpenAICodec", "plain_items"]

SUMMARY_ROLES = ("user", "assistant", "system", "developer")
"""The roles a summary may be rendered as (``summary_role``)."""


class OpenAICodec:
    """The half of a codec both OpenAI formats share: a summary is a message of
    ``summary_role`` headed ``SUMMARY_HEADER``."""

    def __init__(self, summary_role: str = "user") -> None:
        if summary_role not in SUMMARY_ROLES:
            raise invalid("option", 0, "summary_role", "summary_role",
                          f"summary_role must be one of {', '.join(SUMMARY_ROLES)}")
        self.summary_role = summary_role

    def render_summary(self, text: str, replaced: int) -> Any:
        return {"role": self.summary_role, "content": SUMMARY_HEADER + text}


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

"""Context windows of current models, by name prefix; callers can override any of them.

Figures are the providers' published context lengths (input + output). The longest matching
prefix wins, so dated snapshots (``gpt-4o-2024-08-06``) inherit their family's window.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CONTEXT_WINDOWS", "context_window"]

CONTEXT_WINDOWS: Mapping[str, int] = {
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
}


def context_window(model: str | None, overrides: Mapping[str, int] | None = None) -> int | None:
    """The context window of ``model``, or None when neither table knows it.

    >>> context_window("gpt-4o-mini-2024-07-18")
    128000
    """
    if not model:
        return None
    name = model.removeprefix("ft:")
    for table in (overrides or {}, CONTEXT_WINDOWS):
        best = max((prefix for prefix in table if name.startswith(prefix)), key=len, default=None)
        if best is not None:
            return table[best]
    return None

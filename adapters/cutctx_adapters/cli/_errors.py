"""The CLI's one-line errors: what went wrong and where, never message content."""

from __future__ import annotations

from typing import Any

from cutctx import BudgetUnsatisfiable, CompactionError, ValidationError

from ..errors import SummarizationFailed, TokenizerUnavailable

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "EXIT_UNMET", "CliError", "describe"]

EXIT_OK = 0
EXIT_UNMET = 1
"""The history does not fit the budget even after compaction."""
EXIT_BAD_INPUT = 2
"""Bad input or usage: unreadable file, not JSON, unknown format, invalid history."""
EXIT_INTERNAL = 3
"""A bug in cutctx (the traceback is shown with ``CUTCTX_DEBUG=1``)."""


class CliError(Exception):
    """A problem the user can fix; ``str(error)`` is the whole line printed."""


def describe(exc: CompactionError, source: str) -> str:
    """One line for a cutctx error raised while handling ``source`` (a file name)."""
    message = _flat(exc.message)
    if isinstance(exc, TokenizerUnavailable):
        return message
    if isinstance(exc, BudgetUnsatisfiable):
        need, have = exc.details.get("untouchable_tokens"), exc.details.get("max_tokens")
        if isinstance(need, int) and isinstance(have, int):
            message = (f"the turns no policy may touch (system, pinned and the "
                       f"{exc.details.get('protected_recent_turns', '?')} most recent) need "
                       f"{need:,} tokens but only {have:,} of the budget are left for the "
                       f"history")
        return f"{source}: budget cannot be met: {message} (raise --budget or --window, " \
               f"or lower --keep-recent)"
    if isinstance(exc, SummarizationFailed):
        return f"{source}: {message}"
    if isinstance(exc, ValidationError):
        return f"{source}: invalid history: {message}{_where(exc.details, message)}"
    return f"{source}: {exc.code}: {message}"


def _where(details: dict[str, Any], message: str) -> str:
    """The error's location details that its message does not already state."""
    extra = []
    for key in ("index", "field", "rule"):
        value = details.get(key)
        if value in (None, "") or str(value) in message:
            continue
        extra.append(f"{key} {value}")
    return f" ({', '.join(extra)})" if extra else ""


def _flat(text: str) -> str:
    return " ".join(text.split())

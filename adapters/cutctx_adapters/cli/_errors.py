"""The CLI's one-line errors: what went wrong and where, never message content.

Exit codes, as ``--help`` states them: 0 the history fits the budget (or was counted), 1 it was
compacted but still does not fit, 2 bad input or usage, or a budget no compaction can meet (the
turns no policy may touch need more), 3 a bug in cutctx.
"""

from __future__ import annotations

from typing import Any

from cutctx import BudgetUnsatisfiable, CompactionError, ValidationError

from ..errors import SummarizationFailed, TokenizerUnavailable

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "EXIT_UNMET", "CliError", "describe",
           "unsatisfiable"]

EXIT_OK = 0
EXIT_UNMET = 1
"""The history was compacted but does not fit the budget."""
EXIT_BAD_INPUT = 2
"""Bad input or usage (unreadable file, not JSON, unknown format, invalid history), or a budget
that cannot be met (``BudgetUnsatisfiable``)."""
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
        return unsatisfiable(exc, source)
    if isinstance(exc, SummarizationFailed):
        return f"{source}: {message}"
    if isinstance(exc, ValidationError):
        return f"{source}: invalid history: {message}{_where(exc.details, message)}"
    return f"{source}: {exc.code}: {message}"


def unsatisfiable(exc: BudgetUnsatisfiable, source: str, budget: int | None = None,
                  budget_from: str | None = None) -> str:
    """The line for a budget no compaction can meet: the budget (and where it came from), what
    the request's fixed part takes of it, and what the turns no policy may touch need (their
    count and the largest, by id), from the error's details."""
    details = exc.details
    need, left = details.get("untouchable_tokens"), details.get("max_tokens")
    overhead = details.get("overhead_tokens")
    if not isinstance(need, int) or not isinstance(left, int):
        return f"{source}: budget cannot be met: {_flat(exc.message)}"
    if isinstance(overhead, int):  # the fixed part alone is over the whole budget
        return (f"{source}: budget cannot be met: the budget is {left:,} tokens"
                f"{_from(budget_from)}, and the request's fixed part (tool definitions, "
                f"framing) alone needs {overhead:,} (raise --budget or --window)")
    whole = budget if budget is not None else left
    fixed = whole - left
    largest = ", ".join(f"{turn_id} ({tokens:,})" for turn_id, tokens in zip(
        details.get("turn_ids", ()), details.get("turn_tokens", ()), strict=False))
    turns = details.get("untouchable_turn_count")
    counted = f"{turns} " if isinstance(turns, int) else ""
    return (f"{source}: budget cannot be met: the budget is {whole:,} tokens{_from(budget_from)}"
            f"{f', {fixed:,} of them for the request framing' if fixed > 0 else ''}; the "
            f"{counted}turns no policy may touch (system prompt, pinned, the task, the newest "
            f"protected) need {need:,} tokens{f', largest {largest}' if largest else ''} "
            f"(raise --budget or --window, or protect fewer turns: --keep-recent, --pin, "
            f"--no-keep-task)")


def _from(budget_from: str | None) -> str:
    return "" if budget_from is None else f" ({budget_from})"


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

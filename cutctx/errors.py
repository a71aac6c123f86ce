"""Errors raised by cutctx: a stable ``code``, a message, and id-only ``details``.

Details travel into logs and API envelopes, so they carry ids and numbers, never turn content;
lists of ids are capped at ``MAX_DETAIL_IDS`` (the full length is kept under ``<key>_count``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "MAX_DETAIL_IDS",
    "BudgetUnsatisfiable",
    "CompactionError",
    "PlanTranscriptMismatch",
    "SummaryMissing",
    "ValidationError",
]

MAX_DETAIL_IDS = 10


def _capped(details: Mapping[str, Any] | None) -> dict[str, Any]:
    capped: dict[str, Any] = {}
    for key, value in (details or {}).items():
        if isinstance(value, list | tuple) and len(value) > MAX_DETAIL_IDS:
            capped[key] = list(value[:MAX_DETAIL_IDS])
            capped[f"{key}_count"] = len(value)
        else:
            capped[key] = list(value) if isinstance(value, tuple) else value
    return capped


class CompactionError(Exception):
    """Base of every error cutctx raises."""

    code: ClassVar[str] = "COMPACTION_ERROR"

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = _capped(details)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.details))

    def to_dict(self) -> dict[str, Any]:
        """The error as an envelope: code, message and details."""
        return {"code": self.code, "message": self.message, "details": dict(self.details)}


class ValidationError(CompactionError, ValueError):
    """Malformed input or a broken invariant."""

    code: ClassVar[str] = "VALIDATION_ERROR"


class BudgetUnsatisfiable(CompactionError):
    """The untouchable turns alone exceed the budget."""

    code: ClassVar[str] = "COMPACTION_BUDGET_UNSATISFIABLE"


class SummaryMissing(CompactionError):
    """A plan needs a summary that was not supplied to ``apply``."""

    code: ClassVar[str] = "COMPACTION_SUMMARY_MISSING"


class PlanTranscriptMismatch(CompactionError):
    """A plan was applied to a transcript other than the one it was made for."""

    code: ClassVar[str] = "COMPACTION_PLAN_MISMATCH"

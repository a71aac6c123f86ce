"""What ``compact`` returns, typed per format: the fields its SDK takes, and a one-line summary.

``chat.ChatResult``, ``responses.ResponsesResult`` and ``messages.MessagesResult`` narrow
``CompactionResult``'s ready-to-send fields to the SDK's own parameter types, so passing
``result.messages`` to ``client.chat.completions.create(messages=...)`` type-checks; each also
says which model the counts were for.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypeVar

from ._pipeline import CompactionResult

__all__ = ["FormatResult", "narrowed", "short_tokens"]

R = TypeVar("R", bound="FormatResult")


def short_tokens(count: int) -> str:
    """A token count as people read it: 950, 3.1k, 139k, 1.2M.

    >>> short_tokens(950), short_tokens(3_140), short_tokens(139_400), short_tokens(1_250_000)
    ('950', '3.1k', '139k', '1.2M')
    """
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M"


@dataclass(frozen=True, slots=True)
class FormatResult(CompactionResult):
    """A ``CompactionResult`` that knows the model its counts were for."""

    model: str | None = None
    """The model the tokens were counted for (the format's default when none was given)."""

    def __str__(self) -> str:
        report = self.report
        before, after = short_tokens(self.tokens_before), short_tokens(
            self.measured_tokens if self.measured_tokens is not None else self.tokens_after)
        budget = f" (budget {short_tokens(self.prompt_budget)})" if self.prompt_budget else ""
        head = (f"compacted {report.turns_before} → {report.turns_after} turns"
                if self.compacted else f"unchanged: {report.turns_before} turns")
        fates = [f"{len(ids)} {name}" for name, ids in (
            ("masked", report.masked_turn_ids), ("summarized", report.summarized_turn_ids),
            ("dropped", report.dropped_turn_ids)) if ids]
        tail = "; OVER BUDGET" if self.budget_unmet else ""
        counted = f"counted as {self.model}" if self.model else "counted without a model"
        return (f"{head}, {before} → {after} tokens{budget}"
                f"{''.join(', ' + fate for fate in fates)}{tail}; {counted}")


def narrowed(result: CompactionResult, kind: type[R], model: str | None) -> R:
    """``result`` as the format's own result class (the same values, typed fields)."""
    values = {field.name: getattr(result, field.name) for field in fields(result)}
    return kind(**values, model=model)

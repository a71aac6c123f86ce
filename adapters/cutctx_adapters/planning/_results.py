"""What ``compact`` returns: the ready-to-send history, plan and report, typed per format.

``chat.ChatResult``, ``responses.ResponsesResult`` and ``messages.MessagesResult`` narrow
``CompactionResult``'s ready-to-send fields to the SDK's own parameter types, so passing
``result.messages`` to ``client.chat.completions.create(messages=...)`` type-checks; each also
says which model the counts were for.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from cutctx import Action, CompactionPlan, CompactionReport, Transcript

from ..history import Conversion

__all__ = ["CompactionResult", "FormatResult", "Replacement", "narrowed", "short_tokens"]

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
class Replacement:
    """A turn kept in place with a new body: masked to a stub, clipped, or deduplicated."""

    turn_id: str
    kind: str
    """``masked``, ``clipped`` or ``deduplicated``."""
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction produced: the ready-to-send history, the plan and the report.

    ``messages`` is set for Chat and Anthropic histories, ``system`` for Anthropic, and
    ``instructions``/``input`` for Responses (``input`` stays a string if it was one and was
    kept). ``summarization_fallback`` is True when a failed summarizer made the adapters
    re-plan without summaries (the report's policy name shows it).
    """

    plan: CompactionPlan
    report: CompactionReport
    view: Transcript
    conversion: Conversion[Any] = field(repr=False)
    overhead_tokens: int = 0
    messages: Any = None
    """Typed by each format's result class (``chat.ChatResult``, ...), as its SDK takes it."""
    system: Any = None
    instructions: Any = None
    input: Any = None
    summarization_fallback: bool = False
    rendered: Any = field(default=None, repr=False)
    """The format's own rendering (what ``conversion.render(view)`` returned)."""
    measured_tokens: int | None = None
    """Prompt tokens of the rendered request, counted afresh (not the plan's estimate)."""
    prompt_budget: int | None = None
    """The allowance the request had to fit (history budget plus overhead)."""
    protection_relaxed: int = 0
    """Recent turns no longer protected so the history could fit at all (0: none)."""
    replacements: tuple[Replacement, ...] = ()
    """Turns masked, clipped or deduplicated, with their sizes before and after."""
    task_turn_id: str | None = None
    """The first user message, kept as the task (``keep_task``), if there is one."""
    results_relaxed: int = 0
    """Recent tool results no longer spared from masking so the history could fit."""
    last_resort: tuple[str, ...] = ()
    """Turns clipped as a last resort so that what must stay fits (the newest, the task)."""
    covered: tuple[str, ...] = ()
    """Turns left out because the provider's latest compaction already covers them."""
    deferred: str | None = None
    """Why the history was left to the provider's own compaction (it fit the model's own
    limit, so nothing but what a compaction covers was taken out); None otherwise."""

    @property
    def budget_unmet(self) -> bool:
        """The request is over its budget: measured after rendering where it was measured,
        else as the plan estimated."""
        if self.measured_tokens is not None and self.prompt_budget is not None:
            return self.measured_over
        return self.plan.budget_unmet

    @property
    def measured_over(self) -> bool:
        """The rendered request measures over the allowance, whatever the plan estimated."""
        return (self.measured_tokens is not None and self.prompt_budget is not None
                and self.measured_tokens > self.prompt_budget)

    @property
    def compacted(self) -> bool:
        """Whether anything was masked, clipped, summarized or dropped, or left out because
        the provider's compaction covers it."""
        return self.rewritten or bool(self.covered)

    @property
    def rewritten(self) -> bool:
        """Whether cutctx itself masked, clipped, deduplicated, summarized or dropped a turn
        (not only left out what the provider's compaction covers)."""
        return (any(action.action is not Action.KEEP for action in self.plan.actions)
                or bool(self.replacements))

    @property
    def tokens_before(self) -> int:
        """Estimated prompt tokens of the original request (history + overhead)."""
        return self.conversion.transcript.token_estimate() + self.overhead_tokens

    @property
    def tokens_sent(self) -> int:
        """Prompt tokens of the request as sent: measured after rendering where it was, else
        the plan's estimate (``tokens_after``). What ``budget_unmet`` is judged on."""
        return self.measured_tokens if self.measured_tokens is not None else self.tokens_after

    @property
    def tokens_after(self) -> int:
        """Estimated prompt tokens of the compacted request (history + overhead)."""
        return self.plan.tokens_after_estimate + self.overhead_tokens


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

"""What a session hands back: the request to send and a content-free report of what was done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cutctx import CompactionReport

from .._pipeline import Replacement

__all__ = ["CallReport", "Decision", "Prepared"]

Decision = Literal["unchanged", "reused", "appended", "compacted", "recompacted", "deferred",
                   "not_possible"]
"""``deferred``: the request turns the provider's own compaction on and fits the model's own
limit, so its history was left to the server (less what its latest compaction covers)."""


@dataclass(frozen=True, slots=True)
class CallReport:
    """What happened to one request's history, and why; ids and figures only."""

    decision: Decision
    reason: str
    format: str
    model: str | None
    prompt_budget: int | None = None
    trigger_tokens: int | None = None
    target_tokens: int | None = None
    tokens_in: int | None = None
    """Estimated prompt tokens of the history as given."""
    tokens_sent: int | None = None
    """Estimated prompt tokens of what was sent."""
    reused_items: int = 0
    """Leading items sent exactly as in the previous view (the cached prefix)."""
    compaction: CompactionReport | None = None
    """The engine's report of this call's last compaction event, if it had one."""
    summarization_fallback: bool = False
    events: int = 0
    """Compaction events this call ran (0 when the kept view was reused or nothing was needed)."""
    task_turn_id: str | None = None
    """The first user message, kept as the task (``keep_task``), if there is one."""
    protection_relaxed: int = 0
    """Recent turns given up from ``keep_recent`` so the history could fit at all."""
    replacements: tuple[Replacement, ...] = ()
    """Turns this call's events masked, clipped or deduplicated, with their sizes."""
    budget_unmet: bool = False
    """What was sent is over the prompt budget (nothing removable was left)."""
    covered: tuple[str, ...] = ()
    """Turns left out because the provider's latest compaction already covers them."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send, and the report of what was done to it.

    The request and everything in it are the caller's: fresh copies, never shared with the
    session's state, so changing them changes nothing the session sends later.
    """

    request: dict[str, Any]
    report: CallReport

    @property
    def messages(self) -> Any:
        """The request's ``messages`` (Chat Completions, Anthropic), as to be sent."""
        return self.request.get("messages")

    @property
    def input(self) -> Any:
        """The request's ``input`` (Responses), as to be sent."""
        return self.request.get("input")

    @property
    def system(self) -> Any:
        """The request's ``system`` (Anthropic), as to be sent."""
        return self.request.get("system")

    @property
    def instructions(self) -> Any:
        """The request's ``instructions`` (Responses), as to be sent."""
        return self.request.get("instructions")

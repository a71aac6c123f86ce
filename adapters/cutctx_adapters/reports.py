"""What a session hands back: the request to send and a content-free report of what was done."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from cutctx import REPLACEMENT_KINDS, CompactionReport

from .counting import Calibration
from .planning import Replacement, short_tokens

__all__ = [
    "CHANGED",
    "FATES",
    "NOTIFIED",
    "CallReport",
    "Decision",
    "Prepared",
    "Source",
    "SummaryRecord",
    "TurnFates",
]

Decision = Literal["unchanged", "reused", "appended", "compacted", "recompacted", "deferred",
                   "not_possible"]
"""What a call did, as true of what is sent: nothing needed, the history goes as given
(``unchanged``); the previous request sent again (``reused``) or as a byte prefix of this one,
the new items after it (``appended``); a first or a later compaction (``compacted``,
``recompacted``: also a cached view that renders differently with what was appended, its
``prefix_kept`` saying how much of it held); left to the provider's own compaction, which the
request turns on, while the history fits the model's own limit and cutctx has not compacted it
(``deferred``: the history less what the latest provider compaction covers); or nothing could
be done here (``not_possible``: a server-held history)."""
CHANGED: frozenset[Decision] = frozenset({"compacted", "recompacted"})
"""Decisions of a call whose request cutctx changed beyond appending to the view it sent
before: their reports give every turn's fate (``turns``), a log record and a span."""
NOTIFIED: frozenset[Decision] = CHANGED | {"not_possible"}
"""Decisions ``on_compaction`` hears of: the request was changed here, or could not be."""


FATES = ("kept", *REPLACEMENT_KINDS, "summarized", "dropped")
"""The six fates, as ``TurnFates`` names them."""


@dataclass(frozen=True, slots=True)
class TurnFates:
    """Every turn of a history in exactly one of six lists, in history order."""

    kept: tuple[str, ...] = ()
    masked: tuple[str, ...] = ()
    clipped: tuple[str, ...] = ()
    deduplicated: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many turns met each fate."""
        return {fate: len(getattr(self, fate)) for fate in FATES}

    def to_dict(self) -> dict[str, list[str]]:
        """The six lists, for logs (ids only)."""
        return {fate: list(getattr(self, fate)) for fate in FATES}


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """One summary request of a call: where it came from and what it cost (no text)."""

    group_id: str
    prompt_id: str
    turn_count: int
    target_tokens: int
    start_ns: int
    end_ns: int
    produced: bool
    """True when this call asked the summarizer; False when the store had it."""
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    provider: str | None = None
    error: str | None = None
    """The failure's class name, if the summary failed."""


@dataclass(frozen=True, slots=True)
class CallReport:
    """What happened to one request's history, and why; ids and figures only.

    ``str(report)`` is one line for a terminal or a log; ``to_dict()`` the figures for
    structured logs.
    """

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
    """Turns left out because the provider's latest compaction already covers them (their
    fate in ``turns`` is ``summarized``: that compaction summarized them)."""
    items_in: int | None = None
    """Messages (items) of the history as given."""
    items_sent: int | None = None
    """Messages (items) sent."""
    prefix_kept: float | None = None
    """Share of the previous view's items sent again unchanged (the provider's cached prefix
    still usable); None when there was no previous view of this history."""
    goal_tokens: int | None = None
    """Where this call's last compaction aimed (prompt tokens): ``target_tokens``, or lower when
    the history grew fast, so that the calls after it append (``docs/fitting.md``)."""
    append_share: float | None = None
    """The session's running share of calls that were pure appends (sent the request before as
    a byte prefix, or the history as given): every call but ``compacted``, ``recompacted`` and
    ``not_possible``, this one included. None outside a session."""
    counted_with: str | None = None
    """What the counts are for: the model, or the encoding used when the request named none."""
    seconds: float = 0.0
    """Time this call spent in the session, in all."""
    planning_seconds: float = 0.0
    """Of it: reading, counting, planning and rendering (everything but waiting for summaries)."""
    summary_seconds: float = 0.0
    """Of it: waiting for summaries (the summarizer, and the store: ``store_seconds``)."""
    store_seconds: float = 0.0
    """Of the summary time: reading, claiming and writing the store, and waiting in it for a
    summary another worker was producing."""
    summarizer_calls: int = 0
    """Summaries this call asked the summarizer for (the store had none)."""
    summary_input_tokens: int = 0
    """Estimated tokens of the turns given to the summarizer."""
    summary_output_tokens: int = 0
    """Estimated tokens of the summaries it returned."""
    store_hits: int = 0
    """Summaries found in the store (or produced meanwhile by another worker)."""
    store_misses: int = 0
    """Summaries the store did not have, so this call produced them."""
    turns: TurnFates | None = None
    """For a call that compacted (``compacted``, ``recompacted``): every turn of the history in
    exactly one of kept, masked, clipped, deduplicated, summarized and dropped, as it is in
    what was sent (the latest fate: a turn clipped and then masked is masked; a turn a
    provider's compaction covers is summarized, and in ``covered`` too). ``compaction`` is the
    last event's own report, over the view earlier events left."""
    calibration: Calibration | None = None
    """How this call's estimates were corrected to the model's bill: the factor applied and
    the readings it rests on (the replies' reported input, or exact counts); None until the
    session has a reading for the model (``CompactionSession.observe_usage``)."""

    @property
    def noun(self) -> str:
        """What the format's history holds: ``messages``, or ``items`` for Responses."""
        return "items" if self.format == "openai-responses" else "messages"

    def __str__(self) -> str:
        return "".join((self._headline(), self._fates(), self._tail()))

    def _headline(self) -> str:
        decision, noun = self.decision, self.noun
        if decision == "not_possible":
            return f"not possible: {self.reason}"
        tokens_in = short_tokens(self.tokens_in or 0)
        sent = short_tokens(self.tokens_sent or 0)
        if decision in CHANGED:
            return (f"{decision} {self.items_in} → {self.items_sent} {noun}, {tokens_in} → "
                    f"{sent} tokens (budget {short_tokens(self.prompt_budget or 0)})")
        trigger = f"≤ trigger {short_tokens(self.trigger_tokens or 0)}"
        if decision == "unchanged":
            return f"unchanged: {self.items_in} {noun}, {sent} tokens {trigger}"
        if decision == "deferred":
            covered = f", {len(self.covered)} covered turns left out" if self.covered else ""
            return (f"deferred to the provider's compaction: {self.items_sent} {noun}, {sent} "
                    f"tokens ≤ the model's limit {short_tokens(self.trigger_tokens or 0)}"
                    f"{covered}")
        appended = (self.items_sent or 0) - self.reused_items
        if decision == "appended":
            return (f"appended {appended} {noun} to the cached view: {self.items_sent} sent, "
                    f"{sent} tokens {trigger}")
        return f"reused the cached view: {self.items_sent} {noun}, {sent} tokens {trigger}"

    def _fates(self) -> str:
        if self.decision not in CHANGED:
            return ""
        counts: dict[str, int] = {}
        if self.turns is not None:  # the history's turns as sent: every fate but kept
            counts = {fate: count for fate, count in self.turns.counts().items()
                      if count and fate != "kept"}
        else:
            for replacement in self.replacements:
                counts[replacement.kind] = counts.get(replacement.kind, 0) + 1
        parts = [f"{count} {kind}" for kind, count in counts.items()]
        compaction = self.compaction
        if self.turns is None and compaction is not None and compaction.dropped_turn_ids:
            parts.append(f"{len(compaction.dropped_turn_ids)} dropped")
        if compaction is not None and compaction.summary_turn_ids:
            made = len(compaction.summary_turn_ids)
            parts.append(f"{made} summar{'y' if made == 1 else 'ies'}")
        if self.prefix_kept is not None:
            parts.append(f"prefix kept {self.prefix_kept:.2f}")
        if self.append_share is not None:
            parts.append(f"appends {self.append_share:.0%} of calls")
        if self.summarization_fallback:
            parts.append("summaries failed: re-planned without them")
        return "".join(f", {part}" for part in parts)

    def _tail(self) -> str:
        parts: list[str] = []
        if self.budget_unmet:
            parts.append("OVER BUDGET: nothing removable was left")
        if self.protection_relaxed:
            parts.append(f"{self.protection_relaxed} recent turn(s) unprotected to fit")
        if self.model is None and self.counted_with is not None:
            parts.append(f"no model given: counted with {self.counted_with}")
        calibration = self.calibration
        if calibration is not None and calibration.factor != 1.0:
            parts.append(f"estimates ×{calibration.factor:g} from {calibration.observations} "
                         "reported usage(s)")
        return "".join(f"; {part}" for part in parts)

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON values, and the one-line ``summary``."""
        out: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, CompactionReport | TurnFates):
                value = value.to_dict()
            elif isinstance(value, Calibration):
                value = asdict(value)
            elif field.name == "replacements":
                value = [asdict(replacement) for replacement in value]
            out[field.name] = value
        out["summary"] = str(self)
        return out


@dataclass(frozen=True, slots=True)
class Source:
    """Where one item sent comes from: its ``fate`` (``kept``, ``masked``, ``clipped``,
    ``deduplicated`` or ``summarized``) and the ``positions`` of the given items it stands for
    (one, or the span a summary replaces, in the history as given)."""

    fate: str
    positions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send, and the report of what was done to it.

    The request and everything in it are the caller's: fresh copies, never shared with the
    session's state, so changing them changes nothing the session sends later.
    """

    request: dict[str, Any]
    report: CallReport
    sources: tuple[Source, ...] | None = dataclasses.field(default=None, compare=False)
    """For each item of the history sent (``messages``, ``input``), the given items it comes
    from and how: what a framework hook maps its own objects back by. None where the format
    does not send one item per turn (Anthropic merges blocks into messages) or the history was
    not a list."""

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

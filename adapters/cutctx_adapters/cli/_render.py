"""Terminal output (rich): the per-turn table, the history bar and the totals.

Colours follow the action (keep green, mask yellow, summarize magenta, drop red, an inserted
summary cyan); the bar also uses a distinct glyph per action so it reads without colour.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ._progress import done
from ._rows import SUMMARY, Row
from ._visible import visible

__all__ = ["ELIDE_OVER", "InspectView", "make_console", "render_count", "render_inspect"]

STYLES = {"keep": "green", "dedupe": "blue", "clip": "bright_yellow", "mask": "yellow",
          "summarize": "magenta", "drop": "red", SUMMARY: "cyan"}
GLYPHS = {"keep": "█", "dedupe": "▚", "clip": "▙", "mask": "▓", "summarize": "▒", "drop": "░"}
ELIDE_OVER = 60
"""Tables longer than this show their first and last ``_EDGE`` rows unless ``--all``."""
_EDGE = 25
_BAR_MAX = 100


@dataclass(frozen=True, slots=True)
class InspectView:
    """Everything ``inspect`` shows besides the rows."""

    source: str
    format: str
    reason: str
    model: str
    budget: int
    budget_source: str
    tokens_before: int
    tokens_after: int
    overhead: int
    turns_before: int
    turns_after: int
    policy: str
    plan_hash: str


def render_inspect(console: Console, view: InspectView, rows: Sequence[Row],
                   show_all: bool) -> None:
    """The table, the bar, its legend and the totals."""
    console.print(_header(view.source, view.format, view.reason, view.model))
    console.print(_table(rows, show_all, with_plan=True))
    history = [row for row in rows if row.action != SUMMARY]
    console.print(_bar(history, min(console.width, _BAR_MAX)))
    console.print(_legend(history))
    console.print(_totals(view))


def render_count(console: Console, source: str, fmt: str, reason: str, model: str,
                 rows: Sequence[Row], overhead: int, show_all: bool) -> None:
    """Per-turn tokens and the total."""
    console.print(_header(source, fmt, reason, model))
    console.print(_table(rows, show_all, with_plan=False))
    history = sum(row.tokens for row in rows)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    grid.add_column(style="dim")
    grid.add_row("history", f"{history:,}", f"{len(rows)} turns")
    grid.add_row("overhead", f"{overhead:,}", "outside the history: tool definitions, framing")
    grid.add_row("total", Text(f"{history + overhead:,}", style="bold"), "estimated prompt tokens")
    console.print(grid)


def _header(source: str, fmt: str, reason: str, model: str) -> Group:
    detail = Text()
    detail.append(fmt, style="cyan")
    detail.append(f" (detected: {reason})" if reason != "--format" else " (--format)",
                  style="dim")
    detail.append("  model ", style="dim")
    detail.append(visible(model))
    return Group(visible_text(source, style="bold"), detail)


def _tools(label: str | None) -> str:
    """``read_file, read_file, grep`` → ``read_file×2, grep``."""
    if not label:
        return ""
    counts = Counter(name.strip() for name in label.split(","))
    return ", ".join(name if n == 1 else f"{name}×{n}" for name, n in counts.items())


def _table(rows: Sequence[Row], show_all: bool, *, with_plan: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("role", no_wrap=True)
    table.add_column("tool", no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column("tokens", justify="right", no_wrap=True)
    if with_plan:
        table.add_column("after", justify="right", no_wrap=True)
        table.add_column("action", no_wrap=True)
    else:
        table.add_column("share", justify="right", no_wrap=True)
    total = sum(row.tokens for row in rows) or 1
    if show_all or len(rows) <= ELIDE_OVER:
        shown: list[Row | list[Row]] = list(rows)
    else:
        shown = [*rows[:_EDGE], list(rows[_EDGE:-_EDGE]), *rows[-_EDGE:]]
    for item in shown:
        if isinstance(item, list):
            table.add_row(*_elided(item, with_plan), style="dim")
            continue
        style = STYLES.get(item.action, "")
        tokens = f"{item.tokens:,}" if item.tokens else ""
        where = "+" if item.action == SUMMARY else item.where if item.where[:1].isdigit() else "·"
        tool: RenderableType = visible_text(_tools(item.tool))
        if item.action == SUMMARY:
            tool = f"of {item.covers} turns"
        elif not tool and item.kind:
            tool = Text(f"({item.kind})", style="dim")
        cells: list[RenderableType] = [where, item.role, tool, tokens]
        if with_plan:
            action = item.action + (" (pinned)" if item.pinned else "")
            cells += [Text(f"{item.after:,}", style=style), Text(action, style=style)]
        else:
            cells.append(f"{100 * item.tokens / total:.1f}%")
        table.add_row(*cells, style="dim" if item.action in ("drop", "summarize") else None)
    return table


def _elided(rows: Sequence[Row], with_plan: bool) -> list[RenderableType]:
    tokens = sum(row.tokens for row in rows)
    cells: list[RenderableType] = ["⋮", f"{len(rows)} more", "(--all shows them)", f"{tokens:,}"]
    if with_plan:
        counts = Counter(row.action for row in rows)
        after = sum(row.after for row in rows)
        cells += [f"{after:,}", ", ".join(f"{n} {action}" for action, n in counts.items())]
    else:
        cells.append("")
    return cells


def _bar(rows: Sequence[Row], width: int) -> Text:
    """One character per ``1/width`` of the history's tokens, styled by that turn's action."""
    bar = Text()
    total = sum(row.tokens for row in rows)
    if total == 0 or width <= 0:
        return bar
    ends: list[int] = []
    running = 0
    for row in rows:
        running += row.tokens
        ends.append(running)
    actions = [rows[bisect.bisect_right(ends, (i + 0.5) * total / width)].action
               for i in range(width)]
    start = 0
    for i in range(1, width + 1):
        if i == width or actions[i] != actions[start]:
            action = actions[start]
            bar.append(GLYPHS.get(action, "█") * (i - start), style=STYLES.get(action, ""))
            start = i
    return bar


def _legend(rows: Sequence[Row]) -> Text:
    tokens: dict[str, int] = {}
    for row in rows:
        tokens[row.action] = tokens.get(row.action, 0) + row.tokens
    legend = Text()
    for action in GLYPHS:
        if action in tokens:
            if legend:
                legend.append("  ")
            legend.append(GLYPHS[action], style=STYLES[action])
            legend.append(f" {action} {tokens[action]:,}")
    return legend


def _totals(view: InspectView) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("tokens", f"{view.tokens_before:,} → {view.tokens_after:,}"
                 + (f"  (incl. {view.overhead:,} outside the history)" if view.overhead else ""))
    grid.add_row("turns", f"{view.turns_before:,} → {view.turns_after:,}")
    grid.add_row("budget", Text(f"{view.budget:,}  ").append(view.budget_source, style="dim"))
    spare = view.budget - view.tokens_after
    if spare >= 0:
        verdict = Text(f"✓ fits, {spare:,} to spare", style="bold green")
    else:
        verdict = Text(f"✗ over by {-spare:,}", style="bold red")
    grid.add_row("verdict", verdict)
    grid.add_row("policy", view.policy)
    grid.add_row("plan", Text(view.plan_hash, style="dim"))
    return Group(Text(), grid)


class _Console(Console):
    """Leaves a closed pipe (``cutctx inspect … | head``) to ``main``, which exits 0."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def make_console(*, stderr: bool = False) -> Console:
    """A console for our output: no automatic highlighting of numbers and paths (the progress
    spinner ends first)."""
    done()
    return _Console(stderr=stderr, highlight=False)


def visible_text(text: str, style: str = "") -> Text:
    """``visible(text)`` as a rich ``Text``: printed literally, never read as markup."""
    return Text(visible(text), style=style)

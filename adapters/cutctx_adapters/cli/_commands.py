"""The three commands: inspect, count and compact. Each returns the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.text import Text

from cutctx import (
    REPLACEMENT_KINDS,
    BudgetUnsatisfiable,
    CompactionExecutor,
    CompactionPolicy,
    DropOldestPolicy,
)

from ..fulfil import Summarizer
from ..planning import CompactionResult, Job
from ._errors import EXIT_OK, EXIT_UNMET, CliError, unsatisfiable
from ._io import Document, check_output, load, write_json
from ._options import Budget, build_policy, build_summarizer, resolve_budget, resolve_model
from ._progress import done
from ._render import InspectView, make_console, render_count, render_inspect
from ._rows import plan_rows, turn_rows
from ._visible import visible

__all__ = ["compact", "count", "inspect"]

ESCALATION = (*reversed(REPLACEMENT_KINDS), "summarized", "dropped")
"""The fates a compaction reaches for, in the order it escalates (the summary line's order)."""

_UNLIMITED = 2**62
"""A budget nothing exceeds, for counting (every turn kept)."""


def inspect(args: argparse.Namespace) -> int:
    """Plan a compaction and show it; exit 1 if the plan does not fit the budget."""
    doc = _load(args)
    model = resolve_model(args.model, doc)
    budget = resolve_budget(args.budget, args.window, args.reserve, model, doc)
    estimator = doc.format.text_estimator(model)
    summarizer = build_summarizer(args.summarizer, estimator)
    with _refusals(doc, budget):
        job = _plan(doc, args, model, budget.tokens,
                    build_policy(args.policy, estimator, summarizer), summarizer)
    plan = job.plan
    # The report depends on the plan alone; summaries are not produced when inspecting.
    placeholders = {request.group_id: "…" for request in plan.summarization_requests}
    report = CompactionExecutor().apply(job.conversion.transcript, plan, placeholders).report
    rows = plan_rows(job.conversion, plan)
    if args.json:
        _print_json({
            **_about(doc, model),
            "budget": budget.to_dict(),
            "overhead_tokens": job.overhead,
            "tokens_before": plan.tokens_before + job.overhead,
            "tokens_after": plan.tokens_after_estimate + job.overhead,
            "fits": not plan.budget_unmet,
            "turns": [row.to_dict() for row in rows],
            "plan": plan.to_dict(),
            "report": report.to_dict(),
        })
    else:
        view = InspectView(
            source=doc.source, format=doc.format.name, reason=doc.reason, model=model,
            budget=budget.tokens, budget_source=budget.describe(),
            tokens_before=plan.tokens_before + job.overhead,
            tokens_after=plan.tokens_after_estimate + job.overhead, overhead=job.overhead,
            turns_before=report.turns_before, turns_after=report.turns_after,
            policy=_policy_label(plan.policy_name, plan.policy_version), plan_hash=report.plan_hash)
        render_inspect(make_console(), view, rows, args.all)
    return EXIT_UNMET if plan.budget_unmet else EXIT_OK


def count(args: argparse.Namespace) -> int:
    """Per-turn and total estimated tokens."""
    doc = _load(args)
    model = resolve_model(args.model, doc)
    job = _plan(doc, args, model, _UNLIMITED, DropOldestPolicy(), None)
    rows = turn_rows(job.conversion)
    history = sum(row.tokens for row in rows)
    if args.json:
        _print_json({
            **_about(doc, model),
            "turns": [{"where": row.where, "turn_id": row.turn_id, "role": row.role,
                       "tool": row.tool, "tokens": row.tokens} for row in rows],
            "history_tokens": history,
            "overhead_tokens": job.overhead,
            "total_tokens": history + job.overhead,
        })
    else:
        render_count(make_console(), doc.source, doc.format.name, doc.reason, model, rows,
                     job.overhead, args.all)
    return EXIT_OK


def compact(args: argparse.Namespace) -> int:
    """Write the compacted history in the input's shape; exit 1 if it still does not fit."""
    check_output(args.file, args.output, args.force)
    doc = _load(args)
    model = resolve_model(args.model, doc)
    budget = resolve_budget(args.budget, args.window, args.reserve, model, doc)
    estimator = doc.format.text_estimator(model)
    summarizer = build_summarizer(args.summarizer, estimator)
    policy = build_policy(args.policy, estimator, summarizer)
    with _refusals(doc, budget):
        result = doc.format.compact(
            doc.history, doc.side, doc.body, model=model, budget=budget.tokens, policy=policy,
            summarizer=summarizer, pin=args.pin, keep_recent=args.keep_recent,
            settings=policy_settings(args))
    side, history = doc.format.output(result)
    write_json(args.output, doc.rebuild(side, history))
    report = result.report
    if args.json:
        _print_json({"file": doc.source, "output": args.output, "format": doc.format.name,
                     "model": model, "budget": budget.to_dict(),
                     "tokens_before": result.tokens_before, "tokens_after": result.tokens_sent,
                     "fits": not report.budget_unmet, "report": report.to_dict(),
                     "task_turn_id": result.task_turn_id,
                     "protection_relaxed": result.protection_relaxed,
                     "replacements": [
                         {"turn_id": r.turn_id, "kind": r.kind, "tokens_before": r.tokens_before,
                          "tokens_after": r.tokens_after} for r in result.replacements]},
                    stderr=args.output == "-")
    else:
        _compact_summary(doc, args.output, budget, result)
    return EXIT_UNMET if report.budget_unmet else EXIT_OK


def policy_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The policy keywords the command line sets (those it does not leave at the library's
    defaults; ``count`` has none)."""
    names = ("keep_task", "keep_user_turns", "digest_tokens", "max_result_tokens", "strict")
    return {name: getattr(args, name) for name in names
            if getattr(args, name, None) is not None}


@contextmanager
def _refusals(doc: Document, budget: Budget) -> Iterator[None]:
    """A budget no compaction can meet, said with the budget and where it came from."""
    try:
        yield
    except BudgetUnsatisfiable as exc:
        message = unsatisfiable(exc, doc.source, budget.tokens, budget.describe())
        raise CliError(message) from None


def _load(args: argparse.Namespace) -> Document:
    """Read and detect, then validate before anything is counted (no tokenizer needed)."""
    doc = load(args.file, args.format, args.max_bytes)
    doc.format.validate(doc.history, doc.side, doc.body)
    return doc


def _policy_label(name: str, version: str) -> str:
    """A chain's name already lists its members' versions."""
    return name if "@" in name else f"{name}@{version}"


def _plan(doc: Document, args: argparse.Namespace, model: str, budget: int,
          policy: CompactionPolicy | None, summarizer: Summarizer | None) -> Job:
    return doc.format.plan(doc.history, doc.side, doc.body, model=model, budget=budget,
                           policy=policy, summarizer=summarizer, pin=getattr(args, "pin", None),
                           keep_recent=getattr(args, "keep_recent", None),
                           settings=policy_settings(args))


def _compact_summary(doc: Document, output: str, budget: Budget,
                     result: CompactionResult) -> None:
    report = result.report.to_dict()
    counts = ", ".join(
        f"{len(report[f'{fate}_turn_ids'])} {fate}" for fate in ESCALATION
        if report[f"{fate}_turn_ids"]) or "nothing to do"
    line = Text("wrote ")
    line.append("standard output" if output == "-" else visible(output), style="bold")
    line.append(f" ({doc.format.name}): {report['turns_before']} → {report['turns_after']} "
                f"turns, {result.tokens_before:,} → {result.tokens_sent:,} tokens, budget "
                f"{budget.tokens:,} ")
    if report["budget_unmet"]:
        line.append("✗ over budget", style="bold red")
    else:
        line.append("✓ fits", style="bold green")
    line.append(f"; {counts}")
    if result.task_turn_id is not None:
        line.append(f"; task {result.task_turn_id} kept")
    if result.protection_relaxed:
        line.append(f"; {result.protection_relaxed} fewer recent turns protected")
    console = make_console(stderr=output == "-")
    console.print(line, soft_wrap=True)
    console.print(f"plan {report['plan_hash']}", style="dim")


def _about(doc: Document, model: str | None) -> dict[str, Any]:
    """What every JSON answer says first: the file, its format, how it was told, the model."""
    return {"file": doc.source, "format": doc.format.name, "detected_by": doc.reason,
            "model": model}


def _print_json(data: Any, *, stderr: bool = False) -> None:
    done()  # the progress spinner ends before the results print
    stream = sys.stderr if stderr else sys.stdout
    stream.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    stream.flush()

"""OpenTelemetry spans for compactions and summary requests (the ``cutctx[otel]`` extra).

Only figures and ids become attributes, never content. Spans are named and attributed after the
GenAI semantic conventions where those apply (a summary request is a ``chat`` operation on the
summarizer's model) and under ``cutctx.`` otherwise. Nothing is done, and nothing imported, when
OpenTelemetry is not installed or no tracer provider is configured: a program that has set one
up has imported ``opentelemetry.trace`` already.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..reports import CallReport, SummaryRecord

__all__ = ["COMPACTION_SPAN", "SUMMARY_SPAN", "current_context", "record_compaction"]

INSTRUMENTATION = __name__.partition(".")[0]
"""The instrumentation scope spans are recorded under: the adapters' package."""
COMPACTION_SPAN = "cutctx.compaction"
SUMMARY_SPAN = "cutctx.summary"
"""A summary request the store answered (one the summarizer answered is ``chat {model}``)."""
_PROVIDERS = {"openai-chat": "openai", "openai-responses": "openai",
              "anthropic-messages": "anthropic"}


def _trace() -> Any:
    """``opentelemetry.trace`` when a real tracer provider is configured, else None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return trace


def current_context() -> object:
    """The active OpenTelemetry context (the caller's span), to parent spans recorded later."""
    if _trace() is None:
        return None
    return sys.modules["opentelemetry.context"].get_current()


def compaction_attributes(report: CallReport) -> dict[str, str | int | float | bool]:
    """A compacting call's figures as span attributes; its turns counted once each, by the
    fate they meet in what is sent (``report.turns``), so they add up to the history."""
    fates = report.turns.counts() if report.turns is not None else {}
    compaction = report.compaction
    attributes: dict[str, str | int | float | bool | None] = {
        "gen_ai.provider.name": _PROVIDERS.get(report.format),
        "gen_ai.request.model": report.model,
        "cutctx.format": report.format,
        "cutctx.decision": report.decision,
        "cutctx.events": report.events,
        "cutctx.tokens.before": report.tokens_in,
        "cutctx.tokens.after": report.tokens_sent,
        "cutctx.budget": report.prompt_budget,
        "cutctx.trigger": report.trigger_tokens,
        "cutctx.target": report.target_tokens,
        "cutctx.items.before": report.items_in,
        "cutctx.items.after": report.items_sent,
        "cutctx.prefix_kept": report.prefix_kept,
        "cutctx.append_share": report.append_share,
        "cutctx.goal": report.goal_tokens,
        "cutctx.covered": len(report.covered),
        "cutctx.budget_unmet": report.budget_unmet,
        "cutctx.summarization_fallback": report.summarization_fallback,
        "cutctx.protection_relaxed": report.protection_relaxed,
        "cutctx.summarizer.calls": report.summarizer_calls,
        "cutctx.store.hits": report.store_hits,
        "cutctx.store.misses": report.store_misses,
        **{f"cutctx.turns.{fate}": count for fate, count in fates.items()},
    }
    if compaction is not None:
        attributes.update({
            "cutctx.plan_hash": compaction.plan_hash,
            "cutctx.policy": compaction.policy_name,
            "cutctx.summaries": len(compaction.summary_turn_ids),
        })
    return {key: value for key, value in attributes.items() if value is not None}


def summary_attributes(entry: SummaryRecord) -> dict[str, str | int | float | bool]:
    """One summary request's figures as span attributes (GenAI names for the model call)."""
    attributes: dict[str, str | int | bool | None] = {
        "cutctx.summary.group_id": entry.group_id,
        "cutctx.summary.prompt_id": entry.prompt_id,
        "cutctx.summary.turns": entry.turn_count,
        "cutctx.summary.target_tokens": entry.target_tokens,
        "cutctx.store.hit": not entry.produced,
    }
    if entry.produced:
        attributes.update({
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": entry.model,
            "gen_ai.provider.name": entry.provider,
            "gen_ai.usage.input_tokens": entry.input_tokens,
            "gen_ai.usage.output_tokens": entry.output_tokens,
        })
    if entry.error is not None:
        attributes["error.type"] = entry.error
    return {key: value for key, value in attributes.items() if value is not None}


def record_compaction(report: CallReport, start_ns: int, summaries: Sequence[SummaryRecord],
                      parent: object) -> None:
    """A span for a compacting call (from ``start_ns``, ``report.seconds`` long) and a child
    span per summary request; recorded when the call is done, as its figures are known only
    then."""
    trace = _trace()
    if trace is None:
        return
    tracer = trace.get_tracer(INSTRUMENTATION)
    span = tracer.start_span(COMPACTION_SPAN, context=parent, start_time=start_ns,
                             attributes=compaction_attributes(report))
    if report.budget_unmet:
        span.set_status(trace.Status(trace.StatusCode.ERROR, "budget unmet"))
    inside = trace.set_span_in_context(span, parent)
    for entry in summaries:
        name = (f"chat {entry.model}" if entry.produced and entry.model else
                "chat" if entry.produced else SUMMARY_SPAN)
        child = tracer.start_span(name, context=inside, start_time=entry.start_ns,
                                  attributes=summary_attributes(entry))
        if entry.error is not None:
            child.set_status(trace.Status(trace.StatusCode.ERROR, entry.error))
        child.end(end_time=entry.end_ns)
    span.end(end_time=start_ns + int(report.seconds * 1e9))

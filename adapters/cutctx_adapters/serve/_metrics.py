"""What ``GET /metrics`` says, in Prometheus text: figures only, labels from fixed sets.

Each app has a registry of its own, so several apps in one process never mix their counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from .. import CallReport
from ..counting import reported_input

__all__ = ["CONTENT_TYPE", "Metrics"]

_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            10.0, 30.0)
_RATIOS = (0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 2.0)


class Metrics:
    """The proxy's counters, gauges and histograms."""

    def __init__(self, sessions: Callable[[], int], store_up: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.requests = Counter(
            "cutctx_proxy_requests", "Requests by endpoint, cutctx decision and upstream status "
            "class", ["endpoint", "decision", "status"], registry=registry)
        self.tokens_before = Counter(
            "cutctx_proxy_tokens_before", "Estimated prompt tokens of histories as received",
            ["endpoint"], registry=registry)
        self.tokens_sent = Counter(
            "cutctx_proxy_tokens_sent", "Estimated prompt tokens of what was sent upstream",
            ["endpoint"], registry=registry)
        self.summaries = Counter(
            "cutctx_proxy_summaries", "Summaries used, by where they came from (summarizer or "
            "store)", ["source"], registry=registry)
        self.retries = Counter(
            "cutctx_proxy_context_retries", "Requests recompacted and sent again after an "
            "upstream context-length error", ["endpoint"], registry=registry)
        self.upstream_errors = Counter(
            "cutctx_proxy_upstream_failures", "Upstream calls that failed before any status "
            "(timeout, connection)", ["endpoint", "kind"], registry=registry)
        self.replies = Counter(
            "cutctx_proxy_replies_resent", "Next requests of a lineage, by whether they carried "
            "the last reply as it came", ["as_received"], registry=registry)
        self.added = Histogram(
            "cutctx_proxy_added_seconds", "Time from a request's arrival to its upstream call "
            "(reading, keying, compacting, serializing)", ["endpoint"], buckets=_SECONDS,
            registry=registry)
        self.upstream_input = Counter(
            "cutctx_proxy_upstream_input_tokens", "Input tokens the provider reported in its "
            "replies' usage", ["endpoint"], registry=registry)
        self.estimate_ratio = Histogram(
            "cutctx_proxy_estimate_ratio", "Provider-reported input tokens over cutctx's "
            "estimate of what was sent", ["endpoint"], buckets=_RATIOS, registry=registry)
        Gauge("cutctx_proxy_sessions", "Conversations held", registry=registry).set_function(
            lambda: float(sessions()))
        Gauge("cutctx_proxy_store_up", "1 while the shared store answers, 0 while it is marked "
              "down", registry=registry).set_function(lambda: 1.0 if store_up() else 0.0)

    def request(self, endpoint: str, decision: str, status: int) -> None:
        self.requests.labels(endpoint, decision, f"{status // 100}xx" if status else "none").inc()

    def report(self, endpoint: str, report: CallReport) -> None:
        """What a compaction report adds: tokens and summaries."""
        if report.tokens_in is not None:
            self.tokens_before.labels(endpoint).inc(report.tokens_in)
        if report.tokens_sent is not None:
            self.tokens_sent.labels(endpoint).inc(report.tokens_sent)
        if report.summarizer_calls:
            self.summaries.labels("summarizer").inc(report.summarizer_calls)
        if report.store_hits:
            self.summaries.labels("store").inc(report.store_hits)

    def usage(self, endpoint: str, usage: Mapping[str, Any] | None, estimate: int | None) -> None:
        """The provider's own input count for a reply, against cutctx's estimate."""
        billed = reported_input(usage)
        if billed is None:
            return
        self.upstream_input.labels(endpoint).inc(billed)
        if estimate:
            self.estimate_ratio.labels(endpoint).observe(billed / estimate)

    def text(self) -> bytes:
        return generate_latest(self.registry)

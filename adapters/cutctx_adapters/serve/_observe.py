"""One log record and (with OpenTelemetry) one span per proxied request: ids, counts and
hashes, never message text, never a credential.

The library's own ``cutctx.compaction`` span, for a request that compacted, is a child of the
request's span: the session runs inside it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["LOGGER", "log_request", "request_span"]

LOGGER = logging.getLogger("cutctx.proxy")


def log_request(fields: Mapping[str, object]) -> None:
    """One INFO record: ``key=value`` pairs of figures (WARNING for a 5xx or a failure)."""
    status = fields.get("status")
    level = logging.WARNING if isinstance(status, int) and (status >= 500 or status == 0) else (
        logging.INFO)
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, "cutctx proxy: %s", " ".join(
            f"{name}={value}" for name, value in fields.items() if value is not None))


@contextmanager
def request_span(name: str, attributes: Mapping[str, Any]) -> Iterator[Any]:
    """A server span for one request when OpenTelemetry is installed (``cutctx[otel]``), else
    nothing; yields the span (or None) for attributes learnt on the way."""
    try:
        from opentelemetry import trace
    except ImportError:
        yield None
        return
    tracer = trace.get_tracer("cutctx.proxy")
    with tracer.start_as_current_span(name, kind=trace.SpanKind.SERVER,
                                      attributes=dict(attributes)) as span:
        yield span

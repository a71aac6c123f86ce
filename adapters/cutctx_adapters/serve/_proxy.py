"""One proxied request: read, key, compact, send, relay. The HTTP shell around a session.

Every decision is made before the upstream call, so the report goes out as response headers
before the first byte; the reply's bytes are relayed as they arrive while a copy is read for the
lineage. A context-length error the upstream returns before any byte went out is answered by
compacting again at a lower budget and sending once more. What cannot be compacted (a bypass, a
body that is not JSON, a history cutctx refuses) is forwarded untouched.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from cutctx import CompactionError

from .. import CallReport, CompactionSession, CompactionSettings
from ..stores import Store, aproduce_once, is_down
from ._bodies import dumps, read_json
from ._conversations import Conversation, Conversations
from ._endpoints import Endpoint, Provider, provider_of
from ._headers import to_client, to_upstream, wants_bypass
from ._keys import Keys
from ._lineages import Match
from ._metrics import Metrics
from ._observe import log_request, request_span
from ._replies import ReplyReader
from ._retry import context_error, lower_budget
from ._upstream import Upstreams, new_client

__all__ = ["Proxy"]

_SALT_KEY = "proxy:salt"
_SALT_TTL = 10 * 365 * 24 * 3600.0
_UNTOUCHED = frozenset({"unchanged", "not_possible"})


@dataclass(slots=True)
class _Outcome:
    """What was decided about one request before it is sent."""

    body: bytes
    changed: bool
    decision: str
    headers: dict[str, str]
    report: CallReport | None = None
    parsed: dict[str, Any] | None = None
    conversation: Conversation | None = None
    match: Match | None = None
    items: list[Any] | None = None
    log: dict[str, object] = field(default_factory=dict)


class Proxy:
    """The state one app holds: settings, store, conversations, client, metrics."""

    def __init__(self, settings: CompactionSettings, store: Store, upstreams: Upstreams, *,
                 salt: bytes | None, max_sessions: int, max_lineages: int) -> None:
        self.settings = settings
        self.store = store
        self.upstreams = upstreams
        self.conversations = Conversations(settings, store, limit=max_sessions,
                                           lineages=max_lineages)
        self.metrics = Metrics(lambda: len(self.conversations), lambda: not is_down(store))
        self._salt = salt
        self._keys: Keys | None = None
        self._client: httpx2.AsyncClient | None = None

    # --- what lives as long as the app -------------------------------------------------------

    async def keys(self) -> Keys:
        """The hashing keys: the salt given, else one salt shared by every replica through
        the store (made once, by whichever replica asks first)."""
        if self._keys is None:
            salt = self._salt
            if salt is None:
                salt = await aproduce_once(self.store, _SALT_KEY, lambda: secrets.token_bytes(32),
                                           ttl=_SALT_TTL)
            self._keys = Keys(salt or secrets.token_bytes(32))
        return self._keys

    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = new_client(self.upstreams)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # --- the compacting endpoints ------------------------------------------------------------

    async def compacting(self, request: Request, endpoint: Endpoint) -> Response:
        """A request to one of the compacting endpoints."""
        arrived = time.perf_counter()
        body = await request.body()
        with request_span(f"{request.method} {endpoint.path}",
                          {"http.request.method": request.method, "url.path": endpoint.path,
                           "cutctx.endpoint": endpoint.name}) as span:
            outcome = await self._decide(endpoint, request, body)
            if span is not None:
                span.set_attribute("cutctx.decision", outcome.decision)
            response = await self._send(endpoint, request, outcome, arrived)
            if span is not None:
                span.set_attribute("http.response.status_code", response.status_code)
            return response

    async def _decide(self, endpoint: Endpoint, request: Request, body: bytes) -> _Outcome:
        headers = request.headers
        if wants_bypass(headers):
            return _Outcome(body, False, "bypass", {"X-Cutctx-Decision": "bypass"})
        parsed = read_json(body, headers.get("content-encoding", ""))
        if parsed is None:
            return _Outcome(body, False, "not_possible", {"X-Cutctx-Decision": "not_possible"},
                            log={"why": "body"})
        key = (await self.keys()).conversation(endpoint, headers, parsed)
        conversation = self.conversations.get(key, endpoint.format)
        raw = parsed.get(endpoint.format.list_key)
        items = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else None
        # a count sends nothing on: it is no step of a lineage (the request it sizes will be)
        match = (conversation.lineages.match(items) if items is not None and not endpoint.counts
                 else None)
        label = key.label if match is None else f"{key.label}.{match.lineage.id}"
        log: dict[str, object] = {"session": label, "key_from": key.source}
        if match is not None:
            log["lineage"] = match.how
            if match.reply_resent is not None:
                self.metrics.replies.labels(str(match.reply_resent).lower()).inc()
        try:
            prepared = await conversation.session.aprepare(parsed)
        except CompactionError as error:
            log["error"] = error.code
            return _Outcome(body, False, "error", {
                "X-Cutctx-Decision": "error", "X-Cutctx-Error": error.code,
                "X-Cutctx-Session": label}, None, parsed, conversation, match, items, log)
        report = prepared.report
        changed = report.decision not in _UNTOUCHED and not (
            report.decision == "deferred" and not report.covered)
        sent = dumps(prepared.request) if changed else body
        self.metrics.report(endpoint.name, report)
        return _Outcome(sent, changed, report.decision, _report_headers(report, label), report,
                        parsed, conversation, match, items, log)

    async def _send(self, endpoint: Endpoint, request: Request, outcome: _Outcome,
                    arrived: float, *, retried: bool = False) -> Response:
        url = self.upstreams.url(endpoint.provider, request.url.path, request.url.query)
        sent = self.client().build_request(
            request.method, url, content=outcome.body,
            headers=to_upstream(_headers_of(request), body_changed=outcome.changed))
        added = time.perf_counter() - arrived
        self.metrics.added.labels(endpoint.name).observe(added)
        fields = {"endpoint": endpoint.name, "decision": outcome.decision, **outcome.log,
                  "tokens_before": outcome.report.tokens_in if outcome.report else None,
                  "tokens_sent": outcome.report.tokens_sent if outcome.report else None,
                  "items_in": outcome.report.items_in if outcome.report else None,
                  "items_sent": outcome.report.items_sent if outcome.report else None,
                  "added_ms": round(added * 1000, 2), "retried": retried or None}
        response = await self._sent(endpoint.name, outcome, fields, sent)
        if isinstance(response, Response):
            return response
        status = response.status_code
        if status >= 400 and not retried and outcome.report is not None:
            error_body = await response.aread()
            await response.aclose()
            figures = context_error(status, error_body)
            if figures is not False and outcome.report.tokens_sent:
                again = await self._retry(endpoint, outcome, figures)
                if again is not None:
                    self.metrics.retries.labels(endpoint.name).inc()
                    return await self._send(endpoint, request, again, arrived, retried=True)
            return self._whole(endpoint.name, outcome, fields, response, error_body)
        reader = None
        if not endpoint.counts and outcome.report is not None and status < 400:
            reader = ReplyReader(endpoint.format_name, response.headers.get("content-type", ""),
                                 response.headers.get("content-encoding", ""))
        return self._streamed(endpoint.name, outcome, fields, response, reader)

    async def _retry(self, endpoint: Endpoint, outcome: _Outcome,
                     figures: tuple[int, int] | bool) -> _Outcome | None:
        """The request compacted again, for a prompt budget below what the upstream took, by a
        one-off session (nothing remembered); None when that changes nothing."""
        report, parsed, conversation = outcome.report, outcome.parsed, outcome.conversation
        if report is None or parsed is None or conversation is None or not report.tokens_sent:
            return None
        budget = lower_budget(report.tokens_sent, figures)
        once = CompactionSession(endpoint.format, settings=conversation.session.settings.replace(
            sticky=False, defer_to_server=False, on_call=None, on_compaction=None))
        try:
            prepared = await once.aprepare(parsed, budget=budget)
        except CompactionError:
            return None
        again = prepared.report
        if again.tokens_sent is None or again.tokens_sent >= report.tokens_sent:
            return None
        self.metrics.report(endpoint.name, again)
        label = outcome.headers.get("X-Cutctx-Session", "")
        return _Outcome(dumps(prepared.request), True, again.decision,
                        _report_headers(again, label), again, parsed, conversation,
                        outcome.match, outcome.items, {**outcome.log, "retry_budget": budget})

    async def _relay(self, name: str, outcome: _Outcome, fields: dict[str, object],
                     response: httpx2.Response, reader: ReplyReader | None
                     ) -> AsyncIterator[bytes]:
        """The upstream's bytes as they arrive; at the end, the reply's copy for the lineage,
        the figures and the log record."""
        started = time.perf_counter()
        cut = None
        try:
            async for chunk in response.aiter_raw():
                if reader is not None:
                    reader.feed(chunk)
                yield chunk
        except httpx2.HTTPError as error:
            cut = type(error).__name__
        finally:
            await response.aclose()
            if reader is not None and cut is None:
                await self._keep_reply(name, outcome, reader)
            self._done(name, outcome, {**fields, "status": response.status_code,
                                           "upstream_ms": round(
                                               (time.perf_counter() - started) * 1000, 1),
                                           "cut": cut})

    async def _keep_reply(self, name: str, outcome: _Outcome, reader: ReplyReader) -> None:
        """The reply's copy for the lineage; the input it reports for the metrics and for the
        session, whose later estimates follow it (as a wrapped client's do)."""
        reply = reader.reply()
        if reply is None:
            return
        report, conversation = outcome.report, outcome.conversation
        self.metrics.usage(name, reply.usage, report.tokens_sent if report else None)
        if report is not None and conversation is not None and reply.usage is not None:
            await conversation.session.aobserve_usage(report, reply.usage)
        match = outcome.match
        if match is not None and match.lineage.items is outcome.items:
            match.lineage.reply = reply.items

    def _whole(self, name: str, outcome: _Outcome, fields: dict[str, object],
               response: httpx2.Response, body: bytes) -> Response:
        """An upstream answer read whole (an error), passed on with its status and body: read
        decoded, so sent without the upstream's ``content-encoding`` (its length is the
        body's)."""
        answer = Response(body, status_code=response.status_code)
        headers = [(name, value) for name, value in response.headers.multi_items()
                   if name.lower() != "content-encoding"]
        answer.raw_headers = _raw([*to_client(headers, outcome.headers),
                                   ("content-length", str(len(body)))])
        self._done(name, outcome, {**fields, "status": response.status_code})
        return answer

    async def _sent(self, name: str, outcome: _Outcome, fields: dict[str, object],
                    sent: httpx2.Request) -> httpx2.Response | Response:
        """The upstream's streamed response to ``sent``, or the proxy's own error answer when
        it timed out or could not be reached."""
        try:
            return await self.client().send(sent, stream=True)
        except httpx2.ConnectTimeout:
            return self._failed(name, outcome, fields, 504, "timeout",
                                "no connection to the upstream within "
                                f"{self.upstreams.connect_timeout:g} s")
        except httpx2.TimeoutException:
            return self._failed(name, outcome, fields, 504, "timeout",
                                f"the upstream did not answer within {self.upstreams.timeout:g} s")
        except httpx2.TransportError as error:
            return self._failed(name, outcome, fields, 502, "connection",
                                f"the upstream could not be reached ({type(error).__name__})")

    def _failed(self, name: str, outcome: _Outcome, fields: dict[str, object],
                status: int, kind: str, message: str) -> Response:
        """The proxy's own answer when the upstream gave none: its error shape, no content."""
        self.metrics.upstream_errors.labels(name, kind).inc()
        body = json.dumps({"type": "error", "error": {
            "type": f"cutctx_upstream_{kind}", "code": f"upstream_{kind}",
            "message": message}}).encode()
        answer = Response(body, status_code=status, media_type="application/json")
        answer.raw_headers.extend(_raw(list(outcome.headers.items())))
        self._done(name, outcome, {**fields, "status": status, "failure": kind})
        return answer

    def _done(self, name: str, outcome: _Outcome, fields: dict[str, object]) -> None:
        status = fields.get("status")
        self.metrics.request(name, outcome.decision,
                             status if isinstance(status, int) else 0)
        log_request(fields)

    # --- everything else ---------------------------------------------------------------------

    async def forward(self, request: Request) -> Response:
        """Any other request: forwarded untouched (its body streamed), its answer relayed."""
        path = request.url.path
        provider: Provider = provider_of(path, request.headers)
        url = self.upstreams.url(provider, path, request.url.query)
        outcome = _Outcome(b"", False, "forwarded", {"X-Cutctx-Decision": "forwarded"})
        fields: dict[str, object] = {"endpoint": "other", "decision": "forwarded",
                                     "method": request.method}
        has_body = request.method not in ("GET", "HEAD", "DELETE", "OPTIONS")
        sent = self.client().build_request(
            request.method, url, headers=to_upstream(_headers_of(request), body_changed=False),
            content=request.stream() if has_body else None)
        response = await self._sent("other", outcome, fields, sent)
        if isinstance(response, Response):
            return response
        return self._streamed("other", outcome, fields, response, None)

    def _streamed(self, name: str, outcome: _Outcome, fields: dict[str, object],
                  response: httpx2.Response, reader: ReplyReader | None) -> Response:
        """The upstream's answer relayed as it arrives, with its headers and the report's."""
        streamed = StreamingResponse(self._relay(name, outcome, fields, response, reader),
                                     status_code=response.status_code)
        streamed.raw_headers = _raw(to_client(response.headers.multi_items(), outcome.headers))
        return streamed


def _headers_of(request: Request) -> list[tuple[str, str]]:
    """The request's headers as they came (each name and value as its bytes)."""
    return [(name.decode("latin-1"), value.decode("latin-1"))
            for name, value in request.headers.raw]


def _report_headers(report: CallReport, label: str) -> dict[str, str]:
    """The report as response headers: figures and hashes only."""
    headers = {"X-Cutctx-Decision": report.decision, "X-Cutctx-Session": label}
    if report.tokens_in is not None:
        headers["X-Cutctx-Tokens-Before"] = str(report.tokens_in)
    if report.tokens_sent is not None:
        headers["X-Cutctx-Tokens-Sent"] = str(report.tokens_sent)
    return headers


def _raw(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


"""``create_app``: the ASGI app (Starlette) of the compacting proxy, for any ASGI server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from cutctx import ValidationError

from .. import CompactionSettings
from ..stores import MemoryStore, Store, is_down
from ._endpoints import COMPACTING, Endpoint
from ._metrics import CONTENT_TYPE
from ._proxy import Proxy
from ._upstream import Upstreams

__all__ = ["create_app"]

_WEBSOCKET_REFUSED = {"type": "error", "error": {
    "type": "websocket_not_supported", "code": "websocket_not_supported",
    "message": "cutctx serve answers /v1/responses over HTTP only: send the request as an "
               "HTTP POST"}}


def _websocket_refused() -> Response:
    """The answer to a WebSocket upgrade: 426 at once, so a client falls back to HTTP."""
    return JSONResponse(_WEBSOCKET_REFUSED, status_code=426, headers={"Connection": "close"})


def create_app(settings: CompactionSettings | None = None, store: Store | None = None,
               upstreams: Upstreams | None = None, *, salt: bytes | None = None,
               max_sessions: int = 1024, max_lineages: int = 8) -> Starlette:
    """The compacting proxy as an ASGI app.

    ``settings``: how requests are compacted (as a wrapped client's); ``store``: where
    summaries are shared (and the replicas' salt), default ``settings.store`` or a
    ``MemoryStore``; ``upstreams``: the providers' base URLs. ``salt``: what conversation keys
    are hashed with (None: one made once in the store, shared by every replica using it).
    ``max_sessions`` conversations are held (least recently used dropped), each with up to
    ``max_lineages`` lineages.
    """
    settings = CompactionSettings.of(settings)
    store = store if store is not None else settings.store or MemoryStore()
    upstreams = upstreams if upstreams is not None else Upstreams()
    if not isinstance(upstreams, Upstreams):
        raise ValidationError("upstreams must be a cutctx_adapters.serve.Upstreams",
                              {"field": "upstreams"})
    for name, value in (("max_sessions", max_sessions), ("max_lineages", max_lineages)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(f"{name} must be an int >= 1", {"field": name})
    if salt is not None and (not isinstance(salt, bytes) or not salt):
        raise ValidationError("salt must be non-empty bytes", {"field": "salt"})
    proxy = Proxy(settings, store, upstreams, salt=salt, max_sessions=max_sessions,
                  max_lineages=max_lineages)

    def compacting(endpoint: Endpoint) -> Route:
        async def handle(request: Request) -> Response:
            return await proxy.compacting(request, endpoint)

        return Route(endpoint.path, handle, methods=["POST"], name=endpoint.name)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "store": "down" if is_down(store) else "up",
                             "sessions": len(proxy.conversations)})

    async def metrics(request: Request) -> Response:
        return Response(proxy.metrics.text(), media_type=CONTENT_TYPE)

    async def refuse_websocket(websocket: WebSocket) -> None:
        try:
            await websocket.send_denial_response(_websocket_refused())
        except RuntimeError:  # the server cannot answer a handshake with a response
            await websocket.close(code=1008)

    async def other(request: Request) -> Response:
        if (request.url.path.rstrip("/") == "/v1/responses"
                and request.headers.get("upgrade", "").lower() == "websocket"):
            return _websocket_refused()
        return await proxy.forward(request)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await proxy.keys()
        try:
            yield
        finally:
            await proxy.aclose()

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *(compacting(endpoint) for endpoint in COMPACTING),
        WebSocketRoute("/v1/responses", refuse_websocket),
        Route("/{path:path}", other, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD",
                                                 "OPTIONS"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = proxy
    return app

"""``cutctx serve``: a compacting proxy any agent, in any language, points its base URL at.

``create_app(settings=..., store=..., upstreams=Upstreams(...))`` is the ASGI app (Starlette,
httpx2 for the upstream); ``cutctx serve`` runs it with uvicorn. ``POST /v1/chat/completions``,
``/v1/responses`` and ``/v1/messages`` are compacted as the wrapped clients compact them (one
sticky session per conversation key); the count endpoints answer the count of what would be
sent; everything else is forwarded untouched. Needs ``pip install 'cutctx[proxy]'``
(``docs/proxy.md``).
"""

from ._requires import require

for _module in ("starlette", "httpx2", "prometheus_client"):
    require(_module, "proxy")

from ._app import create_app  # noqa: E402
from ._keys import AGENT_HEADERS  # noqa: E402
from ._upstream import Upstreams  # noqa: E402

__all__ = ["AGENT_HEADERS", "Upstreams", "create_app"]

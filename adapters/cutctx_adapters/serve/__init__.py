"""``cutctx serve``: a compacting proxy any agent, in any language, points its base URL at.

``create_app(settings=..., store=..., upstreams=Upstreams(...))`` is the ASGI app (Starlette,
httpx2 for the upstream); ``cutctx serve`` runs it with uvicorn. ``POST /v1/chat/completions``,
``/v1/responses`` and ``/v1/messages`` are compacted as the wrapped clients compact them (one
sticky session per conversation key); the count endpoints answer the count of what would be
sent; everything else is forwarded untouched. The app needs ``pip install 'cutctx[proxy]'``
(``docs/proxy.md``); how conversations are keyed and held (``Keys``, ``Conversations``,
``COMPACTING``) needs nothing more than cutctx, for other hosts (the LiteLLM hook).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._requires import imported_when_used
from ._conversations import Conversation, Conversations
from ._endpoints import COMPACTING, Endpoint, by_path
from ._keys import AGENT_HEADERS, ConversationKey, Keys

if TYPE_CHECKING:
    from ._app import create_app
    from ._upstream import Upstreams

__all__ = ["AGENT_HEADERS", "COMPACTING", "Conversation", "ConversationKey", "Conversations",
           "Endpoint", "Keys", "Upstreams", "by_path", "create_app"]

_NEEDS_PROXY = {"create_app": "_app", "Upstreams": "_upstream"}


__getattr__ = imported_when_used(__name__, _NEEDS_PROXY,
                                 ("starlette", "httpx2", "prometheus_client"), "proxy")

"""LiteLLM's proxy: cutctx as one of its call hooks, compacting chat, messages and responses.

    # custom_callbacks.py, beside the LiteLLM proxy's config.yaml
    from cutctx_adapters.integrations.litellm import CompactionHook
    compaction = CompactionHook(window=64_000)

    # config.yaml
    litellm_settings:
      callbacks: custom_callbacks.compaction

Before LiteLLM calls a model, ``async_pre_call_hook`` gets the request: Chat Completions
(``completion``), Anthropic Messages (``anthropic_messages``) and Responses (``responses``)
histories are compacted with the sessions ``cutctx serve`` uses — one per conversation, keyed
the same way (a caller's ``X-Cutctx-Session`` header, the coding agents' ids, a fingerprint), in
the namespace of the caller's LiteLLM key — and the figures go in ``data["metadata"]["cutctx"]``
(ids and counts only). Other calls pass through. Needs ``pip install 'cutctx[litellm]'``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Unpack

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError("cutctx_adapters.integrations.litellm needs the 'litellm' package: "
                      "pip install 'cutctx[litellm]'") from missing

from cutctx import CompactionError

from ..serve import COMPACTING, Conversations, Endpoint, Keys
from ..settings import CompactionSettings, SettingsKeywords
from ..stores import MemoryStore, Store

__all__ = ["CompactionHook"]

_CALLS: dict[str, str] = {
    "completion": "chat", "acompletion": "chat",
    "anthropic_messages": "messages", "aanthropic_messages": "messages",
    "responses": "responses", "aresponses": "responses",
}
"""LiteLLM call types, and the endpoint whose history they carry."""
_ENDPOINTS = {endpoint.name: endpoint for endpoint in COMPACTING}


class CompactionHook(CustomLogger):
    """A LiteLLM callback compacting each model call's history (see the module).

    Settings as ``CompactionSession``'s (``settings=`` and/or keywords); ``store`` shares
    summaries between the proxy's workers; ``salt`` keys conversations (the same in every
    worker, else a random one per process).
    """

    def __init__(self, settings: CompactionSettings | None = None, *, salt: bytes | None = None,
                 max_sessions: int = 1024, **keywords: Unpack[SettingsKeywords]) -> None:
        super().__init__()
        self.settings = CompactionSettings.of(settings, **keywords)
        store: Store = self.settings.store or MemoryStore()
        self.conversations = Conversations(self.settings, store, limit=max_sessions)
        self._keys = Keys(salt or secrets.token_bytes(32))

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any],
                                  call_type: str) -> dict[str, Any] | None:
        """The request with its history compacted (a new dict), or None to leave it as is."""
        name = _CALLS.get(str(call_type))
        if name is None:
            return None
        endpoint: Endpoint = _ENDPOINTS[name]
        headers = _headers(data, user_api_key_dict)
        key = self._keys.conversation(endpoint, headers, data)
        conversation = self.conversations.get(key, endpoint.format)
        try:
            prepared = await conversation.session.aprepare(data)
        except CompactionError as error:  # LiteLLM sends it as it came; the provider decides
            return {**data, "metadata": _with_report(data, {"decision": "error",
                                                            "error": error.code})}
        report = prepared.report
        return {**prepared.request, "metadata": _with_report(data, {
            "decision": report.decision, "session": key.label,
            "tokens_before": report.tokens_in, "tokens_sent": report.tokens_sent,
            "items_in": report.items_in, "items_sent": report.items_sent})}


def _headers(data: Mapping[str, Any], user: Any) -> dict[str, str]:
    """The caller's request headers as LiteLLM's proxy recorded them, its credential replaced
    by LiteLLM's hash of the caller's key (the tenant)."""
    request = data.get("proxy_server_request")
    raw = request.get("headers") if isinstance(request, Mapping) else None
    headers = {str(name).lower(): str(value) for name, value in (raw or {}).items()}
    for name in ("authorization", "x-api-key", "api-key"):
        headers.pop(name, None)
    token = getattr(user, "token", None) or getattr(user, "api_key", None)
    headers["authorization"] = str(token or "")
    return headers


def _with_report(data: Mapping[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    metadata = data.get("metadata")
    return {**(metadata if isinstance(metadata, Mapping) else {}), "cutctx": figures}

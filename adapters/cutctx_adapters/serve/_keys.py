"""Which conversation a request belongs to, and whose: no client state needed.

A conversation is keyed by, in order: the caller's ``X-Cutctx-Session`` header; the ids coding
agents already send (Claude Code's session header, Codex's session and thread ids, a request's
``prompt_cache_key``, Anthropic ``metadata.user_id``); else a fingerprint of the model, tools,
system prompt (instructions) and first user message. Every key lives in the namespace of the
caller's credential, by a salted hash, so tenants sending the same prompt never share state.
Only hashes leave this module.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._endpoints import Endpoint
from ._headers import SESSION, credential

__all__ = ["AGENT_HEADERS", "ConversationKey", "Keys"]

AGENT_HEADERS = ("x-claude-code-session-id", "session_id", "session-id", "thread_id",
                 "thread-id", "conversation_id", "conversation-id")
"""Conversation ids coding agents send as headers: Claude Code's, then Codex's."""


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """A conversation: its tenant's hash, where its key came from and the key's hash."""

    tenant: str
    source: str
    """``header``, ``agent``, ``prompt_cache_key``, ``metadata.user_id`` or ``fingerprint``."""
    digest: str

    @property
    def label(self) -> str:
        """What the ``X-Cutctx-Session`` response header says: hashes only."""
        return f"{self.tenant}.{self.digest}"


class Keys:
    """Hashes with one salt: the same salt in every replica gives the same keys."""

    def __init__(self, salt: bytes) -> None:
        self._salt = salt

    def _hash(self, *parts: str) -> str:
        message = "\x1f".join(parts).encode("utf-8", "surrogatepass")
        return hmac.new(self._salt, message, hashlib.sha256).hexdigest()[:16]

    def tenant(self, headers: Mapping[str, str]) -> str:
        """The caller's namespace: a salted hash of its credential (of "" when it sends none)."""
        return self._hash("tenant", credential(headers))

    def conversation(self, endpoint: Endpoint, headers: Mapping[str, str],
                     body: Mapping[str, Any]) -> ConversationKey:
        """The request's conversation key (see the module)."""
        tenant = self.tenant(headers)
        source, value = _source(endpoint, headers, body)
        return ConversationKey(tenant, source, self._hash(tenant, source, value))


def _source(endpoint: Endpoint, headers: Mapping[str, str],
            body: Mapping[str, Any]) -> tuple[str, str]:
    own = headers.get(SESSION)
    if own:
        return "header", own
    for name in AGENT_HEADERS:
        value = headers.get(name)
        if value:
            return "agent", f"{name}={value}"
    cache_key = body.get("prompt_cache_key")
    if endpoint.provider == "openai" and isinstance(cache_key, str) and cache_key:
        return "prompt_cache_key", cache_key
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if endpoint.provider == "anthropic" and isinstance(user, str) and user:
        return "metadata.user_id", user
    return "fingerprint", _fingerprint(endpoint, body)


def _fingerprint(endpoint: Endpoint, body: Mapping[str, Any]) -> str:
    """The model, tools, system prompt (or instructions) and first user message, as JSON."""
    items = body.get(endpoint.format.list_key)
    side = body.get(endpoint.format.side_key) if endpoint.format.side_key else None
    head: list[Any] = []
    if isinstance(items, Sequence) and not isinstance(items, str):
        for item in items:
            role = item.get("role") if isinstance(item, Mapping) else None
            head.append(item)
            if role == "user":
                break
    elif isinstance(items, str):
        head.append(items)
    parts = [body.get("model"), body.get("tools"), side, head]
    return json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"),
                      default=str)

"""The endpoints the proxy compacts, and the history format and provider of each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Literal

from .. import HistoryFormat

__all__ = ["COMPACTING", "Endpoint", "Provider", "by_path", "provider_of"]

Provider = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One compacting endpoint: its path, provider and format; ``counts`` for the count
    endpoints, answered with the upstream's count of what would be sent."""

    name: str
    path: str
    provider: Provider
    format_name: Literal["chat", "responses", "messages"]
    counts: bool = False

    @property
    def format(self) -> HistoryFormat:
        """The history format (its module imported on first use: it needs tiktoken)."""
        return _format(self.format_name)


COMPACTING: tuple[Endpoint, ...] = (
    Endpoint("chat", "/v1/chat/completions", "openai", "chat"),
    Endpoint("responses", "/v1/responses", "openai", "responses"),
    Endpoint("responses.input_tokens", "/v1/responses/input_tokens", "openai", "responses",
             counts=True),
    Endpoint("messages", "/v1/messages", "anthropic", "messages"),
    Endpoint("messages.count_tokens", "/v1/messages/count_tokens", "anthropic", "messages",
             counts=True),
)
_BY_PATH = {endpoint.path: endpoint for endpoint in COMPACTING}


def by_path(path: str) -> Endpoint | None:
    """The compacting endpoint at ``path`` (a trailing slash ignored), or None."""
    return _BY_PATH.get(path.rstrip("/") or "/")


def provider_of(path: str, headers: Mapping[str, str]) -> Provider:
    """Where a request the proxy does not compact goes: Anthropic's when it carries an
    Anthropic header (``anthropic-version``, ``x-api-key``) or an Anthropic-only path; OpenAI's
    otherwise."""
    if "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    if path.startswith(("/v1/messages", "/v1/complete")):
        return "anthropic"
    return "openai"


@cache
def _format(name: str) -> HistoryFormat:
    if name == "chat":
        from ..openai import chat

        return chat.FORMAT
    if name == "responses":
        from ..openai import responses

        return responses.FORMAT
    from ..anthropic import messages

    return messages.FORMAT

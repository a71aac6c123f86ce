"""Summaries through the caller's ``OpenAI``/``AsyncOpenAI`` client (Chat Completions)."""

from __future__ import annotations

from typing import Any

from ..clients import ProviderSummarizer

__all__ = ["OpenAISummarizer"]


class OpenAISummarizer(ProviderSummarizer):
    """A summarizer backed by ``client.chat.completions.create``.

    The reply is bounded by ``max_completion_tokens`` = the longest summary accepted for the
    request's ``target_tokens``; for a reasoning model pass ``extra_output_tokens`` for its
    hidden reasoning. Only a reply with ``finish_reason == "stop"`` and no refusal is used.
    """

    reason_field = "finish_reason"
    clean_stops = frozenset({"stop"})

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            "max_completion_tokens": max_tokens,
        }

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.chat.completions.create(**kwargs)

    def _reply(self, response: Any) -> tuple[str, str | None]:
        choices = getattr(response, "choices", None) or []
        if not choices:
            return "", "stop"  # nothing came back: refused as an empty summary
        message = getattr(choices[0], "message", None)
        if getattr(message, "refusal", None):
            return "", "refusal"
        content = getattr(message, "content", None)
        return (content if isinstance(content, str) else ""), getattr(
            choices[0], "finish_reason", None)

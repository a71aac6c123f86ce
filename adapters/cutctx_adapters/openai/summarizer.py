"""Summaries through the caller's ``OpenAI``/``AsyncOpenAI`` client (Chat Completions)."""

from __future__ import annotations

from typing import Any

from .._summarizer import ProviderSummarizer

__all__ = ["OpenAISummarizer"]


class OpenAISummarizer(ProviderSummarizer):
    """A summarizer backed by ``client.chat.completions.create``.

    The reply is bounded by ``max_completion_tokens`` = the request's ``target_tokens``; for a
    reasoning model pass ``extra_output_tokens`` for its hidden reasoning.
    """

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            "max_completion_tokens": max_tokens,
        }

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.chat.completions.create(**kwargs)

    def _text(self, response: Any) -> str:
        choices = getattr(response, "choices", None) or []
        if not choices:
            return ""
        content = getattr(choices[0].message, "content", None)
        return content if isinstance(content, str) else ""

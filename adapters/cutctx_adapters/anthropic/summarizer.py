"""Summaries through the caller's ``Anthropic``/``AsyncAnthropic`` client (Messages API)."""

from __future__ import annotations

from typing import Any

from ..clients import ProviderSummarizer

__all__ = ["AnthropicSummarizer"]


class AnthropicSummarizer(ProviderSummarizer):
    """A summarizer backed by ``client.messages.create``; the reply is bounded by
    ``max_tokens`` = the longest summary accepted for the request's ``target_tokens`` (plus
    ``extra_output_tokens``). Only a reply that ended on ``end_turn`` or a stop sequence is
    used: ``max_tokens``, ``refusal``, ``pause_turn`` and the rest are refused."""

    reason_field = "stop_reason"
    clean_stops = frozenset({"end_turn", "stop_sequence"})

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": max_tokens,
        }

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.messages.create(**kwargs)

    def _reply(self, response: Any) -> tuple[str, str | None]:
        blocks = getattr(response, "content", None) or []
        texts = [block.text for block in blocks
                 if getattr(block, "type", None) == "text" and isinstance(block.text, str)]
        return "".join(texts), getattr(response, "stop_reason", None)

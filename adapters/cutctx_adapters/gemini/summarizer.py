"""Summaries through the caller's ``google.genai`` client (``client`` or ``client.aio``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..clients import ProviderSummarizer

__all__ = ["GeminiSummarizer"]


class GeminiSummarizer(ProviderSummarizer):
    """A summarizer backed by ``client.models.generate_content`` (``genai.Client``, or its
    ``client.aio`` for async). The reply is bounded by ``max_output_tokens`` = the longest
    summary accepted for the request's ``target_tokens`` plus ``extra_output_tokens`` (give a
    thinking model room for its thoughts there, or turn thinking down with
    ``request_options={"config": {"thinking_config": ...}}``). Only a reply that ended on
    ``STOP`` is used: ``MAX_TOKENS``, ``SAFETY``, ``RECITATION``, a blocked prompt and the rest
    are refused."""

    reason_field = "finish_reason"
    clean_stops = frozenset({"STOP"})

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        extra = self.request_options.get("config")
        config = {**(extra if isinstance(extra, Mapping) else {}),
                  "system_instruction": system, "max_output_tokens": max_tokens}
        return {"model": self.model, "contents": [{"role": "user", "parts": [{"text": user}]}],
                "config": config}

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.models.generate_content(**kwargs)

    def _reply(self, response: Any) -> tuple[str, str | None]:
        candidates = getattr(response, "candidates", None) or []
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            reason = getattr(getattr(feedback, "block_reason", None), "value", None)
            return "", f"BLOCKED_{reason}" if isinstance(reason, str) else None
        content = getattr(candidates[0], "content", None)
        texts = [part.text for part in getattr(content, "parts", None) or []
                 if isinstance(getattr(part, "text", None), str) and not part.thought]
        reason = getattr(candidates[0], "finish_reason", None)
        return "".join(texts), getattr(reason, "value", reason)

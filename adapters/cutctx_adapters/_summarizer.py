"""What the provider summarizers share: prompt lookup, output bound, sync/async dispatch.

A provider summarizer wraps a client the caller built (their keys, retries, base URL) and is a
summarizer callable: ``(request, turns) -> str`` for a sync client, ``-> Awaitable[str]`` for an
async one. Provider errors propagate; ``fulfil`` turns them into ``SummarizationFailed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from cutctx import SummarizationRequest, TranscriptTurn, ValidationError

from ._wrapper import is_async_client
from .prompts import DEFAULT_PROMPT_ID, PromptRegistry, SummaryPrompt

__all__ = ["ProviderSummarizer"]


class ProviderSummarizer:
    """Base of ``OpenAISummarizer`` and ``AnthropicSummarizer``: fill in the three hooks."""

    def __init__(
        self,
        client: Any,
        *,
        model: str,
        prompts: Mapping[str, SummaryPrompt] | Sequence[SummaryPrompt] = (),
        prompt_id: str = DEFAULT_PROMPT_ID,
        extra_output_tokens: int = 0,
        request_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValidationError("model must be a non-empty str", {"field": "model"})
        self.client = client
        self.model = model
        self.prompts = PromptRegistry(prompts)
        self.prompt_id = self.prompts[prompt_id].prompt_id
        self.extra_output_tokens = extra_output_tokens
        self.request_options = dict(request_options or {})
        self.is_async = is_async_client(client)

    def __call__(self, request: SummarizationRequest,
                 turns: Sequence[TranscriptTurn]) -> str | Awaitable[str]:
        system, user = self.prompts[request.prompt_id].messages(request, turns)
        kwargs = {**self.request_options,
                  **self._request(system, user, self.max_output_tokens(request))}
        if self.is_async:
            return self._acall(kwargs)
        return self._text(self._send(kwargs))

    async def _acall(self, kwargs: dict[str, Any]) -> str:
        return self._text(await self._send(kwargs))

    def max_output_tokens(self, request: SummarizationRequest) -> int:
        """The reply bound: the request's target (plus any reasoning allowance)."""
        return max(1, request.target_tokens) + self.extra_output_tokens

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def _send(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _text(self, response: Any) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, prompt_id={self.prompt_id!r})"

"""What the provider summarizers share: prompt lookup, output bound, sync/async dispatch.

A provider summarizer wraps a client the caller built (their keys, retries, base URL) and is a
summarizer callable: ``(request, turns) -> str`` for a sync client, ``-> Awaitable[str]`` for an
async one. Provider errors propagate; ``fulfil`` turns them into ``SummarizationFailed``. A reply
that did not end cleanly (cut at the token bound, filtered, refused) or says nothing raises
``SummaryRejected`` naming the provider's reason: partial or refusal text is never a summary.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from cutctx import SummarizationRequest, TranscriptTurn, ValidationError

from ..errors import SummaryRejected
from ..prompts import DEFAULT_PROMPT_ID, PromptRegistry, SummaryPrompt, allowed_tokens
from ._sdk import is_async_client

__all__ = ["ProviderSummarizer"]


class ProviderSummarizer:
    """Base of ``OpenAISummarizer`` and ``AnthropicSummarizer``: fill in the three hooks and
    say which stop reasons mean a finished reply."""

    reason_field: str = "finish_reason"
    """What the provider calls why a reply ended (named in ``SummaryRejected``)."""
    clean_stops: frozenset[str] = frozenset()
    """The reasons that mean the model finished on its own."""

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
        return self._checked(self._send(kwargs))

    async def _acall(self, kwargs: dict[str, Any]) -> str:
        return self._checked(await self._send(kwargs))

    def _checked(self, response: Any) -> str:
        text, stop = self._reply(response)
        if stop not in self.clean_stops:
            raise SummaryRejected(f"{self.reason_field}:{_safe_reason(stop)}")
        if not text.strip():
            raise SummaryRejected("EmptySummary")
        return text

    def max_output_tokens(self, request: SummarizationRequest) -> int:
        """The reply bound: the longest summary that would be accepted for the request's
        target (``allowed_tokens``), plus any reasoning allowance."""
        return allowed_tokens(request.target_tokens) + self.extra_output_tokens

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def _send(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _reply(self, response: Any) -> tuple[str, str | None]:
        """The reply's text and the provider's reason for ending it (None if it gave none)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, prompt_id={self.prompt_id!r})"


def _safe_reason(stop: object) -> str:
    """A stop reason fit for an error: a short identifier, else a placeholder (never text a
    misbehaving server put there)."""
    if isinstance(stop, str) and stop.replace("_", "").isalnum() and len(stop) <= 40:
        return stop
    return "missing" if stop is None else "unrecognised"

"""pydantic-ai ≥ 2: cutctx as a capability compacting every model request, or a history processor.

    agent = Agent(model, capabilities=[CompactionCapability(window=64_000)])
    agent = Agent(model, capabilities=[ProcessHistory(compacting_history_processor())])

``CompactionCapability`` compacts in ``prepare_model_request``, where the model serving the
request is known: the request's messages only (``ctx.messages``, the run's history, is left as
it is), counted with the request's instructions and tool definitions.
``compacting_history_processor`` does the same for ``ProcessHistory``, which also writes the
compacted history back into the run's messages, for those who want that.

The messages are read as Chat Completions messages through one sticky session (see
``_pydantic_ai_messages``): a request part one message, a response one assistant message, the
serving model's native tool parts and its provider's compaction counted. Messages sent whole
are the caller's objects; a message that lost or changed a part is a copy holding the parts
left; a summary is a new ``ModelRequest``. Anthropic models are counted with the Claude
calibration; the capability's counts follow the input each reply reports
(``after_model_request``). With the provider's own compaction turned on
(``openai_context_management`` / ``anthropic_context_management`` in the model settings) cutctx
defers to it: the messages go as
they are, reported ``deferred``; a server-held conversation (``openai_previous_response_id``)
goes as it is too, reported ``not_possible``. Needs ``pip install 'cutctx[pydantic-ai]'``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Unpack

from .._requires import require

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import RunContext, direct  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402

from cutctx import ValidationError  # noqa: E402

from ..clients import ProviderSummarizer  # noqa: E402
from ..openai import chat  # noqa: E402
from ..planning import server_held  # noqa: E402
from ..session import CallReport  # noqa: E402
from ..settings import CompactionSettings, SettingsKeywords  # noqa: E402
from ._hooks import HookSessions, chat_request  # noqa: E402
from ._pydantic_ai_messages import provider_of, restored  # noqa: E402
from ._pydantic_ai_messages import read as read_messages  # noqa: E402

__all__ = ["CompactionCapability", "HistoryCompactor", "ModelSummarizer",
           "compacting_history_processor"]

_SERVER_COMPACTION = ("openai_context_management", "anthropic_context_management")
"""Model settings that turn a provider's own compaction on."""


class HistoryCompactor:
    """What the capability and the processor share: one sticky session per format, and the
    way from pydantic-ai messages to what is sent and back. ``last_report``: the newest."""

    def __init__(self, settings: CompactionSettings | None, keywords: SettingsKeywords, *,
                 model: str | None = None) -> None:
        self._sessions = HookSessions(settings, keywords, model)
        self.settings = self._sessions.settings
        self.model = self._sessions.model

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self._sessions.last_report

    async def compacted(self, messages: Sequence[ModelMessage], model: str | None, *,
                        instructions: str | None = None,
                        tools: Sequence[ToolDefinition] = (),
                        settings: Mapping[str, Any] | None = None,
                        served_by: Any = None,
                        reply_key: Hashable | None = None) -> list[ModelMessage]:
        """The messages to send for ``model`` (the very list's items where nothing changed);
        ``served_by``: the pydantic-ai ``Model`` serving the request, whose own parts (native
        tool parts, its compaction) it sends back and so are counted; ``reply_key``: the
        request's, for its reply to feed the session (``replied``)."""
        settings = settings or {}
        if self._passed_through(messages, model, settings):
            return list(messages)
        read = read_messages(messages, instructions, provider_of(served_by))
        fields = chat_request(model, read.given, [_tool(tool) for tool in tools],
                              settings.get("max_tokens"))
        session = self._sessions.session(chat.FORMAT, model)
        prepared = await session.aprepare(fields)
        self._sessions.kept(prepared.report)
        if reply_key is not None:
            self._sessions.remember(reply_key, session, prepared.report)
        return restored(read, prepared)

    async def replied(self, reply_key: Hashable, response: ModelResponse) -> None:
        """The reply to the request ``reply_key`` names: its reported input (``usage``) feeds
        the session that compacted it."""
        await self._sessions.afeed_later(reply_key, [response])

    def _passed_through(self, messages: Sequence[ModelMessage], model: str | None,
                        settings: Mapping[str, Any]) -> bool:
        """Whether the provider owns this history (its compaction is turned on, or it holds
        the conversation): then it goes as it is, and the report says why."""
        why = next((f"the provider's own compaction is on ({key})" for key in _SERVER_COMPACTION
                    if settings.get(key)), None)
        if why is not None:
            self._sessions.told("deferred", f"{why}: left to the provider", chat.FORMAT, model,
                                len(messages))
            return True
        if settings.get("openai_previous_response_id"):
            self._sessions.told("not_possible", server_held("openai_previous_response_id"),
                                chat.FORMAT, model, len(messages))
            return True
        return False


class CompactionCapability(AbstractCapability[Any]):
    """Compacts each model request's messages in ``prepare_model_request`` (see the module).

    Takes ``CompactionSession``'s settings (``settings=`` and/or keywords: ``window``,
    ``trigger``, ``target``, ``keep_recent``, ``summarizer``, ``store``, ...). ``model``: the
    model name counts and the window are for, instead of the serving model's ``model_name``.
    """

    def __init__(self, settings: CompactionSettings | None = None, *,
                 model: str | None = None, **keywords: Unpack[SettingsKeywords]) -> None:
        self.compactor = HistoryCompactor(settings, keywords, model=model)

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self.compactor.last_report

    async def prepare_model_request(self, ctx: RunContext[Any],
                                    request_context: ModelRequestContext
                                    ) -> ModelRequestContext:
        parameters = request_context.model_request_parameters
        instructions = "\n\n".join(part.content for part in parameters.instruction_parts or ())
        served_by = request_context.model
        request_context.messages = await self.compactor.compacted(
            request_context.messages, self.compactor.model or served_by.model_name,
            instructions=instructions or None,
            tools=[*parameters.function_tools, *parameters.output_tools],
            settings=dict(request_context.model_settings or {}), served_by=served_by,
            reply_key=id(request_context))
        return request_context

    async def after_model_request(self, ctx: RunContext[Any], *,
                                  request_context: ModelRequestContext,
                                  response: ModelResponse) -> ModelResponse:
        await self.compactor.replied(id(request_context), response)
        return response

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # takes objects (a summarizer, a store): not spec-serializable


class _Processor:
    """``compacting_history_processor``'s callable: ``(ctx, messages) -> messages``."""

    def __init__(self, compactor: HistoryCompactor) -> None:
        self.compactor = compactor

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self.compactor.last_report

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]
                       ) -> list[ModelMessage]:
        latest = next((message.instructions for message in reversed(messages)
                       if isinstance(message, ModelRequest) and message.instructions), None)
        return await self.compactor.compacted(
            messages, self.compactor.model or ctx.model.model_name, instructions=latest,
            settings=dict(ctx.model_settings or {}), served_by=ctx.model)


def compacting_history_processor(settings: CompactionSettings | None = None, *,
                                 model: str | None = None,
                                 **keywords: Unpack[SettingsKeywords]) -> _Processor:
    """A history processor for ``ProcessHistory(...)``: the run's messages compacted before
    each request, and written back into the run's history (``ProcessHistory`` does that).
    Takes ``CompactionSession``'s settings and ``model`` as ``CompactionCapability`` does; it
    sees no tool definitions (a processor is not given them), so leave room for them in
    ``reserve`` or ``window``."""
    return _Processor(HistoryCompactor(settings, keywords, model=model))


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters_json_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


class ModelSummarizer(ProviderSummarizer):
    """Summaries through a pydantic-ai model (the agent's own, or a cheaper one; a ``Model``
    or a name such as ``"openai:gpt-4o-mini"``), with cutctx's prompts, planned, bounded and
    checked as the provider summarizers' are: the reply is bounded by ``max_tokens`` and used
    only if its ``finish_reason`` is ``stop``; ``asynchronous=True`` awaits the request.

        CompactionCapability(window=64_000, summarizer=ModelSummarizer(model))
    """

    reason_field = "finish_reason"
    clean_stops = frozenset({"stop"})

    def __init__(self, model: Any, *, asynchronous: bool = False, **options: Any) -> None:
        if not isinstance(model, str) and not callable(getattr(model, "request", None)):
            raise ValidationError("model must be a pydantic-ai Model or a model name",
                                  {"field": "model"})
        name = model if isinstance(model, str) else getattr(model, "model_name", None)
        super().__init__(model, model=name or type(model).__name__, **options)
        self.is_async = asynchronous

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {"messages": [ModelRequest(parts=[SystemPromptPart(system),
                                                 UserPromptPart(user)])],
                "model_settings": {"max_tokens": max_tokens}}

    def _send(self, kwargs: dict[str, Any]) -> Any:
        if self.is_async:
            return direct.model_request(self.client, **kwargs)
        return direct.model_request_sync(self.client, **kwargs)

    def _reply(self, response: Any) -> tuple[str, str | None]:
        return str(getattr(response, "text", "") or ""), getattr(response, "finish_reason",
                                                                   None)


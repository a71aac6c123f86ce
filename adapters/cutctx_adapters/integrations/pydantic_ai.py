"""pydantic-ai ≥ 2: cutctx as a capability compacting every model request, or a history processor.

    agent = Agent(model, capabilities=[CompactionCapability(window=64_000)])
    agent = Agent(model, capabilities=[ProcessHistory(compacting_history_processor())])

``CompactionCapability`` compacts in ``prepare_model_request``, where the model serving the
request is known: the request's messages only (``ctx.messages``, the run's history, is left as
it is), counted with the request's instructions and tool definitions.
``compacting_history_processor`` does the same for ``ProcessHistory``, which also writes the
compacted history back into the run's messages, for those who want that.

The messages are read as Chat Completions messages through one sticky session: each request
part (system prompt, user prompt, tool return, retry prompt) one message, each response one
assistant message (text, thinking and tool calls together), so tool calls and their returns
stay paired. Messages sent whole are the caller's objects; a message that lost or changed a
part is a copy holding the parts left (a masked tool return: a copy of the part with the cutctx
stub as its content); a summary is a new ``ModelRequest`` with one ``UserPromptPart``.
Anthropic models are counted with the Claude calibration; the capability's counts follow the
input each reply reports (``after_model_request``). With the provider's own compaction in
play (a provider ``CompactionPart`` in the history, or ``openai_context_management`` /
``anthropic_context_management`` in the model settings) cutctx defers to it: the messages go as
they are, reported ``deferred``; a server-held conversation (``openai_previous_response_id``)
goes as it is too, reported ``not_possible``. Needs ``pip install 'cutctx[pydantic-ai]'``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from .._requires import require

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import RunContext, direct  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
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
from ._hooks import HookSessions, traced  # noqa: E402

__all__ = ["CompactionCapability", "HistoryCompactor", "ModelSummarizer",
           "compacting_history_processor"]

_SERVER_COMPACTION = ("openai_context_management", "anthropic_context_management")
"""Model settings that turn a provider's own compaction on."""


@dataclass(frozen=True, slots=True)
class _Read:
    """The history as Chat Completions messages: ``given[i]`` came from part ``origins[i]``
    (message index, part index; part None: a whole response; message -1: the instructions)."""

    messages: list[ModelMessage]
    given: list[dict[str, Any]]
    origins: list[tuple[int, int | None]]


class HistoryCompactor:
    """What the capability and the processor share: one sticky session per format, and the
    way from pydantic-ai messages to what is sent and back. ``last_report``: the newest."""

    def __init__(self, settings: CompactionSettings | None,
                 keywords: SettingsKeywords) -> None:
        self._sessions = HookSessions(settings, keywords)
        self.settings = self._sessions.settings

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self._sessions.last_report

    async def compacted(self, messages: Sequence[ModelMessage], model: str | None, *,
                        instructions: str | None = None,
                        tools: Sequence[ToolDefinition] = (),
                        settings: Mapping[str, Any] | None = None,
                        reply_key: Hashable | None = None) -> list[ModelMessage]:
        """The messages to send for ``model`` (the very list's items where nothing changed).
        ``reply_key``: the request's, for its reply to feed the session (``replied``)."""
        settings = settings or {}
        passed = self._passed_through(messages, model, settings)
        if passed:
            return list(messages)
        read = _read(messages, instructions)
        fields: dict[str, Any] = {"model": model, "messages": read.given,
                                  "tools": [_tool(tool) for tool in tools]}
        if isinstance(settings.get("max_tokens"), int):
            fields["max_completion_tokens"] = settings["max_tokens"]
        session = self._sessions.session(chat.FORMAT, model)
        prepared = await session.aprepare(fields)
        self._sessions.kept(prepared.report)
        if reply_key is not None:
            self._sessions.remember(reply_key, session, prepared.report)
        return _restored(read, prepared.messages)

    async def replied(self, reply_key: Hashable, response: ModelResponse) -> None:
        """The reply to the request ``reply_key`` names: its reported input (``usage``) feeds
        the session that compacted it."""
        await self._sessions.afeed_later(reply_key, [response])

    def _passed_through(self, messages: Sequence[ModelMessage], model: str | None,
                        settings: Mapping[str, Any]) -> bool:
        """Whether the provider owns this history (its compaction, or a server-held
        conversation): then it goes as it is, and the report says why."""
        why = next((f"the provider's own compaction is on ({key})" for key in _SERVER_COMPACTION
                    if settings.get(key)), None)
        if why is None and any(isinstance(message, ModelResponse) and any(
                isinstance(part, CompactionPart) and part.provider_name
                for part in message.parts) for message in messages):
            why = "the history holds the provider's own compaction (a CompactionPart)"
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
    ``trigger``, ``target``, ``keep_recent``, ``summarizer``, ``store``, ...).
    """

    def __init__(self, settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        self.compactor = HistoryCompactor(settings, keywords)

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self.compactor.last_report

    async def prepare_model_request(self, ctx: RunContext[Any],
                                    request_context: ModelRequestContext
                                    ) -> ModelRequestContext:
        parameters = request_context.model_request_parameters
        instructions = "\n\n".join(part.content for part in parameters.instruction_parts or ())
        request_context.messages = await self.compactor.compacted(
            request_context.messages, request_context.model.model_name,
            instructions=instructions or None,
            tools=[*parameters.function_tools, *parameters.output_tools],
            settings=dict(request_context.model_settings or {}),
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
        return await self.compactor.compacted(messages, ctx.model.model_name,
                                              instructions=latest,
                                              settings=dict(ctx.model_settings or {}))


def compacting_history_processor(settings: CompactionSettings | None = None,
                                 **keywords: Unpack[SettingsKeywords]) -> _Processor:
    """A history processor for ``ProcessHistory(...)``: the run's messages compacted before
    each request, and written back into the run's history (``ProcessHistory`` does that).
    Takes ``CompactionSession``'s settings; it sees no tool definitions (a processor is not
    given them), so leave room for them in ``reserve`` or ``window``."""
    return _Processor(HistoryCompactor(settings, keywords))


# --- pydantic-ai messages → Chat Completions messages, and back --------------------------------


def _read(messages: Sequence[ModelMessage], instructions: str | None) -> _Read:
    given: list[dict[str, Any]] = []
    origins: list[tuple[int, int | None]] = []
    if instructions:
        given.append({"role": "system", "content": instructions})
        origins.append((-1, None))
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            given.append(_assistant(message))
            origins.append((index, None))
            continue
        for position, part in enumerate(message.parts):
            item = _request_item(part)
            if item is not None:
                given.append(item)
                origins.append((index, position))
    return _Read(list(messages), given, origins)


def _request_item(part: Any) -> dict[str, Any] | None:
    """The Chat Completions message a request part is sent as; None for parts the model does
    not read as a message (they travel with their request)."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _user_content(part.content)}
    if isinstance(part, ToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id,
                "content": part.model_response_str()}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return {"role": "tool", "tool_call_id": part.tool_call_id,
                    "content": part.model_response()}
        return {"role": "user", "content": part.model_response()}
    if isinstance(part, CompactionPart):  # a summary the application wrote: user-voice text
        return {"role": "user", "content": part.content or ""}
    return None


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif getattr(item, "kind", None) == "image-url":
            blocks.append({"type": "image_url", "image_url": {"url": item.url}})
        else:
            blocks.append({"type": str(getattr(item, "kind", type(item).__name__))})
    return blocks


def _assistant(message: ModelResponse) -> dict[str, Any]:
    texts = [part.content for part in message.parts
             if isinstance(part, TextPart | ThinkingPart) and part.content]
    item: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
    calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
    if calls:
        item["tool_calls"] = [{"id": part.tool_call_id, "type": "function",
                               "function": {"name": part.tool_name,
                                            "arguments": part.args_as_json_str()}}
                              for part in calls]
    return item


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters_json_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _restored(read: _Read, sent: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    """The pydantic-ai messages for ``sent``: each message whose parts all went unchanged is
    the caller's; one that lost or changed a part is a copy with the parts left; summaries are
    new requests. Parts that are no message of their own stay with their request."""
    kept: dict[int, list[tuple[int | None, Any]]] = {}
    order: list[int | ModelRequest] = []
    for item, source in zip(sent, traced(read.given, sent), strict=True):
        if source is None:
            order.append(ModelRequest(parts=[UserPromptPart(item.get("content") or "")]))
            continue
        message, part_index = read.origins[source[0]]
        if message < 0:
            continue  # the instructions: pydantic-ai sends them itself
        part = None if source[1] else _with_content(read, source[0], item.get("content"))
        if message not in kept:
            kept[message] = []
            order.append(message)
        kept[message].append((part_index, part))
    return _assembled(read, order, kept)


def _with_content(read: _Read, position: int, content: Any) -> Any:
    """The request part behind ``read.given[position]`` with ``content`` (a stub, a clip) in
    place of its own; a clip of text parts as its text, as pydantic-ai holds text."""
    message, part_index = read.origins[position]
    part = read.messages[message].parts[part_index or 0]
    if isinstance(content, list):
        content = "\n".join(str(block.get("text", "")) for block in content
                            if isinstance(block, dict))
    return dataclasses.replace(part, content=content)


def _assembled(read: _Read, order: Sequence[int | ModelRequest],
               kept: Mapping[int, list[tuple[int | None, Any]]]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    counted = {message for message, _ in read.origins}
    last = -1
    for entry in order:
        if isinstance(entry, ModelRequest):
            out.append(entry)
            continue
        out.extend(read.messages[index] for index in range(last + 1, entry)
                   if index not in counted)  # requests of riders only: kept in place
        last = entry
        out.append(_message_with(read.messages[entry], kept[entry]))
    out.extend(read.messages[index] for index in range(last + 1, len(read.messages))
               if index not in counted)
    return out


def _message_with(message: ModelMessage, parts: Sequence[tuple[int | None, Any]]
                  ) -> ModelMessage:
    """``message`` itself when every part it is read as was sent unchanged; else a copy with
    the parts sent (replaced where they changed) and its other parts."""
    if isinstance(message, ModelResponse):
        return message
    new = {part_index: part for part_index, part in parts}
    counted = {position for position, part in enumerate(message.parts)
               if _request_item(part) is not None}
    if set(new) == counted and all(part is None for part in new.values()):
        return message
    kept_parts = [new[position] or part if position in new else part
                  for position, part in enumerate(message.parts)
                  if position in new or position not in counted]
    return dataclasses.replace(message, parts=kept_parts)


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


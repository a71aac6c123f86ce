"""LangChain v1 agents: cutctx as an ``AgentMiddleware`` around every model call.

    from langchain.agents import create_agent
    agent = create_agent(model, tools, middleware=[CompactionMiddleware(window=64_000)])

``wrap_model_call`` (and ``awrap_model_call``) compacts ``request.messages`` for the call
(``request.override(messages=...)``); the system message is counted and kept, the tools are
counted, and the agent's stored state is left as it is. The messages are read as Chat
Completions messages (``langchain_core``'s own conversion, server-tool results apart: see
``_langchain_messages``) through one sticky session; kept messages are the caller's objects,
untouched; a masked or clipped message is a copy of its own original with the cutctx stub in
place of its content; a summary is a new ``HumanMessage`` whose id names its span. Anthropic
models are counted with the Claude calibration, and every model's counts follow the input its
replies report (``usage_metadata``). ``persist=True`` also replaces the stored history with what
was sent (so checkpoints stop growing; what was masked or dropped is then
gone from the state too). Needs ``pip install 'cutctx[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from .._requires import require

require("langchain", "langchain")

from langchain.agents.middleware.types import (  # noqa: E402
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (  # noqa: E402
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.graph.message import REMOVE_ALL_MESSAGES  # noqa: E402
from langgraph.types import Command  # noqa: E402

from cutctx import ValidationError  # noqa: E402

from ..clients import ProviderSummarizer  # noqa: E402
from ..openai import chat  # noqa: E402
from ..session import CallReport, Prepared  # noqa: E402
from ..settings import CompactionSettings, SettingsKeywords  # noqa: E402
from ._hooks import HookSessions, afeed, chat_request, feed  # noqa: E402
from ._langchain_messages import Read, read, restored  # noqa: E402

__all__ = ["ChatModelSummarizer", "CompactionMiddleware"]

Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


@dataclass(frozen=True, slots=True)
class _Read:
    """A model request as cutctx reads it: its messages, and the request for the session."""

    messages: Read
    fields: dict[str, Any]


class CompactionMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Compacts the messages of every model call (see the module).

    Takes ``CompactionSession``'s settings (``settings=`` and/or keywords: ``window``,
    ``trigger``, ``target``, ``keep_recent``, ``summarizer``, ``store``, ...). ``model``: the
    model name counts and the window are for, when the chat model does not say
    (``model_name``/``model``). ``last_report`` is the newest call's ``CallReport``.
    """

    def __init__(self, settings: CompactionSettings | None = None, *, persist: bool = False,
                 model: str | None = None, **keywords: Unpack[SettingsKeywords]) -> None:
        super().__init__()
        if not isinstance(persist, bool):
            raise ValidationError("persist must be True or False", {"field": "persist"})
        self._sessions = HookSessions(settings, keywords, model)
        self.settings = self._sessions.settings
        self.persist = persist
        self.model = self._sessions.model
        self.tools: list[Any] = []
        self._tool_params: tuple[tuple[int, ...], list[dict[str, Any]]] = ((), [])

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self._sessions.last_report

    def wrap_model_call(self, request: ModelRequest[Any], handler: Handler
                        ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        read = self._read(request)
        session = self._sessions.session(chat.FORMAT, read.fields["model"])
        prepared = session.prepare(read.fields)
        sent = self._sent(read, prepared)
        response = handler(request if sent is None else request.override(messages=sent))
        feed(session, prepared.report, response.result)
        return self._result(response, sent)

    async def awrap_model_call(self, request: ModelRequest[Any], handler: AsyncHandler
                               ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        read = self._read(request)
        session = self._sessions.session(chat.FORMAT, read.fields["model"])
        prepared = await session.aprepare(read.fields)
        sent = self._sent(read, prepared)
        response = await handler(request if sent is None else request.override(messages=sent))
        await afeed(session, prepared.report, response.result)
        return self._result(response, sent)

    # --- the steps both share -------------------------------------------------------------

    def _read(self, request: ModelRequest[Any]) -> _Read:
        messages = read(request.messages, request.system_message)
        model = self.model or _model_name(request.model)
        fields = chat_request(model, messages.given, self._tools(request.tools),
                              getattr(request.model, "max_tokens", None))
        return _Read(messages, fields)

    def _tools(self, tools: Sequence[Any]) -> list[dict[str, Any]]:
        """The request's tools as Chat Completions definitions (converted once per list)."""
        key = tuple(id(tool) for tool in tools)
        if key != self._tool_params[0]:
            self._tool_params = (key, [convert_to_openai_tool(tool) for tool in tools])
        return self._tool_params[1]

    def _sent(self, read: _Read, prepared: Prepared) -> list[AnyMessage] | None:
        """The messages to send, None when they are the request's own."""
        self._sessions.kept(prepared.report)
        return restored(read.messages, prepared)

    def _result(self, response: ModelResponse[Any], sent: list[AnyMessage] | None
                ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """The handler's response; with ``persist``, also the stored history replaced by what
        was sent and the reply (the model node adds the reply first, so it is kept last)."""
        if not self.persist or sent is None:
            return response
        update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *sent, *response.result]
        return ExtendedModelResponse(model_response=response,
                                     command=Command(update={"messages": update}))


class ChatModelSummarizer(ProviderSummarizer):
    """Summaries through a LangChain chat model (the agent's own, or a cheaper one), with
    cutctx's prompts, planned, bounded and checked as the provider summarizers' are: the reply
    is bounded by ``max_tokens`` and used only if it ended on its own (its
    ``finish_reason``/``stop_reason``); ``asynchronous=True`` awaits ``ainvoke`` (for
    ``ainvoke`` agents).

        CompactionMiddleware(window=64_000, summarizer=ChatModelSummarizer(cheap_model))
    """

    reason_field = "finish_reason"
    clean_stops = frozenset({"stop", "end_turn", "stop_sequence", "STOP"})

    def __init__(self, model: Any, *, asynchronous: bool = False, **options: Any) -> None:
        if not callable(getattr(model, "invoke", None)):
            raise ValidationError("model must be a LangChain chat model (with invoke)",
                                  {"field": "model"})
        super().__init__(model, model=_model_name(model) or type(model).__name__, **options)
        self.is_async = asynchronous

    def _request(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {"input": [SystemMessage(system), HumanMessage(user)], "max_tokens": max_tokens}

    def _send(self, kwargs: dict[str, Any]) -> Any:
        call = self.client.ainvoke if self.is_async else self.client.invoke
        return call(**kwargs)

    def _reply(self, response: Any) -> tuple[str, str | None]:
        metadata = getattr(response, "response_metadata", None) or {}
        stop = metadata.get("finish_reason", metadata.get("stop_reason"))
        return str(getattr(response, "text", "") or ""), stop


def _model_name(model: Any) -> str | None:
    for attribute in ("model_name", "model"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None

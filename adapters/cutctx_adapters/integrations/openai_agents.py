"""OpenAI Agents SDK: cutctx as the run's ``call_model_input_filter``.

    from agents import RunConfig
    config = RunConfig(call_model_input_filter=compacting_input_filter(window=64_000))

Before every model call the SDK hands the filter its Responses input items and instructions;
they are compacted through the Responses adapter (one sticky session for all runs the filter
serves) and the instructions are kept. Items kept are the very objects given (the SDK tracks
pending input by identity); stubs, clips and summaries are new plain items. A run that
continues a server-held conversation (``conversation_id``, ``previous_response_id``) sends only
what the server has not seen, which is not a history to compact: it is passed through unchanged
and the report says why. With the server's own compaction on (``ModelSettings(
context_management=...)``) or its compaction items in the input, cutctx defers to it as the
Responses adapter does. Needs ``pip install 'cutctx[openai-agents]'``.
"""

from __future__ import annotations

from typing import Any, Unpack

from .._requires import require

require("agents", "openai-agents")

from agents import Agent, FunctionTool  # noqa: E402
from agents.models import get_default_model  # noqa: E402
from agents.models.fake_id import FAKE_RESPONSES_ID  # noqa: E402
from agents.models.openai_responses import Converter  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

from cutctx import ValidationError  # noqa: E402

from ..history import to_plain  # noqa: E402
from ..openai import responses  # noqa: E402
from ..session import CallReport, Prepared  # noqa: E402
from ..settings import CompactionSettings, SettingsKeywords  # noqa: E402
from ._hooks import HookSessions, Made, Origin, regrouped, untouched  # noqa: E402

__all__ = ["CompactingInputFilter", "compacting_input_filter"]

_SERVER_HELD_RULES = frozenset({"orphaned_tool_result", "orphaned_approval_response"})
"""What the Responses reader says of input that answers calls it does not hold: under
``conversation_id``/``previous_response_id`` the SDK sends only what the server has not seen."""
SERVER_HELD = ("the input answers tool calls it does not hold: the run continues a server-held "
               "conversation (conversation_id / previous_response_id); only the server can "
               "compact it")
"""The reason a pass-through report gives."""


class CompactingInputFilter:
    """A ``call_model_input_filter`` compacting every model call's input (see the module).

    ``model``: the model counts and the window are for, when ``RunConfig(model=...)`` overrides
    the agent's (the filter sees only the agent); else the agent's, else the SDK's default.
    ``last_report`` is the newest call's ``CallReport``.
    """

    def __init__(self, settings: CompactionSettings | None = None, *, model: str | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        self._sessions = HookSessions(settings, keywords, model)
        self.settings = self._sessions.settings
        self.model = self._sessions.model
        self._tools: tuple[tuple[Any, ...], list[Any]] = ((), [])

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self._sessions.last_report

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        given = data.model_data
        agent = data.agent
        model = self.model or _model_name(agent)
        session = self._sessions.session(responses.FORMAT, model)
        items = [_without_placeholder(item) for item in given.input]
        try:
            prepared = await session.aprepare(self._request(agent, model, given, items))
        except ValidationError as error:
            if error.details.get("rule") not in _SERVER_HELD_RULES:
                raise
            self._sessions.told("not_possible", SERVER_HELD, responses.FORMAT, model,
                                len(items))
            return given
        self._sessions.kept(prepared.report)
        if isinstance(prepared.input, str):  # the SDK always gives a list; a string stays one
            return given
        return _restored(given, prepared)

    def _request(self, agent: Agent[Any], model: str, given: ModelInputData,
                 items: list[Any]) -> dict[str, Any]:
        settings = agent.model_settings
        request: dict[str, Any] = {"model": model, "input": items,
                                   "instructions": given.instructions,
                                   "tools": self._tool_params(agent, model)}
        if settings.max_tokens is not None:
            request["max_output_tokens"] = settings.max_tokens
        if settings.context_management is not None:
            request["context_management"] = settings.context_management
        return request

    def _tool_params(self, agent: Agent[Any], model: str) -> list[Any]:
        """The agent's function tools as the Responses API gets them (for the overhead they
        add to every call), converted by the SDK itself, once per tool list."""
        tools = tuple(tool for tool in agent.tools if isinstance(tool, FunctionTool))
        if tools != self._tools[0]:
            converted = Converter.convert_tools(list(tools), [], model=model).tools
            self._tools = (tools, [to_plain(tool) for tool in converted])
        return self._tools[1]


def compacting_input_filter(settings: CompactionSettings | None = None, *,
                            model: str | None = None,
                            **keywords: Unpack[SettingsKeywords]) -> CompactingInputFilter:
    """A filter for ``RunConfig(call_model_input_filter=...)`` compacting each call's input.

    Takes ``CompactionSession``'s settings (``settings=`` and/or keywords: ``window``,
    ``trigger``, ``target``, ``keep_recent``, ``summarizer``, ``store``, ...); ``model`` as
    ``CompactingInputFilter`` says. Sync and async runs alike (the SDK awaits it).
    """
    return CompactingInputFilter(settings, model=model, **keywords)


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else get_default_model()


def _without_placeholder(item: Any) -> Any:
    """``item`` without the id the SDK gives every item it converted from a chat completion
    (``__fake_id__``, which it never sends): not the caller's id, so not one used twice."""
    if isinstance(item, dict) and item.get("id") == FAKE_RESPONSES_ID:
        return {key: value for key, value in item.items() if key != "id"}
    return item


def _restored(given: ModelInputData, prepared: Prepared) -> ModelInputData:
    """The input to send: the SDK's own item wherever one is sent unchanged."""
    origins = [Origin(index) for index in range(len(given.input))]
    entries = regrouped(prepared.input, prepared.sources, origins)
    if untouched(entries, origins, len(given.input)):
        return given
    restored: list[Any] = [entry.item if isinstance(entry, Made)
                else entry.parts[None] or given.input[entry.message] for entry in entries]
    return ModelInputData(input=restored, instructions=given.instructions)

"""Microsoft Agent Framework: cutctx as the agent's ``CompactionStrategy``.

    from agent_framework import Agent
    strategy = CompactingStrategy(window=64_000)
    agent = Agent(client, compaction_strategy=strategy, middleware=[strategy.middleware])
    await agent.run(task, compaction_strategy=strategy.with_budget(30_000))  # a call's budget

Before every model call the framework hands the strategy the call's messages (``list[Message]``)
to compact in place; the strategy reads them as Chat Completions messages through one sticky
session and marks in the framework's own way (``EXCLUDED_KEY``) what is not sent: dropped
messages are excluded, a masked or clipped message is excluded and a copy holding the cutctx
stub inserted after it, a summary is a new user message. The contents of the caller's
messages are never changed, and what the strategy inserted and excluded on an earlier call is
put back first, so the same history always gives the same view. Messages another strategy
excluded stay excluded and are not read. ``with_budget(tokens)`` is the same strategy (the
same live session, its cached views kept) with that prompt budget for the calls it serves: a
host whose budget changes per call passes it on ``run`` instead of building a new strategy.

The framework gives a strategy the messages alone. ``middleware`` is a chat middleware that
tells it the rest of the call, the model (its window and counts), the instructions and the tool
definitions (counted, and kept), and gives the session the input each reply reports, so counts
follow the bill. Without it, name the model (``model=``) and leave room for the instructions and
tools in ``reserve``. Needs ``pip install 'cutctx[agent-framework]'``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Unpack

from .._requires import require

require("agent_framework", "agent-framework")

from agent_framework import (  # noqa: E402
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    ChatContext,
    ChatMiddleware,
    Content,
    Message,
)

from ..openai import chat  # noqa: E402
from ..reports import CallReport, Source  # noqa: E402
from ..session import CompactionSession  # noqa: E402
from ..settings import CompactionSettings, SettingsKeywords, call_budget  # noqa: E402
from ._hooks import (  # noqa: E402
    HookSessions,
    Kept,
    Made,
    Origin,
    afeed,
    chat_request,
    parts_of,
    regrouped,
)

__all__ = ["CallMiddleware", "CompactingStrategy", "CompactionStrategy"]

REASON = "cutctx"
"""The ``EXCLUDE_REASON_KEY`` of what the strategy leaves out."""
_MARK = "cutctx"
"""The ``additional_properties`` key of a message the strategy inserted (its kind)."""


@dataclass(slots=True)
class _Call:
    """What the middleware knows of a call (its options), and what its compaction sent."""

    options: Mapping[str, Any]
    sent: tuple[CompactionSession, CallReport] | None = None


_CALL: ContextVar[_Call | None] = ContextVar("cutctx_agent_framework_call", default=None)
"""The call the middleware around a compaction is serving."""


@dataclass(frozen=True, slots=True)
class _Read:
    """The messages the strategy reads (the history) as Chat Completions messages: ``given[i]``
    came from content ``origins[i]`` (message position in ``history``, content index; None: the
    message as a whole)."""

    history: list[Message]
    given: list[dict[str, Any]]
    origins: list[Origin]


class CompactingStrategy:
    """A ``CompactionStrategy`` compacting every model call's messages (see the module).

    Takes ``CompactionSession``'s settings (``settings=`` and/or keywords: ``window``,
    ``trigger``, ``target``, ``keep_recent``, ``summarizer``, ``store``, ...); ``model`` names
    the model (the window and the counts are its); ``budget``: the prompt budget of every call
    (else the window less ``reserve``). ``last_report`` is the newest call's ``CallReport``.
    """

    def __init__(self, settings: CompactionSettings | None = None, *, model: str | None = None,
                 budget: int | None = None, **keywords: Unpack[SettingsKeywords]) -> None:
        self._sessions = HookSessions(settings, keywords, model)
        """Shared with the ``with_budget`` views."""
        self.budget = call_budget(budget)
        self.settings = self._sessions.settings

    @property
    def model(self) -> str | None:
        """The model the counts and the window are for."""
        return self._sessions.model

    @property
    def last_report(self) -> CallReport | None:
        """The newest call's report (None before the first)."""
        return self._sessions.last_report

    @property
    def middleware(self) -> CallMiddleware:
        """A chat middleware (``Agent(middleware=[...])`` or the client's) that tells the
        strategy each call's model, instructions and tools, and gives the session the input
        each reply reports."""
        return CallMiddleware()

    def with_budget(self, budget: int | None) -> CompactingStrategy:
        """This strategy, its session and views shared, with ``budget`` prompt tokens for the
        calls it serves (None: the window less ``reserve``)."""
        view = object.__new__(CompactingStrategy)
        view._sessions = self._sessions
        view.budget = call_budget(budget)
        view.settings = self.settings
        return view

    async def __call__(self, messages: list[Message]) -> bool:
        """Compact ``messages`` in place; True when what is sent changed."""
        call = _CALL.get()
        options = call.options if call is not None else {}
        model = self.model or _str(options.get("model"))
        read = _read(messages, _str(options.get("instructions")))
        session = self._sessions.session(chat.FORMAT, model)
        request = chat_request(model, read.given,
                               [_tool(tool) for tool in options.get("tools") or ()],
                               options.get("max_tokens"))
        prepared = await session.aprepare(request, budget=self.budget)
        self._sessions.kept(prepared.report)
        if call is not None:
            call.sent = (session, prepared.report)
        before = _projection(messages)
        messages[:] = _rebuilt(messages, read, prepared.messages, prepared.sources)
        return _projection(messages) != before


CompactionStrategy = CompactingStrategy
"""``CompactingStrategy`` under the name of the framework's protocol it implements."""


class CallMiddleware(ChatMiddleware):
    """Tells the ``CompactingStrategy`` that compacts a call the call's options (model,
    instructions, tools), and feeds its session the input the reply reports
    (``usage_details``: ``input_token_count``); a streamed reply is not read."""

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]
                      ) -> None:
        call = _Call(dict(context.options or {}))
        token = _CALL.set(call)
        try:
            await call_next()
        finally:
            _CALL.reset(token)
        if call.sent is not None and not context.stream:
            await afeed(*call.sent, [context.result])


# --- the framework's messages → Chat Completions messages ---------------------------------------


def _ours(message: Message) -> bool:
    return _MARK in message.additional_properties


def _excluded(message: Message) -> bool:
    return bool(message.additional_properties.get(EXCLUDED_KEY, False))


def _read(messages: Sequence[Message], instructions: str | None) -> _Read:
    """The history: every message but those this strategy inserted and those another one
    excluded (what this strategy excluded is the caller's history still); the call's
    instructions first, as a system message (origin -1: counted and kept, never rebuilt)."""
    history = [message for message in messages if not _ours(message) and (
        not _excluded(message) or message.additional_properties.get(EXCLUDE_REASON_KEY)
        == REASON)]
    answered = {content.call_id for message in history for content in message.contents
                if content.type == "function_result" and content.call_id}
    given: list[dict[str, Any]] = []
    origins: list[Origin] = []
    if instructions:
        given.append({"role": "system", "content": instructions})
        origins.append(Origin(-1))
    for position, message in enumerate(history):
        if message.role == "tool":
            results = [(index, content) for index, content in enumerate(message.contents)
                       if content.type == "function_result" and content.call_id]
            for index, content in results:
                given.append({"role": "tool", "tool_call_id": content.call_id,
                              "content": _result_text(content)})
                origins.append(Origin(position, index))
            if results:
                continue
        given.append(_chat_message(message, answered))
        origins.append(Origin(position))
    return _Read(history, given, origins)


def _chat_message(message: Message, answered: set[str]) -> dict[str, Any]:
    """A system, user or assistant message (a tool message without results reads as user
    text); an assistant's function calls that have results are its tool calls."""
    role = message.role if message.role in ("system", "user", "assistant") else "user"
    calls = [content for content in message.contents if role == "assistant"
             and content.type == "function_call" and content.call_id in answered]
    text = "\n".join(_text(content) for content in message.contents if content not in calls)
    item: dict[str, Any] = {"role": role, "content": text}
    if calls:
        item["tool_calls"] = [
            {"id": content.call_id, "type": "function", "function": {
                "name": content.name or "", "arguments": _arguments(content.arguments)}}
            for content in calls]
    return item


def _text(content: Content) -> str:
    """What a content item says, as text for counting: its text, else its fields as JSON."""
    if content.type in ("text", "text_reasoning") and isinstance(content.text, str):
        return content.text
    return json.dumps(content.to_dict(), default=str, sort_keys=True)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _tool(tool: Any) -> dict[str, Any]:
    """A tool as a Chat Completions definition, for counting (the framework's ``FunctionTool``
    or a definition given as a mapping)."""
    spec = getattr(tool, "to_json_schema_spec", None)
    if callable(spec):
        found = spec()
        if isinstance(found, Mapping):
            return dict(found)
    if isinstance(tool, Mapping):
        return dict(tool)
    return {"type": "function", "function": {"name": str(getattr(tool, "name", "tool"))}}


def _result_text(content: Content) -> str:
    result = content.result
    return result if isinstance(result, str) else json.dumps(result, default=str)


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {}, default=str)


# --- what is sent → the framework's messages, marked -------------------------------------------


def _rebuilt(messages: Sequence[Message], read: _Read, sent: Sequence[dict[str, Any]],
             sources: Sequence[Source] | None) -> list[Message]:
    """The new list: every message given, in order (what is not sent marked excluded), with a
    copy holding its stubs after a message whose contents were replaced, and summaries where
    they stand; what an earlier call inserted is gone, what it excluded is put back. Each item
    sent is mapped by the session's own account of where it comes from (``regrouped``)."""
    sent_as: dict[int, Kept] = {}
    summaries_before: dict[int, list[str]] = {}
    pending: list[str] = []
    for entry in regrouped(sent, sources, read.origins):
        if isinstance(entry, Made):
            pending.append(str(entry.item.get("content") or ""))
            continue
        if pending:
            summaries_before.setdefault(entry.message, []).extend(pending)
            pending = []
        sent_as[entry.message] = entry
    parts = parts_of(read.origins)
    positions = {id(message): index for index, message in enumerate(read.history)}
    out: list[Message] = []
    for message in messages:
        position = positions.get(id(message))
        if position is None:
            if not _ours(message):
                out.append(message)  # another strategy excluded it: left as it is
            continue
        out.extend(_summary(text) for text in summaries_before.get(position, ()))
        as_sent = sent_as.get(position)
        whole = as_sent is not None and as_sent.whole(parts[position])
        _mark(message, included=whole)
        out.append(message)
        if as_sent is not None and not whole:
            out.append(_copy(message, position, as_sent))
    out.extend(_summary(text) for text in pending)
    return out


def _mark(message: Message, *, included: bool) -> None:
    """Set the framework's exclusion annotation (only ever this strategy's own)."""
    properties = message.additional_properties
    if included:
        if properties.get(EXCLUDE_REASON_KEY) == REASON:
            properties.pop(EXCLUDED_KEY, None)
            properties.pop(EXCLUDE_REASON_KEY, None)
        return
    properties[EXCLUDED_KEY] = True
    properties[EXCLUDE_REASON_KEY] = REASON


def _copy(message: Message, position: int, entry: Kept) -> Message:
    """The message as sent: the contents kept, each replaced one holding its new text."""
    kept = {part for part, item in entry.parts.items() if item is None}
    replaced = {part: str(item.get("content") or "") for part, item in entry.parts.items()
                if item is not None}
    contents: list[Content] = []
    for index, content in enumerate(message.contents):
        if index in replaced:
            contents.append(Content.from_function_result(content.call_id or "",
                                                         result=replaced[index]))
        elif index in kept or None in kept:
            contents.append(content)
    if None in replaced:
        contents = [Content.from_text(replaced[None])]
    digest = hashlib.sha256(repr(sorted(replaced.items(), key=str)).encode()).hexdigest()[:12]
    return Message(message.role, contents, author_name=message.author_name,
                   message_id=f"cutctx-{message.message_id or position}-{digest}",
                   additional_properties={_MARK: "replacement"})


def _summary(text: str) -> Message:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Message("user", [Content.from_text(text)], message_id=f"cutctx-summary-{digest}",
                   additional_properties={_MARK: "summary"})


def _projection(messages: Sequence[Message]) -> list[int | str | None]:
    """What the framework sends of a list: the caller's messages by identity, the strategy's
    by their ids (derived from what they hold)."""
    return [message.message_id if _ours(message) else id(message) for message in messages
            if not _excluded(message)]

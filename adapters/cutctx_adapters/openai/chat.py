"""OpenAI Chat Completions ``messages`` ↔ ``Transcript``, token counts, and compaction.

One message is one turn. system/developer → SYSTEM, user → USER, assistant → ASSISTANT,
tool/function → TOOL; an assistant's tool calls and every tool message answering them form one
exchange. Kept messages render back byte-for-byte (unknown keys included).

>>> from cutctx import CharRatioEstimator
>>> history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
>>> conv = to_transcript(history, estimator=CharRatioEstimator())
>>> conv.render(conv.transcript) == history
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from cutctx import Role, TokenEstimator

from .. import planning
from ..counting import chosen_estimator
from ..history import (
    SUMMARY_HEADER,
    Conversion,
    Growing,
    Part,
    PinSpec,
    check_call_pairs,
    convert,
    copy_plain,
    extend,
    invalid,
    not_an_entry,
    plain_tools,
    string_field,
)
from ..settings import CompactKeywords, PlanKeywords, goal_of, settings_of, started
from ._shared import NO_COUNT, OpenAICodec, content_text, plain_items
from ._tokens import REPLY_PRIMING_TOKENS, message_tokens, tools_tokens

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "DEFAULT_MODEL",
    "FORMAT",
    "SUMMARY_HEADER",
    "ChatCodec",
    "ChatResult",
    "acompact",
    "compact",
    "count_tokens",
    "plan",
    "to_transcript",
    "validate",
]

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_NOUN = "message"
DEFAULT_MODEL = "gpt-4o"
"""The model counts are for when a call names none (``result.model`` says so)."""


class ChatCodec(OpenAICodec):
    """The Chat Completions format: what is specific to it, and nothing else."""

    noun = _NOUN
    id_prefix = "m"

    def render_masked(self, part: Part, stub: str) -> Any:
        payload = copy_plain(part.payload)
        payload["content"] = stub
        return payload

    def body(self, part: Part) -> Any:
        return part.payload.get("content")

    def content(self, part: Part) -> Any:
        return part.payload.get("content")

    def with_content(self, part: Part, content: Any) -> Any:
        return {**copy_plain(part.payload), "content": content}

    def text_block(self, text: str) -> Any:
        return {"type": "text", "text": text}

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> list[dict[str, Any]]:
        return [payload for _, payload in rendered]


def _text_of(content: Any, index: int, field: str, *, required: bool) -> str:
    """The content as a model reads it; non-text parts as placeholders, never their data."""
    if content is None:
        if required:
            raise invalid(_NOUN, index, field, "missing_content", "content is required")
        return ""
    return content_text(content, _NOUN, index, field, ChatCodec.text_kinds)


def _calls_of(message: Mapping[str, Any], index: int) -> tuple[tuple[str, ...], list[str], str]:
    """The call ids, tool names and a text rendering of an assistant's tool calls."""
    calls = message.get("tool_calls")
    if calls is None:
        return (), [], ""
    if not isinstance(calls, list) or not calls:
        raise invalid(_NOUN, index, "tool_calls", "tool_calls_type",
                      "tool_calls must be a non-empty list")
    ids: list[str] = []
    names: list[str] = []
    lines: list[str] = []
    for position, call in enumerate(calls):
        where = f"tool_calls[{position}]"
        if not isinstance(call, dict):
            raise invalid(_NOUN, index, where, "tool_call_type", "a tool call must be an object")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise invalid(_NOUN, index, f"{where}.id", "missing_id", "a tool call needs an id")
        body = call.get("function") if call.get("type", "function") == "function" else None
        if body is None:
            body = call.get(str(call.get("type")))
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise invalid(_NOUN, index, f"{where}.function.name", "missing_name",
                          "a tool call needs a function name")
        arguments = body.get("arguments", body.get("input", ""))
        if not isinstance(arguments, str):
            raise invalid(_NOUN, index, f"{where}.function.arguments", "arguments_type",
                          "tool call arguments must be a JSON string")
        ids.append(call_id)
        names.append(body["name"])
        lines.append(f"[tool call {body['name']}: {arguments}]")
    return tuple(ids), names, "\n".join(lines)


def _parts(messages: Sequence[Any], estimator: TokenEstimator, start: int = 0) -> list[Part]:
    """One part per message of a plain (``to_plain``-copied) history, validated on the way.

    ``start``: read from that message on (the ones before end with no tool call open)."""
    parts: list[Part] = []
    tool_names: dict[str, str] = {}
    last_function_call: int | None = None
    last_caller = -1
    for index, message in enumerate(messages[start:], start=start):
        if not isinstance(message, dict):
            raise not_an_entry(_NOUN, index, message, "message_type")
        role_name = message.get("role")
        role = _ROLES.get(role_name) if isinstance(role_name, str) else None
        if role is None:
            _refuse_response(message, index)
            raise invalid(_NOUN, index, "role", "unknown_role",
                          "role must be system, developer, user, assistant, tool or function")
        tokens = message_tokens(message, estimator)
        links: tuple[str, ...] = ()
        calls: tuple[str, ...] = ()
        answers: tuple[str, ...] = ()
        label: str | None = None
        kind = str(role_name)
        if role_name == "assistant":
            call_ids, names, call_text = _calls_of(message, index)
            # Chat pairs results with the calls just before them, and agents do reuse ids
            # across turns, so a call is keyed by the message that issued it.
            calls = tuple(f"{index}:{call_id}" for call_id in call_ids)
            tool_names.update(zip(calls, names, strict=True))
            if calls:
                last_caller = index
            function_call = message.get("function_call")
            if isinstance(function_call, dict) and isinstance(function_call.get("name"), str):
                links = (f"function:{index}",)
                last_function_call = index
                names = [*names, function_call["name"]]
                call_text += (f"\n[function call {function_call['name']}: "
                              f"{function_call.get('arguments', '')}]")
            elif function_call is not None:
                raise invalid(_NOUN, index, "function_call", "missing_name",
                              "function_call needs a name")
            has_other = bool(calls or links or message.get("refusal") or message.get("audio"))
            text = _text_of(message.get("content"), index, "content", required=not has_other)
            if message.get("content") is None and isinstance(message.get("refusal"), str):
                text = message["refusal"]
            text = "\n".join(piece for piece in (text, call_text.strip()) if piece)
            label = ", ".join(names) or None
        elif role_name == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise invalid(_NOUN, index, "tool_call_id", "missing_id",
                              "a tool message needs a tool_call_id")
            answers = (f"{last_caller}:{call_id}",)
            label = tool_names.get(answers[0])
            text = _text_of(message.get("content"), index, "content", required=True)
        elif role_name == "function":
            if not isinstance(message.get("name"), str):
                raise invalid(_NOUN, index, "name", "missing_name",
                              "a function message needs a name")
            if last_function_call is None:
                raise invalid(_NOUN, index, "name", "orphaned_tool_result",
                              "function message answers no earlier function_call")
            links = (f"function:{last_function_call}",)
            last_function_call = None
            label = message["name"]
            text = _text_of(message.get("content"), index, "content", required=False)
        else:
            text = _text_of(message.get("content"), index, "content", required=True)
        parts.append(Part(index, role, text, message, tokens, kind, calls, answers, links,
                          label))
    check_call_pairs(parts, _NOUN, "tool_calls", "tool_call_id",
                     closes=lambda part, _call_index: part.kind != "tool")
    return parts


def _refuse_response(message: Mapping[str, Any], index: int) -> None:
    """A whole response appended where its message belongs is named as such, with the fix."""
    kind = message.get("object")
    if kind == "chat.completion" or (kind is None and "choices" in message):
        raise invalid(_NOUN, index, "", "response_not_message",
                      "this is a whole ChatCompletion response: append its message, "
                      "response.choices[0].message, not the response")
    if kind == "chat.completion.chunk":
        raise invalid(_NOUN, index, "", "response_not_message",
                      "this is a stream chunk: append the streamed message once the stream is "
                      "done (stream.get_final_completion().choices[0].message)")


def _plain_messages(messages: Sequence[Any]) -> list[Any]:
    return plain_items(messages, _NOUN, "messages")


def to_transcript(
    messages: Sequence[Any],
    *,
    model: str | None = None,
    estimator: TokenEstimator | None = None,
    pin: PinSpec = None,
    summary_role: str = "user",
    keep_task: bool = False,
) -> Conversion[list[dict[str, Any]]]:
    """Convert a Chat Completions history (dicts or SDK objects); validates it on the way.

    ``keep_task`` pins the first user message (as ``compact`` does by default).
    """
    plain = _plain_messages(messages)
    counter = chosen_estimator(estimator, model)
    return convert(ChatCodec(summary_role), _parts(plain, counter), plain, pin, keep_task,
                   count_text=counter.estimate_tokens)


def _extended(previous: Conversion[list[dict[str, Any]]] | Growing[list[dict[str, Any]]],
              items: Sequence[Any], known: int, estimator: TokenEstimator, pin: PinSpec,
              keep_task: bool) -> Growing[list[dict[str, Any]]] | None:
    """``previous`` (of ``items[:known]``, plain) continued by the rest, reading only the rest;
    None where that cannot be told apart from converting everything (a tool call still open
    at ``known``, pins counted from the end)."""
    if not _ends_closed(previous):
        return None
    return extend(previous, _parts(items, estimator, known), items, pin, keep_task,
                  count_text=estimator.estimate_tokens)


def _ends_closed(conv: Conversion[Any] | Growing[Any]) -> bool:
    """Whether no tool call is open at the end of ``conv``'s history. Chat results follow their
    call at once, so this is read from the end back to the last message that is not a result."""
    answers = 0
    for turn in reversed(conv.turns):
        part = conv.parts[turn.turn_id]
        if part.kind in ("tool", "function"):
            answers += 1
            continue
        return answers == len(part.calls) + (1 if part.links else 0)
    return answers == 0


def validate(messages: Sequence[Any]) -> None:
    """Raise ``cutctx.ValidationError`` if the API would reject these messages' structure."""
    _parts(_plain_messages(messages), NO_COUNT)


def count_tokens(
    messages: Sequence[Any],
    *,
    model: str | None = DEFAULT_MODEL,
    tools: Sequence[Mapping[str, Any]] | None = None,
    estimator: TokenEstimator | None = None,
) -> int:
    """The request's prompt tokens: every message, the reply priming and the tool definitions."""
    counter = chosen_estimator(estimator, model)
    conv = to_transcript(messages, estimator=counter)
    return conv.transcript.token_estimate() + overhead_tokens(tools, counter)


def overhead_tokens(tools: Sequence[Mapping[str, Any]] | None, estimator: TokenEstimator) -> int:
    """Tokens of a request outside its messages: reply priming plus tool definitions."""
    return REPLY_PRIMING_TOKENS + tools_tokens(plain_tools(tools, _tool_rule), estimator)


def _tool_rule(tool: Mapping[str, Any]) -> tuple[str, str] | None:
    """What a Chat Completions tool lacks: ``{"type": "function", "function": {"name", ...}}``
    or ``{"type": "custom", "custom": {"name", ...}}`` (another type passes, named)."""
    kind = tool.get("type")
    if kind in ("function", "custom"):
        name = f"{kind}.name"
        return None if string_field(tool, name) else (name, f"a {kind} tool needs {name}")
    if isinstance(kind, str) and kind:
        return None
    return "type", ("a Chat Completions tool needs a type: {\"type\": \"function\", "
                    "\"function\": {\"name\": ..., \"parameters\": ...}}")


def plan(messages: Sequence[Any], **options: Unpack[PlanKeywords]) -> planning.Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    ``budget``: the whole prompt's tokens (a ``CompactionBudget``: the history's alone); None:
    the model's window (``window=``, else the built-in table) less ``reserve``. ``model``
    (default ``DEFAULT_MODEL``) says what the counts are for. The other settings
    (``summarizer``, ``policy``, ``pin``, ``keep_recent``, ``estimator``, the chain's options)
    are ``CompactionSettings`` fields, given as ``settings=`` and/or keywords.
    """
    chosen = settings_of(options, "chat.compact")
    model = options.get("model", DEFAULT_MODEL)
    counter = chosen_estimator(chosen.estimator, model)
    conv = to_transcript(messages, estimator=counter, pin=chosen.pin,
                         summary_role=options.get("summary_role", "user"),
                         keep_task=chosen.keep_task)
    overhead = overhead_tokens(options.get("tools"), counter)
    return started(conv, chosen, goal_of(chosen, options.get("budget"), model),
                   overhead=overhead, estimator=counter,
                   result_fields=lambda rendered: {"messages": rendered},
                   **_planning(conv, counter, overhead))


def _planning(_conv: Conversion[Any], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults: measuring the rendered request."""

    def measure(messages: list[dict[str, Any]]) -> int:
        return sum(message_tokens(message, estimator) for message in messages) + overhead

    return {"measure": measure}


@dataclass(frozen=True, slots=True)
class ChatResult(planning.FormatResult):
    """``compact``'s result: ``messages`` ready for ``client.chat.completions.create``."""

    messages: list[ChatCompletionMessageParam] = field(default_factory=list)


def compact(messages: Sequence[Any], **options: Unpack[CompactKeywords]) -> ChatResult:
    """Compact a Chat Completions history to ``budget`` prompt tokens.

    Without a summarizer old tool results are masked, then the oldest exchanges dropped; with
    one, the default chain also folds a span into a summary. See ``plan`` for the settings.
    """
    return planning.compacted(plan, messages, options, ChatResult, DEFAULT_MODEL)


async def acompact(messages: Sequence[Any], **options: Unpack[CompactKeywords]) -> ChatResult:
    """``compact`` with an async (or sync) summarizer; summary requests run concurrently."""
    return await planning.acompacted(plan, messages, options, ChatResult, DEFAULT_MODEL)


FORMAT = planning.HistoryFormat(
    name="openai-chat",
    list_key="messages",
    side_key=None,
    to_transcript=lambda items, _side, estimator, pin, keep_task: to_transcript(
        items, estimator=estimator, pin=pin, keep_task=keep_task),
    split=lambda rendered: (None, rendered),
    overhead=lambda request, estimator: overhead_tokens(planning.given(request.get("tools")),
                                                        estimator),
    output_allowance=planning.reply_allowance("max_completion_tokens", "max_tokens"),
    planning=_planning,
    extend=_extended,
    one_item_per_turn=True,
)
"""How Chat Completions requests carry their history (for sessions and the client wrapper)."""

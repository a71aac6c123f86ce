"""OpenAI Responses ``instructions`` + ``input`` items ↔ ``Transcript``, token counts, compaction.

One item is one turn, and ``instructions`` one more: a SYSTEM turn with the id ``instructions``.
user → USER; system/developer messages and items → SYSTEM; assistant messages and the model's
items (reasoning, tool calls) → ASSISTANT; tool outputs → TOOL. Exchanges: a call with its output
(by ``call_id``), an MCP approval request with its response, and a reasoning item with the rest of
its response (see ``parts_of``). Kept items render back as they came, unknown keys and types too.

>>> from cutctx import CharRatioEstimator
>>> conv = to_transcript("Hi", instructions="Be brief.", estimator=CharRatioEstimator())
>>> conv.render(conv.transcript)
('Be brief.', 'Hi')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Unpack

from cutctx import TokenEstimator

from .. import planning
from ..counting import chosen_estimator
from ..history import (
    Conversion,
    Growing,
    PinSpec,
    convert,
    extend,
    plain_tools,
    string_field,
)
from ..settings import CompactKeywords, PlanKeywords, goal_of, settings_of, started
from ..tiktoken import TiktokenEstimator
from ._responses_codec import INSTRUCTIONS_TURN_ID, Rendered, ResponsesCodec
from ._responses_reading import Reading, as_message, checked_instructions, parts_of, plain_input
from ._responses_tokens import (
    ITEM_TOKENS,
    counter_for,
    item_tokens,
    request_tools_tokens,
)
from ._shared import NO_COUNT
from ._tokens import REPLY_PRIMING_TOKENS

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputItemParam

__all__ = [
    "DEFAULT_MODEL",
    "FORMAT",
    "INSTRUCTIONS_TURN_ID",
    "ResponsesCodec",
    "ResponsesCompactKeywords",
    "ResponsesKeywords",
    "ResponsesResult",
    "acompact",
    "compact",
    "count_tokens",
    "overhead_tokens",
    "plan",
    "to_transcript",
    "validate",
]

DEFAULT_MODEL = "gpt-5"
"""The model counts are for when a call names none (``result.model`` says so)."""
NOUN = "item"
SUMMARY_ROLES = ("user", "assistant", "system", "developer")


def to_transcript(
    input_items: str | Sequence[Any],
    *,
    instructions: str | None = None,
    model: str | None = None,
    estimator: TokenEstimator | None = None,
    pin: PinSpec = None,
    summary_role: str = "user",
    keep_task: bool = False,
) -> Conversion[Rendered]:
    """Convert a Responses request's ``input`` (a string, or items as dicts or SDK objects).

    Validates it on the way; ``render`` gives back ``(instructions, input)``. ``pin`` names
    items by their index in ``input``; ``keep_task`` pins the first user message too.
    """
    plain, text = plain_input(input_items)
    counter = counter_for(chosen_estimator(estimator, model), model)
    reading = Reading()
    parts = parts_of(plain, checked_instructions(instructions), counter, text=text,
                   reading=reading)
    conv = convert(ResponsesCodec(summary_role, text_input=text), parts, plain, pin, keep_task,
                   count_text=counter.estimate_tokens)
    return conv if text else replace(conv, reading=reading)


def _extended(previous: Conversion[Rendered] | Growing[Rendered], items: Sequence[Any],
              known: int, estimator: TokenEstimator, pin: PinSpec,
              keep_task: bool) -> Growing[Rendered] | None:
    """``previous`` (of ``items[:known]``, plain) continued by the rest, reading only the rest;
    None where a later item could still attach to an earlier one (or the input was a string)."""
    reading = previous.reading
    if not isinstance(reading, Reading) or not reading.resumable():
        return None
    reading = reading.copy()
    counter = counter_for(chosen_estimator(estimator, None), None)
    parts = parts_of(items, None, counter, text=False, start=known, reading=reading)
    return extend(previous, parts, items, pin, keep_task, reading,
                  count_text=counter.estimate_tokens)


def validate(input_items: str | Sequence[Any], *, instructions: str | None = None) -> None:
    """Raise ``cutctx.ValidationError`` if the API would reject this input's structure."""
    plain, text = plain_input(input_items)
    parts_of(plain, checked_instructions(instructions), counter_for(NO_COUNT, None), text=text)


def overhead_tokens(tools: Sequence[Any] | None, estimator: TokenEstimator,
                    model: str | None = None) -> int:
    """Tokens of a request outside its items: reply priming plus tool definitions."""
    return REPLY_PRIMING_TOKENS + request_tools_tokens(plain_tools(tools, _tool_rule),
                                                       counter_for(estimator, model))


_NAMED = {"function": "name", "custom": "name", "namespace": "name", "mcp": "server_label"}
"""Responses tool types and the string each requires besides its type."""


def _tool_rule(tool: Mapping[str, Any]) -> tuple[str, str] | None:
    """What a Responses tool lacks: a type, and for a function (custom, namespace) its name,
    for an MCP server its label."""
    kind = tool.get("type")
    if not isinstance(kind, str) or not kind:
        return "type", ("a Responses tool needs a type: {\"type\": \"function\", \"name\": "
                        "..., \"parameters\": ...}, or a built-in tool's (\"web_search\", ...)")
    field = _NAMED.get(kind)
    if field is None or string_field(tool, field):
        return None
    return field, f"a {kind} tool needs {field}"


def count_tokens(
    input_items: str | Sequence[Any],
    *,
    instructions: str | None = None,
    model: str | None = DEFAULT_MODEL,
    tools: Sequence[Any] | None = None,
    estimator: TokenEstimator | None = None,
) -> int:
    """The request's estimated prompt tokens: instructions, every item, priming and tools."""
    counter = chosen_estimator(estimator, model)
    conv = to_transcript(input_items, instructions=instructions, model=model, estimator=counter)
    return conv.transcript.token_estimate() + overhead_tokens(tools, counter, model)


class ResponsesKeywords(PlanKeywords, total=False):
    """``plan``'s keywords for Responses: the request's ``instructions`` and
    ``context_management`` too."""

    instructions: str | None
    context_management: Sequence[Any] | None


class ResponsesCompactKeywords(ResponsesKeywords, CompactKeywords, total=False):
    """``compact``'s keywords for Responses."""


_OWN = ("instructions", "context_management")


def plan(input_items: str | Sequence[Any], **options: Unpack[ResponsesKeywords]) -> planning.Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    An int ``budget`` is the whole prompt's: the items get it minus priming and tools (the
    instructions are a turn of the transcript, so they count there); None: the model's window
    less ``reserve``. The other settings are ``CompactionSettings`` fields (``settings=`` and/or
    keywords). ``context_management`` is the request's: when it turns the server's compaction
    on (or the input ends with a ``compaction_trigger``), the history is left to the server
    while it fits the model's own limit (``result.deferred`` says why), and fitted without
    summaries above it; ``defer_to_server=False`` compacts as usual.
    """
    chosen = settings_of(options, "responses.compact", _OWN)
    model = options.get("model", DEFAULT_MODEL)
    request = {"context_management": options.get("context_management"), "input": input_items}
    goal = goal_of(chosen, options.get("budget"), model, request, _server_compaction)
    counter = chosen_estimator(chosen.estimator, model)
    conv = to_transcript(input_items, instructions=options.get("instructions"), model=model,
                         estimator=counter, pin=chosen.pin,
                         summary_role=options.get("summary_role", "user"),
                         keep_task=chosen.keep_task)
    overhead = overhead_tokens(options.get("tools"), counter, model)
    return started(conv, chosen, goal, overhead=overhead, estimator=counter,
                   result_fields=lambda rendered: {"instructions": rendered[0],
                                                   "input": rendered[1]},
                   **_planning(conv, counter_for(counter, model), overhead))


def _planning(_conv: Conversion[Any], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults: exact stub framing and a fresh measure."""
    counter = counter_for(estimator, getattr(estimator, "model", None))
    return {
        "stub_pad": ITEM_TOKENS,  # a masked output is its item framing plus the stub's text
        "measure": lambda rendered: _measure(rendered, counter, overhead),
    }


def _measure(rendered: Rendered, counter: TiktokenEstimator, overhead: int) -> int:
    """Estimated prompt tokens of a rendered request, counted afresh from what will be sent."""
    instructions, items = rendered
    if isinstance(items, str):
        items = [as_message(items, "user")]
    total = overhead + sum(item_tokens(item, counter) for item in items)
    if instructions is not None:
        total += item_tokens(as_message(instructions, "developer"), counter)
    return total


@dataclass(frozen=True, slots=True)
class ResponsesResult(planning.FormatResult):
    """``compact``'s result: ``instructions`` and ``input`` ready for
    ``client.responses.create`` (``input`` stays a string if it was one and was kept)."""

    instructions: str | None = None
    input: str | list[ResponseInputItemParam] = ""


def compact(input_items: str | Sequence[Any],
            **options: Unpack[ResponsesCompactKeywords]) -> ResponsesResult:
    """Compact a Responses ``input`` to ``budget`` prompt tokens.

    Without a summarizer old tool outputs are masked, then the oldest exchanges dropped; with
    one, the default chain also folds a span into a summary. See ``plan`` for the settings.
    """
    return planning.compacted(plan, input_items, options, ResponsesResult, DEFAULT_MODEL)


async def acompact(input_items: str | Sequence[Any],
                   **options: Unpack[ResponsesCompactKeywords]) -> ResponsesResult:
    """``compact`` with an async (or sync) summarizer; summary requests run concurrently."""
    return await planning.acompacted(plan, input_items, options, ResponsesResult, DEFAULT_MODEL)


def _server_compaction(request: Mapping[str, Any]) -> str | None:
    """Why a request leaves compaction to the server: ``context_management`` turns its
    compaction on, or the input ends with a ``compaction_trigger`` (compact now)."""
    entries = planning.given(request.get("context_management"))
    if isinstance(entries, Sequence) and not isinstance(entries, str | bytes):
        for entry in entries:
            kind = entry.get("type") if isinstance(entry, Mapping) else getattr(entry, "type",
                                                                                None)
            if kind == "compaction":
                return "server-side compaction is on (context_management)"
    items = planning.given(request.get("input"))
    if isinstance(items, Sequence) and not isinstance(items, str | bytes) and items:
        last = items[-1]
        kind = last.get("type") if isinstance(last, Mapping) else getattr(last, "type", None)
        if kind == "compaction_trigger":
            return "the input ends with a compaction_trigger item"
    return None


def _unsupported(request: Mapping[str, Any]) -> str | None:
    for key in ("previous_response_id", "conversation"):
        if planning.given(request.get(key)) is not None:
            return planning.server_held(key)
    return None


FORMAT = planning.HistoryFormat(
    name="openai-responses",
    list_key="input",
    side_key="instructions",
    to_transcript=lambda items, side, estimator, pin, keep_task: to_transcript(
        items, instructions=planning.given(side), estimator=estimator, pin=pin,
        keep_task=keep_task),
    split=lambda rendered: rendered,
    overhead=lambda request, estimator: overhead_tokens(
        planning.given(request.get("tools")), estimator, planning.given(request.get("model"))),
    output_allowance=planning.reply_allowance("max_output_tokens"),
    unsupported=_unsupported,
    planning=_planning,
    extend=_extended,
    safety_margin=0.02,
    server_compaction=_server_compaction,
    one_item_per_turn=True,
)
"""How Responses requests carry their history (for sessions and the client wrapper)."""

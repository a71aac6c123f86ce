"""Anthropic Messages ``system`` + ``messages`` ↔ ``Transcript``, token counts, and compaction.

``system`` (a string or text blocks) becomes SYSTEM turns (``system.0``, ...). An assistant message
is one turn, whatever it holds (thinking, text, ``tool_use``, server tool use and its results).
A user message is one turn, unless it carries ``tool_result`` blocks: then each result is a TOOL
turn of its own (``m3.0``, ``m3.1``) answering its ``tool_use_id``, and the rest of the message one
USER turn (``m3.2``), so its text is never masked or dropped as if it were a tool result. Calls
and their results share a correlation id, so they travel together. When the history ends inside
a tool loop whose first assistant message starts with thinking, that message, the loop's latest
exchange and the user message that opened the turn travel together too (the API wants the
final turn's thinking first). The newest turn is always kept (every adapter protects at least
one): a request needs one.

Kept turns render back exactly. The way back regroups turns by source message and repairs what
removal can break: an assistant message left first gets a short user note before it (a summary
left first becomes a user message; Bedrock and older API versions reject an assistant first),
consecutive same-role messages are merged (tool results first, the latest thinking first), a
summary inside a final tool loop opened with thinking is said by the assistant (a user text
there would end the turn), and ``cache_control`` markers stay at most four. A plan that leaves
an assistant message first is made again with room for the note, which then counts in the
overhead.

>>> from cutctx import CharRatioEstimator
>>> history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
>>> conv = to_transcript(history, system="Be brief.", estimator=CharRatioEstimator())
>>> conv.render(conv.transcript) == ("Be brief.", history)
True
>>> conv.transcript.turn_ids()
('system.0', 'm0', 'm1')
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from cutctx import TokenEstimator, ValidationError

from .. import planning
from ..counting import CalibratedEstimator, estimator_for, scale_to_total
from ..history import OMITTED_NOTE, SUMMARY_HEADER, Conversion, Part, plain_tools, to_plain
from ..settings import (
    CompactionSettings,
    CompactKeywords,
    PlanKeywords,
    goal_of,
    settings_of,
    started,
)
from ._codec import (
    DEFAULT_MODEL,
    MAX_CACHE_BREAKPOINTS,
    SUMMARY_ROLES,
    MessagesCodec,
    Rendered,
    omitted_note,
)
from ._reading import (
    Request,
    check_request,
    conversion_of,
    extended,
    parts_of,
    read_message,
    read_request,
    to_transcript,
    tool_rule,
    validate,
)
from ._tokens import MESSAGE_TOKENS, TOOL_BLOCK_TOKENS, AnthropicTokenCounter

if TYPE_CHECKING:
    from anthropic.types import MessageParam, TextBlockParam

__all__ = [
    "DEFAULT_MODEL",
    "FORMAT",
    "MAX_CACHE_BREAKPOINTS",
    "OMITTED_NOTE",
    "SUMMARY_HEADER",
    "SUMMARY_ROLES",
    "CountKeywords",
    "MessagesCodec",
    "MessagesCompactKeywords",
    "MessagesKeywords",
    "MessagesResult",
    "acompact",
    "acount_tokens",
    "aplan",
    "compact",
    "count_tokens",
    "plan",
    "to_transcript",
    "validate",
]



# ----------------------------------------------------------------------------------------------
# counting and compaction


def _count_body(request: Request, model: str | None, thinking: Any) -> dict[str, Any]:
    if not model:
        raise ValidationError("an exact count needs the model name", {"field": "model"})
    body: dict[str, Any] = {"model": model, "messages": request.messages}
    if request.system is not None:
        body["system"] = request.system
    if request.tools is not None:
        body["tools"] = request.tools
    if planning.given(thinking) is not None:
        body["thinking"] = to_plain(thinking)
    return body


def _input_tokens(result: Any) -> int:
    value = result.get("input_tokens") if isinstance(result, Mapping) else getattr(
        result, "input_tokens", None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("messages.count_tokens did not return input_tokens",
                              {"field": "input_tokens"})
    return value


def _call_count(client: Any, body: dict[str, Any]) -> Any:
    count = getattr(getattr(client, "messages", None), "count_tokens", None)
    if not callable(count):
        raise ValidationError("exact_count needs an Anthropic client (client.messages."
                              "count_tokens)", {"field": "exact_count"})
    return count(**body)


def _exact(client: Any, body: dict[str, Any]) -> int:
    result = _call_count(client, body)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise ValidationError("an async client's count must be awaited: use aplan, acompact "
                              "or acount_tokens", {"field": "exact_count"})
    return _input_tokens(result)


async def _aexact(client: Any, body: dict[str, Any]) -> int:
    result = _call_count(client, body)
    if inspect.isawaitable(result):
        result = await result
    return _input_tokens(result)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A validated, estimated request, before planning."""

    request: Request
    parts: list[Part]
    overhead: int
    counter: AnthropicTokenCounter
    estimator: TokenEstimator
    """Counts a mask stub on the turns' scale (calibrated, and scaled by an exact count)."""
    stub_pad: int = MESSAGE_TOKENS + TOOL_BLOCK_TOKENS
    """What a masked tool result keeps besides its stub: message and block framing."""
    ratio: float = 1.0
    """Exact count / estimate, once an exact count has rescaled the turns."""

    def scaled(self, exact_total: int) -> _Prepared:
        """Per-turn estimates rescaled to add up to ``exact_total`` minus the overhead."""
        estimates = [part.tokens for part in self.parts]
        target = max(0, exact_total - self.overhead)
        if not estimates or sum(estimates) == target:
            return self
        ratio = target / max(1, sum(estimates))
        tokens = scale_to_total(estimates, target)
        parts = [replace(part, tokens=count) for part, count in zip(self.parts, tokens,
                                                                    strict=True)]
        if not ratio:
            return replace(self, parts=parts, ratio=ratio)
        return replace(self, parts=parts, estimator=CalibratedEstimator(self.estimator, ratio),
                       stub_pad=math.ceil(self.stub_pad * ratio), ratio=ratio)

    @property
    def sent(self) -> Rendered:
        """The request as given, as its rendering would be."""
        return self.request.system, self.request.messages

    def measure(self, rendered: Rendered) -> int:
        """Prompt tokens of a rendered request, on the plan's scale (overhead included)."""
        system, out = rendered
        history = self.counter.system(system) + sum(self.counter.message(m) for m in out)
        return max(0, math.ceil(history * self.ratio - 1e-9)) + self.overhead


def _prepare(history: Any, system: Any, model: str | None, tools: Any, thinking: Any,
             estimator: TokenEstimator | None, calibration: float | None) -> _Prepared:
    request = read_request(history, system, planning.given(tools))
    counter = AnthropicTokenCounter(estimator, model=model, calibration=calibration)
    parts = parts_of(request, counter, thinking=planning.given(thinking))
    return _Prepared(request, parts, counter.request_overhead(request.tools), counter,
                     counter.text_estimator)


def _job(prepared: _Prepared, settings: CompactionSettings,
         options: MessagesKeywords) -> planning.Job:
    model = options.get("model", DEFAULT_MODEL)
    goal = goal_of(settings, options.get("budget"), model,
                   {"context_management": options.get("context_management")},
                   _server_compaction)
    conv = conversion_of(prepared.request, prepared.parts, settings.pin,
                         options.get("summary_role", "user"), settings.keep_task,
                         prepared.estimator.estimate_tokens)

    def begin(extra: int) -> planning.Job:
        return started(conv, settings, goal, overhead=prepared.overhead + extra,
                       estimator=prepared.estimator,
                       result_fields=lambda rendered: {"system": rendered[0],
                                                       "messages": rendered[1]},
                       stub_pad=prepared.stub_pad, measure=prepared.measure,
                       drop_covered=True)  # the API takes a compaction only as the first block

    def note_tokens() -> int:
        return math.ceil(prepared.counter.message(omitted_note()) * prepared.ratio)

    return planning.with_room_for_note(begin, conv, note_tokens)


class CountKeywords(TypedDict, total=False):
    """What ``count_tokens``/``acount_tokens`` take besides the history."""

    system: Any
    model: str | None
    tools: Sequence[Any] | None
    thinking: Mapping[str, Any] | None
    estimator: TokenEstimator | None
    calibration: float | None
    client: Any


def count_tokens(history: Sequence[Any], **options: Unpack[CountKeywords]) -> int:
    """The request's input tokens: estimated, or exact from ``client.messages.count_tokens``.

    With a client, the (validated) request is counted by one API call; an async client needs
    ``acount_tokens``. ``model`` defaults to ``DEFAULT_MODEL``.
    """
    prepared, body = _counted(history, options)
    client = options.get("client")
    return prepared.measure(prepared.sent) if client is None else _exact(client, body)


async def acount_tokens(history: Sequence[Any], **options: Unpack[CountKeywords]) -> int:
    """``count_tokens`` awaiting an ``AsyncAnthropic`` client's count (a sync one works too)."""
    prepared, body = _counted(history, options)
    client = options.get("client")
    return prepared.measure(prepared.sent) if client is None else await _aexact(client, body)


def _counted(history: Sequence[Any], options: CountKeywords) -> tuple[_Prepared, dict[str, Any]]:
    """The request validated and estimated, and the body its exact count is asked for."""
    unknown = sorted(set(options) - set(CountKeywords.__annotations__))
    if unknown:
        raise ValidationError(f"count_tokens got an unknown keyword {unknown[0]!r}",
                              {"field": unknown[0], "rule": "unknown_keyword"})
    model = options.get("model", DEFAULT_MODEL)
    prepared = _prepare(history, options.get("system"), model, options.get("tools"),
                        options.get("thinking"), options.get("estimator"),
                        options.get("calibration"))
    return prepared, _count_body(prepared.request, model, options.get("thinking"))


class MessagesKeywords(PlanKeywords, total=False):
    """``plan``'s keywords for Messages: the request's ``system``, ``thinking`` and
    ``context_management`` too, the Claude ``calibration``, and ``exact_count`` (a client)."""

    system: Any
    thinking: Mapping[str, Any] | None
    calibration: float | None
    exact_count: Any
    context_management: Mapping[str, Any] | None


class MessagesCompactKeywords(MessagesKeywords, CompactKeywords, total=False):
    """``compact``'s keywords for Messages."""


_OWN = ("system", "thinking", "calibration", "exact_count", "context_management")


def plan(history: Sequence[Any], **options: Unpack[MessagesKeywords]) -> planning.Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    An int ``budget`` is the whole prompt's: the transcript (system included) gets it minus the
    request framing and the tools (and the user note, when the plan needs one); None: the
    model's window less ``reserve``. Tool results are masked by the default policies, which
    price a stub with its framing; the rendered request is measured, and re-planned tighter if
    it is over. The other settings are ``CompactionSettings`` fields (``settings=`` and/or
    keywords).

    ``exact_count=client`` (an ``Anthropic`` client) asks ``messages.count_tokens`` once for the
    request's real total and scales the per-turn estimates to add up to it (minus the
    overhead); use ``aplan`` with an ``AsyncAnthropic``. ``thinking`` is the request's: with
    ``{"type": "enabled"}`` an open tool loop must start with its thinking block.

    What the latest ``compaction`` block covers is never sent (the API takes the block only
    first). ``context_management`` is the request's: with a ``compact_20260112`` edit the
    history is left to the server while it fits the model's own limit (``result.deferred``
    says why), and fitted without summaries above it; ``defer_to_server=False`` compacts as
    usual.
    """
    prepared, chosen = _read(history, options)
    client = options.get("exact_count")
    if client is not None:
        prepared = prepared.scaled(_exact(client, _body(prepared, options)))
    return _job(prepared, chosen, options)


async def aplan(history: Sequence[Any], **options: Unpack[MessagesKeywords]) -> planning.Job:
    """``plan``, awaiting the exact count of an ``AsyncAnthropic`` client (a sync one works)."""
    prepared, chosen = _read(history, options)
    client = options.get("exact_count")
    if client is not None:
        prepared = prepared.scaled(await _aexact(client, _body(prepared, options)))
    return _job(prepared, chosen, options)


def _read(history: Sequence[Any], options: MessagesKeywords
          ) -> tuple[_Prepared, CompactionSettings]:
    """The settings of a ``plan`` call, and its request validated and estimated."""
    chosen = settings_of(options, "messages.compact", _OWN)
    prepared = _prepare(history, options.get("system"), options.get("model", DEFAULT_MODEL),
                        options.get("tools"), options.get("thinking"), chosen.estimator,
                        options.get("calibration"))
    return prepared, chosen


def _body(prepared: _Prepared, options: MessagesKeywords) -> dict[str, Any]:
    return _count_body(prepared.request, options.get("model", DEFAULT_MODEL),
                       options.get("thinking"))


@dataclass(frozen=True, slots=True)
class MessagesResult(planning.FormatResult):
    """``compact``'s result: ``system`` and ``messages`` ready for ``client.messages.create``
    (pass ``system`` only when it is not None: the SDK's own default is ``omit``)."""

    system: str | list[TextBlockParam] | None = None
    messages: list[MessageParam] = field(default_factory=list)


def compact(history: Sequence[Any],
            **options: Unpack[MessagesCompactKeywords]) -> MessagesResult:
    """Compact a Messages history (and ``system``) to ``budget`` prompt tokens.

    Without a summarizer old tool results are masked, then the oldest exchanges dropped; with
    one, the default chain also folds a span into a summary. ``result.system`` and
    ``result.messages`` are ready to send. See ``plan`` for the settings. An appended
    ``Message`` (the SDK's response object) is read as its role and content.
    """
    return planning.compacted(plan, history, options, MessagesResult, DEFAULT_MODEL)


async def acompact(history: Sequence[Any],
                   **options: Unpack[MessagesCompactKeywords]) -> MessagesResult:
    """``compact`` with an async (or sync) summarizer and ``exact_count`` client."""
    return await planning.acompacted(aplan, history, options, MessagesResult, DEFAULT_MODEL)


def _overhead(request: Mapping[str, Any], estimator: TokenEstimator) -> int:
    model = planning.given(request.get("model"))
    counter = AnthropicTokenCounter(estimator, model=model if isinstance(model, str) else None)
    tools = planning.given(request.get("tools"))
    choice = planning.given(request.get("tool_choice"))
    return counter.request_overhead(plain_tools(tools, tool_rule) if tools else None,
                                    to_plain(choice) if choice is not None else None)


def _planning(_conv: Conversion[Rendered], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults, as ``plan`` passes it: the calibrated stub
    estimator, the framing a masked result keeps, and a fresh measure of the rendering."""
    counter = AnthropicTokenCounter(estimator)
    prepared = _Prepared(Request([], None, None), [], overhead, counter,
                         counter.text_estimator)
    return {"estimator": prepared.estimator, "stub_pad": prepared.stub_pad,
            "measure": prepared.measure}


def _server_compaction(request: Mapping[str, Any]) -> str | None:
    """Why a request leaves compaction to the server: a ``compact_20260112`` edit in its
    ``context_management``, or a ``compaction`` request (summarize now)."""
    management = planning.given(request.get("context_management"))
    edits = management.get("edits") if isinstance(management, Mapping) else None
    if isinstance(edits, Sequence) and not isinstance(edits, str | bytes):
        for edit in edits:
            kind = edit.get("type") if isinstance(edit, Mapping) else None
            if isinstance(kind, str) and kind.startswith("compact_"):
                return f"server-side compaction is on (context_management {kind})"
    if planning.given(request.get("compaction")) is not None:
        return "the request asks the server to compact (compaction)"
    return None


def _unsupported(request: Mapping[str, Any]) -> str | None:
    """A beta request that continues a server-held thread sends only its new messages."""
    thread = planning.given(request.get("thread"))
    if isinstance(thread, Mapping) and thread.get("type") == "continue":
        return planning.server_held("thread")
    return None


FORMAT = planning.HistoryFormat(
    name="anthropic-messages",
    list_key="messages",
    side_key="system",
    read_item=read_message,
    extend=extended,
    to_transcript=lambda items, side, estimator, pin, keep_task: to_transcript(
        items, system=planning.given(side), estimator=estimator, pin=pin, keep_task=keep_task),
    split=lambda rendered: rendered,
    overhead=_overhead,
    output_allowance=planning.reply_allowance("max_tokens"),
    unsupported=_unsupported,
    estimator_for=lambda _model: estimator_for(None),
    planning=_planning,
    safety_margin=0.05,
    server_compaction=_server_compaction,
    boundary_first=True,
    check_request=check_request,
)
"""How Messages requests carry their history (for sessions and the client wrapper)."""

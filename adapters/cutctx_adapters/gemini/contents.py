"""Gemini ``contents`` ↔ ``Transcript``, token counts, and compaction.

A content is one turn, unless it splits: a user content's function responses are TOOL turns of
their own (``c3.0``, ``c3.1``) and the rest of it one USER turn; a model content's server-tool
responses and code execution results are TOOL turns inside it, so they give way like tool
results. A model turn (consecutive model contents: a streamed reply) travels with the function
responses answering it, as one exchange. The system instruction, tools and tool config (the
request's ``config``) are counted, never changed. The current turn (from the last user content
that is not only function responses) is protected while it fits the budget.

Kept turns render back exactly; a replaced part keeps every field (its ``thought_signature``
too) but what it said. A model content left first gets a short user note before it.

>>> from cutctx import CharRatioEstimator
>>> history = [{"role": "user", "parts": [{"text": "Hi"}]},
...            {"role": "model", "parts": [{"text": "Hello"}]}]
>>> conv = to_transcript(history, estimator=CharRatioEstimator())
>>> conv.render(conv.transcript) == history
True
>>> conv.transcript.turn_ids()
('c0', 'c1')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from cutctx import TokenEstimator, ValidationError

from .. import planning
from ..history import KIND_KEY, OMITTED_NOTE, SUMMARY_HEADER, Conversion
from ..settings import (
    CompactionSettings,
    CompactKeywords,
    Goal,
    PlanKeywords,
    goal_of,
    settings_of,
    started,
)
from ._codec import DEFAULT_MODEL, ContentsCodec, Rendered, omitted_note
from ._reading import (
    Config,
    as_contents,
    config_field,
    conversion_of,
    current_turn,
    extended,
    plain_contents,
    read_config,
    read_content,
    read_parts,
    read_tools,
    to_transcript,
    validate,
)
from ._tokens import (
    CALIBRATION,
    CALL_TOKENS,
    CONTENT_TOKENS,
    GeminiTokenCounter,
    model_estimator,
)

if TYPE_CHECKING:
    from google.genai.types import ContentDict

__all__ = [
    "CALIBRATION",
    "DEFAULT_MODEL",
    "FORMAT",
    "OMITTED_NOTE",
    "SUMMARY_HEADER",
    "ContentsCodec",
    "ContentsCompactKeywords",
    "ContentsKeywords",
    "ContentsResult",
    "acompact",
    "compact",
    "count_tokens",
    "plan",
    "text_estimator",
    "to_transcript",
    "validate",
]


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A validated, estimated request, before planning."""

    contents: list[dict[str, Any]]
    as_string: str | None
    conversion_parts: list[Any]
    reading: Any
    overhead: int
    counter: GeminiTokenCounter

    def measure(self, rendered: Rendered) -> int:
        """Prompt tokens of a rendered request (overhead included)."""
        return _measure(self.counter, self.overhead, rendered)


def _measure(counter: GeminiTokenCounter, overhead: int, rendered: Rendered) -> int:
    return sum(counter.content(content) for content in as_contents(rendered)) + overhead


def _overhead(counter: GeminiTokenCounter, config: Config) -> int:
    return counter.request_overhead(config.system_instruction, config.tools, config.tool_config)


def _prepare(contents: Any, config: Any, model: str | None, estimator: TokenEstimator | None,
             calibration: float | None, tools: Sequence[Any] | None = None) -> _Prepared:
    plain, as_string = plain_contents(contents)
    counter = GeminiTokenCounter(estimator, model=model, calibration=calibration)
    parts, reading = read_parts(plain, counter)
    overhead = _overhead(counter, read_config(config)) + sum(
        counter.tool(tool) for tool in read_tools(tools, "request"))
    return _Prepared(plain, as_string, parts, reading, overhead, counter)


def protect(conv: Conversion[Any], allowance: int) -> Conversion[Any]:
    """``conv`` with its current turn pinned where it fits ``allowance`` beside the other
    pinned turns: the API validates the turn's thought signatures, and it is what the model is
    working on. A current turn that does not fit gives way like any other turn."""
    tail, turns = current_turn(conv), conv.transcript.turns
    if not tail or tail > len(turns):
        return conv
    start = len(turns) - tail
    needed = sum(turn.token_estimate for position, turn in enumerate(turns)
                 if position >= start or turn.pinned)
    if needed > allowance or all(turn.pinned for turn in turns[start:]):
        return conv
    # A turn an earlier compaction replaced (a session's view) stays as it is: already final.
    # Pinned through ``with_pinned``: what was found in the texts is shared, not found again.
    current = {turn.turn_id for turn in turns[start:]
               if not turn.pinned and KIND_KEY not in turn.metadata}
    return Conversion(conv.transcript.with_pinned(current), conv.parts, conv.codec,
                      conv.task_turn_id, conv.reading)


def _job(prepared: _Prepared, goal: Goal, settings: CompactionSettings) -> planning.Job:
    conv = conversion_of(prepared.contents, prepared.as_string, prepared.conversion_parts,
                         prepared.reading, settings.pin, settings.keep_task,
                         prepared.counter.text)
    budget = goal.budget

    def begin(extra: int) -> planning.Job:
        overhead = prepared.overhead + extra
        room = budget if isinstance(budget, int) else budget.max_tokens + overhead
        return started(protect(conv, room - overhead), settings, goal, overhead=overhead,
                       result_fields=lambda rendered: {},
                       **_start_keywords(prepared.counter, prepared.overhead))

    def note_tokens() -> int:
        return prepared.counter.content(omitted_note())

    return planning.with_room_for_note(begin, conv, note_tokens)


def text_estimator(model: str | None = DEFAULT_MODEL) -> TokenEstimator:
    """How this format counts plain text for ``model`` (tiktoken, calibrated)."""
    return GeminiTokenCounter(model=model).text_estimator


def count_tokens(
    contents: Any,
    *,
    config: Any = None,
    model: str | None = DEFAULT_MODEL,
    estimator: TokenEstimator | None = None,
    calibration: float | None = None,
) -> int:
    """The request's estimated input tokens: ``contents`` plus what ``config`` adds (system
    instruction, tools, tool config). Validates the contents first."""
    prepared = _prepare(contents, config, model, estimator, calibration)
    return prepared.measure(prepared.contents)


class ContentsKeywords(PlanKeywords, total=False):
    """``plan``'s keywords for Gemini: the request's ``config`` (its system instruction, tools
    and tool config are counted) and the ``calibration`` of the text estimates."""

    config: Any
    calibration: float | None


class ContentsCompactKeywords(ContentsKeywords, CompactKeywords, total=False):
    """``compact``'s keywords for Gemini."""


_OWN = ("config", "calibration")


def plan(contents: Any, **options: Unpack[ContentsKeywords]) -> planning.Job:
    """Convert, estimate and plan; ``compact``/``acompact`` fulfil and apply the result.

    An int ``budget`` is the whole prompt's: the contents get it minus what ``config`` spends
    (system instruction, tools, tool config; ``tools=`` counts more tools) and the request
    framing; None: the model's window less ``reserve``. A summary is always a user content
    (``summary_role="user"``). The other settings are ``CompactionSettings`` fields.
    """
    chosen = settings_of(options, "contents.plan", _OWN)
    if options.get("summary_role", "user") != "user":
        raise ValidationError("a Gemini summary is a user content: summary_role must be 'user'",
                              {"field": "summary_role", "rule": "summary_role"})
    model = options.get("model", DEFAULT_MODEL)
    prepared = _prepare(contents, options.get("config"), model, chosen.estimator,
                        options.get("calibration"), options.get("tools"))
    return _job(prepared, goal_of(chosen, options.get("budget"), model), chosen)


@dataclass(frozen=True, slots=True)
class ContentsResult(planning.FormatResult):
    """``compact``'s result: ``contents`` ready for ``client.models.generate_content`` with the
    same ``config``."""

    @property
    def contents(self) -> list[ContentDict] | str:
        """The compacted contents (a string, if they were given as one and kept)."""
        rendered: list[ContentDict] | str = self.rendered
        return rendered


def compact(contents: Any, **options: Unpack[ContentsCompactKeywords]) -> ContentsResult:
    """Compact Gemini ``contents`` to ``budget`` prompt tokens; ``result.contents`` is ready to
    send with the same ``config``. See ``plan`` for the settings."""
    return planning.compacted(plan, contents, options, ContentsResult, DEFAULT_MODEL)


async def acompact(contents: Any, **options: Unpack[ContentsCompactKeywords]) -> ContentsResult:
    """``compact`` with an async (or sync) summarizer."""
    return await planning.acompacted(plan, contents, options, ContentsResult, DEFAULT_MODEL)


# ----------------------------------------------------------------------------------------------
# sessions and the wrapped client


def _request_overhead(request: Mapping[str, Any], estimator: TokenEstimator) -> int:
    model = planning.given(request.get("model"))
    counter = GeminiTokenCounter(estimator, model=model if isinstance(model, str) else None)
    return _overhead(counter, read_config(planning.given(request.get("config"))))


def _planning(_conv: Conversion[Rendered], estimator: TokenEstimator,
              overhead: int) -> dict[str, Any]:
    """What ``start`` needs beyond the defaults, as ``plan`` passes it."""
    return _start_keywords(GeminiTokenCounter(estimator), overhead)


def _start_keywords(counter: GeminiTokenCounter, overhead: int) -> dict[str, Any]:
    """The calibrated stub estimator, the framing a masked response keeps, and a measure of
    the rendering (``overhead``: what the request spends outside its contents)."""
    return {"estimator": counter.text_estimator, "stub_pad": CONTENT_TOKENS + CALL_TOKENS,
            "measure": lambda rendered: _measure(counter, overhead, rendered)}


def _unsupported(request: Mapping[str, Any]) -> str | None:
    """What a session sends as it is: an SDK shorthand it does not read (a single content or
    part, a list of bare parts), a history the server holds."""
    if planning.given(request.get("previous_interaction_id")) is not None:
        return planning.server_held("previous_interaction_id")
    if "input" in request:
        return "an Interactions API request (input): its history is not compacted here"
    if "contents" not in request:
        return "no contents: a Live API session keeps its history on the server"
    contents = request.get("contents")
    if isinstance(contents, str):
        return None
    if not isinstance(contents, Sequence) or isinstance(contents, bytes):
        return "contents is a single content or part (the SDK's shorthand): sent as given"
    for item in contents:
        if isinstance(item, str) or not (
                hasattr(item, "parts") or hasattr(item, "candidates")
                or (isinstance(item, Mapping) and item and set(item) <= {"role", "parts"})):
            return ("contents holds bare parts or strings (the SDK's shorthand): sent as "
                    "given")
    return None


def _to_transcript(items: Any, _side: Any, estimator: TokenEstimator, pin: Any,
                   keep_task: bool) -> Conversion[Rendered]:
    return to_transcript(items, estimator=estimator, pin=pin, keep_task=keep_task,
                         calibration=None)


FORMAT = planning.HistoryFormat(
    name="gemini",
    list_key="contents",
    side_key=None,
    read_item=read_content,
    to_transcript=_to_transcript,
    extend=extended,
    split=lambda rendered: (None, as_contents(rendered)),
    overhead=_request_overhead,
    output_allowance=lambda request: planning.reply_allowance("max_output_tokens")(
        read_generation(request)),
    unsupported=_unsupported,
    estimator_for=model_estimator,
    planning=_planning,
    safety_margin=0.05,
    protect=protect,
)
"""How ``generate_content`` requests carry their history (for sessions and the wrapper)."""


def read_generation(request: Mapping[str, Any]) -> Mapping[str, Any]:
    """The request's ``config`` as a mapping of the fields the session reads."""
    config = planning.given(request.get("config"))
    if config is None:
        return {}
    return {"max_output_tokens": config_field(config, "max_output_tokens")}


"""What every provider format shares: plain data, parts, turn ids, exchanges, pins, rendering.

A format's codec splits a provider history into ``Part`` values (one engine turn each) and knows
how to render a masked part, a summary and the final list. Everything else — ids, exchange
grouping, pinning, call/result pairing checks, the round trip — lives here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from cutctx import (
    ATOMS_KEY,
    CONTENT_KEY,
    EMPTY_METADATA,
    KIND_KEY,
    OBSERVATION_KEY,
    ORIGINAL_SHA256_KEY,
    REF_LABEL_KEY,
    REPLACEMENT_KIND,
    REPLACEMENT_KINDS,
    Action,
    CompactedTranscript,
    Role,
    Transcript,
    TranscriptTurn,
    ValidationError,
)

from ._bodies import atoms_entry, clipped_payload, layout, original_sha256
from ._grown import GrownList, GrownMap
from ._keys import content_key
from ._observations import observation_reason
from ._plain import copy_plain, invalid

__all__ = [
    "BOUNDARY_KIND",
    "KIND_KEY",
    "OMITTED_NOTE",
    "SUMMARY_HEADER",
    "TOOL_NAME_KEY",
    "Codec",
    "Conversion",
    "CountText",
    "Growing",
    "Part",
    "PinSpec",
    "check_call_pairs",
    "convert",
    "covered_turns",
    "extend",
    "uncovered",
]

CLIPPED = REPLACEMENT_KIND[Action.CLIP]
SUMMARY_HEADER = "Summary of the earlier conversation:\n\n"
"""What every format puts before a summary's text, so a reader (or model) knows what it is."""
OMITTED_NOTE = "(Earlier messages of this conversation were omitted.)"
"""The user text a format whose API wants a user turn first puts there when compaction leaves
the model's turn at the start."""
TOOL_NAME_KEY = "cutctx.tool"
"""Metadata key under which a turn records its tool name(s): content-free, for reports."""
BOUNDARY_KIND = "compaction"
"""The part kind of a provider's own compaction (an Anthropic ``compaction`` block with content,
a Responses ``compaction`` item): a SYSTEM turn, kept verbatim where it stands; the latest one
covers what comes before it (see ``covered_turns``)."""

PinSpec = Sequence[int] | Callable[[Mapping[str, Any], int], bool] | None
"""Messages no policy may touch: their indexes, or a predicate ``(message, index) -> bool``."""

Out = TypeVar("Out")
Out_co = TypeVar("Out_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Part:
    """One engine turn's worth of a provider history, and what it renders back to."""

    index: int
    """Position of the message or item in the caller's list (for errors and pins)."""
    role: Role
    text: str
    """The content as a model reads it; non-text parts as short placeholders."""
    payload: Any
    """Plain provider data this turn renders back to when kept."""
    tokens: int
    kind: str = "message"
    calls: tuple[str, ...] = ()
    """Ids of the tool calls this turn issues."""
    answers: tuple[str, ...] = ()
    """Ids of the tool calls this turn answers."""
    links: tuple[str, ...] = ()
    """Other keys that must travel together (e.g. a reasoning item and its response)."""
    label: str | None = None
    """A short, content-free description (tool name) for reports and the CLI."""
    sub: int | None = None
    """Position within its message when a message splits into several turns."""
    turn_id: str | None = None
    """An explicit id for parts outside the message list (e.g. system blocks)."""


class Codec(Protocol[Out_co]):
    """What one provider format fills in; everything else is shared."""

    noun: str
    """What the format calls one entry of a history: ``message`` or ``item``."""
    id_prefix: str

    def render_masked(self, part: Part, stub: str) -> Any: ...

    def body(self, part: Part) -> Any:
        """What a tool result says, whole (images included): identical bodies, identical
        results — the stub ``render_masked`` puts in replaces exactly this."""
        ...

    def render_summary(self, text: str, replaced: int) -> Any: ...

    def assemble(self, rendered: list[tuple[Part | None, Any]]) -> Out_co: ...

    def content(self, part: Part) -> Any:
        """The body as the caller gave it (a string, or a list of text and media parts): what
        a stub's sha256 names, and what a clip rebuilds around the parts it keeps whole."""
        ...

    def with_content(self, part: Part, content: Any) -> Any:
        """The part's payload with its body replaced by ``content``."""
        ...

    def piece(self, block: Any) -> tuple[str, str | None]:
        """A body part's text as the turn's text has it, and the key holding that text in the
        part (None: not text, so kept whole or not at all)."""
        ...

    def text_block(self, text: str) -> Any:
        """A text part of this format holding ``text`` (a clip's marker)."""
        ...


def _kept_by_design(codec: Codec[Any], part: Part) -> bool:
    """Whether ``codec``'s provider keeps ``part`` before its compaction (Responses: user
    messages); a codec says so with a ``kept_before_boundary(part)`` method."""
    keeps = getattr(codec, "kept_before_boundary", None)
    return callable(keeps) and bool(keeps(part))


@dataclass(frozen=True, slots=True)
class Conversion(Generic[Out]):
    """A provider history as a ``Transcript``, with what the way back needs.

    ``render(conv.transcript)`` gives the original history back; ``render(view)`` gives a
    compacted one, ready to send.
    """

    transcript: Transcript
    parts: Mapping[str, Part]
    codec: Codec[Out] = field(repr=False)
    task_turn_id: str | None = None
    """The turn pinned as the session's task (the first user message), if one was."""
    reading: Any = field(default=None, repr=False, compare=False)
    """Where a format's reader stood at the end (for ``extend``); None where it keeps none."""

    def render(self, view: Transcript | CompactedTranscript) -> Out:
        turns = view.transcript.turns if isinstance(view, CompactedTranscript) else view.turns
        rendered: list[tuple[Part | None, Any]] = []
        for turn in turns:
            kind = turn.metadata.get(KIND_KEY)
            if kind == "summary":
                replaced = int(turn.metadata.get("cutctx.replaced_turn_count", "0"))
                rendered.append((None, self.codec.render_summary(turn.content, replaced)))
                continue
            part = self.parts.get(turn.turn_id)
            if part is None:
                raise ValidationError("the view holds a turn this conversion did not produce",
                                      {"turn_id": turn.turn_id})
            if kind == CLIPPED:
                rebuilt = clipped_payload(self.codec, part, part.text, turn)
                rendered.append((part, rebuilt if rebuilt is not None
                                 else self.codec.render_masked(part, turn.content)))
            elif kind in REPLACEMENT_KINDS:
                rendered.append((part, self.codec.render_masked(part, turn.content)))
            else:
                rendered.append((part, copy_plain(part.payload)))
        return self.codec.assemble(rendered)

    def part_for(self, turn_id: str) -> Part:
        """The part behind a turn id."""
        return self.parts[turn_id]

    @property
    def turns(self) -> tuple[TranscriptTurn, ...]:
        """The transcript's turns (as ``Growing`` has them)."""
        return self.transcript.turns


@dataclass(frozen=True, slots=True)
class Growing(Generic[Out]):
    """A conversion of a history that grows, as a session carries it from call to call.

    Its turns and parts are shared with the conversion it grew from (see ``_grown``), so
    continuing it costs what is appended, not the history; the whole ``Transcript`` is made
    only where one is asked for (``transcript``, ``conversion``).
    """

    turns: GrownList[TranscriptTurn]
    parts: GrownMap[Part]
    codec: Codec[Out] = field(repr=False)
    task_turn_id: str | None = None
    reading: Any = field(default=None, repr=False, compare=False)
    """As ``Conversion.reading``."""

    @classmethod
    def of(cls, conv: Conversion[Out] | Growing[Out]) -> Growing[Out]:
        """``conv`` as a growing conversion (itself if it is one)."""
        if isinstance(conv, Growing):
            return conv
        return cls(GrownList(conv.transcript.turns), GrownMap(conv.parts), conv.codec,
                   conv.task_turn_id, conv.reading)

    @property
    def transcript(self) -> Transcript:
        """The whole transcript (made anew on every access: it costs the history)."""
        return Transcript(tuple(self.turns))

    def conversion(self) -> Conversion[Out]:
        """The whole ``Conversion`` (costs the history)."""
        return Conversion(self.transcript, self.parts, self.codec, self.task_turn_id,
                          self.reading)


def covered_turns(conv: Conversion[Any]) -> tuple[str, ...]:
    """Turn ids the latest provider compaction in ``conv``'s transcript already covers.

    Everything before the latest ``BOUNDARY_KIND`` turn, summaries included, except side turns
    (``system``, ``instructions``), what the provider keeps by design, and turns whose exchange
    goes on past the boundary (dropping them would orphan a call or a result). Empty when there
    is no boundary. These are redundant: the first thing to give way.
    """
    turns, parts = conv.transcript.turns, conv.parts
    boundary = next((position for position in range(len(turns) - 1, -1, -1)
                     if _is_boundary(parts.get(turns[position].turn_id))), None)
    if not boundary:
        return ()
    after = {turn.tool_call_id for turn in turns[boundary:] if turn.tool_call_id is not None}
    out: list[str] = []
    for turn in turns[:boundary]:
        part = parts.get(turn.turn_id)
        if part is not None and (part.index < 0 or _kept_by_design(conv.codec, part)):
            continue
        if turn.tool_call_id is not None and turn.tool_call_id in after:
            continue
        out.append(turn.turn_id)
    return tuple(out)


def _is_boundary(part: Part | None) -> bool:
    return part is not None and part.kind == BOUNDARY_KIND


def uncovered(conv: Conversion[Out], covered: Collection[str]) -> Conversion[Out]:
    """``conv`` without the turns ``covered`` names (``covered_turns``): what it renders to
    leaves them out, and a task among them is no longer the task."""
    if not covered:
        return conv
    turns = tuple(turn for turn in conv.transcript.turns if turn.turn_id not in covered)
    task = None if conv.task_turn_id in covered else conv.task_turn_id
    return Conversion(Transcript(turns), conv.parts, conv.codec, task, conv.reading)


def convert(
    codec: Codec[Out],
    parts: Sequence[Part],
    messages: Sequence[Mapping[str, Any]],
    pin: PinSpec = None,
    keep_task: bool = False,
    count_text: CountText | None = None,
) -> Conversion[Out]:
    """Build the transcript: stable ids, exchanges as correlation ids, pins applied.

    ``keep_task`` pins the first user message too: an agent's task, which no compaction should
    take away. ``count_text`` prices the text of a body made of parts, so what its media cost
    is known (see ``_structured``).
    """
    pinned = _pinned_indexes(pin, messages, codec.noun)
    task = _task_index(parts) if keep_task else None
    if task is not None:
        pinned.add(task)
    turns, by_id, task_turn_id = _turns_of(codec, parts, pinned, task, _exchange_ids(parts),
                                           count_text)
    return Conversion(Transcript(tuple(turns)), by_id, codec, task_turn_id)


def extend(
    previous: Conversion[Out] | Growing[Out],
    parts: Sequence[Part],
    messages: Sequence[Mapping[str, Any]],
    pin: PinSpec = None,
    keep_task: bool = False,
    reading: Any = None,
    codec: Codec[Out] | None = None,
    count_text: CountText | None = None,
) -> Growing[Out] | None:
    """``previous`` (a conversion of the first messages, ending where no tool call is open)
    continued by ``parts`` (the rest, read with their indexes in the whole list): what
    ``convert`` gives for all of them, at the cost of the new parts. None when pins could
    move (an index counted from the end), so the caller converts the whole list. ``reading``:
    where the format's reader stands after ``parts``; ``codec``: the whole history's, where it
    depends on more than the first items (default: ``previous``'s).
    """
    if pin is not None and not callable(pin) and any(
            isinstance(index, int) and index < 0 for index in pin):
        return None
    grown = Growing.of(previous)
    start = parts[0].index if parts else len(messages)
    if callable(pin):
        pinned = {index for index in range(start, len(messages)) if pin(messages[index], index)}
    else:
        pinned = {index for index in _pinned_indexes(pin, messages, grown.codec.noun)
                  if index >= start}
    task = None
    if keep_task and grown.task_turn_id is None:
        task = _task_index(parts)
        if task is not None:
            pinned.add(task)
    known = len(grown.turns)
    turns, by_id, task_turn_id = _turns_of(
        grown.codec, parts, pinned, task, _exchange_ids(parts, start=known), count_text,
        grown.turns[-1] if known else None,
        any(turn.role is Role.USER for turn in grown.turns))  # stops at the first: the task
    fresh: set[str] = set()
    for index, turn in enumerate(turns, start=known):
        if turn.turn_id in grown.parts or turn.turn_id in fresh:
            raise ValidationError("duplicate turn id", {"turn_id": turn.turn_id, "index": index})
        fresh.add(turn.turn_id)
    return Growing(grown.turns.extended(turns), grown.parts.extended(by_id),
                   codec or grown.codec, grown.task_turn_id or task_turn_id, reading)


def _turns_of(codec: Codec[Any], parts: Sequence[Part], pinned: set[int], task: int | None,
              correlation: Sequence[str | None], count_text: CountText | None = None,
              previous: TranscriptTurn | None = None, after_task: bool = False
              ) -> tuple[list[TranscriptTurn], dict[str, Part], str | None]:
    """The engine turns of ``parts``, the parts by turn id, and the task's turn id.
    ``previous``: the turn before the first of ``parts`` (an extension's), if any;
    ``after_task``: whether a user message came before them (the first is never an
    observation)."""
    task_turn_id: str | None = None
    turns: list[TranscriptTurn] = []
    by_id: dict[str, Part] = {}
    for position, part in enumerate(parts):
        turn_id = part.turn_id or f"{codec.id_prefix}{part.index}"
        if part.sub is not None and part.turn_id is None:
            turn_id += f".{part.sub}"
        by_id[turn_id] = part
        metadata: Mapping[str, str] = {TOOL_NAME_KEY: part.label} if part.label else EMPTY_METADATA
        if part.role is Role.TOOL or part.role is Role.USER:
            metadata = _body_metadata(codec, part, metadata, count_text)
            before = turns[-1] if turns else previous
            reason = observation_reason(part.role, part.text,
                                        None if before is None else before.role, after_task)
            if reason is not None:
                metadata = {**metadata, OBSERVATION_KEY: reason}
            after_task = after_task or part.role is Role.USER
        turns.append(TranscriptTurn(turn_id, part.role, part.text, part.tokens,
                                    correlation[position], part.index in pinned, metadata))
        if task_turn_id is None and part.index == task and part.role is Role.USER:
            task_turn_id = turn_id
    return turns, by_id, task_turn_id


CountText = Callable[[str], int]
"""Counts a text's tokens on the scale of a format's part estimates (its calibration included)."""


def _body_metadata(codec: Codec[Any], part: Part, metadata: Mapping[str, str],
                   count_text: CountText | None) -> Mapping[str, str]:
    """What the engine is told of a result's or a message's body, content-free: how to tell
    identical results apart, what a stub's sha256 names, how a model finds a result, and where
    the parts a clip keeps whole stand (see ``_structured``)."""
    extra: dict[str, str] = {}
    if part.role is Role.TOOL:
        extra[CONTENT_KEY] = content_key(codec.body(part))
        if part.answers:
            extra[REF_LABEL_KEY] = f"the result of tool call {part.answers[0].partition(':')[2]}"
    digest = original_sha256(codec.content(part), part.text)
    if digest is not None:
        extra[ORIGINAL_SHA256_KEY] = digest
    atoms = atoms_entry(layout(codec, part, part.text), part.tokens, part.text, count_text)
    if atoms is not None:
        extra[ATOMS_KEY] = atoms
    return {**metadata, **extra} if extra else metadata


def _task_index(parts: Sequence[Part]) -> int | None:
    """Position in the caller's list of the first user message (not tool results), if any."""
    for part in parts:
        if part.role is Role.USER:
            return part.index
    return None


def _pinned_indexes(pin: PinSpec, messages: Sequence[Mapping[str, Any]], noun: str) -> set[int]:
    if pin is None:
        return set()
    if callable(pin):
        return {index for index, message in enumerate(messages) if pin(message, index)}
    if isinstance(pin, str | bytes | Mapping) or not isinstance(pin, Sequence | Set):
        raise ValidationError(
            f"pin must be {noun} indexes or a predicate (message, index), got "
            f"{type(pin).__name__}", {"field": "pin", "rule": "pin_type"})
    count = len(messages)
    out: set[int] = set()
    for index in pin:
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValidationError(f"pin: a {type(index).__name__} is not a {noun} index",
                                  {"field": "pin", "rule": "pin_index",
                                   "type": type(index).__name__})
        if not -count <= index < count:
            raise ValidationError(f"pin: {noun} index out of range for a history of {count}",
                                  {"index": index, "field": "pin", "rule": "pin_index"})
        out.add(index % count)
    return out


def _exchange_ids(parts: Sequence[Part], start: int = 0) -> list[str | None]:
    """Union the parts that share a call id or link key; each group of two or more gets an id.

    ``start``: the position of the first of ``parts`` in the whole history (for an extension)."""
    parent = list(range(len(parts)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, int] = {}
    for position, part in enumerate(parts):
        if not (part.calls or part.answers or part.links):
            continue  # most turns belong to no exchange
        for key in _keys(part):
            other = owner.setdefault(key, position)
            if other != position:
                a, b = find(other), find(position)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    sizes: dict[int, int] = {}
    for position in range(len(parts)):
        root = find(position)
        sizes[root] = sizes.get(root, 0) + 1
    names: dict[int, str] = {}
    out: list[str | None] = []
    for position in range(len(parts)):
        root = find(position)
        if sizes[root] < 2:
            out.append(None)
            continue
        if root not in names:
            names[root] = next(iter(_keys(parts[root])), f"x{root + start}")
        out.append(names[root])
    return out


def _keys(part: Part) -> Iterable[str]:
    yield from part.calls
    yield from part.answers
    yield from part.links


def check_call_pairs(
    parts: Sequence[Part],
    noun: str,
    call_field: str,
    answer_field: str,
    closes: Callable[[Part, int], bool] | None = None,
) -> None:
    """Every call issued once and answered exactly once, after it was issued.

    ``closes(part, call_index)`` says whether ``part`` comes too late for calls issued by
    message ``call_index`` still open (chat: any non-tool message; Anthropic: any part past the
    next message), which makes those calls unanswered.
    """
    issued: set[str] = set()
    open_calls: dict[str, int] = {}
    for part in parts:
        if open_calls and closes is not None:
            call_id, call_index = next(iter(open_calls.items()))
            if closes(part, call_index):
                raise invalid(noun, call_index, call_field, "unanswered_tool_call",
                              f"tool call has no result before {noun} {part.index}",
                              call_id=call_id)
        for call_id in part.answers:
            if call_id not in open_calls:
                rule = "duplicated_tool_result" if call_id in issued else "orphaned_tool_result"
                problem = ("tool call answered twice" if call_id in issued else
                           "tool result answers no open call issued before it")
                raise invalid(noun, part.index, answer_field, rule, problem, call_id=call_id)
            del open_calls[call_id]
        for call_id in part.calls:
            if call_id in issued:
                raise invalid(noun, part.index, call_field, "duplicated_call_id",
                              "tool call id issued twice", call_id=call_id)
            issued.add(call_id)
            open_calls[call_id] = part.index
    if open_calls:
        call_id, call_index = next(iter(open_calls.items()))
        raise invalid(noun, call_index, call_field, "unanswered_tool_call",
                      "tool call has no result", call_id=call_id)



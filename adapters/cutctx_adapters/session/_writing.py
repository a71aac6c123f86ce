"""Summaries written once a walk ends, so where a session compacts never waits on a model.

A walk plans its compaction events with every summary standing in at the most its plan allows
(its text a ``stand_in``), so the points where it compacts are the same for every worker
whatever the summaries say, and what it measures is never less than what is sent. When the walk
ends, only the summaries its final view keeps are written. A summary folded into a later one of
the same walk is never written on its own: the later one reads the turns it folded in its place
— unless the shared store already holds it (a worker that saw the calls one by one wrote it),
then its text, as that worker's summarizer read it. So a first call on a long history pays one
summary per summary it sends, not one per event in a row, and a worker that saw every call
pays what it always paid: one summary an event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cutctx import SummarizationRequest, TokenEstimator, Transcript, TranscriptTurn

from ..history import KIND_KEY, Conversion
from ..planning import stand_in

__all__ = ["Pending", "ToWrite", "is_summary", "to_write", "with_stand_ins", "with_texts"]

Pending = Mapping[str, tuple[SummarizationRequest, tuple[TranscriptTurn, ...]]]
"""A summary turn's id -> its request and the turns it folds, as the walk planned them."""
Peek = Callable[[SummarizationRequest, tuple[TranscriptTurn, ...]], str | None]
"""A summary's text if the store already holds one for these turns (None otherwise)."""


@dataclass(frozen=True, slots=True)
class ToWrite:
    """One summary the final view keeps, and the turns its summarizer reads."""

    turn_id: str
    request: SummarizationRequest
    turns: tuple[TranscriptTurn, ...]


def is_summary(turn: TranscriptTurn) -> bool:
    """Whether ``turn`` is a summary a compaction wrote (or will write)."""
    return turn.metadata.get(KIND_KEY) == "summary"


def with_stand_ins(conv: Conversion[Any], estimator: TokenEstimator) -> Conversion[Any]:
    """``conv`` with each summary's text replaced by its stand-in (as long as it may be)."""
    turns = conv.transcript.turns
    if not any(is_summary(turn) for turn in turns):
        return conv
    stood = tuple(replace(turn, content=stand_in(turn.token_estimate, estimator))
                  if is_summary(turn) else turn for turn in turns)
    return Conversion(Transcript(stood), conv.parts, conv.codec, conv.task_turn_id,
                      conv.reading)


def to_write(view: Sequence[TranscriptTurn], pending: Pending, texts: Mapping[str, str],
             peek: Peek) -> list[ToWrite]:
    """The summaries of ``view`` still to write (those ``pending``), in order, each with the
    turns it reads: a summary among them with a known text (``texts``, or in the store) reads
    as that text, one without as the turns it folded."""
    resolved: dict[str, tuple[TranscriptTurn, ...]] = {}

    def read(turn_id: str) -> tuple[TranscriptTurn, ...]:
        found = resolved.get(turn_id)
        if found is None:
            _, turns = pending[turn_id]
            out: list[TranscriptTurn] = []
            for turn in turns:
                out.extend(inner(turn))
            found = resolved[turn_id] = tuple(out)
        return found

    def inner(turn: TranscriptTurn) -> tuple[TranscriptTurn, ...]:
        if not is_summary(turn):
            return (turn,)
        if turn.turn_id in texts:
            return (replace(turn, content=texts[turn.turn_id]),)
        if turn.turn_id not in pending:
            return (turn,)
        request, _ = pending[turn.turn_id]
        stored = peek(request, read(turn.turn_id))
        return read(turn.turn_id) if stored is None else (replace(turn, content=stored),)

    return [ToWrite(turn.turn_id, pending[turn.turn_id][0], read(turn.turn_id))
            for turn in view if turn.turn_id in pending and turn.turn_id not in texts]


def with_texts(view: Sequence[TranscriptTurn], texts: Mapping[str, str]
               ) -> tuple[TranscriptTurn, ...]:
    """``view`` with each summary's text in place of its stand-in."""
    return tuple(replace(turn, content=texts[turn.turn_id])
                 if is_summary(turn) and turn.turn_id in texts else turn for turn in view)

"""Plans that keep the cached prefix: of the plans that reach the goal, the one that leaves the
longest run of the view's first turns exactly as they were (a provider serves those from its
prompt cache), shedding what it must after them.

A candidate is planned with its first turns pinned (kept exactly as they are), and taken only
if it loses no more than the plan made afresh: it fits, gives up no more protection, and goes no
further down the order that loses least (deduplicate < clip < mask < summarize < drop < shorten
or drop a person's message) than that plan does. So the rules of the fresh plan still hold;
what is traded is which turns of the same kind give way (later ones, instead of the oldest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cutctx import Action, Transcript, TranscriptTurn, is_person

from ..history import KIND_KEY, Conversion
from ._pipeline import Job

__all__ = ["frozen", "keeping_prefix", "loss", "no_worse"]

_LOSS = {Action.KEEP: 0, Action.DEDUPLICATE: 0, Action.CLIP: 1, Action.MASK: 3,
         Action.SUMMARIZE: 4, Action.DROP: 5}
"""How far down the order that loses least an action on a tool result or an agent's turn is;
on a person's message, clipping is 2 and masking (shortening) or dropping it 6 and 7."""
EVIDENCE = 0.5
"""The newest share of what the fresh plan keeps (in tokens) that a plan keeping more of the
prefix must keep too."""


def _loss(turn: TranscriptTurn, action: Action) -> int:
    if is_person(turn):
        return {Action.CLIP: 2, Action.MASK: 6, Action.DROP: 7}.get(action, _LOSS[action])
    return _LOSS[action]


def loss(job: Job) -> int:
    """The furthest step of the order that loses least ``job``'s plan takes (0: lossless)."""
    turns = job.conversion.transcript.turns
    return max((_loss(turn, action.action) for turn, action
                in zip(turns, job.plan.actions, strict=True)), default=0)


def frozen(conv: Conversion[Any], count: int) -> Conversion[Any]:
    """``conv`` with its first ``count`` turns pinned: kept exactly as they are."""
    head = {turn.turn_id for turn in conv.transcript.turns[:count]}
    return Conversion(conv.transcript.with_pinned(head), conv.parts, conv.codec,
                      conv.task_turn_id, conv.reading)


def _thawed(job: Job, pinned: dict[str, bool]) -> Job:
    """``job`` over its turns as they were before freezing (its plan, made over the frozen
    ones, keeps each frozen turn: the executor applies it to the same turns by id)."""
    conv = job.conversion
    turns = tuple(turn if turn.pinned == pinned.get(turn.turn_id, turn.pinned)
                  else replace(turn, pinned=pinned[turn.turn_id])
                  for turn in conv.transcript.turns)
    return replace(job, conversion=Conversion(Transcript(turns), conv.parts, conv.codec,
                                              conv.task_turn_id, conv.reading))


def _guarded(job: Job) -> frozenset[str]:
    """The turns ``job``'s plan keeps as they are, still holding what they said, that make up
    the newest ``EVIDENCE`` of what it keeps: what the agent most likely reads next."""
    turns = job.conversion.transcript.turns
    kept = [turn for turn, action in zip(turns, job.plan.actions, strict=True)
            if action.action is Action.KEEP]
    room = EVIDENCE * sum(turn.token_estimate for turn in kept)
    out: set[str] = set()
    for turn in reversed(kept):
        if room <= 0:
            break
        room -= turn.token_estimate
        if turn.metadata.get(KIND_KEY) is None:
            out.add(turn.turn_id)
    return frozenset(out)


def no_worse(candidate: Job, fresh: Job) -> bool:
    """Whether ``candidate`` loses no more than ``fresh``: it fits its goal, gives up no more
    protection, clips no other turn as a last resort, takes no further step down the order
    that loses least, and shortens or drops no message a person typed that ``fresh`` keeps."""
    return (not candidate.plan.budget_unmet
            and candidate.protection_relaxed <= fresh.protection_relaxed
            and candidate.results_relaxed <= fresh.results_relaxed
            and set(candidate.last_resort) <= set(fresh.last_resort)
            and loss(candidate) <= loss(fresh)
            and all(mine <= theirs for mine, theirs
                    in zip(_people(candidate), _people(fresh), strict=True)))


def _keeps(candidate: Job, guarded: frozenset[str]) -> bool:
    """Whether ``candidate`` keeps every turn of ``guarded`` as it is."""
    return all(action.action is Action.KEEP for action in candidate.plan.actions
               if action.turn_id in guarded)


def _people(job: Job) -> list[int]:
    """How far ``job``'s plan reduces each message a person typed: a plan keeping the prefix
    may not shorten or drop one the fresh plan keeps (a newer one for an older one)."""
    turns = job.conversion.transcript.turns
    return [_loss(turn, action.action) for turn, action
            in zip(turns, job.plan.actions, strict=True) if is_person(turn)]


def keeping_prefix(fresh: Job, conv: Conversion[Any], limit: int,
                   plan: Callable[[Conversion[Any]], Job | None]) -> tuple[Job, int]:
    """Of ``fresh`` and the plans of ``conv`` with its first 1..``limit`` turns frozen
    (``plan``: None where none can be made), the one freezing the most that loses no more than
    ``fresh``, and how many it freezes (0: ``fresh``). Freezing more only narrows a plan's
    choices, so the longest is found by bisection."""
    if fresh.plan.budget_unmet or limit < 1:
        return fresh, 0
    pinned = {turn.turn_id: turn.pinned for turn in conv.transcript.turns}
    guarded = _guarded(fresh)
    best, kept = fresh, 0
    low, high = 0, limit + 1  # ``low`` is known to do; ``high`` is not
    probe = limit
    while high - low > 1:
        candidate = plan(frozen(conv, probe))
        if (candidate is not None and no_worse(candidate, fresh)
                and _keeps(candidate, guarded)):
            best, kept, low = _thawed(candidate, pinned), probe, probe
        else:
            high = probe
        probe = (low + high) // 2
    return best, kept

"""What inspect and count show, as plain data: one row per turn, in history order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cutctx import Action, CompactionPlan, Transcript, TranscriptTurn

from ..history import TOOL_NAME_KEY, Conversion

__all__ = ["SUMMARY", "Row", "plan_rows", "turn_rows"]

_PLAIN_KINDS = frozenset({"message", "system", "developer", "user", "assistant", "tool", "model",
                          "function"})
SUMMARY = "summary"
"""The ``action`` of a row standing for a summary the plan inserts."""


@dataclass(frozen=True, slots=True)
class Row:
    """One turn (or an inserted summary): where it is, who speaks, its tokens and fate."""

    where: str
    """Index in the file's list (``12``; ``12.1`` for the 2nd turn of message 12), or the
    turn id for turns outside the list (e.g. a system prompt field); empty for a summary."""
    turn_id: str
    role: str
    tool: str | None
    tokens: int
    after: int
    action: str
    pinned: bool = False
    kind: str | None = None
    """The entry's own type when it says more than the role (``reasoning``, ``thinking``)."""
    covers: int = 0
    """For a summary row: how many turns it replaces."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"where": self.where, "turn_id": self.turn_id, "role": self.role,
                "tool": self.tool, "tokens": self.tokens, "tokens_after": self.after,
                "action": self.action, "pinned": self.pinned, "kind": self.kind,
                "covers": self.covers}


def turn_rows(conversion: Conversion[Any]) -> list[Row]:
    """Every turn kept as is (for ``count``)."""
    return [_row(conversion, turn, turn.token_estimate, Action.KEEP.value)
            for turn in conversion.transcript.turns]


def plan_rows(conversion: Conversion[Any], plan: CompactionPlan) -> list[Row]:
    """Every turn with its planned action, and a row where each summary goes."""
    transcript: Transcript = conversion.transcript
    requests = {request.group_id: request for request in plan.summarization_requests}
    rows: list[Row] = []
    for turn, action in zip(transcript.turns, plan.actions, strict=True):
        request = requests.get(action.summary_group or "")
        if request is not None and request.turn_ids[0] == turn.turn_id:
            rows.append(Row("", request.summary_turn_id, SUMMARY, None, 0, request.target_tokens,
                            SUMMARY, covers=len(request.turn_ids)))
        if action.action is Action.KEEP:
            after = turn.token_estimate
        elif action.replacement is not None:
            after = action.replacement.token_estimate
        else:
            after = 0
        rows.append(_row(conversion, turn, after, _LABELS.get(action.action,
                                                               action.action.value)))
    return rows


_LABELS = {Action.DEDUPLICATE: "dedupe"}
"""How an action is shown where its name is long (the rest by their own names)."""


def _row(conversion: Conversion[Any], turn: TranscriptTurn, after: int, action: str) -> Row:
    part = conversion.part_for(turn.turn_id)
    if part.turn_id is not None:
        where = part.turn_id
    elif part.sub is not None:
        where = f"{part.index}.{part.sub}"
    else:
        where = str(part.index)
    kind = None if part.kind in _PLAIN_KINDS else part.kind
    return Row(where, turn.turn_id, turn.role.value, turn.metadata.get(TOOL_NAME_KEY),
               turn.token_estimate, after, action, turn.pinned, kind)

"""What a plan decides for each turn: its action, the body replacing it, the spans to summarize."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from ._checks import require_int, require_text
from .errors import ValidationError

__all__ = [
    "REPLACEMENT_KIND",
    "REPLACEMENT_KINDS",
    "REPLACING_ACTIONS",
    "SUMMARY_TURN_ID_PREFIX",
    "Action",
    "Excerpt",
    "SummarizationRequest",
    "TurnAction",
    "TurnReplacement",
]

SUMMARY_TURN_ID_PREFIX = "summary:"


class Action(str, Enum):
    """What a plan does to a turn, one action per fate.

    KEEP, MASK, CLIP and DEDUPLICATE retain it (the last three with a new body: a stub, its head
    and tail, a pointer to an identical later result); DROP and SUMMARIZE remove it.
    """

    KEEP = "keep"
    MASK = "mask"
    SUMMARIZE = "summarize"
    DROP = "drop"
    CLIP = "clip"
    DEDUPLICATE = "deduplicate"


REPLACING_ACTIONS = frozenset({Action.MASK, Action.CLIP, Action.DEDUPLICATE})
"""The actions that keep a turn in place with a new body (a ``TurnReplacement``)."""


REPLACEMENT_KIND: Mapping[Action, str] = MappingProxyType({
    Action.MASK: "masked", Action.CLIP: "clipped", Action.DEDUPLICATE: "deduplicated"})
"""What a replaced turn is, as its ``cutctx.kind`` metadata says, by the action that replaced it."""
REPLACEMENT_KINDS = tuple(REPLACEMENT_KIND.values())
"""The kinds of the replacing actions (MASK, CLIP, DEDUPLICATE), in that order."""

Excerpt = tuple[tuple[int, int], ...]
"""Character ranges ``[start, end)`` of a turn's own content, ascending and not overlapping."""


def _checked_excerpt(excerpt: Any) -> Excerpt:
    if isinstance(excerpt, str | bytes) or not isinstance(excerpt, Iterable):
        raise ValidationError("replacement.excerpt must be a sequence of (start, end) ranges",
                              {"field": "replacement.excerpt"})
    out: list[tuple[int, int]] = []
    end_before = 0
    for item in excerpt:
        pair = tuple(item) if isinstance(item, Iterable) and not isinstance(item, str) else ()
        if (len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in pair)
                or not end_before <= pair[0] <= pair[1]):
            raise ValidationError(
                "replacement.excerpt must hold ascending, non-overlapping (start, end) ranges "
                "of ints >= 0", {"field": "replacement.excerpt"})
        out.append((pair[0], pair[1]))
        end_before = pair[1]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class TurnReplacement:
    """The body a MASK, CLIP or DEDUPLICATE puts in place of a turn's content.

    ``content`` is text cutctx writes (a stub, a clip marker), never the turn's own: what is
    kept of the turn is named by ``excerpt``, ranges of its content that the executor copies
    (a digest's lines, a clip's head and tail), so a plan holds decisions, not conversation.
    """

    content: str
    token_estimate: int
    excerpt: Excerpt = ()
    refers_to: str | None = None
    """DEDUPLICATE only: the id of the later turn holding the identical result."""

    def __post_init__(self) -> None:
        require_text(self.content, "replacement.content", non_empty=False)
        require_int(self.token_estimate, "replacement.token_estimate")
        if self.excerpt != ():
            object.__setattr__(self, "excerpt", _checked_excerpt(self.excerpt))
        if self.refers_to is not None:
            require_text(self.refers_to, "replacement.refers_to")

    @staticmethod
    def _checked(content: str, token_estimate: Any, excerpt: Excerpt = (),
                 refers_to: str | None = None) -> TurnReplacement:
        """A replacement the engine wrote: only the estimate (which may come from a caller's
        estimator) needs checking, so the common case skips the field checks."""
        if type(token_estimate) is not int or token_estimate < 0:
            return TurnReplacement(content, token_estimate, excerpt, refers_to)  # raises
        made = _new_object(TurnReplacement)
        _set_content(made, content)
        _set_token_estimate(made, token_estimate)
        _set_excerpt(made, excerpt)
        _set_refers_to(made, refers_to)
        return made

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "token_estimate": self.token_estimate}
        if self.excerpt:  # absent from 0.1.0's masks, so their plans serialize as before
            out["excerpt"] = [list(pair) for pair in self.excerpt]
        if self.refers_to is not None:
            out["refers_to"] = self.refers_to
        return out


@dataclass(frozen=True, slots=True)
class TurnAction:
    """The decision for one turn."""

    turn_id: str
    action: Action
    summary_group: str | None = None
    replacement: TurnReplacement | None = None

    def __post_init__(self) -> None:
        require_text(self.turn_id, "turn_id")
        if not isinstance(self.action, Action):
            try:
                object.__setattr__(self, "action", Action(self.action))
            except ValueError:
                raise ValidationError("action must be an Action",
                                      {"turn_id": self.turn_id, "field": "action"}) from None
        summarize = self.action is Action.SUMMARIZE
        if summarize != (self.summary_group is not None):
            raise ValidationError("summary_group is set exactly when the action is SUMMARIZE",
                                  {"turn_id": self.turn_id, "action": self.action.value})
        if summarize:
            require_text(self.summary_group, "summary_group")
        replacing = self.action in REPLACING_ACTIONS
        if replacing != (self.replacement is not None):
            raise ValidationError(
                "replacement is set exactly when the action is MASK, CLIP or DEDUPLICATE",
                {"turn_id": self.turn_id, "action": self.action.value})
        if not replacing:
            return
        replacement = self.replacement
        if not isinstance(replacement, TurnReplacement):
            raise ValidationError("replacement must be a TurnReplacement",
                                  {"turn_id": self.turn_id, "field": "replacement"})
        if self.action is Action.CLIP and len(replacement.excerpt) < 2:
            raise ValidationError("a CLIP's excerpt holds at least its head and tail ranges",
                                  {"turn_id": self.turn_id, "field": "replacement.excerpt"})
        if self.action is Action.DEDUPLICATE and replacement.excerpt:
            raise ValidationError("a DEDUPLICATE keeps no excerpt",
                                  {"turn_id": self.turn_id, "field": "replacement.excerpt"})
        if (self.action is Action.DEDUPLICATE) != (replacement.refers_to is not None):
            raise ValidationError("refers_to is set exactly when the action is DEDUPLICATE",
                                  {"turn_id": self.turn_id, "field": "replacement.refers_to"})

    @staticmethod
    def _trusted(turn_id: str, action: Action, summary_group: str | None = None,
                 replacement: TurnReplacement | None = None) -> TurnAction:
        """Built by a policy from values it already holds valid: skips the field checks (the
        plan's invariants still check the whole). A chain builds tens of thousands of these."""
        made = _new_object(TurnAction)
        _set_turn_id(made, turn_id)
        _set_action(made, action)
        _set_summary_group(made, summary_group)
        _set_replacement(made, replacement)
        return made

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "action": self.action.value,
            "summary_group": self.summary_group,
            "replacement": None if self.replacement is None else self.replacement.to_dict(),
        }


# The slots' own setters: writing through them skips the frozen class's __setattr__ lookups.
_new_object = object.__new__
_set_content = TurnReplacement.__dict__["content"].__set__
_set_token_estimate = TurnReplacement.__dict__["token_estimate"].__set__
_set_excerpt = TurnReplacement.__dict__["excerpt"].__set__
_set_refers_to = TurnReplacement.__dict__["refers_to"].__set__
_set_turn_id = TurnAction.__dict__["turn_id"].__set__
_set_action = TurnAction.__dict__["action"].__set__
_set_summary_group = TurnAction.__dict__["summary_group"].__set__
_set_replacement = TurnAction.__dict__["replacement"].__set__


def keep_actions(turns: Iterable[Any]) -> tuple[TurnAction, ...]:
    """A KEEP action for each of ``turns`` (anything with a valid ``turn_id``), made in one
    loop: a 10k-turn plan starts from 10k of these."""
    keep, new = Action.KEEP, _new_object
    made: list[TurnAction] = []
    append = made.append
    for turn in turns:
        action = new(TurnAction)
        _set_turn_id(action, turn.turn_id)
        _set_action(action, keep)
        _set_summary_group(action, None)
        _set_replacement(action, None)
        append(action)
    return tuple(made)


@dataclass(frozen=True, slots=True)
class SummarizationRequest:
    """A span of turns the caller must summarize (by a named prompt) before apply."""

    group_id: str
    turn_ids: tuple[str, ...]
    target_tokens: int
    prompt_id: str

    def __post_init__(self) -> None:
        require_text(self.group_id, "group_id")
        require_text(self.prompt_id, "prompt_id")
        if isinstance(self.turn_ids, str | bytes) or not isinstance(self.turn_ids, Iterable):
            raise ValidationError(
                f"turn_ids must be a sequence of ids, got {type(self.turn_ids).__name__}",
                {"group_id": self.group_id, "field": "turn_ids"})
        turn_ids = tuple(self.turn_ids)
        if not turn_ids:
            raise ValidationError("turn_ids must not be empty", {"group_id": self.group_id})
        for turn_id in turn_ids:
            require_text(turn_id, "turn_ids[]")
        if len(set(turn_ids)) != len(turn_ids):
            raise ValidationError("turn_ids must not repeat", {"group_id": self.group_id})
        object.__setattr__(self, "turn_ids", turn_ids)
        require_int(self.target_tokens, "target_tokens")

    @property
    def summary_turn_id(self) -> str:
        """The id of the turn that will hold this span's summary."""
        return SUMMARY_TURN_ID_PREFIX + self.group_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "turn_ids": list(self.turn_ids),
            "target_tokens": self.target_tokens,
            "prompt_id": self.prompt_id,
        }

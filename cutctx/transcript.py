"""The conversation the engine works on: turns, the transcript of them, and the budget."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Any

from ._checks import require_int, require_text
from .errors import ValidationError

__all__ = ["EMPTY_METADATA", "CompactionBudget", "Role", "Transcript", "TranscriptTurn"]

EMPTY_METADATA: Mapping[str, str] = MappingProxyType({})


class Role(str, Enum):
    """Who speaks a turn."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


def _require_utf8(text: str, field: str, turn_id: str) -> None:
    """Refuse text with lone surrogates up front: it could be neither hashed nor sent."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(f"{field} is not valid Unicode (lone surrogate)",
                                  {"turn_id": turn_id if field != "turn_id" else None,
                                   "field": field}) from None


def _empty_metadata() -> Mapping[str, str]:
    return EMPTY_METADATA


def _frozen_metadata(metadata: Any) -> Mapping[str, str]:
    if metadata is EMPTY_METADATA:
        return metadata
    if not isinstance(metadata, Mapping):
        raise ValidationError("metadata must be a str->str mapping", {"field": "metadata"})
    if not metadata:
        return EMPTY_METADATA
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValidationError("metadata must map str to str", {"field": "metadata"})
    return MappingProxyType(dict(metadata))


@dataclass(frozen=True, slots=True)
class TranscriptTurn:
    """One turn of a conversation, with the caller's token estimate."""

    turn_id: str
    role: Role
    content: str
    token_estimate: int
    tool_call_id: str | None = None
    pinned: bool = False
    metadata: Mapping[str, str] = field(default_factory=_empty_metadata)

    def __post_init__(self) -> None:
        if (type(self.turn_id) is str and self.turn_id and type(self.role) is Role
                and type(self.content) is str and type(self.token_estimate) is int
                and self.token_estimate >= 0 and self.turn_id.isascii() and self.content.isascii()
                and (self.tool_call_id is None or (type(self.tool_call_id) is str
                                                   and self.tool_call_id))
                and type(self.pinned) is bool):
            # The common case, checked in one pass (a 2,000-turn history builds 2,000 of these).
            if self.metadata is not EMPTY_METADATA:
                object.__setattr__(self, "metadata", _frozen_metadata(self.metadata))
            return
        require_text(self.turn_id, "turn_id")
        if not isinstance(self.role, Role):
            try:
                object.__setattr__(self, "role", Role(self.role))
            except ValueError:
                raise ValidationError("role must be a Role", {"turn_id": self.turn_id,
                                                              "field": "role"}) from None
        if not isinstance(self.content, str):
            raise ValidationError("content must be a str",
                                  {"turn_id": self.turn_id, "field": "content"})
        _require_utf8(self.turn_id, "turn_id", self.turn_id)
        _require_utf8(self.content, "content", self.turn_id)
        require_int(self.token_estimate, "token_estimate")
        if self.tool_call_id is not None:
            require_text(self.tool_call_id, "tool_call_id")
        if not isinstance(self.pinned, bool):
            raise ValidationError("pinned must be a bool",
                                  {"turn_id": self.turn_id, "field": "pinned"})
        object.__setattr__(self, "metadata", _frozen_metadata(self.metadata))

    @staticmethod
    def _trusted(turn_id: str, role: Role, content: str, token_estimate: int,
                 tool_call_id: str | None, pinned: bool,
                 metadata: Mapping[str, str]) -> TranscriptTurn:
        """A turn the engine made from a valid one (a replaced body, its metadata a fresh
        read-only str->str mapping): only a text that is not ASCII (it could hold a lone
        surrogate a caller's replacement brought) goes through the checks."""
        if not content.isascii():
            return TranscriptTurn(turn_id, role, content, token_estimate, tool_call_id, pinned,
                                  metadata)
        made = _new_object(TranscriptTurn)
        _set_turn_id(made, turn_id)
        _set_role(made, role)
        _set_content(made, content)
        _set_token_estimate(made, token_estimate)
        _set_tool_call_id(made, tool_call_id)
        _set_pinned(made, pinned)
        _set_metadata(made, metadata)
        return made

    def __hash__(self) -> int:
        return hash((self.turn_id, self.role, self.content, self.token_estimate,
                     self.tool_call_id, self.pinned, tuple(sorted(self.metadata.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only metadata mapping cannot be pickled itself; rebuild it from a dict.
        return (TranscriptTurn, (self.turn_id, self.role, self.content, self.token_estimate,
                                 self.tool_call_id, self.pinned, dict(self.metadata)))


# The slots' own setters: writing through them skips the frozen class's __setattr__ lookups.
_new_object = object.__new__
_set_turn_id = TranscriptTurn.__dict__["turn_id"].__set__
_set_role = TranscriptTurn.__dict__["role"].__set__
_set_content = TranscriptTurn.__dict__["content"].__set__
_set_token_estimate = TranscriptTurn.__dict__["token_estimate"].__set__
_set_tool_call_id = TranscriptTurn.__dict__["tool_call_id"].__set__
_set_pinned = TranscriptTurn.__dict__["pinned"].__set__
_set_metadata = TranscriptTurn.__dict__["metadata"].__set__


@dataclass(frozen=True, slots=True)
class Transcript:
    """Turns, oldest first, with unique ids."""

    turns: tuple[TranscriptTurn, ...] = ()
    _derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False,
                                     compare=False)
    """Facts derived from the (immutable) turns, computed once: see ``_structure``."""

    def __post_init__(self) -> None:
        if isinstance(self.turns, str | bytes) or not isinstance(self.turns, Iterable):
            raise ValidationError(
                f"turns must be a sequence of TranscriptTurn, got {type(self.turns).__name__}",
                {"field": "turns"})
        turns = tuple(self.turns)
        seen: set[str] = set()
        for index, turn in enumerate(turns):
            if not isinstance(turn, TranscriptTurn):
                raise ValidationError("turns must be TranscriptTurn values", {"index": index})
            if turn.turn_id in seen:
                raise ValidationError("duplicate turn id",
                                      {"turn_id": turn.turn_id, "index": index})
            seen.add(turn.turn_id)
        object.__setattr__(self, "turns", turns)

    @staticmethod
    def _trusted(turns: tuple[TranscriptTurn, ...]) -> Transcript:
        """A transcript of turns the engine knows are turns with distinct ids (an applied
        plan's view): made without checking them again."""
        made = _new_object(Transcript)
        _set_turns(made, turns)
        _set_derived(made, {})
        return made

    def extended(self, turns: Iterable[TranscriptTurn]) -> Transcript:
        """This transcript with ``turns`` appended; only the new turns are checked (the rest
        were when this one was made), so a growing history costs what it appends.

        >>> t = Transcript((TranscriptTurn("a", Role.USER, "hi", 1),))
        >>> t.extended([TranscriptTurn("b", Role.ASSISTANT, "hello", 2)]).turn_ids()
        ('a', 'b')
        """
        more = tuple(turns)
        seen: set[str] | None = self._derived.get("ids")
        if seen is None:
            seen = self._derived["ids"] = {turn.turn_id for turn in self.turns}
        fresh: set[str] = set()
        for offset, turn in enumerate(more):
            index = len(self.turns) + offset
            if not isinstance(turn, TranscriptTurn):
                raise ValidationError("turns must be TranscriptTurn values", {"index": index})
            if turn.turn_id in seen or turn.turn_id in fresh:
                raise ValidationError("duplicate turn id",
                                      {"turn_id": turn.turn_id, "index": index})
            fresh.add(turn.turn_id)
        out = object.__new__(Transcript)
        object.__setattr__(out, "turns", self.turns + more)
        object.__setattr__(out, "_derived", {"ids": seen | fresh})
        total = self._derived.get(("tokens", None))
        if total is not None:
            out._derived[("tokens", None)] = total + sum(turn.token_estimate for turn in more)
        return out

    def with_pinned(self, turn_ids: Collection[str]) -> Transcript:
        """These turns with those ``turn_ids`` names pinned (kept exactly as they are). The
        texts are these, so what was found in them (the total, the ids, the names and
        identifiers policies look for) is shared, not found again: planning one history under
        several pins (a session keeping its cached prefix) reads each text once.

        >>> t = Transcript((TranscriptTurn("a", Role.USER, "hi", 1),
        ...                 TranscriptTurn("b", Role.ASSISTANT, "hello", 2)))
        >>> [turn.pinned for turn in t.with_pinned({"a"}).turns]
        [True, False]
        """
        out = Transcript._trusted(tuple(
            replace(turn, pinned=True) if turn.turn_id in turn_ids and not turn.pinned
            else turn for turn in self.turns))
        for key in _TEXT_DERIVED:
            if key in self._derived:
                out._derived[key] = self._derived[key]
        out._derived[TEXT_FACTS] = self._derived.setdefault(TEXT_FACTS, [])  # found later too
        return out

    def token_estimate(self) -> int:
        """Sum of the turns' estimates (computed once: policies and checks ask repeatedly)."""
        total: int | None = self._derived.get(("tokens", None))
        if total is None:
            total = self._derived[("tokens", None)] = sum(
                turn.token_estimate for turn in self.turns)
        return total

    def turn_ids(self) -> tuple[str, ...]:
        """The turn ids, in order."""
        return tuple(turn.turn_id for turn in self.turns)

    def __len__(self) -> int:
        return len(self.turns)

    def __reduce__(self) -> tuple[Any, ...]:
        # Only the turns: derived facts are rebuilt on demand, never pickled or deep-copied.
        return (Transcript, (self.turns,))


TEXT_FACTS = ("text facts", None)
"""Where a transcript keeps the holder of what was found in its texts (``_digest.TextFacts``),
shared with its pinned copies whether found yet or not."""
_TEXT_DERIVED = ("ids", ("tokens", None))
"""Derived facts that depend on the turns' ids and estimates alone, not on their pins."""

_set_turns = Transcript.__dict__["turns"].__set__
_set_derived = Transcript.__dict__["_derived"].__set__


@dataclass(frozen=True, slots=True)
class CompactionBudget:
    """The token allowance, and how many of the newest turns no policy may touch."""

    max_tokens: int
    protected_recent_turns: int = 4

    def __post_init__(self) -> None:
        require_int(self.max_tokens, "max_tokens")
        require_int(self.protected_recent_turns, "protected_recent_turns")

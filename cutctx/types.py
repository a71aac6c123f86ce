"""The engine's values: turns, transcripts, budgets, actions, plans and reports.

All are frozen dataclasses over tuples. A ``CompactionPlan`` is validated against the transcript
and budget it was made for when it is constructed, so an unvalidated plan cannot exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass, field
from enum import Enum
from json.encoder import encode_basestring
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ._canonical import dumps_normalized, sha256_text
from ._checks import require_int, require_text
from .errors import ValidationError

__all__ = [
    "EMPTY_METADATA",
    "REPLACEMENT_KINDS",
    "REPLACING_ACTIONS",
    "SUMMARY_TURN_ID_PREFIX",
    "Action",
    "CompactedTranscript",
    "CompactionBudget",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionReport",
    "Role",
    "SummarizationRequest",
    "Transcript",
    "TranscriptTurn",
    "TurnAction",
    "TurnReplacement",
]

SUMMARY_TURN_ID_PREFIX = "summary:"
EMPTY_METADATA: Mapping[str, str] = MappingProxyType({})


class Role(str, Enum):
    """Who speaks a turn."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


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

    def __hash__(self) -> int:
        return hash((self.turn_id, self.role, self.content, self.token_estimate,
                     self.tool_call_id, self.pinned, tuple(sorted(self.metadata.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only metadata mapping cannot be pickled itself; rebuild it from a dict.
        return (TranscriptTurn, (self.turn_id, self.role, self.content, self.token_estimate,
                                 self.tool_call_id, self.pinned, dict(self.metadata)))


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


@dataclass(frozen=True, slots=True)
class CompactionBudget:
    """The token allowance, and how many of the newest turns no policy may touch."""

    max_tokens: int
    protected_recent_turns: int = 4

    def __post_init__(self) -> None:
        require_int(self.max_tokens, "max_tokens")
        require_int(self.protected_recent_turns, "protected_recent_turns")


REPLACEMENT_KINDS = ("masked", "clipped", "deduplicated")
"""What a replaced turn is, as its ``cutctx.kind`` metadata says: the kind of each replacing
action (MASK, CLIP, DEDUPLICATE), in that order."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """A validated decision for every turn: nothing is done until it is applied."""

    actions: tuple[TurnAction, ...]
    summarization_requests: tuple[SummarizationRequest, ...] = ()
    tokens_before: int
    tokens_after_estimate: int
    policy_name: str
    policy_version: str
    estimator_ratio: float | None = None
    budget_unmet: bool = False
    transcript: InitVar[Transcript]
    budget: InitVar[CompactionBudget]
    _canonical: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self, transcript: Transcript, budget: CompactionBudget) -> None:
        from ._invariants import validate_plan

        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "summarization_requests", tuple(self.summarization_requests))
        validate_plan(self, transcript, budget)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_name": self.policy_name,
            "policy_version": self.policy_version,
            "tokens_before": self.tokens_before,
            "tokens_after_estimate": self.tokens_after_estimate,
            "estimator_ratio": _plain_ratio(self.estimator_ratio),
            "budget_unmet": self.budget_unmet,
            "actions": [action.to_dict() for action in self.actions],
            "summarization_requests": [r.to_dict() for r in self.summarization_requests],
        }

    def canonical_json(self) -> str:
        """The plan's canonical JSON (computed once; the plan is immutable)."""
        if not self._canonical:
            self._canonical.append(_plan_json(self))
        return self._canonical[0]

    def plan_hash(self) -> str:
        """Hex sha256 of the canonical JSON: what audit logs record."""
        return sha256_text(self.canonical_json())

    def action_for(self, turn_id: str) -> TurnAction:
        """The action for one turn id."""
        for action in self.actions:
            if action.turn_id == turn_id:
                return action
        raise ValidationError("no action for turn id", {"turn_id": turn_id})


def _plan_json(plan: CompactionPlan) -> str:
    """``canonical_json(plan.to_dict())``, written out directly: the plan's shape is fixed, so
    keys are emitted in sorted order without building and sorting 10k small dicts.
    ``tests/test_engine_formats.py`` checks it against the generic form."""
    quote = encode_basestring
    actions = []
    for action in plan.actions:
        replacement = action.replacement
        if replacement is None:
            body = "null"
        elif not replacement.excerpt and replacement.refers_to is None:  # 0.1.0's form
            body = (f'{{"content":{quote(replacement.content)},'
                    f'"token_estimate":{int(replacement.token_estimate)}}}')
        else:
            body = dumps_normalized(replacement.to_dict())
        group = "null" if action.summary_group is None else quote(action.summary_group)
        actions.append(f'{{"action":"{action.action.value}","replacement":{body},'
                       f'"summary_group":{group},"turn_id":{quote(action.turn_id)}}}')
    requests = [
        f'{{"group_id":{quote(r.group_id)},"prompt_id":{quote(r.prompt_id)},'
        f'"target_tokens":{int(r.target_tokens)},'
        f'"turn_ids":[{",".join(quote(i) for i in r.turn_ids)}]}}'
        for r in plan.summarization_requests
    ]
    head = dumps_normalized({
        "budget_unmet": plan.budget_unmet,
        "estimator_ratio": _plain_ratio(plan.estimator_ratio),
        "policy_name": plan.policy_name,
        "policy_version": plan.policy_version,
    })
    return (f'{{"actions":[{",".join(actions)}],{head[1:-1]},'
            f'"summarization_requests":[{",".join(requests)}],'
            f'"tokens_after_estimate":{int(plan.tokens_after_estimate)},'
            f'"tokens_before":{int(plan.tokens_before)}}}')


def _plain_ratio(ratio: float | None) -> float | None:
    if ratio is None:
        return None
    return 0.0 if ratio == 0 else float(ratio)


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What a plan did, as ids and figures only; every figure is copied from the plan."""

    plan_hash: str
    policy_name: str
    policy_version: str
    tokens_before: int
    tokens_after_estimate: int
    estimator_ratio: float | None
    budget_unmet: bool
    turns_before: int
    turns_after: int
    kept_turn_ids: tuple[str, ...]
    masked_turn_ids: tuple[str, ...]
    summarized_turn_ids: tuple[str, ...]
    dropped_turn_ids: tuple[str, ...]
    summary_turn_ids: tuple[str, ...]
    clipped_turn_ids: tuple[str, ...] = ()
    deduplicated_turn_ids: tuple[str, ...] = ()
    """With kept, masked, summarized and dropped: every input turn in exactly one list."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan_hash": self.plan_hash,
            "policy_name": self.policy_name,
            "policy_version": self.policy_version,
            "tokens_before": self.tokens_before,
            "tokens_after_estimate": self.tokens_after_estimate,
            "estimator_ratio": self.estimator_ratio,
            "budget_unmet": self.budget_unmet,
            "turns_before": self.turns_before,
            "turns_after": self.turns_after,
            "kept_turn_ids": list(self.kept_turn_ids),
            "masked_turn_ids": list(self.masked_turn_ids),
            "summarized_turn_ids": list(self.summarized_turn_ids),
            "dropped_turn_ids": list(self.dropped_turn_ids),
            "summary_turn_ids": list(self.summary_turn_ids),
            "clipped_turn_ids": list(self.clipped_turn_ids),
            "deduplicated_turn_ids": list(self.deduplicated_turn_ids),
        }


@dataclass(frozen=True, slots=True)
class CompactedTranscript:
    """The applied view and its report."""

    transcript: Transcript
    report: CompactionReport


@runtime_checkable
class CompactionPolicy(Protocol):
    """Decides a plan for a transcript under a budget."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan: ...


"""Run policies in turn over the view the decisions so far would produce."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .._digest import share_text_facts
from .._replaced import KIND_KEY, REFERS_TO_KEY, source_ranges
from .._structure import Structure
from ..actions import (
    REPLACEMENT_KIND,
    REPLACING_ACTIONS,
    Action,
    SummarizationRequest,
    TurnAction,
    TurnReplacement,
)
from ..errors import BudgetUnsatisfiable, ValidationError
from ..executor import replaced_turn
from ..plan import CompactionPlan, CompactionPolicy, build_plan, keep_all
from ..transcript import CompactionBudget, Role, Transcript, TranscriptTurn
from .drop_oldest import DropOldestPolicy
from .masking import ObservationMaskingPolicy
from .summarizing import SummarizingPolicy
from .tool_masking import ToolResultMaskingPolicy

__all__ = ["PolicyChain", "default_chain"]

_REMOVED = (Action.DROP, Action.SUMMARIZE)
CLIPPED = REPLACEMENT_KIND[Action.CLIP]
_PLAIN_MASK = ToolResultMaskingPolicy(0)
"""Writes the stub a deduplicated turn falls back to (no digest: its own text is a pointer)."""


@dataclass(slots=True)
class _Decisions:
    """The chain's running state: one action per real turn plus the live summary requests."""

    transcript: Transcript
    actions: list[TurnAction] | None = None
    """None while no member has decided anything: the view is the transcript itself."""
    requests: dict[str, tuple[int, str]] = field(default_factory=dict)
    direct: CompactionPlan | None = None
    """The plan whose actions these still are, as it decided them over the transcript itself
    (the first member's): valid as it stands, so its exchanges are whole and its figures hold.
    None once a member decides over a projection."""

    def projection(self) -> tuple[Transcript, list[list[int]] | None]:
        """The view so far, and for each of its turns the real positions it stands for (None
        while the view is the transcript itself, so the first member shares the facts already
        derived from it instead of rebuilding them over an equal copy)."""
        if self.actions is None:
            return self.transcript, None
        turns: list[TranscriptTurn] = []
        sources: list[list[int]] = []
        stand_in_index: dict[str, int] = {}
        keep, summarize = Action.KEEP, Action.SUMMARIZE
        for position, (turn, action) in enumerate(
            zip(self.transcript.turns, self.actions, strict=True)
        ):
            kind = action.action
            if kind is keep:
                turns.append(turn)
                sources.append([position])
            elif kind in REPLACING_ACTIONS:
                turns.append(replaced_turn(turn, action))
                sources.append([position])
            elif kind is summarize:
                group = action.summary_group
                assert group is not None
                if group in stand_in_index:
                    sources[stand_in_index[group]].append(position)
                else:
                    stand_in_index[group] = len(turns)
                    target = self.requests[group][0]
                    turns.append(TranscriptTurn("summary:" + group, Role.ASSISTANT, "", target))
                    sources.append([position])
        return share_text_facts(self.transcript, Transcript(tuple(turns))), sources

    def absorb(self, plan: CompactionPlan, sources: list[list[int]] | None) -> None:
        """Carry a member's decisions over the projection back to the real turns."""
        for request in plan.summarization_requests:
            self.requests[request.group_id] = (request.target_tokens, request.prompt_id)
        if sources is None:  # decided over the transcript itself: its actions are ours
            self.actions = list(plan.actions)
            self.direct = plan
            return
        self.direct = None
        actions = self.decided()
        keep = Action.KEEP
        for action, positions in zip(plan.actions, sources, strict=True):
            if action.action is keep:
                continue
            if action.action in REPLACING_ACTIONS:
                if len(positions) == 1:
                    self._replace(positions[0], action)
                continue
            for position in positions:
                turn_id = self.transcript.turns[position].turn_id
                if action.turn_id == turn_id:  # a real turn in the view: the action is ours
                    actions[position] = action
                    continue
                actions[position] = TurnAction._trusted(turn_id, action.action,
                                                        summary_group=action.summary_group)

    def decided(self) -> list[TurnAction]:
        """The actions so far (all KEEP before any member decided)."""
        if self.actions is None:
            self.actions = keep_all(self.transcript)
        return self.actions

    def _replace(self, position: int, action: TurnAction) -> None:
        """A member's new body for a turn of the view. Over a turn already replaced (a clip
        now masked), the ranges it keeps are taken back to the original's text."""
        actions = self.decided()
        current = actions[position]
        if current.action is Action.SUMMARIZE:
            return
        replacement = action.replacement
        if current.replacement is not None and replacement is not None and replacement.excerpt:
            turn = self.transcript.turns[position]
            excerpt = source_ranges(current.action, turn.content, current.replacement,
                                    replacement.excerpt)
            action = TurnAction._trusted(action.turn_id, action.action, replacement=(
                TurnReplacement._checked(replacement.content, replacement.token_estimate,
                                         excerpt, replacement.refers_to)))
        actions[position] = action

    def repoint(self, structure: Structure) -> None:
        """A deduplicated stub whose later copy the plan takes away (masks, summarizes, drops)
        points at nothing: it becomes a mask stub, as its result would have been, so no stub
        claims a copy the request does not hold. A copy clipped to its share is still there,
        its marker naming the same original: the stub keeps pointing at it. A stub no policy
        may touch (pinned, system, recent) stays as it is: a plan never changes those."""
        actions = self.decided()
        turns = self.transcript.turns
        deduplicate, keep, clip = Action.DEDUPLICATE, Action.KEEP, Action.CLIP
        pointers = [p for p, action in enumerate(actions)
                    if action.action is deduplicate] + _pointer_positions(self.transcript)
        if not pointers:
            return
        kept = {action.turn_id for action, turn in zip(actions, turns, strict=True)
                if action.action is clip or (
                    action.action is keep and turn.metadata.get(KIND_KEY) in (None, CLIPPED))}
        for position in sorted(set(pointers)):
            action, turn = actions[position], turns[position]
            if structure.untouchable[position] and action.action is keep:
                continue
            if action.action is Action.DEDUPLICATE and action.replacement is not None:
                target, estimate = action.replacement.refers_to, action.replacement.token_estimate
            elif action.action is Action.KEEP and REFERS_TO_KEY in turn.metadata:
                target, estimate = turn.metadata[REFERS_TO_KEY], turn.token_estimate
            else:
                continue
            if target in kept:
                continue
            stub = _PLAIN_MASK.stub_for(turn)
            # A mask stub is shorter than the pointer it replaces: its estimate bounds it.
            actions[position] = TurnAction._trusted(
                turn.turn_id, Action.MASK, replacement=TurnReplacement._checked(stub, estimate))
            self.direct = None

    def escalate(self, structure: Structure) -> None:
        """Remove whole any exchange left half-removed: DROP wins, else the earliest group."""
        if self.direct is not None:  # a valid plan's actions: every exchange is whole
            return
        actions = self.decided()
        for members in structure.shared_exchanges:
            kinds = [actions[p] for p in members]
            removed = [a for a in kinds if a.action in _REMOVED]
            if not removed:
                continue
            first = removed[0]
            if all(a.action is first.action and a.summary_group == first.summary_group
                   for a in kinds):
                continue
            if any(a.action is Action.DROP for a in removed):
                winner = TurnAction("-", Action.DROP)
            else:
                winner = first
            for position in members:
                turn_id = self.transcript.turns[position].turn_id
                actions[position] = TurnAction._trusted(turn_id, winner.action,
                                                        summary_group=winner.summary_group)

    def final_requests(self) -> list[SummarizationRequest]:
        """Requests for the groups still named by actions, ordered by earliest turn."""
        if not self.requests:
            return []
        members: dict[str, list[str]] = {}
        for action in self.decided():
            if action.summary_group is not None:
                members.setdefault(action.summary_group, []).append(action.turn_id)
        return [
            SummarizationRequest(group, tuple(ids), *self.requests[group])
            for group, ids in members.items()
        ]


def _pointer_positions(transcript: Transcript) -> list[int]:
    """Positions of the turns that are already deduplicated stubs (once per transcript)."""
    found: list[int] | None = transcript._derived.get(("pointers", None))
    if found is None:
        found = transcript._derived[("pointers", None)] = [
            p for p, turn in enumerate(transcript.turns)
            if turn.metadata and REFERS_TO_KEY in turn.metadata]
    return found


class PolicyChain:
    """Runs member policies in order while the projected view is over budget."""

    version = "1.0.0"

    def __init__(self, policies: Iterable[CompactionPolicy]) -> None:
        if isinstance(policies, str | bytes) or not isinstance(policies, Iterable):
            raise ValidationError(
                f"policies must be an iterable of policies, got {type(policies).__name__}",
                {"field": "policies"})
        members = tuple(policies)
        if not members:
            raise ValidationError("a PolicyChain needs at least one policy",
                                  {"field": "policies"})
        for index, policy in enumerate(members):
            if not callable(getattr(policy, "decide", None)) or not all(
                hasattr(policy, attribute) for attribute in ("name", "version")
            ):
                raise ValidationError("chain members must be policies with name, version and "
                                      "decide()", {"index": index})
        self.policies: tuple[CompactionPolicy, ...] = members
        self.name = "chain(" + "+".join(f"{p.name}@{p.version}" for p in members) + ")"

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        # A member that cannot plan while the untouchable turns exceed the budget (every
        # built-in one checks before it does any work) waits for the next member that can: one
        # that clips recent turns may make the budget satisfiable, and then it runs. If none
        # can, the plan's own validation refuses the budget, as 0.1.0's chain did up front.
        structure = Structure.of(transcript, budget)
        state = _Decisions(transcript)
        projected_total = transcript.token_estimate()
        ratio: float | None = None
        queue = list(self.policies)
        waiting: list[CompactionPolicy] = []
        while queue and projected_total > budget.max_tokens:
            policy = queue.pop(0)
            projection, sources = state.projection()
            try:
                plan = policy.decide(projection, budget)
            except BudgetUnsatisfiable:
                waiting.append(policy)
                continue
            if ratio is None:
                ratio = plan.estimator_ratio
            state.absorb(plan, sources)
            projected_total = plan.tokens_after_estimate
            queue[:0], waiting = waiting, []
        state.escalate(structure)
        state.repoint(structure)
        direct = state.direct
        if direct is not None:  # one member's plan as it stands: its actions and figures
            return build_plan(transcript, budget, direct.actions, direct.summarization_requests,
                              policy_name=self.name, policy_version=self.version,
                              estimator_ratio=ratio, tokens_after=direct.tokens_after_estimate)
        return build_plan(transcript, budget, state.decided(), state.final_requests(),
                          policy_name=self.name, policy_version=self.version,
                          estimator_ratio=ratio)

    def __repr__(self) -> str:
        return f"PolicyChain({list(self.policies)!r})"


def default_chain(
    *,
    prompt_id: str,
    keep_recent_results: int = 2,
    target_ratio: float = 0.2,
    min_span_turns: int = 4,
) -> PolicyChain:
    """Masking, then summarizing, then drop-oldest."""
    return PolicyChain([
        ObservationMaskingPolicy(keep_recent_results),
        SummarizingPolicy(prompt_id, target_ratio, min_span_turns),
        DropOldestPolicy(),
    ])



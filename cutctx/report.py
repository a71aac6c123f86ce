"""What applying a plan did: the report of ids and figures, and the view it made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .transcript import Transcript

__all__ = ["CompactedTranscript", "CompactionReport"]


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

"""The engine's values under their 0.1.0 import path: turns, transcripts, budgets, actions,
plans and reports (each defined in its own module: ``transcript``, ``actions``, ``plan``,
``report``)."""

from .actions import (
    REPLACEMENT_KIND,
    REPLACEMENT_KINDS,
    REPLACING_ACTIONS,
    SUMMARY_TURN_ID_PREFIX,
    Action,
    SummarizationRequest,
    TurnAction,
    TurnReplacement,
)
from .actions import (
    Excerpt as Excerpt,
)
from .plan import CompactionPlan, CompactionPolicy
from .report import CompactedTranscript, CompactionReport
from .transcript import EMPTY_METADATA, CompactionBudget, Role, Transcript, TranscriptTurn

__all__ = [
    "EMPTY_METADATA",
    "REPLACEMENT_KIND",
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

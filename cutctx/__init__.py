"""cutctx: deterministic, invariant-checked compaction of conversation transcripts.

A policy ``decide``s a ``CompactionPlan``; the caller fulfils its summarization requests; the
``CompactionExecutor`` applies it. Standard library only: no I/O, clock, randomness or logging.
"""

from .errors import (
    BudgetUnsatisfiable,
    CompactionError,
    PlanTranscriptMismatch,
    SummaryMissing,
    ValidationError,
)
from .estimator import CharRatioEstimator, TokenEstimator
from .executor import CompactionExecutor
from .policies import (
    DEFAULT_PLACEHOLDER,
    GROUP_ID_PREFIX,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    SummarizingPolicy,
    default_chain,
)
from .types import (
    EMPTY_METADATA,
    SUMMARY_TURN_ID_PREFIX,
    Action,
    CompactedTranscript,
    CompactionBudget,
    CompactionPlan,
    CompactionPolicy,
    CompactionReport,
    Role,
    SummarizationRequest,
    Transcript,
    TranscriptTurn,
    TurnAction,
    TurnReplacement,
)

__version__ = "0.2.0"

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "EMPTY_METADATA",
    "GROUP_ID_PREFIX",
    "SUMMARY_TURN_ID_PREFIX",
    "Action",
    "BudgetUnsatisfiable",
    "CharRatioEstimator",
    "CompactedTranscript",
    "CompactionBudget",
    "CompactionError",
    "CompactionExecutor",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionReport",
    "DropOldestPolicy",
    "ObservationMaskingPolicy",
    "PlanTranscriptMismatch",
    "PolicyChain",
    "Role",
    "SummarizationRequest",
    "SummarizingPolicy",
    "SummaryMissing",
    "TokenEstimator",
    "Transcript",
    "TranscriptTurn",
    "TurnAction",
    "TurnReplacement",
    "ValidationError",
    "__version__",
    "default_chain",
]

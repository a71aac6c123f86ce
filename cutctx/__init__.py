"""cutctx: deterministic, invariant-checked compaction of conversation transcripts.

A policy ``decide``s a ``CompactionPlan``; the caller fulfils its summarization requests; the
``CompactionExecutor`` applies it. Standard library only: no I/O, clock, randomness or logging.
"""

from ._clipping import clip_text
from ._replaced import (
    CONTENT_KEY,
    KIND_KEY,
    ORIGINAL_SHA256_KEY,
    ORIGINAL_TOKENS_KEY,
    is_final,
    original_figures,
    replaced_metadata,
)
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
    DeduplicateResultsPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    SpanSummarizingPolicy,
    SummarizingPolicy,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    UserLastDropPolicy,
    default_chain,
)
from .types import (
    EMPTY_METADATA,
    REPLACEMENT_KINDS,
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
    "CONTENT_KEY",
    "DEFAULT_PLACEHOLDER",
    "EMPTY_METADATA",
    "GROUP_ID_PREFIX",
    "KIND_KEY",
    "ORIGINAL_SHA256_KEY",
    "ORIGINAL_TOKENS_KEY",
    "REPLACEMENT_KINDS",
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
    "DeduplicateResultsPolicy",
    "DropOldestPolicy",
    "ObservationMaskingPolicy",
    "PlanTranscriptMismatch",
    "PolicyChain",
    "Role",
    "SpanSummarizingPolicy",
    "SummarizationRequest",
    "SummarizingPolicy",
    "SummaryMissing",
    "TokenEstimator",
    "ToolResultClipPolicy",
    "ToolResultMaskingPolicy",
    "Transcript",
    "TranscriptTurn",
    "TurnAction",
    "TurnReplacement",
    "UserLastDropPolicy",
    "ValidationError",
    "__version__",
    "clip_text",
    "default_chain",
    "is_final",
    "original_figures",
    "replaced_metadata",
]

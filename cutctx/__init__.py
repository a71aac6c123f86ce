"""cutctx: deterministic, invariant-checked compaction of conversation transcripts.

A policy ``decide``s a ``CompactionPlan``; the caller fulfils its summarization requests; the
``CompactionExecutor`` applies it. Standard library only: no I/O, clock, randomness or logging.
"""

from ._clipping import Atom, Clip, atoms_of, clip_text, plan_clip
from ._digest import DIGEST_STYLES
from ._references import GIVE_WAY_ORDERS
from ._replaced import (
    ATOMS_KEY,
    CONTENT_KEY,
    EXCERPT_KEY,
    KIND_KEY,
    MARKER_KEY,
    OBSERVATION_KEY,
    ORIGINAL_SHA256_KEY,
    ORIGINAL_TOKENS_KEY,
    REF_LABEL_KEY,
    REFERS_TO_KEY,
    excerpt_of,
    is_final,
    is_person,
    is_result,
    original_figures,
    replaced_metadata,
    replaced_text,
    text_sha256,
)
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
from .errors import (
    BudgetUnsatisfiable,
    CompactionError,
    PlanTranscriptMismatch,
    SummaryMissing,
    ValidationError,
)
from .estimator import CharRatioEstimator, TokenEstimator
from .executor import CompactionExecutor, replaced_turn
from .plan import CompactionPlan, CompactionPolicy
from .policies import (
    DEFAULT_PLACEHOLDER,
    GROUP_ID_PREFIX,
    DeduplicateResultsPolicy,
    DropOldestPolicy,
    FillingPolicy,
    ObservationMaskingPolicy,
    PolicyChain,
    SpanSummarizingPolicy,
    SummarizingPolicy,
    ToolResultClipPolicy,
    ToolResultMaskingPolicy,
    UserLastDropPolicy,
    default_chain,
)
from .report import CompactedTranscript, CompactionReport
from .transcript import EMPTY_METADATA, CompactionBudget, Role, Transcript, TranscriptTurn

__version__ = "0.2.0"

__all__ = [
    "ATOMS_KEY",
    "CONTENT_KEY",
    "DEFAULT_PLACEHOLDER",
    "DIGEST_STYLES",
    "EMPTY_METADATA",
    "EXCERPT_KEY",
    "GIVE_WAY_ORDERS",
    "GROUP_ID_PREFIX",
    "KIND_KEY",
    "MARKER_KEY",
    "OBSERVATION_KEY",
    "ORIGINAL_SHA256_KEY",
    "ORIGINAL_TOKENS_KEY",
    "REFERS_TO_KEY",
    "REF_LABEL_KEY",
    "REPLACEMENT_KIND",
    "REPLACEMENT_KINDS",
    "REPLACING_ACTIONS",
    "SUMMARY_TURN_ID_PREFIX",
    "Action",
    "Atom",
    "BudgetUnsatisfiable",
    "CharRatioEstimator",
    "Clip",
    "CompactedTranscript",
    "CompactionBudget",
    "CompactionError",
    "CompactionExecutor",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionReport",
    "DeduplicateResultsPolicy",
    "DropOldestPolicy",
    "FillingPolicy",
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
    "atoms_of",
    "clip_text",
    "default_chain",
    "excerpt_of",
    "is_final",
    "is_person",
    "is_result",
    "original_figures",
    "plan_clip",
    "replaced_metadata",
    "replaced_text",
    "replaced_turn",
    "text_sha256",
]

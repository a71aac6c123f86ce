"""cutctx: deterministic, invariant-checked compaction of conversation transcripts.

A policy ``decide``s a ``CompactionPlan``; the caller fulfils its summarization requests; the
``CompactionExecutor`` applies it. Standard library only: no I/O, clock, randomness or logging.
"""

from . import _replaced, types
from ._clipping import Atom, Clip, atoms_of, clip_text, plan_clip
from ._digest import DIGEST_STYLES
from ._references import GIVE_WAY_ORDERS
from ._replaced import *  # noqa: F403  (what replaced turns carry: _replaced.__all__)
from .errors import (
    BudgetUnsatisfiable,
    CompactionError,
    PlanTranscriptMismatch,
    SummaryMissing,
    ValidationError,
)
from .estimator import CharRatioEstimator, TokenEstimator
from .executor import CompactionExecutor, replaced_turn
from .policies import (
    DEFAULT_PLACEHOLDER,
    GROUP_ID_PREFIX,
    REQUIREMENTS_PLACEHOLDER,
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
    UserMessageClipPolicy,
    default_chain,
)
from .types import *  # noqa: F403  (the 0.1.0 values: types.__all__)

__version__ = "0.2.0"

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "DIGEST_STYLES",
    "GIVE_WAY_ORDERS",
    "GROUP_ID_PREFIX",
    "REQUIREMENTS_PLACEHOLDER",
    "Atom",
    "BudgetUnsatisfiable",
    "CharRatioEstimator",
    "Clip",
    "CompactionError",
    "CompactionExecutor",
    "DeduplicateResultsPolicy",
    "DropOldestPolicy",
    "FillingPolicy",
    "ObservationMaskingPolicy",
    "PlanTranscriptMismatch",
    "PolicyChain",
    "SpanSummarizingPolicy",
    "SummarizingPolicy",
    "SummaryMissing",
    "TokenEstimator",
    "ToolResultClipPolicy",
    "ToolResultMaskingPolicy",
    "UserLastDropPolicy",
    "UserMessageClipPolicy",
    "ValidationError",
    "__version__",
    "atoms_of",
    "clip_text",
    "default_chain",
    "plan_clip",
    "replaced_turn",
]
__all__ += types.__all__
__all__ += _replaced.__all__

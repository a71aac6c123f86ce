"""The built-in compaction policies."""

from .chain import PolicyChain, default_chain
from .clipping import ToolResultClipPolicy, UserMessageClipPolicy
from .dedupe import DeduplicateResultsPolicy
from .drop_oldest import DropOldestPolicy
from .filling import FillingPolicy
from .masking import DEFAULT_PLACEHOLDER, ObservationMaskingPolicy
from .span_summarizing import SpanSummarizingPolicy
from .summarizing import GROUP_ID_PREFIX, SummarizingPolicy
from .tool_masking import ToolResultMaskingPolicy
from .user_last import REQUIREMENTS_PLACEHOLDER, UserLastDropPolicy

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "GROUP_ID_PREFIX",
    "REQUIREMENTS_PLACEHOLDER",
    "DeduplicateResultsPolicy",
    "DropOldestPolicy",
    "FillingPolicy",
    "ObservationMaskingPolicy",
    "PolicyChain",
    "SpanSummarizingPolicy",
    "SummarizingPolicy",
    "ToolResultClipPolicy",
    "ToolResultMaskingPolicy",
    "UserLastDropPolicy",
    "UserMessageClipPolicy",
    "default_chain",
]

"""The built-in compaction policies."""

from .chain import PolicyChain, default_chain
from .drop_oldest import DropOldestPolicy
from .masking import DEFAULT_PLACEHOLDER, ObservationMaskingPolicy
from .summarizing import GROUP_ID_PREFIX, SummarizingPolicy

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "GROUP_ID_PREFIX",
    "DropOldestPolicy",
    "ObservationMaskingPolicy",
    "PolicyChain",
    "SummarizingPolicy",
    "default_chain",
]

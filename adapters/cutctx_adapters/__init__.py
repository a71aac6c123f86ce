"""cutctx adapters: the OpenAI and Anthropic SDKs, tiktoken, fulfilment, prompts and the CLI.

Provider subpackages import their SDK lazily: ``cutctx_adapters.openai`` needs
``cutctx[openai]``, ``cutctx_adapters.anthropic`` needs ``cutctx[anthropic]``.
"""

from ._pipeline import CompactionResult
from .errors import SummarizationFailed, TokenizerUnavailable
from .fulfil import AnySummarizer, AsyncSummarizer, Summarizer, afulfil, fulfil
from .prompts import DEFAULT_PROMPT_ID, PromptRegistry, SummaryPrompt

__all__ = [
    "DEFAULT_PROMPT_ID",
    "AnySummarizer",
    "AsyncSummarizer",
    "CompactionResult",
    "PromptRegistry",
    "SummarizationFailed",
    "Summarizer",
    "SummaryPrompt",
    "TokenizerUnavailable",
    "afulfil",
    "fulfil",
]

"""cutctx adapters: the OpenAI and Anthropic SDKs, tiktoken, fulfilment, prompts and the CLI.

``CompactionSession(chat.FORMAT, ...)`` is sticky compaction without a wrapped client: give it
each request's full history, send what ``prepare`` returns.

Provider subpackages import their SDK lazily: ``cutctx_adapters.openai`` needs
``cutctx[openai]``, ``cutctx_adapters.anthropic`` needs ``cutctx[anthropic]``.
"""

from ._pipeline import CompactionResult
from ._session import CallReport, CompactionSession, HistoryFormat, Prepared
from .errors import SummarizationFailed, TokenizerUnavailable
from .fulfil import AnySummarizer, AsyncSummarizer, Summarizer, afulfil, fulfil
from .prompts import DEFAULT_PROMPT_ID, PromptRegistry, SummaryPrompt

__all__ = [
    "DEFAULT_PROMPT_ID",
    "AnySummarizer",
    "AsyncSummarizer",
    "CallReport",
    "CompactionResult",
    "CompactionSession",
    "HistoryFormat",
    "Prepared",
    "PromptRegistry",
    "SummarizationFailed",
    "Summarizer",
    "SummaryPrompt",
    "TokenizerUnavailable",
    "afulfil",
    "fulfil",
]

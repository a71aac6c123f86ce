"""cutctx adapters: the OpenAI and Anthropic SDKs, tiktoken, fulfilment, prompts and the CLI.

``CompactionSession(chat.FORMAT, ...)`` is sticky compaction without a wrapped client: give it
each request's full history, send what ``prepare`` returns. ``CompactionSettings`` is the one
settings value sessions, wrapped clients and ``compact`` take.

Provider subpackages import their SDK lazily: ``cutctx_adapters.openai`` needs
``cutctx[openai]``, ``cutctx_adapters.anthropic`` needs ``cutctx[anthropic]``. Stores that
sessions share across threads, processes and machines are in ``cutctx_adapters.stores``.
"""

from .errors import (
    StoreTimeout,
    StoreUnavailable,
    SummarizationFailed,
    SummaryRejected,
    TokenizerUnavailable,
)
from .fulfil import AnySummarizer, AsyncSummarizer, Summarizer, afulfil, fulfil
from .planning import CompactionResult, HistoryFormat
from .prompts import DEFAULT_PROMPT_ID, PromptRegistry, SummaryPrompt
from .session import CallReport, CompactionSession, Prepared
from .settings import CompactionSettings

__all__ = [
    "DEFAULT_PROMPT_ID",
    "AnySummarizer",
    "AsyncSummarizer",
    "CallReport",
    "CompactionResult",
    "CompactionSession",
    "CompactionSettings",
    "HistoryFormat",
    "Prepared",
    "PromptRegistry",
    "StoreTimeout",
    "StoreUnavailable",
    "SummarizationFailed",
    "Summarizer",
    "SummaryPrompt",
    "SummaryRejected",
    "TokenizerUnavailable",
    "afulfil",
    "fulfil",
]

"""Anthropic: Messages histories (``system`` + ``messages``), a summarizer and a compacting client.

Needs ``pip install 'cutctx[anthropic]'``.
"""

from .._requires import require

require("anthropic", "anthropic")
require("tiktoken", "anthropic")

from . import messages  # noqa: E402
from .client import CompactingAnthropic  # noqa: E402
from .summarizer import AnthropicSummarizer  # noqa: E402

__all__ = ["AnthropicSummarizer", "CompactingAnthropic", "messages"]

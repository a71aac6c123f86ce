"""OpenAI: Chat Completions and Responses histories, a summarizer and a compacting client.

Needs ``pip install 'cutctx[openai]'``.
"""

from .._requires import require

require("openai", "openai")
require("tiktoken", "openai")

from . import chat, responses  # noqa: E402
from .client import CompactingOpenAI  # noqa: E402
from .summarizer import OpenAISummarizer  # noqa: E402

__all__ = ["CompactingOpenAI", "OpenAISummarizer", "chat", "responses"]

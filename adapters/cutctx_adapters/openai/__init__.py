"""OpenAI: Chat Completions and Responses histories, a summarizer and a compacting client.

Needs ``pip install 'cutctx[openai]'``.
"""

from .._requires import require

require("openai", "openai")
require("tiktoken", "openai")

from . import chat  # noqa: E402

__all__ = ["chat"]

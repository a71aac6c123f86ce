"""OpenAI: Chat Completions and Responses histories, a summarizer and a compacting client.

``chat`` converts, counts and compacts plain dicts without the ``openai`` SDK (counting needs
``cutctx[tiktoken]`` or your own estimator); SDK objects, ``CompactingOpenAI`` and
``OpenAISummarizer`` need ``pip install 'cutctx[openai]'``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .._requires import imported_when_used, require
from . import chat

if TYPE_CHECKING:
    from . import responses
    from .client import CompactingOpenAI
    from .summarizer import OpenAISummarizer

__all__ = ["CompactingOpenAI", "OpenAISummarizer", "chat", "responses"]

_NEEDS_SDK = {"CompactingOpenAI": "client", "OpenAISummarizer": "summarizer"}


_sdk_names = imported_when_used(__name__, _NEEDS_SDK, ("openai", "tiktoken"), "openai")


def __getattr__(name: str) -> Any:
    """The SDK's wrapper and summarizer, and ``responses``, imported when first used."""
    if name == "responses":
        require("tiktoken", "openai")
        return import_module(f"{__name__}.responses")
    return _sdk_names(name)

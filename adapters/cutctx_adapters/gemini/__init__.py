"""Gemini: ``generate_content`` histories (``contents``), a summarizer and a compacting client.

``contents`` converts, counts and compacts plain dicts without the ``google-genai`` SDK
(counting needs ``cutctx[tiktoken]`` or your own estimator); ``CompactingGenAI`` and
``GeminiSummarizer`` need ``pip install 'cutctx[gemini]'``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .._requires import require
from . import contents

if TYPE_CHECKING:
    from .client import CompactingGenAI
    from .summarizer import GeminiSummarizer

__all__ = ["CompactingGenAI", "GeminiSummarizer", "contents"]

_NEEDS_SDK = {"CompactingGenAI": "client", "GeminiSummarizer": "summarizer"}


def __getattr__(name: str) -> Any:
    """The SDK's wrapper and summarizer, imported when first used."""
    if name in _NEEDS_SDK:
        require("google.genai", "gemini")
        require("tiktoken", "gemini")
        return getattr(import_module(f"{__name__}.{_NEEDS_SDK[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

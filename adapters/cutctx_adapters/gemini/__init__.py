"""Gemini: ``generate_content`` histories (``contents``), a summarizer and a compacting client.

``contents`` converts, counts and compacts plain dicts without the ``google-genai`` SDK
(counting needs ``cutctx[tiktoken]`` or your own estimator); ``CompactingGenAI`` and
``GeminiSummarizer`` need ``pip install 'cutctx[gemini]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._requires import imported_when_used
from . import contents

if TYPE_CHECKING:
    from .client import CompactingGenAI
    from .summarizer import GeminiSummarizer

__all__ = ["CompactingGenAI", "GeminiSummarizer", "contents"]

_NEEDS_SDK = {"CompactingGenAI": "client", "GeminiSummarizer": "summarizer"}


__getattr__ = imported_when_used(__name__, _NEEDS_SDK, ("google.genai", "tiktoken"), "gemini")

"""Anthropic: Messages histories (``system`` + ``messages``), a summarizer and a compacting client.

``messages`` converts, counts and compacts plain dicts without the ``anthropic`` SDK (counting
needs ``cutctx[tiktoken]`` or your own estimator); ``CompactingAnthropic`` and
``AnthropicSummarizer`` need ``pip install 'cutctx[anthropic]'``. The ``server_result_*`` names
read and stub server-tool result blocks as ``messages`` does (for the framework hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._requires import imported_when_used
from . import messages
from ._server_tools import maskable as server_result_maskable
from ._server_tools import result_text as server_result_text
from ._server_tools import stub_blocks as server_result_stub

if TYPE_CHECKING:
    from .client import CompactingAnthropic
    from .summarizer import AnthropicSummarizer

__all__ = ["AnthropicSummarizer", "CompactingAnthropic", "messages", "server_result_maskable",
           "server_result_stub", "server_result_text"]

_NEEDS_SDK = {"CompactingAnthropic": "client", "AnthropicSummarizer": "summarizer"}


__getattr__ = imported_when_used(__name__, _NEEDS_SDK, ("anthropic", "tiktoken"), "anthropic")

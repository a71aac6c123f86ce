"""Errors raised by the adapter layer, on the engine's ``CompactionError`` base.

Like the engine's, each has a stable ``code`` and id-only ``details``; messages never carry
message content.
"""

from __future__ import annotations

from typing import ClassVar

from cutctx import CompactionError

__all__ = ["SummarizationFailed", "TokenizerUnavailable"]


class TokenizerUnavailable(CompactionError):
    """tiktoken could not load an encoding's BPE file (no network and no cached copy).

    ``details`` = ``{"encoding": <encoding name>}``; the message says how to supply the file.
    """

    code: ClassVar[str] = "TOKENIZER_UNAVAILABLE"


class SummarizationFailed(CompactionError):
    """A summarizer raised, timed out or returned no text for a group.

    ``details`` = ``{"group_id", "turn_count", "prompt_id", "cause"}`` where ``cause`` is the
    underlying exception's class name; history is never lost and no error text is inserted.
    """

    code: ClassVar[str] = "SUMMARIZATION_FAILED"

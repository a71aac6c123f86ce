"""Errors raised by the adapter layer, on the engine's ``CompactionError`` base.

Like the engine's, each has a stable ``code`` and id-only ``details``; messages never carry
message content.
"""

from __future__ import annotations

from typing import ClassVar

from cutctx import CompactionError

__all__ = ["StoreTimeout", "StoreUnavailable", "SummarizationFailed", "SummaryRejected",
           "TokenizerUnavailable"]


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


class SummaryRejected(Exception):
    """Raised by a summarizer whose reply must not be used: cut short, filtered, refused, empty.

    ``reason`` names why (``finish_reason:length``, ``stop_reason:refusal``, ``EmptySummary``,
    ...), never what the reply said; ``fulfil`` turns it into ``SummarizationFailed`` with that
    reason as its ``cause``. Custom summarizers may raise it too.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"the summarizer's reply was not used ({reason})")
        self.reason = reason


class StoreUnavailable(CompactionError):
    """A store's backend failed (unreachable, locked past its busy timeout, or closed).

    ``details`` = ``{"store": <the store's content-free repr>, "operation": "get" | ...,
    "cause": <the backend exception's class name, or "closed">}``.
    """

    code: ClassVar[str] = "STORE_UNAVAILABLE"


class StoreTimeout(CompactionError):
    """Waiting for another worker to produce a shared value took longer than allowed.

    ``details`` = ``{"store": <repr>, "key_hash": <first 16 hex of the key's sha256>,
    "timeout": <seconds>}``.
    """

    code: ClassVar[str] = "STORE_TIMEOUT"

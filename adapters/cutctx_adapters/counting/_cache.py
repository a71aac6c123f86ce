"""Counts remembered for one call or one session, never for the process.

The tiktoken estimators a process shares hold no text (a service must not keep one tenant's
text after its request); a ``CountCache`` around one remembers the counts of the texts it was
asked, within a bound in bytes of text, for as long as its owner lives: a ``compact`` call, or
a session (whose histories hold those texts anyway).
"""

from __future__ import annotations

import threading
from typing import Any

from cutctx import TokenEstimator

__all__ = ["DEFAULT_CACHE_BYTES", "CountCache"]

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
"""Characters of text a ``CountCache`` holds by default (the oldest go first)."""
_LONGEST = 1 << 20
"""Longer texts are counted every time, never held (one of them would crowd out the rest)."""


class CountCache:
    """A ``TokenEstimator``: ``estimator``'s counts, remembered for texts seen before, within
    ``max_bytes`` characters of text (oldest first out). Safe under threads."""

    def __init__(self, estimator: TokenEstimator, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.estimator = estimator
        self.max_bytes = max_bytes
        self._counts: dict[str, int] = {}
        self._held = 0
        self._lock = threading.Lock()

    @property
    def model(self) -> str | None:
        """The model the counts are for, as the estimator says (None if it says nothing)."""
        model: Any = getattr(self.estimator, "model", None)
        return model if isinstance(model, str) else None

    @property
    def encoding_name(self) -> str | None:
        """The estimator's tiktoken encoding, if it has one."""
        name: Any = getattr(self.estimator, "encoding_name", None)
        return name if isinstance(name, str) else None

    def estimate_tokens(self, text: str) -> int:
        found = self._counts.get(text)
        if found is not None:
            return found
        count = self.estimator.estimate_tokens(text)
        size = len(text)
        if size <= _LONGEST and size <= self.max_bytes:
            with self._lock:
                if text not in self._counts:
                    self._counts[text] = count
                    self._held += size
                    while self._held > self.max_bytes:
                        oldest = next(iter(self._counts))
                        self._held -= len(oldest)
                        del self._counts[oldest]
        return count

    @property
    def size(self) -> int:
        """Characters of text held."""
        return self._held

    def __repr__(self) -> str:
        return f"CountCache({self.estimator!r}, max_bytes={self.max_bytes})"

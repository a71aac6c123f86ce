"""One tiktoken estimator per model or encoding, kept for the process so its cache stays warm."""

from __future__ import annotations

import threading

from .tiktoken import TiktokenEstimator

__all__ = ["estimator_for"]

_LOCK = threading.Lock()
_BY_MODEL: dict[str | None, TiktokenEstimator] = {}
_LIMIT = 32


def estimator_for(model: str | None) -> TiktokenEstimator:
    """The shared estimator for ``model`` (None: o200k_base), built on first use."""
    with _LOCK:
        found = _BY_MODEL.get(model)
        if found is None:
            if len(_BY_MODEL) >= _LIMIT:
                _BY_MODEL.pop(next(iter(_BY_MODEL)))
            found = _BY_MODEL[model] = TiktokenEstimator(model)
        return found

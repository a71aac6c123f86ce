"""One tiktoken estimator per model, kept for the process so its cache stays warm.

A program that must run without tiktoken's BPE files (the CLI on an offline machine) can name an
approximate estimator to use instead; that is said once through ``warnings``. Libraries calling
cutctx never get it unless they ask: by default a missing file raises ``TokenizerUnavailable``.
"""

from __future__ import annotations

import threading
import warnings

from cutctx import TokenEstimator, ValidationError

from .errors import TokenizerUnavailable

__all__ = ["ApproximateTokensWarning", "chosen_estimator", "estimator_for", "use_when_unavailable"]

_LOCK = threading.Lock()
_BY_MODEL: dict[str | None, TokenEstimator] = {}
_LIMIT = 32
_fallback: TokenEstimator | None = None


class ApproximateTokensWarning(UserWarning):
    """Token counts come from an approximation because tiktoken's files are unavailable."""


def use_when_unavailable(estimator: TokenEstimator | None) -> None:
    """Count with ``estimator`` when tiktoken cannot load its files (None: raise instead)."""
    global _fallback
    with _LOCK:
        _fallback = estimator
        _BY_MODEL.clear()


def estimator_for(model: str | None) -> TokenEstimator:
    """The shared estimator for ``model`` (None: o200k_base), built on first use."""
    with _LOCK:
        found = _BY_MODEL.get(model)
        if found is None:
            if len(_BY_MODEL) >= _LIMIT:
                _BY_MODEL.pop(next(iter(_BY_MODEL)))
            found = _BY_MODEL[model] = _build(model)
        return found


def chosen_estimator(estimator: TokenEstimator | None, model: str | None) -> TokenEstimator:
    """The caller's estimator (checked: it must have ``estimate_tokens``), else the shared one
    for ``model``."""
    if estimator is None:
        return estimator_for(model)
    if not callable(getattr(estimator, "estimate_tokens", None)):
        raise ValidationError("estimator must have an estimate_tokens(text) method",
                              {"field": "estimator"})
    return estimator


def _build(model: str | None) -> TokenEstimator:
    from .tiktoken import TiktokenEstimator  # tiktoken is an extra: import it only when counting

    try:
        return TiktokenEstimator(model)
    except TokenizerUnavailable as exc:
        if _fallback is None:
            raise
        warnings.warn(ApproximateTokensWarning(
            f"token counts are approximate ({_fallback!r}): {exc.message}"), stacklevel=3)
        return _fallback

"""One tiktoken estimator per model, kept for the process; it holds no text (counts are
remembered per call or per session: ``CountCache``).

A program that must run without tiktoken's BPE files (the CLI on an offline machine) can name an
approximate estimator to use instead; that is said once through ``warnings``. Libraries calling
cutctx never get it unless they ask: by default a missing file raises ``TokenizerUnavailable``.
"""

from __future__ import annotations

import threading
import warnings

from cutctx import TokenEstimator, ValidationError

from .._requires import require
from ..errors import TokenizerUnavailable
from ._cache import CountCache

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


def check_model(model: object) -> str | None:
    """``model`` if it is None or a str; anything else is refused by name."""
    if model is not None and not isinstance(model, str):
        raise ValidationError(f"model must be a str, got {type(model).__name__}",
                              {"field": "model", "rule": "model_type"})
    return model


def estimator_for(model: str | None) -> TokenEstimator:
    """The shared estimator for ``model`` (None: o200k_base), built on first use."""
    check_model(model)
    with _LOCK:
        found = _BY_MODEL.get(model)
        if found is None:
            if len(_BY_MODEL) >= _LIMIT:
                _BY_MODEL.pop(next(iter(_BY_MODEL)))
            found = _BY_MODEL[model] = _build(model)
        return found


def chosen_estimator(estimator: TokenEstimator | None, model: str | None) -> TokenEstimator:
    """The caller's estimator (checked: it must have ``estimate_tokens``), else the shared one
    for ``model`` with counts remembered for as long as the result lives (one call)."""
    check_model(model)
    if estimator is None:
        return CountCache(estimator_for(model))
    if not callable(getattr(estimator, "estimate_tokens", None)):
        raise ValidationError("estimator must have an estimate_tokens(text) method",
                              {"field": "estimator"})
    if type(estimator).__module__.split(".")[0] in ("cutctx", "cutctx_adapters"):
        return estimator  # ours: known to answer ints
    return CheckedEstimator(estimator)


class CheckedEstimator:
    """A caller's estimator whose answers are checked: an int >= 0, or a ``ValidationError``
    naming the estimator (never a ``TypeError`` deep inside planning)."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator

    def estimate_tokens(self, text: str) -> int:
        value = self.estimator.estimate_tokens(text)
        if type(value) is int and value >= 0:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return int(value)
        raise ValidationError(
            f"estimator.estimate_tokens must return an int >= 0, got {type(value).__name__}",
            {"field": "estimator", "rule": "estimate_type"})

    def __repr__(self) -> str:
        return f"CheckedEstimator({self.estimator!r})"


def _build(model: str | None) -> TokenEstimator:
    require("tiktoken", "tiktoken")  # an extra: said by name, imported only when counting
    from ..tiktoken import TiktokenEstimator
    from ._windows import model_name

    try:  # a gateway's id (openai/gpt-4o) is counted as the model it names; shared: holds no text
        return TiktokenEstimator(None if model is None else model_name(model) or model,
                                 cache_size=0)
    except TokenizerUnavailable as exc:
        if _fallback is None:
            raise
        warnings.warn(ApproximateTokensWarning(
            f"token counts are approximate ({_fallback!r}): {exc.message}"), stacklevel=3)
        return _fallback

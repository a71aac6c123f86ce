"""Claude-scale counts from tiktoken: the calibration factor per model, and counts scaled to it.

Anthropic publishes no local tokenizer for current Claude models, so text is counted with tiktoken
(``o200k_base`` unless an estimator is injected) and multiplied by a factor:

* ``CALIBRATION = 1.3``. Published measurements of the Claude 3.5-era tokenizer against GPT-4o's
  ``o200k_base`` on the same inputs found about +16% tokens for English prose, +21% for math and
  +30% for Python code (L. Gupta, "Hidden costs in AI deployment: why Claude models may be 20-30%
  more expensive than GPT in enterprise settings", VentureBeat, May 2025). We take the upper end,
  because agent histories are mostly code and tool output, and an estimate that is too high only
  compacts a little early while one that is too low gets the request rejected. Expected error:
  about -0% to +12% on English and code; other scripts are unmeasured and may be off either way.
* ``NEW_TOKENIZER_CALIBRATION = 1.75`` for models with Anthropic's newer tokenizer (Claude Opus
  4.7), which Anthropic says maps the same text to about 1.0-1.35x the tokens of earlier models:
  1.3 x 1.35, rounded. Unknown future models get ``CALIBRATION``; pass ``calibration=`` or use the
  exact count for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cutctx import TokenEstimator, ValidationError

from ._cache import CountCache
from ._estimators import check_model, estimator_for
from ._windows import model_name

__all__ = [
    "CALIBRATION",
    "GEMINI_CALIBRATION",
    "NEW_TOKENIZER_CALIBRATION",
    "CalibratedEstimator",
    "calibrated_estimator",
    "calibration_for",
    "claude_estimator",
    "is_claude",
    "is_gemini",
    "scale_to_total",
    "tokenizer_factor",
]

CALIBRATION = 1.3
NEW_TOKENIZER_CALIBRATION = 1.75
_NEW_TOKENIZER_MODELS = ("claude-opus-4-7",)


def is_claude(model: str | None) -> bool:
    """Whether ``model`` names an Anthropic model (its counts take the Claude calibration)."""
    return bool(model) and "claude" in str(model).lower()


def calibration_for(model: str | None) -> float:
    """The tiktoken-to-Claude factor for ``model`` (None: ``CALIBRATION``); a cloud or gateway
    id counts as the model it names (``us.anthropic.claude-opus-4-7``)."""
    model = check_model(model)
    if model and model_name(model).startswith(_NEW_TOKENIZER_MODELS):
        return NEW_TOKENIZER_CALIBRATION
    return CALIBRATION


class CalibratedEstimator:
    """A ``TokenEstimator`` giving ``ceil(inner(text) * factor)``: Claude-scale text counts."""

    def __init__(self, inner: TokenEstimator, factor: float) -> None:
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not (
                math.isfinite(factor) and factor > 0):
            raise ValidationError("calibration must be a finite number > 0",
                                  {"field": "calibration"})
        self.inner = inner
        self.factor = float(factor)

    def estimate_tokens(self, text: str) -> int:
        raw = self.inner.estimate_tokens(text)
        # A hair below the product so that 10 * 1.3 stays 13, not 14 by float error.
        return math.ceil(raw * self.factor - 1e-9) if raw else 0

    def __repr__(self) -> str:
        return f"CalibratedEstimator({self.inner!r}, {self.factor})"


def scale_to_total(values: Sequence[int], total: int) -> list[int]:
    """Whole numbers proportional to ``values`` that add up to ``total`` (largest remainder).

    Ties go to the earlier position, so the result is deterministic. All-zero values share
    ``total`` evenly; an empty list stays empty.

    >>> scale_to_total([10, 20, 30], 7)
    [1, 2, 4]
    """
    if total < 0:
        raise ValueError("total must be >= 0")
    if not values:
        return []
    weights = list(values) if any(values) else [1] * len(values)
    whole = sum(weights)
    shares = [(weight * total) // whole for weight in weights]
    remainders = sorted(range(len(weights)),
                        key=lambda i: (-((weights[i] * total) % whole), i))
    for i in remainders[: total - sum(shares)]:
        shares[i] += 1
    return shares


def claude_estimator(model: str | None) -> CalibratedEstimator:
    """Text counts on ``model``'s Claude scale: the shared tiktoken estimate times its factor,
    remembered for as long as the result lives."""
    return CalibratedEstimator(CountCache(estimator_for(None)), calibration_for(model))


GEMINI_CALIBRATION = 1.2
"""The tiktoken-to-Gemini factor (``gemini`` format's ``docs/gemini.md`` says why)."""


def is_gemini(model: str | None) -> bool:
    """Whether ``model`` names a Google Gemini model (its counts take Gemini's factor)."""
    return bool(model) and "gemini" in str(model).lower()


def tokenizer_factor(model: str | None) -> float | None:
    """The factor tiktoken counts take for ``model`` where it has no public tokenizer (Claude,
    Gemini); None for the models tiktoken counts as they are."""
    if is_claude(model):
        return calibration_for(model)
    if is_gemini(model):
        return GEMINI_CALIBRATION
    return None


def calibrated_estimator(model: str | None) -> TokenEstimator:
    """Text counts on ``model``'s own scale: the shared tiktoken estimate times its factor
    (as it is for a model tiktoken counts), remembered for as long as the result lives."""
    factor = tokenizer_factor(model)
    counted = CountCache(estimator_for(None if factor is not None else model))
    return counted if factor is None else CalibratedEstimator(counted, factor)

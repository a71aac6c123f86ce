"""Token estimation: the protocol the engine's policies use, and a character-ratio default."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._checks import require_finite_positive

__all__ = ["CharRatioEstimator", "TokenEstimator"]


@runtime_checkable
class TokenEstimator(Protocol):
    """Anything that turns a text into a token count, purely."""

    def estimate_tokens(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class CharRatioEstimator:
    """``ceil(len(text) / chars_per_token)``: a model-free estimate.

    >>> CharRatioEstimator().estimate_tokens("twelve chars")
    3
    """

    chars_per_token: float = 4.0

    def __post_init__(self) -> None:
        ratio = require_finite_positive(self.chars_per_token, "chars_per_token")
        object.__setattr__(self, "chars_per_token", ratio)

    def estimate_tokens(self, text: str) -> int:
        if not text:
            return 0
        return math.ceil(len(text) / self.chars_per_token)

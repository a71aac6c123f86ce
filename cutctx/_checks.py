"""Argument checks shared by the values and policies: one wording for every refusal."""

from __future__ import annotations

import math
from typing import Any

from .errors import ValidationError

__all__ = ["require_finite_positive", "require_int", "require_ratio", "require_text"]


def require_int(value: Any, field: str, *, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum``; bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(
            f"{field} must be an int >= {minimum}, got {type(value).__name__}", {"field": field}
        )
    if value < minimum:
        raise ValidationError(f"{field} must be an int >= {minimum}, got {value}",
                              {"field": field, "value": value})
    return value


def require_text(value: Any, field: str, *, non_empty: bool = True) -> str:
    """``value`` as a str (non-empty unless told otherwise)."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a str, got {type(value).__name__}",
                              {"field": field})
    if non_empty and not value:
        raise ValidationError(f"{field} must be a non-empty str", {"field": field})
    return value


def require_finite_positive(value: Any, field: str) -> float:
    """``value`` as a finite number > 0; bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field} must be a finite number > 0, got {type(value).__name__}",
                              {"field": field})
    if not math.isfinite(value) or value <= 0:
        raise ValidationError(f"{field} must be a finite number > 0", {"field": field})
    return float(value)


def require_ratio(value: Any, field: str) -> float:
    """``value`` as a finite float >= 0; bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and value >= 0
    ):
        raise ValidationError(f"{field} must be a finite number >= 0", {"field": field})
    return float(value)

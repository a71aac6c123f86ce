"""A session's settings, checked when it is made (not on its first call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cutctx import ValidationError

from .._estimators import chosen_estimator
from ..stores import Store

__all__ = ["check_settings", "fraction_or_tokens"]


class _Settings(Protocol):
    window: int | None
    windows: Mapping[str, int] | None
    trigger: float | int | None
    target: float | int
    estimator: Any
    pin: Any


def fraction_or_tokens(value: float | int, budget: int, name: str) -> int:
    """A float in (0, 1] is a share of ``budget``; an int >= 0 is tokens (at most ``budget``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a fraction of the budget or a token count",
                              {"field": name})
    if isinstance(value, float) and 0 < value <= 1:
        return int(budget * value)
    if isinstance(value, int) and value >= 0:
        return min(value, budget)
    raise ValidationError(f"{name} must be a float in (0, 1] or an int >= 0", {"field": name})


def whole(value: Any, name: str, minimum: int) -> None:
    """Refuse anything but an int (not a bool) of at least ``minimum``, naming the setting."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an int >= {minimum}, got {type(value).__name__}",
                              {"field": name})
    if value < minimum:
        raise ValidationError(f"{name} must be an int >= {minimum}, got {value}",
                              {"field": name})


def check_settings(session: Any) -> None:
    """Refuse bad settings when the session (or a wrapped client) is made, not on a call."""
    if session.window is not None:
        whole(session.window, "window", 1)
    if session.windows is not None:
        if not isinstance(session.windows, Mapping):
            raise ValidationError("windows must map model-name prefixes to token counts",
                                  {"field": "windows"})
        for prefix, tokens in session.windows.items():
            if not isinstance(prefix, str) or not prefix:
                raise ValidationError("windows keys must be non-empty model-name prefixes",
                                      {"field": "windows"})
            whole(tokens, f"windows[{prefix!r}]", 1)
    for name in ("reserve", "keep_recent", "max_views", "max_view_bytes", "summary_cache_size"):
        whole(getattr(session, name), name, 0)
    for name in ("trigger", "target"):
        value = getattr(session, name)
        if value is not None or name == "target":
            fraction_or_tokens(value, 1, name)
    if session.check_prefix not in ("identity", "content"):
        raise ValidationError('check_prefix must be "identity" or "content"',
                              {"field": "check_prefix"})
    for name in ("sticky", "defer_to_server"):
        if not isinstance(getattr(session, name), bool):
            raise ValidationError(f"{name} must be True or False", {"field": name})
    pin = session.pin
    if pin is not None and not callable(pin) and (
            isinstance(pin, str | bytes | Mapping) or not hasattr(pin, "__iter__")):
        raise ValidationError("pin must be message indexes or a predicate (message, index)",
                              {"field": "pin", "rule": "pin_type"})
    if session.estimator is not None:
        chosen_estimator(session.estimator, None)  # refuses one without estimate_tokens
    if session.store is not None and not isinstance(session.store, Store):
        raise ValidationError("store must be a cutctx_adapters.stores store (get, put, claim, "
                              "...)", {"field": "store"})
    timeout = session.summary_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0 \
            or timeout == float("inf"):
        raise ValidationError("summary_timeout must be a positive number of seconds",
                              {"field": "summary_timeout"})

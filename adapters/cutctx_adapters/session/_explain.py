"""A budget a session cannot meet, explained: what used the window, and what to change.

The engine says which turns could not be kept and the budget it had; a session knows where that
budget came from (the window, the reply's reserve, the tool definitions), so it says that too,
with the one change that would make the request fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cutctx import BudgetUnsatisfiable

from ..counting import context_window
from ..planning import HistoryFormat, given
from ..settings import CompactionSettings

__all__ = ["explained"]


def _window(settings: CompactionSettings, model: str | None) -> tuple[int | None, str]:
    """The context window the budget came from, and where that figure came from."""
    if settings.window is not None:
        return settings.window, "window="
    from_windows = context_window(model, settings.windows) if settings.windows else None
    if from_windows is not None and from_windows != context_window(model):
        return from_windows, "windows="
    built_in = context_window(model)
    return built_in, f"the built-in window of {model}"


def _overhead(fmt: HistoryFormat, settings: CompactionSettings, request: Mapping[str, Any],
              model: str | None, details: Mapping[str, Any]) -> int | None:
    known = details.get("overhead_tokens")
    if isinstance(known, int):
        return known
    try:
        estimator = settings.estimator or fmt.estimator_for(model)
        return fmt.overhead(request, estimator)
    except Exception:  # the explanation must never hide the error it explains
        return None


def explained(error: BudgetUnsatisfiable, fmt: HistoryFormat, settings: CompactionSettings,
              request: Mapping[str, Any], default_model: str | None) -> BudgetUnsatisfiable:
    """``error`` said with the window, the reply reserve, the tools' overhead, the turns that
    must be kept (by id and size) and what to change; its details gain those figures."""
    details = dict(error.details)
    model = given(request.get("model", default_model))
    model = model if isinstance(model, str) else None
    allowance = fmt.output_allowance(request)
    reserve = settings.reserve if allowance is None else allowance
    reserve_from = "reserve=" if allowance is None else "the request's own reply limit"
    window, window_from = _window(settings, model)
    overhead = _overhead(fmt, settings, request, model, details)
    turns = details.get("untouchable_tokens") if details.get("turn_ids") else None
    needed = (overhead or 0) + (turns if isinstance(turns, int) else 0)
    pieces = []
    if window is not None:
        pieces.append(f"the window is {window} ({window_from}) and the reply reserve "
                      f"{reserve} ({reserve_from}), leaving {max(0, window - reserve)} "
                      "prompt tokens")
    if overhead is not None:
        pieces.append(f"tool definitions and framing take {overhead}")
    ids, sizes = details.get("turn_ids") or [], details.get("turn_tokens") or []
    if isinstance(turns, int):
        largest = ", ".join(f"{turn_id} ({size})" for turn_id, size in zip(ids, sizes,
                                                                           strict=False))
        pieces.append(f"the turns that must be kept need {turns} (largest: {largest})")
    fixes = []
    if window is not None and needed:
        fixes.append(f"raise window= to at least {needed + reserve}")
    fixes.append("lower the request's max tokens" if allowance is not None else "lower reserve=")
    fixes.append("protect fewer turns (keep_recent=, pin=, a shorter system prompt)"
                 if isinstance(turns, int) else "send fewer or shorter tool definitions")
    message = (f"the request cannot fit: {'; '.join(pieces) or error.message}. To fit, "
               f"{', or '.join(fixes)}. (engine: {error.message})")
    details.update({"window": window, "reserve": reserve, "overhead_tokens": overhead,
                    "needed_window": needed + reserve if needed else None})
    return BudgetUnsatisfiable(message, details)

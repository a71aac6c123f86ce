"""Hysteresis that follows the history: where a compaction aims, so that it buys several calls
of pure appends before the next one, derived from the history alone.

The room between the trigger and where a compaction lands is what the calls after it append
into. When the last calls each added much (large tool results), a compaction aims below the
target by as much as ``APPENDS`` such calls take; never above the target (the caller's bound),
and never below ``FLOOR`` of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from statistics import median

__all__ = ["APPENDS", "FLOOR", "aimed"]

APPENDS = 3
"""Calls of pure appends a compaction makes room for, at the history's recent growth."""
FLOOR = 0.5
"""The lowest a compaction aims, as a share of the target."""
RECENT = 5
"""Calls whose growth is looked at (their median: one huge result is clipped, not repeated)."""


def aimed(boundaries: Sequence[tuple[int, int]], sums: Sequence[int], at: int, trigger: int,
          target: int) -> int:
    """Where an event at ``boundaries[at]`` aims: the target, or lower so that ``APPENDS``
    calls growing as the last ``RECENT`` did fit under the trigger (``boundaries``: where the
    history could end, as ``(items, turns)``; ``sums``: running token sums of its turns)."""
    counts = [turns for _, turns in boundaries[max(0, at - RECENT):at + 1]]
    steps = [sums[after] - sums[before] for before, after in pairwise(counts)]
    if not steps:
        return target
    room = trigger - APPENDS * int(median(steps))
    return max(min(target, room), int(target * FLOOR))

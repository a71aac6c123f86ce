"""Several lineages under one conversation key, matched by the longest prefix already seen.

Forks, retries and subagents resend a history the key has seen with something else after it;
each keeps a lineage of its own (the last history it sent and a parsed copy of its last reply),
so none of them resets another. A lineage's id is derived from where it came from (the key, the
first item, the lineage it forked from and where), never from a counter.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Lineage", "Lineages", "Match", "common_prefix"]

How = Literal["new", "same", "extends", "fork"]


@dataclass(slots=True)
class Lineage:
    """One line of a conversation: the last history sent on it and what came back."""

    id: str
    items: Sequence[Any] = ()
    reply: Sequence[Any] | None = None
    """The parsed copy of the last reply (as items of the format), once it has ended."""


@dataclass(frozen=True, slots=True)
class Match:
    """Which lineage a request continues, how, and whether it resent the last reply as it
    came (None when there was no reply to resend)."""

    lineage: Lineage
    how: How
    reply_resent: bool | None = None


@dataclass(slots=True)
class Lineages:
    """The lineages of one conversation key, the least recently used dropped past ``limit``."""

    key: str
    limit: int = 8
    _lines: OrderedDict[str, Lineage] = field(default_factory=OrderedDict)

    def match(self, items: Sequence[Any]) -> Match:
        """The lineage ``items`` continues (the longest common prefix), made when none does;
        the lineage then holds ``items`` as its history."""
        best, shared = None, 0
        for line in reversed(self._lines.values()):  # the most recent first wins ties
            common = common_prefix(line.items, items)
            if common > shared:
                best, shared = line, common
        if best is None:
            line = Lineage(_id(self.key, "root", _first(items)))
            how: How = "new"
        elif shared == len(best.items):
            line, how = best, ("same" if shared == len(items) else "extends")
        else:
            line = Lineage(_id(best.id, "fork", str(shared)))
            line = self._lines.get(line.id, line)
            how = "fork"
        resent = _resent(best, items) if how in ("same", "extends") else None
        line.items = items
        self._lines[line.id] = line
        self._lines.move_to_end(line.id)
        while len(self._lines) > self.limit:
            self._lines.popitem(last=False)
        return Match(line, how, resent)


def _resent(line: Lineage | None, items: Sequence[Any]) -> bool | None:
    """Whether ``items`` carries ``line``'s last reply right after its history, unchanged."""
    if line is None or not line.reply:
        return None
    start = len(line.items)
    return list(items[start:start + len(line.reply)]) == list(line.reply)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share (compared by value)."""
    n = min(len(a), len(b))
    if n == 0 or a[0] != b[0]:
        return 0
    if list(a[:n]) == list(b[:n]):
        return n
    low, high = 1, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if list(a[low:middle]) == list(b[low:middle]):
            low = middle
        else:
            high = middle
    return low


def _first(items: Sequence[Any]) -> str:
    if not items:
        return ""
    return json.dumps(items[0], sort_keys=True, ensure_ascii=True, default=str)


def _id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:8]

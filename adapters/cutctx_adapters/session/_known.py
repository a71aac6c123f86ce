"""Histories a session has answered, by content: where the next call can pick up from.

A state is keyed by the chained hash of the history it answered, so a call whose history extends
(or repeats) a known one finds it whatever objects carry the content. Bounded by entries and by
the bytes of text held; safe under threads.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..history import content_bytes
from ._ledger import Ledger

__all__ = ["Known", "KnownHistories", "chain_keys"]


@dataclass(frozen=True, slots=True)
class Known:
    """What a session kept of one answered history: the ledger and what it sent."""

    ledger: Ledger
    sent: tuple[dict[str, Any], ...]
    """The items sent for it (the session's own copies, never handed out)."""
    size: int


def chain_keys(items: Sequence[Any], seed: str, after: str | None = None) -> list[str]:
    """Hash of every prefix: equal content gives equal keys, whatever objects carried it.

    ``after``: the key of the items before these (to extend a known chain)."""
    keys: list[str] = []
    running = seed.encode() if after is None else bytes.fromhex(after)
    for item in items:
        running = hashlib.sha256(running + content_bytes(item)).digest()
        keys.append(running.hex())
    return keys


def text_size(values: Sequence[Any]) -> int:
    """Rough bytes held by plain values: the length of their text."""
    total = 0
    stack: list[Any] = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
        else:
            total += 8
    return total


class KnownHistories:
    """LRU of ``Known`` states keyed by the chained hash of the history they answered."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def longest_prefix(self, chain: Sequence[str]) -> tuple[int, Known] | None:
        """The known state for the longest prefix of ``chain``, and that prefix's length."""
        with self._lock:
            for length in range(len(chain), 0, -1):
                found = self._entries.get(chain[length - 1])
                if found is not None:
                    self._entries.move_to_end(chain[length - 1])
                    return length, found
        return None

    def put(self, key: str, known: Known, supersedes: str | None = None) -> None:
        """Store ``known`` as the most recent; the state it grew from (``supersedes``) becomes the
        first to go, so a busy conversation's stale states never evict an idle one's latest."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if supersedes is not None and supersedes in self._entries:
                self._entries.move_to_end(supersedes, last=False)
            self._entries[key] = known
            self._bytes += known.size
            while self._entries and (len(self._entries) > self._max_entries
                                     or self._bytes > self._max_bytes):
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size

    def __len__(self) -> int:
        return len(self._entries)

"""``MemoryStore``: the in-process default, a thread-safe LRU bounded by entries and bytes."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

from . import _base
from ._base import InlineTwins

__all__ = ["MemoryStore"]


class _Entry(NamedTuple):
    value: bytes
    expires_at: float | None  # time.monotonic()


class _Claim(NamedTuple):
    token: str
    expires_at: float


class MemoryStore(InlineTwins):
    """Values and claims in this process's memory, shared by its threads (not by processes).

    Least-recently-used values go first past ``max_entries`` or ``max_bytes`` (keys plus values);
    a value larger than ``max_bytes`` on its own is not stored. ``ttl`` (seconds) is the default
    lifetime of a value, ``None`` for none; ``put(..., ttl=)`` overrides it. The async twins
    (``aget``, ...) run inline: nothing here waits.

    >>> store = MemoryStore()
    >>> store.put("summary:ab12", b'{"text": "..."}')
    >>> store.get_many(["summary:ab12", "summary:cd34"])
    [b'{"text": "..."}', None]
    """

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 1024 * 1024,
                 ttl: float | None = None) -> None:
        self.max_entries = _base.check_limit(max_entries, "max_entries")
        self.max_bytes = _base.check_limit(max_bytes, "max_bytes")
        self.ttl = _base.check_optional_seconds(ttl, "ttl")
        self._values: OrderedDict[str, _Entry] = OrderedDict()
        self._claims: dict[str, _Claim] = {}
        self._bytes = 0
        self._closed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"MemoryStore(max_entries={self.max_entries}, max_bytes={self.max_bytes}, "
                f"ttl={self.ttl})")

    def get(self, key: str) -> bytes | None:
        _base.check_key(key)
        with self._lock:
            self._check_open("get")
            return self._read(key, time.monotonic())

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = _base.check_keys(keys)
        with self._lock:
            self._check_open("get_many")
            now = time.monotonic()
            return [self._read(key, now) for key in keys]

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        _base.check_key(key)
        _base.check_value(value)
        lifetime = _base.check_optional_seconds(ttl, "ttl") or self.ttl
        with self._lock:
            self._check_open("put")
            self._drop(key)
            size = len(key) + len(value)
            if size > self.max_bytes:
                return
            now = time.monotonic()
            self._values[key] = _Entry(value, None if lifetime is None else now + lifetime)
            self._bytes += size
            while len(self._values) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._values)))

    def claim(self, key: str, *, lease: float) -> str | None:
        _base.check_key(key)
        seconds = _base.check_seconds(lease, "lease")
        with self._lock:
            self._check_open("claim")
            now = time.monotonic()
            held = self._claims.get(key)
            if held is not None and held.expires_at > now:
                return None
            if len(self._claims) >= self.max_entries:  # forgotten claims: drop the expired
                self._claims = {name: claim for name, claim in self._claims.items()
                                if claim.expires_at > now}
            token = secrets.token_hex(16)
            self._claims[key] = _Claim(token, now + seconds)
            return token

    def release(self, key: str, token: str) -> None:
        _base.check_key(key)
        with self._lock:
            self._check_open("release")
            held = self._claims.get(key)
            if held is not None and held.token == token:
                del self._claims[key]

    def close(self) -> None:
        """Forget everything; later calls raise ``StoreUnavailable``."""
        with self._lock:
            self._closed = True
            self._values.clear()
            self._claims.clear()
            self._bytes = 0

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise _base.unavailable(self, operation, None)

    def _read(self, key: str, now: float) -> bytes | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        if entry.expires_at is not None and entry.expires_at <= now:
            self._drop(key)
            return None
        self._values.move_to_end(key)
        return entry.value

    def _drop(self, key: str) -> None:
        entry = self._values.pop(key, None)
        if entry is not None:
            self._bytes -= len(key) + len(entry.value)

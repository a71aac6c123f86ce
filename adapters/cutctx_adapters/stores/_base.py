"""The store protocols, and the checks every store shares: keys, values, limits, failures.

A store holds small byte values that several sessions share (summaries, cached state), keyed by
content hashes; keys never reveal content. ``Store`` is the sync protocol; ``AsyncStore`` its
async twins (``aget``, ``aput``, ...), which ``aproduce_once`` awaits so an event loop never
waits on a backend: in memory they run inline, on SQLite in a worker thread, on Redis over
``redis.asyncio``. Waiting for another worker is done by ``produce_once``/``aproduce_once``.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cutctx import ValidationError

from ..errors import StoreUnavailable

__all__ = ["KEY_RULE", "AsyncStore", "InlineTwins", "Store", "StoreWarning", "ThreadTwins",
           "unavailable"]

KEY_RULE = "1 to 200 characters of A-Z a-z 0-9 : . _ -"
_KEY = re.compile(r"[A-Za-z0-9:._-]{1,200}")


class StoreWarning(UserWarning):
    """A store failed and cutctx carried on without it (the result is computed locally)."""


@runtime_checkable
class Store(Protocol):
    """A shared key-value store of bytes with token-owned claims; ``ttl``/``lease`` in seconds.

    ``claim`` returns a token when it takes the lease on ``key`` (claims live apart from values),
    else ``None``; ``release`` frees it only if ``token`` still owns it. Backend failures raise
    ``StoreUnavailable``; a bad key or value raises ``ValidationError``.
    """

    def get(self, key: str) -> bytes | None: ...

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None: ...

    def claim(self, key: str, *, lease: float) -> str | None: ...

    def release(self, key: str, token: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class AsyncStore(Protocol):
    """The async twins of ``Store``'s calls: the same meaning, awaited (``close`` stays sync)."""

    async def aget(self, key: str) -> bytes | None: ...

    async def aget_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def aput(self, key: str, value: bytes, *, ttl: float | None = None) -> None: ...

    async def aclaim(self, key: str, *, lease: float) -> str | None: ...

    async def arelease(self, key: str, token: str) -> None: ...


class InlineTwins:
    """``AsyncStore`` for a store whose calls never block (memory): each twin is the sync call."""

    async def aget(self: Store, key: str) -> bytes | None:
        return self.get(key)

    async def aget_many(self: Store, keys: Sequence[str]) -> list[bytes | None]:
        return self.get_many(keys)

    async def aput(self: Store, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.put(key, value, ttl=ttl)

    async def aclaim(self: Store, key: str, *, lease: float) -> str | None:
        return self.claim(key, lease=lease)

    async def arelease(self: Store, key: str, token: str) -> None:
        self.release(key, token)


class ThreadTwins:
    """``AsyncStore`` for a store whose calls wait on I/O (a file lock): each twin runs the sync
    call in a worker thread, so the event loop goes on meanwhile."""

    async def aget(self: Store, key: str) -> bytes | None:
        return await asyncio.to_thread(self.get, key)

    async def aget_many(self: Store, keys: Sequence[str]) -> list[bytes | None]:
        return await asyncio.to_thread(self.get_many, keys)

    async def aput(self: Store, key: str, value: bytes, *, ttl: float | None = None) -> None:
        await asyncio.to_thread(lambda: self.put(key, value, ttl=ttl))

    async def aclaim(self: Store, key: str, *, lease: float) -> str | None:
        return await asyncio.to_thread(lambda: self.claim(key, lease=lease))

    async def arelease(self: Store, key: str, token: str) -> None:
        await asyncio.to_thread(self.release, key, token)


def check_key(key: object) -> str:
    """Return ``key`` if it follows ``KEY_RULE``; the error names the rule, never the key."""
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        raise ValidationError(f"a store key must be {KEY_RULE}", {"rule": "store_key"})
    return key


def check_keys(keys: Sequence[str]) -> list[str]:
    """``check_key`` over a sequence (a lone ``str`` is refused: it is not a list of keys)."""
    if isinstance(keys, str | bytes):
        raise ValidationError("get_many takes a sequence of keys, not one key",
                              {"rule": "store_keys"})
    return [check_key(key) for key in keys]


def check_value(value: object) -> bytes:
    """Return ``value`` if it is ``bytes`` (callers serialize, e.g. to JSON)."""
    if not isinstance(value, bytes):
        raise ValidationError("a store value must be bytes",
                              {"rule": "store_value", "type": type(value).__name__})
    return value


def check_seconds(value: object, field: str) -> float:
    """A positive, finite number of seconds."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        raise ValidationError(f"{field} must be a positive number of seconds",
                              {"rule": "positive_seconds", "field": field})
    return float(value)


def check_optional_seconds(value: object, field: str) -> float | None:
    """``None``, or a positive, finite number of seconds."""
    return None if value is None else check_seconds(value, field)


def check_limit(value: object, field: str) -> int:
    """A positive whole number (a bound on entries or bytes)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"{field} must be a positive integer",
                              {"rule": "positive_integer", "field": field})
    return value


def unavailable(store: object, operation: str, cause: BaseException | str | None
                ) -> StoreUnavailable:
    """The error for a failed backend call: the store's repr, the operation and the cause's class.

    Raise it ``from`` the backend exception; a closed store passes ``None`` (cause ``"closed"``),
    a call the store cannot make a short reason of its own.
    """
    reason = ("closed" if cause is None else cause if isinstance(cause, str)
              else type(cause).__name__)
    return StoreUnavailable(f"{store!r} is unavailable ({reason}) for {operation}",
                            {"store": repr(store), "operation": operation, "cause": reason})

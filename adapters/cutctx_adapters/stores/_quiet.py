"""One read or write of a small shared value, for state that is only an optimization (a model's
calibration): a store that fails is left alone for its back-off, with one ``StoreWarning`` an
outage, and the caller carries on with what it has. Sync and async twins."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import StoreUnavailable
from ._base import AsyncStore, Store, check_key, check_value
from ._outages import DEFAULT_BACKOFF, answered, may_try
from ._produce import _down

__all__ = ["aget_quietly", "aput_quietly", "get_quietly", "put_quietly"]

T = TypeVar("T")


def _attempt(store: Store, call: Callable[[], T]) -> T | None:
    """``call()``'s value; None when the store is down or fails (then marked down)."""
    if not may_try(store):
        return None
    try:
        value = call()
    except StoreUnavailable:
        _down(store, DEFAULT_BACKOFF)
        return None
    answered(store)
    return value


async def _aattempt(store: Store, call: Callable[[], Awaitable[T]]) -> T | None:
    """``_attempt``, awaiting the call."""
    if not may_try(store):
        return None
    try:
        value = await call()
    except StoreUnavailable:
        _down(store, DEFAULT_BACKOFF)
        return None
    answered(store)
    return value


def get_quietly(store: Store, key: str) -> bytes | None:
    """The value at ``key``; None when there is none, or the store is down or fails."""
    check_key(key)
    return _attempt(store, lambda: store.get(key))


def put_quietly(store: Store, key: str, value: bytes, *, ttl: float | None = None) -> None:
    """Store ``value`` at ``key``; nothing when the store is down or fails."""
    check_key(key)
    check_value(value)
    _attempt(store, lambda: store.put(key, value, ttl=ttl))


async def aget_quietly(store: Store, key: str) -> bytes | None:
    """``get_quietly``, awaiting the store's async twin (a store without twins is called)."""
    if not isinstance(store, AsyncStore):
        return get_quietly(store, key)
    check_key(key)
    return await _aattempt(store, lambda: store.aget(key))


async def aput_quietly(store: Store, key: str, value: bytes, *,
                       ttl: float | None = None) -> None:
    """``put_quietly``, awaiting the store's async twin."""
    if not isinstance(store, AsyncStore):
        put_quietly(store, key, value, ttl=ttl)
        return
    check_key(key)
    check_value(value)
    await _aattempt(store, lambda: store.aput(key, value, ttl=ttl))

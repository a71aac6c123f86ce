"""Produce a shared value once across workers: the claim holder computes it, the others wait.

``_steps`` holds the whole protocol as a generator that yields what it needs done — wait some
seconds, or run ``produce`` — so ``produce_once`` and ``aproduce_once`` differ only in how they
sleep and await. A store that fails degrades to computing locally, with one ``StoreWarning``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Final

from ..errors import StoreTimeout, StoreUnavailable
from ._base import (
    Store,
    StoreWarning,
    check_key,
    check_optional_seconds,
    check_seconds,
    check_value,
)

__all__ = ["aproduce_once", "produce_once"]


@dataclass(frozen=True)
class _Wait:
    seconds: float


class _Produce:
    """Run ``produce`` and send its result back (or throw its exception in)."""


@dataclass(frozen=True)
class _Done:
    value: bytes | None


_PRODUCE: Final = _Produce()
_Steps = Generator[_Wait | _Produce, bytes | None, bytes | None]

_warned: weakref.WeakSet[object] = weakref.WeakSet()
_warned_lock = threading.Lock()


def produce_once(store: Store, key: str, produce: Callable[[], bytes | None], *,
                 lease: float = 60.0, timeout: float = 120.0, poll: float = 0.05,
                 ttl: float | None = None) -> bytes | None:
    """The value at ``key``, produced by exactly one worker among those asking at once.

    Found: returned. Missing: the worker that claims ``key`` (for ``lease`` seconds) calls
    ``produce``, stores a non-``None`` result for ``ttl`` and releases the claim; the others poll
    every ``poll`` seconds and take over if the claim goes without a value. Waiting longer than
    ``timeout`` raises ``StoreTimeout``; a failing store means ``produce`` runs locally.

    >>> from cutctx_adapters.stores import MemoryStore
    >>> produce_once(MemoryStore(), "summary:ab12", lambda: b"text")
    b'text'
    """
    with closing(_steps(store, key, lease=lease, timeout=timeout, poll=poll, ttl=ttl)) as steps:
        step = _resume(steps)
        while not isinstance(step, _Done):
            if isinstance(step, _Wait):
                time.sleep(step.seconds)
                step = _resume(steps)
                continue
            try:
                value = produce()
            except BaseException as exc:
                step = _resume(steps, error=exc)
            else:
                step = _resume(steps, value)
        return step.value


async def aproduce_once(store: Store, key: str,
                        produce: Callable[[], bytes | Awaitable[bytes | None] | None], *,
                        lease: float = 60.0, timeout: float = 120.0, poll: float = 0.05,
                        ttl: float | None = None) -> bytes | None:
    """``produce_once`` for async code: waits with ``asyncio.sleep``; ``produce`` may be async.

    The store's own calls are sync and short, so they run inline.
    """
    with closing(_steps(store, key, lease=lease, timeout=timeout, poll=poll, ttl=ttl)) as steps:
        step = _resume(steps)
        while not isinstance(step, _Done):
            if isinstance(step, _Wait):
                await asyncio.sleep(step.seconds)
                step = _resume(steps)
                continue
            try:
                value = produce()
                if inspect.isawaitable(value):
                    value = await value
            except BaseException as exc:
                step = _resume(steps, error=exc)
            else:
                step = _resume(steps, value)
        return step.value


def _resume(steps: _Steps, value: bytes | None = None, *,
            error: BaseException | None = None) -> _Wait | _Produce | _Done:
    """Send ``value`` (or throw ``error``) into the protocol; its next step, or its result."""
    try:
        return steps.send(value) if error is None else steps.throw(error)
    except StopIteration as done:
        return _Done(done.value)


def _steps(store: Store, key: str, *, lease: float, timeout: float, poll: float,
           ttl: float | None) -> _Steps:
    """The protocol; a store call failing with StoreUnavailable switches to producing locally."""
    check_key(key)
    lease = check_seconds(lease, "lease")
    timeout = check_seconds(timeout, "timeout")
    poll = check_seconds(poll, "poll")
    ttl = check_optional_seconds(ttl, "ttl")
    deadline = time.monotonic() + timeout
    token: str | None = None
    value: bytes | None = None
    try:
        while token is None:
            value = store.get(key)
            if value is not None:
                return value
            token = store.claim(key, lease=lease)
            if token is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _timed_out(store, key, timeout)
                yield _Wait(min(poll, remaining))
        # The last owner may have stored the value and released since our get.
        value = store.get(key)
    except StoreUnavailable:
        _warn_once(store)
        if token is not None:
            _release_quietly(store, key, token)
        token = None
    if token is None:  # the store failed: produce locally (outside the handler, so an error
        return _checked((yield _PRODUCE))  # from produce is not chained to the store's)
    if value is not None:
        _release_quietly(store, key, token)
        return value
    return (yield from _produce_as_owner(store, key, token, ttl))


def _produce_as_owner(store: Store, key: str, token: str, ttl: float | None) -> _Steps:
    """Produce, store the value, release the claim (whatever happens); store failures only warn."""
    try:
        value = _checked((yield _PRODUCE))
        if value is not None:
            _quietly(store, lambda: store.put(key, value, ttl=ttl))
    finally:
        _release_quietly(store, key, token)
    return value


def _quietly(store: Store, call: Callable[[], None]) -> None:
    try:
        call()
    except StoreUnavailable:
        _warn_once(store)


def _release_quietly(store: Store, key: str, token: str) -> None:
    _quietly(store, lambda: store.release(key, token))


def _checked(value: bytes | None) -> bytes | None:
    if value is not None:
        check_value(value)
    return value


def _timed_out(store: Store, key: str, timeout: float) -> StoreTimeout:
    key_hash = hashlib.sha256(key.encode()).hexdigest()[:16]
    return StoreTimeout(
        f"waited {timeout:g} s for another worker's value {key_hash} in {store!r}",
        {"store": repr(store), "key_hash": key_hash, "timeout": timeout})


def _warn_once(store: Store) -> None:
    """One StoreWarning per store instance (every time for a store that takes no weakref)."""
    with _warned_lock:
        try:
            if store in _warned:
                return
            _warned.add(store)
        except TypeError:
            pass
    warnings.warn(f"{store!r} is unavailable: computing without the shared store",
                  StoreWarning, stacklevel=2)


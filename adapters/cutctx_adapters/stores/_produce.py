"""Produce a shared value once across workers: the claim holder computes it, the others wait.

``_steps`` holds the whole protocol as a generator that yields what it needs done — a store
call, wait some seconds, or run ``produce`` — so ``produce_once`` and ``aproduce_once`` differ
only in how they call, sleep and await (the async one awaits a store's async twins). A store
that fails degrades to computing locally, with one ``StoreWarning`` an outage, and is left
alone for a back-off (``_outages``). A stored value the caller does not ``accept`` counts as
missing, and is replaced.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import time
import warnings
from collections.abc import Awaitable, Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Final

from ..errors import StoreTimeout, StoreUnavailable
from ._base import (
    AsyncStore,
    Store,
    StoreWarning,
    check_key,
    check_optional_seconds,
    check_seconds,
    check_value,
)
from ._outages import DEFAULT_BACKOFF, answered, failed, may_try

__all__ = ["aproduce_once", "peek", "produce_once"]


@dataclass(frozen=True)
class _Wait:
    seconds: float


class _Produce:
    """Run ``produce`` and send its result back (or throw its exception in)."""


@dataclass(frozen=True)
class _Get:
    key: str


@dataclass(frozen=True)
class _Put:
    key: str
    value: bytes
    ttl: float | None


@dataclass(frozen=True)
class _Claim:
    key: str
    lease: float


@dataclass(frozen=True)
class _Release:
    key: str
    token: str


@dataclass(frozen=True)
class _Done:
    value: bytes | None


_StoreCall = _Get | _Put | _Claim | _Release
"""A store call the protocol needs made: its result (or ``StoreUnavailable``) is sent back."""
_PRODUCE: Final = _Produce()
_Step = _Wait | _Produce | _StoreCall
_Steps = Generator[_Step, object, bytes | None]
Accept = Callable[[bytes], bool]
"""Whether a value may be used and stored (a stored one refused counts as missing)."""


def produce_once(store: Store, key: str, produce: Callable[[], bytes | None], *,
                 lease: float = 60.0, timeout: float = 120.0, poll: float = 0.05,
                 ttl: float | None = None, accept: Accept | None = None,
                 backoff: float = DEFAULT_BACKOFF) -> bytes | None:
    """The value at ``key``, produced by exactly one worker among those asking at once.

    Found (and ``accept``-ed): returned. Missing: the worker that claims ``key`` (for ``lease``
    seconds) calls ``produce``, stores a non-``None`` result ``accept`` allows for ``ttl`` and
    releases the claim; the others poll every ``poll`` seconds and take over if the claim goes
    without a value. Waiting longer than ``timeout`` raises ``StoreTimeout``. A failing store
    means ``produce`` runs locally, and the store is left alone for ``backoff`` seconds.

    >>> from cutctx_adapters.stores import MemoryStore
    >>> produce_once(MemoryStore(), "summary:ab12", lambda: b"text")
    b'text'
    """
    with closing(_steps(store, key, lease=lease, timeout=timeout, poll=poll, ttl=ttl,
                        accept=accept, backoff=backoff)) as steps:
        step = _resume(steps)
        while not isinstance(step, _Done):
            if isinstance(step, _Wait):
                time.sleep(step.seconds)
                step = _resume(steps)
                continue
            try:
                value = produce() if isinstance(step, _Produce) else _call(store, step)
            except BaseException as exc:
                step = _resume(steps, error=exc)
            else:
                step = _resume(steps, value)
        return step.value


async def aproduce_once(store: Store, key: str,
                        produce: Callable[[], bytes | Awaitable[bytes | None] | None], *,
                        lease: float = 60.0, timeout: float = 120.0, poll: float = 0.05,
                        ttl: float | None = None, accept: Accept | None = None,
                        backoff: float = DEFAULT_BACKOFF) -> bytes | None:
    """``produce_once`` for async code: waits with ``asyncio.sleep``; ``produce`` may be async.

    A store with async twins (``AsyncStore``: every store here) is awaited, so the event loop
    never waits on it; any other store's calls run inline.
    """
    with closing(_steps(store, key, lease=lease, timeout=timeout, poll=poll, ttl=ttl,
                        accept=accept, backoff=backoff)) as steps:
        step = _resume(steps)
        while not isinstance(step, _Done):
            if isinstance(step, _Wait):
                await asyncio.sleep(step.seconds)
                step = _resume(steps)
                continue
            try:
                value: object
                if isinstance(step, _Produce):
                    made = produce()
                    value = await made if inspect.isawaitable(made) else made
                else:
                    value = await _acall(store, step)
            except BaseException as exc:
                step = _resume(steps, error=exc)
            else:
                step = _resume(steps, value)
        return step.value


def peek(store: Store, key: str, *, accept: Accept | None = None,
         backoff: float = DEFAULT_BACKOFF) -> bytes | None:
    """The value at ``key`` if one is there (and ``accept``-ed), without claiming or producing
    it; None as well while the store is down (a failure marks it down, as ``produce_once``
    does).

    >>> from cutctx_adapters.stores import MemoryStore
    >>> store = MemoryStore()
    >>> peek(store, "summary:ab12"), produce_once(store, "summary:ab12", lambda: b"text")
    (None, b'text')
    >>> peek(store, "summary:ab12")
    b'text'
    """
    check_key(key)
    if not may_try(store):
        return None
    try:
        value = _accepted(store.get(key), accept)
    except StoreUnavailable:
        _down(store, check_seconds(backoff, "backoff"))
        return None
    answered(store)
    return value


def _call(store: Store, call: _StoreCall) -> object:
    """Make a store call the protocol asked for."""
    if isinstance(call, _Get):
        return store.get(call.key)
    if isinstance(call, _Put):
        store.put(call.key, call.value, ttl=call.ttl)
    elif isinstance(call, _Claim):
        return store.claim(call.key, lease=call.lease)
    else:
        store.release(call.key, call.token)
    return None


async def _acall(store: Store, call: _StoreCall) -> object:
    """``_call``, awaiting the store's async twin when it has them."""
    if not isinstance(store, AsyncStore):
        return _call(store, call)
    if isinstance(call, _Get):
        return await store.aget(call.key)
    if isinstance(call, _Put):
        await store.aput(call.key, call.value, ttl=call.ttl)
    elif isinstance(call, _Claim):
        return await store.aclaim(call.key, lease=call.lease)
    else:
        await store.arelease(call.key, call.token)
    return None


def _bytes(value: object) -> bytes | None:
    return value if isinstance(value, bytes) else None


def _token(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _resume(steps: _Steps, value: object = None, *,
            error: BaseException | None = None) -> _Wait | _Produce | _StoreCall | _Done:
    """Send ``value`` (or throw ``error``) into the protocol; its next step, or its result."""
    try:
        return steps.send(value) if error is None else steps.throw(error)
    except StopIteration as done:
        return _Done(done.value)


def _steps(store: Store, key: str, *, lease: float, timeout: float, poll: float,
           ttl: float | None, accept: Accept | None, backoff: float) -> _Steps:
    """The protocol; a store call failing with StoreUnavailable switches to producing locally,
    as does a store that is down (see ``_outages``)."""
    check_key(key)
    lease = check_seconds(lease, "lease")
    timeout = check_seconds(timeout, "timeout")
    poll = check_seconds(poll, "poll")
    ttl = check_optional_seconds(ttl, "ttl")
    backoff = check_seconds(backoff, "backoff")
    if not may_try(store):
        return _checked((yield _PRODUCE))
    deadline = time.monotonic() + timeout
    token: str | None = None
    value: bytes | None = None
    failure = False
    try:
        while token is None:
            value = _accepted(_bytes((yield _Get(key))), accept)
            answered(store)
            if value is not None:
                return value
            token = _token((yield _Claim(key, lease)))
            if token is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _timed_out(store, key, timeout)
                yield _Wait(min(poll, remaining))
        # The last owner may have stored the value and released since our get.
        value = _accepted(_bytes((yield _Get(key))), accept)
    except StoreUnavailable:
        _down(store, backoff)
        failure = True
    if failure:  # the store failed: release what we hold, then produce locally (outside the
        if token is not None:  # handler, so an error from produce is not chained to it)
            yield from _release_quietly(store, key, token, backoff)
        return _checked((yield _PRODUCE))
    assert token is not None
    if value is not None:
        yield from _release_quietly(store, key, token, backoff)
        return value
    return (yield from _produce_as_owner(store, key, token, ttl, accept, backoff))


def _produce_as_owner(store: Store, key: str, token: str, ttl: float | None,
                      accept: Accept | None, backoff: float) -> _Steps:
    """Produce, store the value (replacing one refused), release the claim (whatever happens);
    store failures only warn."""
    try:
        value = _checked((yield _PRODUCE))
        kept = _accepted(value, accept)
        if kept is not None:
            yield from _quietly(store, _Put(key, kept, ttl), backoff)
    except GeneratorExit:  # closed from outside: no step may be asked for any more
        raise
    except BaseException:
        yield from _release_quietly(store, key, token, backoff)
        raise
    yield from _release_quietly(store, key, token, backoff)
    return value


def _accepted(value: bytes | None, accept: Accept | None) -> bytes | None:
    """``value``, or None when there is none or ``accept`` refuses it."""
    return value if value is not None and (accept is None or accept(value)) else None


def _quietly(store: Store, call: _StoreCall, backoff: float) -> Generator[_Step, object, None]:
    try:
        yield call
    except StoreUnavailable:
        _down(store, backoff)


def _release_quietly(store: Store, key: str, token: str,
                     backoff: float) -> Generator[_Step, object, None]:
    yield from _quietly(store, _Release(key, token), backoff)


def _checked(value: object) -> bytes | None:
    """What ``produce`` returned: bytes or None (anything else is refused)."""
    return None if value is None else check_value(value)


def _timed_out(store: Store, key: str, timeout: float) -> StoreTimeout:
    key_hash = hashlib.sha256(key.encode()).hexdigest()[:16]
    return StoreTimeout(
        f"waited {timeout:g} s for another worker's value {key_hash} in {store!r}",
        {"store": repr(store), "key_hash": key_hash, "timeout": timeout})


def _down(store: Store, backoff: float) -> None:
    """Mark ``store`` down; one StoreWarning as an outage starts (every failure of a store that
    takes no weak reference)."""
    if failed(store, backoff):
        warnings.warn(f"{store!r} is unavailable: computing without the shared store for "
                      f"{backoff:g} s, then trying it again", StoreWarning, stacklevel=2)


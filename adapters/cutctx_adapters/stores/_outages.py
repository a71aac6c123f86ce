"""Stores that failed: down for a back-off, probed after it, one ``StoreWarning`` an outage.

A store that raises ``StoreUnavailable`` is marked down, and while it is, ``produce_once``
computes locally without calling it (a dead server costs its timeout once, not once a value).
When the back-off is over the store is probed in the background (a ``get``: in a thread, or a
task of the running event loop for a store with async twins), every caller still computing
locally meanwhile, so a server that is still dead never makes a caller wait again; a failed
probe doubles the back-off (up to ``MAX_BACKOFF``), an answer ends the outage, so the next
failure warns again. Kept per store object, for every thread and task.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from ._base import AsyncStore
from .prefixed import PrefixedStore

__all__ = ["DEFAULT_BACKOFF", "MAX_BACKOFF", "PROBE_KEY", "answered", "failed", "is_down",
           "may_try"]

DEFAULT_BACKOFF = 5.0
"""Seconds a store that just failed is left alone before it is tried again."""
MAX_BACKOFF = 60.0
"""The longest back-off, reached by doubling while the store keeps failing."""
PROBE_KEY = "cutctx:probe"
"""What a probe reads: a key no value is stored under (any answer means the store is back)."""


@dataclass(slots=True)
class _Outage:
    retry_at: float
    """``time.monotonic()`` from which the store may be tried again."""
    backoff: float
    probe: object = None
    """The probe running, if one is (its thread or task), else None."""


_outages: weakref.WeakKeyDictionary[object, _Outage] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def is_down(store: object) -> bool:
    """Whether ``store`` is marked down now (it failed, and its back-off is not over)."""
    if not _outages:
        return False
    with _lock:
        outage = _outage_of(store)
        return outage is not None and time.monotonic() < outage.retry_at


def may_try(store: object) -> bool:
    """Whether to call ``store`` now: it is up. A store that is down is not called; once its
    back-off is over, a probe starts in the background (one at a time)."""
    if not _outages:  # the common case, without the lock
        return True
    with _lock:
        outage = _outage_of(store)
        if outage is None:
            return True
        if outage.probe is None and time.monotonic() >= outage.retry_at:
            outage.probe = _probing(store)
        return False


def _probing(store: Any) -> object:
    """Start a probe of ``store``: a task of the running loop for a store with async twins
    (whose sync calls may not work), else a daemon thread."""
    if isinstance(store, AsyncStore):
        with contextlib.suppress(RuntimeError):  # no loop running here: a thread then
            return asyncio.get_running_loop().create_task(_aprobe(store))
    thread = threading.Thread(target=_probe, args=(store,), name="cutctx-store-probe",
                              daemon=True)
    thread.start()
    return thread


def _probe(store: Any) -> None:
    try:
        store.get(PROBE_KEY)
    except Exception:  # StoreUnavailable, or anything else: still down (never raised into a
        _probed(store, answered_now=False)  # thread's void)
    else:
        _probed(store, answered_now=True)


async def _aprobe(store: Any) -> None:
    try:
        await store.aget(PROBE_KEY)
    except Exception:  # StoreUnavailable, or anything else: still down
        _probed(store, answered_now=False)
    else:
        _probed(store, answered_now=True)


def _probed(store: object, *, answered_now: bool) -> None:
    """A probe's outcome: the outage ends, or goes on with a doubled back-off."""
    if answered_now:
        answered(store)
        return
    now = time.monotonic()
    with _lock:
        outage = _outage_of(store)
        if outage is not None:
            outage.backoff = min(2 * outage.backoff, MAX_BACKOFF)
            outage.retry_at = now + outage.backoff
            outage.probe = None


def failed(store: object, backoff: float) -> bool:
    """Mark ``store`` down; True when this starts an outage (the one time to warn). A store that
    takes no weak reference is never marked, so every failure of it is a new outage."""
    now = time.monotonic()
    with _lock:
        outage = _outage_of(store)
        if outage is not None:
            outage.backoff = min(2 * outage.backoff, max(MAX_BACKOFF, backoff))
            outage.retry_at = now + outage.backoff
            return False
        with contextlib.suppress(TypeError):  # a store that takes no weak reference
            _outages[_owner(store)] = _Outage(now + backoff, backoff)
        return True


def answered(store: object) -> None:
    """``store`` answered a call: its outage, if it had one, is over."""
    if not _outages:
        return
    with _lock, contextlib.suppress(TypeError):
        _outages.pop(_owner(store), None)


def _owner(store: object) -> object:
    """The store whose outage ``store`` shares: the viewed store, through any views."""
    while isinstance(store, PrefixedStore):
        store = store.store
    return store


def _outage_of(store: object) -> _Outage | None:
    try:
        return _outages.get(_owner(store))
    except TypeError:  # a store that takes no weak reference
        return None

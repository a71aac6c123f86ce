"""Stores that failed: down for a back-off, tried again after it, one ``StoreWarning`` an outage.

A store that raises ``StoreUnavailable`` is marked down, and while it is, ``produce_once``
computes locally without calling it (a dead server costs its timeout once, not once a value).
When the back-off is over one caller tries the store again, the others still computing locally
until it answers; a failure doubles the back-off (up to ``MAX_BACKOFF``), an answer ends the
outage, so the next failure warns again. Kept per store object, for every thread and task.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from dataclasses import dataclass

from .prefixed import PrefixedStore

__all__ = ["DEFAULT_BACKOFF", "MAX_BACKOFF", "answered", "failed", "is_down", "may_try"]

DEFAULT_BACKOFF = 5.0
"""Seconds a store that just failed is left alone before it is tried again."""
MAX_BACKOFF = 60.0
"""The longest back-off, reached by doubling while the store keeps failing."""


@dataclass(slots=True)
class _Outage:
    retry_at: float
    """``time.monotonic()`` from which the store may be tried again."""
    backoff: float


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
    """Whether to call ``store`` now: it is up, or its back-off is over and this caller is the
    one to try it (the back-off starts again for the others meanwhile)."""
    if not _outages:  # the common case, without the lock
        return True
    with _lock:
        outage = _outage_of(store)
        if outage is None:
            return True
        now = time.monotonic()
        if now < outage.retry_at:
            return False
        outage.retry_at = now + outage.backoff
        return True


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

"""``PrefixedStore``: one store seen under a key prefix, so tenants sharing it never meet.

Every key is the prefix plus the caller's key, so two views with different prefixes share no
value and no claim. The view is the store itself for outages: a backend that goes down is
marked down once, for every view of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cutctx import ValidationError

from ._base import AsyncStore, Store, check_key, unavailable

__all__ = ["PrefixedStore"]

_PREFIX = re.compile(r"[A-Za-z0-9:._-]{1,100}")


class PrefixedStore:
    """``store`` with ``prefix`` before every key (1–100 characters of the key alphabet; the
    whole key must still be at most 200). ``close`` closes the view, not ``store``.

    >>> from cutctx_adapters.stores import MemoryStore
    >>> shared = MemoryStore()
    >>> PrefixedStore(shared, "t1:").put("summary:ab", b"x")
    >>> PrefixedStore(shared, "t2:").get("summary:ab") is None, shared.get("t1:summary:ab")
    (True, b'x')
    """

    def __init__(self, store: Store, prefix: str) -> None:
        if not isinstance(store, Store):
            raise ValidationError("PrefixedStore needs a store (get, put, claim, ...)",
                                  {"rule": "store_type", "type": type(store).__name__})
        if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
            raise ValidationError("prefix must be 1 to 100 characters of A-Z a-z 0-9 : . _ -",
                                  {"rule": "store_prefix"})
        self.store = store
        self.prefix = prefix
        self._closed = False

    def __repr__(self) -> str:
        return f"PrefixedStore({self.store!r})"

    def _key(self, operation: str, key: str) -> str:
        if self._closed:
            raise unavailable(self, operation, None)
        return check_key(self.prefix + check_key(key))

    def get(self, key: str) -> bytes | None:
        return self.store.get(self._key("get", key))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return self.store.get_many([self._key("get_many", key) for key in keys])

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.store.put(self._key("put", key), value, ttl=ttl)

    def claim(self, key: str, *, lease: float) -> str | None:
        return self.store.claim(self._key("claim", key), lease=lease)

    def release(self, key: str, token: str) -> None:
        self.store.release(self._key("release", key), token)

    async def aget(self, key: str) -> bytes | None:
        name = self._key("get", key)
        return await self.store.aget(name) if isinstance(self.store, AsyncStore) else (
            self.store.get(name))

    async def aget_many(self, keys: Sequence[str]) -> list[bytes | None]:
        names = [self._key("get_many", key) for key in keys]
        return await self.store.aget_many(names) if isinstance(self.store, AsyncStore) else (
            self.store.get_many(names))

    async def aput(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        name = self._key("put", key)
        if isinstance(self.store, AsyncStore):
            await self.store.aput(name, value, ttl=ttl)
        else:
            self.store.put(name, value, ttl=ttl)

    async def aclaim(self, key: str, *, lease: float) -> str | None:
        name = self._key("claim", key)
        return await self.store.aclaim(name, lease=lease) if isinstance(
            self.store, AsyncStore) else self.store.claim(name, lease=lease)

    async def arelease(self, key: str, token: str) -> None:
        name = self._key("release", key)
        if isinstance(self.store, AsyncStore):
            await self.store.arelease(name, token)
        else:
            self.store.release(name, token)

    def close(self) -> None:
        """Refuse later calls through this view; the store itself stays open."""
        self._closed = True

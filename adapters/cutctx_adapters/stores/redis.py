"""``RedisStore``: values and claims in Redis, shared by every machine that reaches it.

Needs ``cutctx[redis]`` (redis-py), imported when a store is made, so ``cutctx_adapters.stores``
imports without it. Values live under ``<prefix>v:<key>``, claims under ``<prefix>c:<key>``.
Over a sync ``redis.Redis`` the async twins run in a worker thread; over a
``redis.asyncio.Redis`` they await it (and the sync calls refuse: there is no loop to run them).
"""

from __future__ import annotations

import asyncio
import math
import re
import secrets
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from cutctx import ValidationError

from .._requires import require
from . import _base

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["RedisStore"]

_T = TypeVar("_T")
_PREFIX = re.compile(r"[A-Za-z0-9:._-]{0,100}")
# Delete the claim only while it still holds the caller's token: one atomic step on the server.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
_ASYNC_ONLY = "async client: call aget/aput/... (a session's aprepare does)"


class RedisStore:
    """A store over a redis-py client the caller built (``decode_responses=False``): a sync
    ``redis.Redis``, or a ``redis.asyncio.Redis`` for async code (a proxy, ``aprepare``).

    Every value expires: ``ttl`` seconds unless ``put`` gives one. Values longer than
    ``max_value_bytes`` are silently not stored (``get`` then finds nothing, and the caller
    recomputes). A claim is ``SET NX PX`` with a random token; ``release`` compares the token and
    deletes in one Lua script. ``close`` marks the store closed; the client stays the caller's.
    """

    def __init__(self, client: redis.Redis | redis.asyncio.Redis, *, prefix: str = "cutctx:",
                 ttl: float = 7 * 24 * 3600.0, max_value_bytes: int = 8 * 1024 * 1024) -> None:
        require("redis", "redis")
        import redis as redis_py
        import redis.asyncio as redis_async

        self.is_async = isinstance(client, redis_async.Redis)
        if not self.is_async and not isinstance(client, redis_py.Redis):
            raise ValidationError("RedisStore needs a redis.Redis or redis.asyncio.Redis client",
                                  {"rule": "redis_client", "type": type(client).__name__})
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValidationError("RedisStore needs a client made with decode_responses=False: "
                                  "values are bytes", {"rule": "decode_responses"})
        if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
            raise ValidationError("prefix must be 0 to 100 characters of A-Z a-z 0-9 : . _ -",
                                  {"rule": "store_prefix"})
        self.prefix = prefix
        self.ttl = _base.check_seconds(ttl, "ttl")
        self.max_value_bytes = _base.check_limit(max_value_bytes, "max_value_bytes")
        self._client: Any = client
        self._release = client.register_script(_RELEASE)
        self._failure: type[Exception] = redis_py.RedisError
        self._closed = threading.Event()

    def __repr__(self) -> str:
        return (f"RedisStore(prefix={self.prefix!r}, ttl={self.ttl}, "
                f"max_value_bytes={self.max_value_bytes})")

    # --- what each call sends: one recipe, run by the sync calls or awaited by the twins ----

    def _get(self, key: str) -> Callable[[], Any]:
        name = self._value_name(_base.check_key(key))
        return lambda: self._client.get(name)

    def _get_many(self, keys: Sequence[str]) -> Callable[[], Any] | None:
        names = [self._value_name(key) for key in _base.check_keys(keys)]
        return (lambda: self._client.mget(names)) if names else None

    def _put(self, key: str, value: bytes, ttl: float | None) -> Callable[[], Any] | None:
        name = self._value_name(_base.check_key(key))
        _base.check_value(value)
        lifetime = _base.check_optional_seconds(ttl, "ttl") or self.ttl
        if len(value) > self.max_value_bytes:
            return None
        return lambda: self._client.set(name, value, px=_milliseconds(lifetime))

    def _claim(self, key: str, lease: float, token: str) -> Callable[[], Any]:
        name = self._claim_name(_base.check_key(key))
        seconds = _base.check_seconds(lease, "lease")
        return lambda: self._client.set(name, token, nx=True, px=_milliseconds(seconds))

    def _released(self, key: str, token: str) -> Callable[[], Any]:
        name = self._claim_name(_base.check_key(key))
        return lambda: self._release(keys=[name], args=[token])

    # --- the sync calls -----------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        return _bytes_or_none(self._call("get", self._get(key)))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        send = self._get_many(keys)
        return [] if send is None else [_bytes_or_none(v) for v in self._call("get_many", send)]

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store ``value`` for ``ttl`` (or the store's) seconds; skip it if too long."""
        send = self._put(key, value, ttl)
        if send is not None:
            self._call("put", send)

    def claim(self, key: str, *, lease: float) -> str | None:
        token = secrets.token_hex(16)
        return token if self._call("claim", self._claim(key, lease, token)) else None

    def release(self, key: str, token: str) -> None:
        self._call("release", self._released(key, token))

    # --- the async twins ----------------------------------------------------------------------

    async def aget(self, key: str) -> bytes | None:
        return _bytes_or_none(await self._acall("get", self._get(key)))

    async def aget_many(self, keys: Sequence[str]) -> list[bytes | None]:
        send = self._get_many(keys)
        if send is None:
            return []
        return [_bytes_or_none(v) for v in await self._acall("get_many", send)]

    async def aput(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        send = self._put(key, value, ttl)
        if send is not None:
            await self._acall("put", send)

    async def aclaim(self, key: str, *, lease: float) -> str | None:
        token = secrets.token_hex(16)
        return token if await self._acall("claim", self._claim(key, lease, token)) else None

    async def arelease(self, key: str, token: str) -> None:
        await self._acall("release", self._released(key, token))

    def close(self) -> None:
        """Refuse later calls (``StoreUnavailable``); the caller's client is left open."""
        self._closed.set()

    def _value_name(self, key: str) -> str:
        return f"{self.prefix}v:{key}"

    def _claim_name(self, key: str) -> str:
        return f"{self.prefix}c:{key}"

    def _call(self, operation: str, send: Callable[[], _T]) -> _T:
        if self._closed.is_set():
            raise _base.unavailable(self, operation, None)
        if self.is_async:
            raise _base.unavailable(self, operation, _ASYNC_ONLY)
        try:
            return send()
        except self._failure as exc:
            raise _base.unavailable(self, operation, exc) from exc

    async def _acall(self, operation: str, send: Callable[[], Any]) -> Any:
        if not self.is_async:
            return await asyncio.to_thread(self._call, operation, send)
        if self._closed.is_set():
            raise _base.unavailable(self, operation, None)
        try:
            sent: Awaitable[Any] = send()
            return await sent
        except self._failure as exc:
            raise _base.unavailable(self, operation, exc) from exc


def _milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def _bytes_or_none(value: object) -> bytes | None:
    return value if isinstance(value, bytes) else None

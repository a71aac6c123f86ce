"""``RedisStore``: values and claims in Redis, shared by every machine that reaches it.

Needs ``cutctx[redis]`` (redis-py), imported when a store is made, so ``cutctx_adapters.stores``
imports without it. Values live under ``<prefix>v:<key>``, claims under ``<prefix>c:<key>``.
"""

from __future__ import annotations

import math
import re
import secrets
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from cutctx import ValidationError

from .._requires import require
from ._base import (
    check_key,
    check_keys,
    check_limit,
    check_optional_seconds,
    check_seconds,
    check_value,
    unavailable,
)

if TYPE_CHECKING:
    import redis

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


class RedisStore:
    """A store over a sync redis-py client the caller built (``decode_responses=False``).

    Every value expires: ``ttl`` seconds unless ``put`` gives one. Values longer than
    ``max_value_bytes`` are silently not stored (``get`` then finds nothing, and the caller
    recomputes). A claim is ``SET NX PX`` with a random token; ``release`` compares the token and
    deletes in one Lua script. ``close`` marks the store closed; the client stays the caller's.
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "cutctx:",
                 ttl: float = 7 * 24 * 3600.0, max_value_bytes: int = 8 * 1024 * 1024) -> None:
        require("redis", "redis")
        import redis as redis_py

        if not isinstance(client, redis_py.Redis):
            raise ValidationError("RedisStore needs a sync redis.Redis client",
                                  {"rule": "redis_client", "type": type(client).__name__})
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValidationError("RedisStore needs a client made with decode_responses=False: "
                                  "values are bytes", {"rule": "decode_responses"})
        if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
            raise ValidationError("prefix must be 0 to 100 characters of A-Z a-z 0-9 : . _ -",
                                  {"rule": "store_prefix"})
        self.prefix = prefix
        self.ttl = check_seconds(ttl, "ttl")
        self.max_value_bytes = check_limit(max_value_bytes, "max_value_bytes")
        self._client = client
        self._release = client.register_script(_RELEASE)
        self._failure: type[Exception] = redis_py.RedisError
        self._closed = threading.Event()

    def __repr__(self) -> str:
        return (f"RedisStore(prefix={self.prefix!r}, ttl={self.ttl}, "
                f"max_value_bytes={self.max_value_bytes})")

    def get(self, key: str) -> bytes | None:
        name = self._value_name(check_key(key))
        return _bytes_or_none(self._call("get", lambda: self._client.get(name)))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        names = [self._value_name(key) for key in check_keys(keys)]
        if not names:
            return []
        values = self._call("get_many", lambda: self._client.mget(names))
        return [_bytes_or_none(value) for value in values]

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store ``value`` for ``ttl`` (or the store's) seconds; skip it if too long."""
        name = self._value_name(check_key(key))
        check_value(value)
        lifetime = check_optional_seconds(ttl, "ttl") or self.ttl
        if len(value) > self.max_value_bytes:
            return
        self._call("put", lambda: self._client.set(name, value, px=_milliseconds(lifetime)))

    def claim(self, key: str, *, lease: float) -> str | None:
        name = self._claim_name(check_key(key))
        seconds = check_seconds(lease, "lease")
        token = secrets.token_hex(16)
        taken = self._call("claim", lambda: self._client.set(
            name, token, nx=True, px=_milliseconds(seconds)))
        return token if taken else None

    def release(self, key: str, token: str) -> None:
        name = self._claim_name(check_key(key))
        self._call("release", lambda: self._release(keys=[name], args=[token]))

    def close(self) -> None:
        """Refuse later calls (``StoreUnavailable``); the caller's client is left open."""
        self._closed.set()

    def _value_name(self, key: str) -> str:
        return f"{self.prefix}v:{key}"

    def _claim_name(self, key: str) -> str:
        return f"{self.prefix}c:{key}"

    def _call(self, operation: str, call: Callable[[], _T]) -> _T:
        if self._closed.is_set():
            raise unavailable(self, operation, None)
        try:
            return call()
        except self._failure as exc:
            raise unavailable(self, operation, exc) from exc


def _milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def _bytes_or_none(value: object) -> bytes | None:
    return value if isinstance(value, bytes) else None

"""Fixtures the store and session-store tests share: a real redis-server (never a fake)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._support.redis_server import REDIS_SERVER, RedisServer


def _needs_redis() -> None:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not on PATH (Debian: apt-get install redis-server)")
    pytest.importorskip("redis", reason="redis-py is not installed (pip install 'cutctx[redis]')")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server for the session, on a free loopback port."""
    _needs_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, free to be killed."""
    _needs_redis()
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()

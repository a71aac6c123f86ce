"""Helpers for the multi-process store tests: stores opened from plain values (so ``spawn``
workers can open them), a racing worker, and an SQLite file held locked."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from cutctx_adapters.stores import RedisStore, SQLiteStore, Store, produce_once
from tests._support.redis_server import redis_client


def open_store(kind: str, where: str, **options: Any) -> Store:
    """``where`` is the SQLite file, or the Redis port and prefix as ``port/prefix``;
    ``options`` are the store's own keyword arguments. The Redis client fails fast."""
    if kind == "sqlite":
        return SQLiteStore(where, **options)
    port, prefix = where.split("/")
    return RedisStore(redis_client(int(port)), prefix=prefix, **options)


def race(kind: str, where: str, key: str, producers: str, start: Any, results: Any) -> None:
    """Wait for every worker, then ``produce_once``; note each production as a line in a file."""
    store = open_store(kind, where)

    def produce() -> bytes:
        with open(producers, "a", encoding="utf-8") as marks:
            marks.write(f"{os.getpid()}\n")
        time.sleep(0.3)  # long enough for the others to find the claim taken
        return f"made by {os.getpid()}".encode()

    start.wait()
    try:
        results.put(produce_once(store, key, produce, poll=0.02, timeout=30))
    finally:
        store.close()


class locked_sqlite:
    """Hold an exclusive transaction on an SQLite file from another connection (writers wait
    for it; in WAL mode readers do not)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> None:
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("BEGIN EXCLUSIVE")

    def __exit__(self, *exc: object) -> None:
        assert self.db is not None
        self.db.execute("ROLLBACK")
        self.db.close()

"""Worker processes for the multi-process store tests (importable, so ``spawn`` can run them)."""

from __future__ import annotations

import os
import time
from typing import Any

from cutctx_adapters.stores import RedisStore, SQLiteStore, Store, produce_once


def open_store(kind: str, where: str) -> Store:
    """``where`` is the SQLite file, or the Redis port (and prefix) as ``port/prefix``."""
    if kind == "sqlite":
        return SQLiteStore(where)
    import redis

    port, prefix = where.split("/")
    return RedisStore(redis.Redis(host="127.0.0.1", port=int(port)), prefix=prefix)


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

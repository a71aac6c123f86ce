"""Stores that several sessions share (threads, processes, machines): summaries and cached state.

Every store follows the small sync ``Store`` protocol: bytes values keyed by content hashes (no
key reveals content), TTLs, and token-owned claims. ``produce_once`` makes one worker compute a
value while the others wait for it. ``RedisStore`` needs ``cutctx[redis]``.
"""

from ..errors import StoreTimeout, StoreUnavailable
from ._base import Store, StoreWarning
from ._produce import aproduce_once, peek, produce_once
from .memory import MemoryStore
from .redis import RedisStore
from .sqlite import SQLiteStore

__all__ = [
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "StoreTimeout",
    "StoreUnavailable",
    "StoreWarning",
    "aproduce_once",
    "peek",
    "produce_once",
]

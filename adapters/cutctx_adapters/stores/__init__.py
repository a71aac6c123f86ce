"""Stores that several sessions share (threads, processes, machines): summaries and cached state.

Every store follows the small sync ``Store`` protocol: bytes values keyed by content hashes (no
key reveals content), TTLs, and token-owned claims. ``produce_once`` makes one worker compute a
value while the others wait for it. ``RedisStore`` needs ``cutctx[redis]``. Each store also has
async twins (``AsyncStore``: ``aget``, ``aput``, ...) that ``aproduce_once`` awaits;
``PrefixedStore`` shows one store under a key prefix (a tenant's); ``is_down`` says whether a
store is in an outage's back-off.
"""

from ..errors import StoreTimeout, StoreUnavailable
from ._base import AsyncStore, Store, StoreWarning
from ._outages import is_down
from ._produce import aproduce_once, peek, produce_once
from .memory import MemoryStore
from .prefixed import PrefixedStore
from .redis import RedisStore
from .sqlite import SQLiteStore

__all__ = [
    "AsyncStore",
    "MemoryStore",
    "PrefixedStore",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "StoreTimeout",
    "StoreUnavailable",
    "StoreWarning",
    "aproduce_once",
    "is_down",
    "peek",
    "produce_once",
]

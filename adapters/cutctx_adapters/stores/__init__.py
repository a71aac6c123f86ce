"""Stores that several sessions share (threads, processes, machines): summaries and cached state.

Every store follows the small sync ``Store`` protocol: bytes values keyed by content hashes (no
key reveals content), TTLs, and token-owned claims. ``produce_once`` makes one worker compute a
value while the others wait for it. ``RedisStore`` needs ``cutctx[redis]``. Each store also has
async twins (``AsyncStore``: ``aget``, ``aput``, ...) that ``aproduce_once`` awaits;
``PrefixedStore`` shows one store under a key prefix (a tenant's); ``is_down`` says whether a
store is in an outage's back-off; ``get_quietly``/``put_quietly`` (and async twins) read and
write state that is only an optimization, carrying on without a store that fails.
"""

from ..errors import StoreTimeout, StoreUnavailable
from ._base import AsyncStore, Store, StoreWarning
from ._outages import is_down
from ._produce import aproduce_once, peek, produce_once
from ._quiet import aget_quietly, aput_quietly, get_quietly, put_quietly
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
    "aget_quietly",
    "aproduce_once",
    "aput_quietly",
    "get_quietly",
    "is_down",
    "peek",
    "produce_once",
    "put_quietly",
]

"""The conversations the proxy holds: one sticky session and its lineages per key.

Each conversation has its own ``CompactionSession`` (the wrapped clients' sessions, with the
proxy's settings), whose summaries live in the shared store under its tenant's prefix, so two
tenants never share a summary, a claim or a view. The least recently used conversations are
dropped past ``limit``: what a dropped one held is derived again from the next request's
history (the same bytes, paid once more).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from .. import CompactionSession, CompactionSettings, HistoryFormat
from ..stores import PrefixedStore, Store
from ._keys import ConversationKey
from ._lineages import Lineages

__all__ = ["Conversation", "Conversations"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation key's session and lineages."""

    key: ConversationKey
    session: CompactionSession
    lineages: Lineages


class Conversations:
    """Conversations by (tenant, format, key), at most ``limit`` of them."""

    def __init__(self, settings: CompactionSettings, store: Store, *, limit: int = 1024,
                 lineages: int = 8) -> None:
        self.settings = settings
        self.store = store
        self.limit = limit
        self.lineage_limit = lineages
        self._held: OrderedDict[tuple[str, str, str], Conversation] = OrderedDict()
        self._tenants: dict[str, CompactionSettings] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def get(self, key: ConversationKey, format: HistoryFormat) -> Conversation:
        """The conversation of ``key`` for ``format`` (made on first use)."""
        slot = (key.tenant, format.name, key.digest)
        with self._lock:
            found = self._held.get(slot)
            if found is not None:
                self._held.move_to_end(slot)
                return found
            settings = self.tenant_settings(key.tenant)
            found = Conversation(key, CompactionSession(format, settings=settings),
                                 Lineages(key.label, self.lineage_limit))
            self._held[slot] = found
            while len(self._held) > self.limit:
                self._held.popitem(last=False)
            return found

    def tenant_settings(self, tenant: str) -> CompactionSettings:
        """The settings a tenant's sessions run with: the proxy's, its store under the
        tenant's prefix."""
        found = self._tenants.get(tenant)
        if found is None:
            found = self.settings.replace(store=PrefixedStore(self.store, f"t.{tenant}:"))
            if len(self._tenants) >= 4 * self.limit:
                self._tenants.clear()
            self._tenants[tenant] = found
        return found

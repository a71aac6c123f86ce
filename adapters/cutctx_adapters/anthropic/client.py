"""``CompactingAnthropic``: an ``Anthropic``/``AsyncAnthropic`` client that compacts first.

``client.messages.create`` (``stream=True`` too) and ``client.messages.stream`` keep their
signatures and return types; ``messages.count_tokens`` and every other attribute pass through.
"""

from __future__ import annotations

from typing import Any

from .._wrapper import CompactingClient, ReportCallback
from . import messages

__all__ = ["CompactingAnthropic"]

_METHODS = ("create", "stream")


class CompactingAnthropic(CompactingClient):
    """Wraps an ``Anthropic`` or ``AsyncAnthropic`` client; settings as ``CompactingOpenAI``.

    Budget = context window − ``max_tokens`` − tool definitions; same hysteresis, sticky
    views and report callback as the OpenAI wrapper.
    """

    def __init__(self, client: Any, *, on_compaction: ReportCallback | None = None,
                 **settings: Any) -> None:
        super().__init__(client, (messages.FORMAT,), on_compaction=on_compaction, **settings)

    @property
    def messages(self) -> Any:
        """``messages`` whose ``create``/``stream`` compact ``system`` + ``messages`` first."""
        return self._compacting(self._client.messages, messages.FORMAT.name, _METHODS)

"""``CompactingAnthropic``: an ``Anthropic``/``AsyncAnthropic`` client that compacts first.

``client.messages.create`` (``stream=True`` too), ``.stream`` and ``.parse`` keep their
signatures and return types, and so do the same three under ``client.beta.messages`` (beta
requests that continue a server-held ``thread`` are sent untouched). ``count_tokens``, batches,
``beta.messages.tool_runner`` (it loops on its own, out of the wrapper's reach) and every other
attribute pass through.
"""

from __future__ import annotations

from typing import Any

from .._wrapper import CompactingClient, Namespace, ReportCallback
from . import messages

__all__ = ["CompactingAnthropic"]

_METHODS = ("create", "stream", "parse")


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
        """``messages`` whose ``create``/``stream``/``parse`` compact ``system`` + ``messages``
        first."""
        return self._compacting(self._client.messages, messages.FORMAT.name, _METHODS)

    @property
    def beta(self) -> Any:
        """``beta`` whose ``messages`` compact like ``messages`` (same session and views)."""
        real = self._client.beta
        return Namespace(real, messages=self._compacting(real.messages, messages.FORMAT.name,
                                                         _METHODS))

"""``CompactingOpenAI``: an ``OpenAI``/``AsyncOpenAI`` client whose history calls compact first.

``client.chat.completions.create/parse/stream`` and ``client.responses.create/parse/stream``
keep their signatures and return types; every other attribute is the wrapped client's own.
"""

from __future__ import annotations

from typing import Any

from .._wrapper import CompactingClient, Namespace, ReportCallback
from . import chat, responses

__all__ = ["CompactingOpenAI"]

_METHODS = ("create", "parse", "stream")


class CompactingOpenAI(CompactingClient):
    """Wraps an ``OpenAI`` or ``AsyncOpenAI`` client; compaction settings are keywords.

    Settings (see ``CompactionSession``): ``window``/``windows`` (context window, else the
    built-in table), ``trigger`` and ``target`` (fractions of the prompt budget, or tokens),
    ``reserve`` (reply allowance when the request sets none), ``policy``, ``summarizer``,
    ``keep_recent``, ``pin``, ``sticky`` (reuse the previous view while a history only grows).
    A request with ``previous_response_id`` or ``conversation`` is passed through untouched.
    """

    def __init__(self, client: Any, *, on_compaction: ReportCallback | None = None,
                 **settings: Any) -> None:
        super().__init__(client, (chat.FORMAT, responses.FORMAT), on_compaction=on_compaction,
                         **settings)

    @property
    def chat(self) -> Any:
        """``chat`` whose ``completions`` compact ``messages`` before sending."""
        real = self._client.chat
        return Namespace(real, completions=self._compacting(real.completions, chat.FORMAT.name,
                                                            _METHODS))

    @property
    def responses(self) -> Any:
        """``responses`` whose calls compact ``input`` (and ``instructions``) before sending."""
        return self._compacting(self._client.responses, responses.FORMAT.name, _METHODS)

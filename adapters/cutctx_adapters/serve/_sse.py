"""Server-sent events read from bytes as they arrive, for the proxy's own copy of a reply.

The bytes themselves are forwarded untouched elsewhere; this only reads them: chunks may split
lines (or a UTF-8 character) anywhere, and lines end in LF, CRLF or CR.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["Event", "EventReader"]

_BREAK = re.compile(r"\r\n|\r(?!$)|\n")
"""A line break: LF, CRLF or CR (not a CR at the very end, which may be half of a CRLF)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event: its ``event:`` name (``message`` when none) and its ``data:`` lines joined."""

    name: str
    data: str


class EventReader:
    """Feed bytes, get the events they complete.

    >>> reader = EventReader()
    >>> reader.feed(b"event: ping\\ndata: {}\\n") + reader.feed(b"\\ndata: [DONE]\\n\\n")
    [Event(name='ping', data='{}'), Event(name='message', data='[DONE]')]
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._name = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes."""
        parts = _BREAK.split(self._pending + self._decoder.decode(chunk))
        # The last part has no line break yet; a CR ending the text may be half of a CRLF.
        self._pending = parts.pop()
        events: list[Event] = []
        for line in parts:
            self._line(line, events)
        return events

    def close(self) -> list[Event]:
        """The events the end of the stream completes (a last line without its newline)."""
        events: list[Event] = []
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        for line in _BREAK.split(rest):
            self._line(line, events)
        self._line("", events)
        return events

    def _line(self, line: str, events: list[Event]) -> None:
        if not line:
            if self._data:
                events.append(Event(self._name or "message", "\n".join(self._data)))
            self._name, self._data = "", []
            return
        if line.startswith(":"):
            return
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)

"""A spinner on the terminal while a command works longer than a second (a long history, a
summarizer over the network): nothing when stderr is not a terminal, nothing for quick runs,
and gone before the command prints anything (``done``)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["DELAY", "done", "progress"]

DELAY = 1.0
"""Seconds of work before the spinner shows."""


class _Spinner:
    """A status line shown by a timer, unless the work is done first."""

    def __init__(self, what: str, stream: TextIO, delay: float) -> None:
        from rich.console import Console  # only here: --help and --version run without rich

        self._status = Console(file=stream, highlight=False).status(what)
        self._lock = threading.Lock()
        self._ended = False
        self.shown = False
        self._timer = threading.Timer(delay, self._show)
        self._timer.daemon = True
        self._timer.start()

    def _show(self) -> None:
        with self._lock:
            if not self._ended:
                self._status.start()
                self.shown = True

    def end(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            self._timer.cancel()
            if self.shown:
                self._status.stop()


_current: _Spinner | None = None


@contextmanager
def progress(what: str, *, stream: TextIO | None = None, delay: float = DELAY
             ) -> Iterator[None]:
    """Show ``what`` with a spinner on ``stream`` (stderr) once the block has run ``delay``
    seconds, if ``stream`` is a terminal, until ``done()`` or the end of the block."""
    global _current
    stream = sys.stderr if stream is None else stream
    if not stream.isatty():
        yield
        return
    spinner = _current = _Spinner(what, stream, delay)
    try:
        yield
    finally:
        spinner.end()
        _current = None


def done() -> None:
    """End the spinner (before printing results), if one runs."""
    if _current is not None:
        _current.end()

"""The CLI's spinner: on a terminal, for work over its delay, gone before results print."""

from __future__ import annotations

import io
import time

from cutctx_adapters.cli._progress import done, progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr does in an interactive shell."""

    def isatty(self) -> bool:
        return True


def test_long_work_shows_a_spinner_on_a_terminal() -> None:
    stream = Terminal()
    with progress("cutctx inspect: working on big.json", stream=stream, delay=0.05):
        time.sleep(0.4)
    assert "cutctx inspect: working on big.json" in stream.getvalue()


def test_quick_work_shows_nothing() -> None:
    stream = Terminal()
    with progress("working", stream=stream, delay=5.0):
        pass
    time.sleep(0.05)
    assert stream.getvalue() == ""


def test_nothing_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with progress("working", stream=stream, delay=0.0):
        time.sleep(0.2)
    assert stream.getvalue() == ""


def test_the_spinner_is_gone_before_results_print() -> None:
    stream = Terminal()
    with progress("working", stream=stream, delay=0.0):
        time.sleep(0.3)
        done()
        written = len(stream.getvalue())
        time.sleep(0.3)
        assert len(stream.getvalue()) == written > 0

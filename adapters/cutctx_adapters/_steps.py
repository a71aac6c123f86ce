"""Driving a flow written as a generator: its I/O-free control flow yields what it needs (a
summary, a store read, a count) and receives the answer, so one flow serves a sync driver and
an async one."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

__all__ = ["advanced", "begun"]

Step = TypeVar("Step")
Answer = TypeVar("Answer")
Result = TypeVar("Result")


def begun(steps: Generator[Step, Any, Result]) -> Step | Result:
    """The flow's first step, or what it returns when it ends before any."""
    return advanced(steps, None)


def advanced(steps: Generator[Step, Answer, Result], answer: Answer) -> Step | Result:
    """The flow's next step, given the answer to the last one, or what it returns when it
    ends."""
    try:
        return steps.send(answer)
    except StopIteration as done:
        result: Result = done.value
        return result

"""Timing helpers shared by the adapter benchmarks: interleaved rounds, CPU time."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Case:
    """One timed figure: ``action(setup())``, the setup untimed (e.g. a fresh estimator)."""

    name: str
    action: Callable[[Any], object]
    setup: Callable[[], Any] = lambda: None
    times: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.times)


def measure(cases: Sequence[Case], rounds: int) -> None:
    """Time every case once per round, interleaved, so load on the machine hits them alike.

    CPU time of this process (all of it single-threaded work, tiktoken's included): on a shared
    machine, wall time mostly measures the other processes."""
    for _ in range(rounds):
        for case in cases:
            argument = case.setup()
            gc.collect()
            start = time.process_time()
            case.action(argument)
            case.times.append(time.process_time() - start)


def strings_of(value: Any) -> list[str]:
    """Every string value inside a message (what the per-message recipe tokenizes)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings_of(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings_of(item)]
    return []

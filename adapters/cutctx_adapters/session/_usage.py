"""What a session learned of its models' bills: a ``Calibration`` per format and model, recorded
from the input each reply reports beside the session's estimate of that request, and shared
through the session's store so every worker counts alike.

A session counts with ``estimator`` (its format's, wrapped to apply the model's factor once it
has one); ``observe``/``aobserve`` record a reading (read the store's record, add the reading,
write it back). A model first seen reads the store once (``load``/``aload``, before a call is
read); after that a worker's own readings bring the store's record back with them. A store that
fails is only passed by.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

from cutctx import TokenEstimator, ValidationError

from .._steps import advanced, begun
from ..counting import Calibration, UsageEstimator, calibration_of, reported_input
from ..history import content_key
from ..planning import given
from ..reports import CallReport
from ..stores import Store, aget_quietly, aput_quietly, get_quietly, put_quietly

__all__ = ["UsageRecords"]

_NAMESPACE = "calibration:"
_TTL = 7 * 24 * 3600.0
"""Seconds a shared record outlives its last reading (a model nobody calls any more)."""
_Steps = Generator[tuple[str, bytes | None], bytes | None, Calibration | None]
"""A reading's store protocol: yields ("get", None) and ("put", value); the get's value is sent
back."""


class UsageRecords:
    """One session's calibrations, keyed by format and model; safe under threads and tasks."""

    def __init__(self, store: Store | None) -> None:
        self._store = store
        self._records: dict[tuple[str, str | None], Calibration] = {}
        self._loaded: set[tuple[str, str | None]] = set()
        self._estimators: dict[tuple[int, float], tuple[TokenEstimator, UsageEstimator]] = {}
        self._lock = threading.Lock()

    def record(self, format: str, model: str | None) -> Calibration | None:
        """What the session knows of ``model``'s bills in ``format`` (None: nothing yet)."""
        return self._records.get((format, model))

    def load(self, format: str, model: Any) -> None:
        """Read the store's record of a model the session has not seen yet (once: later
        readings bring the store's record back with them)."""
        key = self._unseen(format, model)
        if key is not None and self._store is not None:
            self._adopt(key, Calibration.from_bytes(get_quietly(self._store, _store_key(key))))

    async def aload(self, format: str, model: Any) -> None:
        """``load``, awaiting the store."""
        key = self._unseen(format, model)
        if key is not None and self._store is not None:
            self._adopt(key, Calibration.from_bytes(
                await aget_quietly(self._store, _store_key(key))))

    def _unseen(self, format: str, model: Any) -> tuple[str, str | None] | None:
        model = given(model)
        if self._store is None or not (model is None or isinstance(model, str)):
            return None
        key = (format, model)
        with self._lock:
            if key in self._loaded:
                return None
            self._loaded.add(key)
        return key

    def estimator(self, base: TokenEstimator, format: str, model: str | None
                  ) -> TokenEstimator:
        """``base`` with ``model``'s factor applied; ``base`` itself until a reading came. The
        same object while the factor holds, so the session reads on from what it converted."""
        record = self.record(format, model)
        if record is None:
            return base
        with self._lock:
            found = self._estimators.get((id(base), record.factor))
            if found is not None and found[0] is base:
                # counts follow the factor alone: a reading that keeps it (a new ratio, one
                # more observation) is reported, and what was converted is read on from
                found[1].calibration = record
                return found[1]
            if len(self._estimators) >= 64:
                self._estimators.clear()
            made = UsageEstimator(base, record)
            self._estimators[(id(base), record.factor)] = (base, made)
            return made

    def seed(self, estimator: TokenEstimator) -> list[float]:
        """What a sticky view's key adds for a calibrated estimate: its factor (nothing at 1, so
        the views of uncorrected counts keep their keys)."""
        record = calibration_of(estimator)
        return [] if record is None or record.factor == 1.0 else [record.factor]

    def observe(self, report: CallReport, usage: Any, *, exact: bool = False
                ) -> Calibration | None:
        """Record the input ``usage`` reports for the request ``report`` describes (see
        ``CompactionSession.observe_usage``); the record after it, None if nothing was read."""
        steps = self._steps(report, usage, exact)
        step = begun(steps)
        while isinstance(step, tuple):
            kind, value = step
            answer = self._got(report) if kind == "get" else self._put(report, value)
            step = advanced(steps, answer)
        return step

    async def aobserve(self, report: CallReport, usage: Any, *, exact: bool = False
                       ) -> Calibration | None:
        """``observe``, awaiting the store."""
        steps = self._steps(report, usage, exact)
        step = begun(steps)
        while isinstance(step, tuple):
            kind, value = step
            answer = await (self._agot(report) if kind == "get" else self._aput(report, value))
            step = advanced(steps, answer)
        return step

    def _got(self, report: CallReport) -> bytes | None:
        """The model's record in the store (None without one)."""
        store = self._store
        return None if store is None else get_quietly(store, _store_key(_key(report)))

    async def _agot(self, report: CallReport) -> bytes | None:
        store = self._store
        return None if store is None else await aget_quietly(store, _store_key(_key(report)))

    def _put(self, report: CallReport, value: bytes | None) -> bytes | None:
        """Store the model's record; a put answers nothing."""
        if self._store is not None and value is not None:
            put_quietly(self._store, _store_key(_key(report)), value, ttl=_TTL)
        return None

    async def _aput(self, report: CallReport, value: bytes | None) -> bytes | None:
        if self._store is not None and value is not None:
            await aput_quietly(self._store, _store_key(_key(report)), value, ttl=_TTL)
        return None

    def _steps(self, report: CallReport, usage: Any, exact: bool) -> _Steps:
        if not isinstance(report, CallReport):
            raise ValidationError("observe_usage takes the CallReport of the request the usage "
                                  f"is for, got {type(report).__name__}",
                                  {"field": "report", "rule": "report_type"})
        reported = reported_input(usage)
        estimate = report.tokens_sent
        if reported is None or not estimate or report.decision == "not_possible":
            return None
        key = _key(report)
        with self._lock:
            self._loaded.add(key)  # the store is read now
        stored = Calibration.from_bytes((yield ("get", None)))
        with self._lock:
            current = stored or self._records.get(key) or Calibration()
            used = report.calibration.factor if report.calibration is not None else 1.0
            after = current.observed(estimate, reported, used, exact=exact)
            if after.observations:
                self._records[key] = after
        if after != current:
            yield ("put", after.to_bytes())
        return after

    def _adopt(self, key: tuple[str, str | None], stored: Calibration | None) -> None:
        if stored is not None:
            with self._lock:
                self._records[key] = stored


def _key(report: CallReport) -> tuple[str, str | None]:
    return report.format, report.model


def _store_key(key: tuple[str, str | None]) -> str:
    """A record's store key: a hash of the format and model."""
    return _NAMESPACE + content_key(list(key))

"""Counts that follow the bill: a model's estimates corrected by the input its provider reports.

Each reply reports the input it was billed for (``usage``: input plus cache reads and writes).
Beside the session's own estimate of that same request it gives a ratio; the factor that later
estimates are multiplied by follows those ratios (their running mean in log space, each new one
weighing at least ``WEIGHT``), bounded to ``BOUNDS``. The factor applied moves only when the one
wanted is more than ``TOLERANCE`` away, so it settles: a changed factor changes every estimate,
and so the view a session sends. Readings of small requests (below ``SMALLEST``) and implausible
ones are ignored. Pure arithmetic and reading; the recording is the session's.

>>> record = Calibration().observed(estimate=1_000, reported=1_500)
>>> record.factor, record.observations
(1.5, 1)
>>> record.observed(estimate=1_510, reported=1_500).factor   # within the tolerance: kept
1.5
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from cutctx import TokenEstimator

from ._calibration import CalibratedEstimator

__all__ = [
    "BOUNDS",
    "NEAR",
    "TOLERANCE",
    "Calibration",
    "UsageEstimator",
    "calibration_of",
    "near_limit",
    "reported_input",
]

BOUNDS = (0.5, 4.0)
"""The factors a calibration may reach: estimates half to four times too high. Beyond them a
reading is more likely another request's usage than this model's tokenizer."""
TOLERANCE = 0.02
"""How far (relative) the wanted factor may drift from the applied one before it is applied."""
PLAUSIBLE = (0.2, 10.0)
"""Ratios of reported to estimated input outside this are not the same request: ignored."""
SMALLEST = 256
"""Readings of requests estimated below this are ignored: their framing (a few tokens a message,
counted differently by every provider) outweighs their text."""
WEIGHT = 0.25
"""The least share of a new reading in the wanted factor (log space): the readings so far are
averaged until there are four, then each new one weighs this much, so one request of unusual
content cannot move a settled factor past ``TOLERANCE``."""
NEAR = 0.1
"""How close (a share) an estimate must be to the trigger or the budget for an exact count."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """How one model's estimates are corrected (per format and model); figures only.

    ``factor`` multiplies every text estimate; ``wanted`` is what the readings so far ask for
    (``factor`` follows it past ``TOLERANCE``); ``observations`` counts the readings taken;
    ``bounded`` says the readings asked for more than ``BOUNDS`` allow; ``ratio`` is the latest
    reported/estimated.
    """

    factor: float = 1.0
    wanted: float = 1.0
    observations: int = 0
    bounded: bool = False
    ratio: float | None = None

    def observed(self, estimate: int, reported: int, used: float | None = None, *,
                 exact: bool = False) -> Calibration:
        """This record after one reading: ``reported`` input for a request estimated at
        ``estimate`` with the factor ``used`` (default: this one's). ``exact``: an exact count,
        taken whole. An implausible reading leaves the record as it was."""
        if estimate < SMALLEST or reported <= 0:
            return self
        ratio = reported / estimate
        if not PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
            return self
        reading = (self.factor if used is None else used) * ratio
        if self.observations and not exact:
            weight = max(WEIGHT, 1 / (self.observations + 1))
            reading = math.exp((1 - weight) * math.log(self.wanted) + weight * math.log(reading))
        wanted = min(max(reading, BOUNDS[0]), BOUNDS[1])
        factor = self.factor
        if exact or abs(wanted / factor - 1) > TOLERANCE:
            factor = round(wanted, 3)
        return Calibration(factor, round(wanted, 6), self.observations + 1,
                           wanted != reading, round(ratio, 6))

    def to_bytes(self) -> bytes:
        """The record as a store keeps it (JSON)."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, value: bytes | None) -> Calibration | None:
        """A stored record, or None for none or one this version cannot read."""
        try:
            fields = json.loads(value) if value is not None else None
            if not isinstance(fields, dict):
                return None
            record = cls(**fields)
        except (TypeError, ValueError):
            return None
        numbers = (record.factor, record.wanted)
        if not all(isinstance(n, float | int) and BOUNDS[0] <= n <= BOUNDS[1] for n in numbers):
            return None
        return replace(record, factor=float(record.factor), wanted=float(record.wanted))


class UsageEstimator(CalibratedEstimator):
    """A format's estimator with a model's ``Calibration`` applied (its ``factor``); what a
    report names as ``calibration``."""

    def __init__(self, inner: TokenEstimator, calibration: Calibration) -> None:
        super().__init__(inner, calibration.factor)
        self.calibration = calibration

    @property
    def encoding_name(self) -> str | None:
        """The inner estimator's encoding, for reports of requests that name no model."""
        name = getattr(self.inner, "encoding_name", None)
        return name if isinstance(name, str) else None

    @property
    def model(self) -> str | None:
        """The model the inner estimator counts for (a format's media rules follow it)."""
        model = getattr(self.inner, "model", None)
        return model if isinstance(model, str) else None


def calibration_of(estimator: TokenEstimator) -> Calibration | None:
    """The calibration an estimator applies, if it is a ``UsageEstimator``."""
    return estimator.calibration if isinstance(estimator, UsageEstimator) else None


def near_limit(tokens: int | None, *limits: int | None, margin: float = NEAR) -> bool:
    """Whether ``tokens`` is within ``margin`` (a share) of any of ``limits``: where an
    estimate's error could decide between compacting or not, or fitting or not."""
    if tokens is None:
        return False
    return any(limit is not None and abs(tokens - limit) <= margin * limit for limit in limits)


_INPUT = ("input_tokens", "prompt_tokens", "prompt_token_count", "input_token_count")
"""The input a usage reports: Anthropic's and Responses' ``input_tokens``, Chat's
``prompt_tokens`` (OpenAI counts cached input inside them), Gemini's ``prompt_token_count``
(cached content inside it too), Agent Framework's ``input_token_count``."""
_CACHE = ("cache_creation_input_tokens", "cache_read_input_tokens")
"""Anthropic reports cache writes and reads beside ``input_tokens``: they are input too."""
_HOLDERS = ("usage", "message", "response", "chunk", "usage_metadata", "usage_details")
"""Where a reply or a stream event keeps its usage: ``response.usage``, Anthropic's
``message_start`` event (``message.usage``), Responses' ``response.completed`` event, the
Chat stream helper's chunk events, LangChain's ``AIMessage.usage_metadata`` (whose
``input_tokens`` include cache reads and writes), Agent Framework's ``usage_details``."""


def reported_input(value: Any) -> int | None:
    """The input tokens a reply reports: an int as it is, else read from a usage (dict or SDK
    object), a reply, or a stream event that carries one; None when there is none.

    >>> reported_input({"usage": {"input_tokens": 12, "cache_read_input_tokens": 1000}})
    1012
    >>> reported_input({"usage": {"prompt_tokens": 900, "completion_tokens": 5}})
    900
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    return _read(value, depth=3)


def _read(value: Any, depth: int) -> int | None:
    if value is None or depth == 0:
        return None
    base = next((found for name in _INPUT
                 if isinstance(found := _field(value, name), int) and not isinstance(found, bool)),
                None)
    if base is not None:
        extra = (_field(value, name) for name in _CACHE)
        return base + sum(n for n in extra if isinstance(n, int) and not isinstance(n, bool))
    for holder in _HOLDERS:
        found = _read(_field(value, holder), depth - 1)
        if found is not None:
            return found
    return None


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)

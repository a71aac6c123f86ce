"""Sticky compaction sessions: the same view for the same history, whichever worker sees it."""

from ..reports import CallReport, Decision, Prepared
from ._session import CompactionSession, PrefixCheck
from ._telemetry import told

__all__ = ["CallReport", "CompactionSession", "Decision", "PrefixCheck", "Prepared", "told"]

"""How long a summary may be: one rule for what is asked of a model and what is accepted.

A summarizer is asked for at most ``allowed_tokens(target)`` and a reply longer than that is
refused: model replies do not stop on an exact count, so both leave the same headroom.
"""

from __future__ import annotations

__all__ = ["SUMMARY_SLACK", "SUMMARY_TOLERANCE", "allowed_tokens"]

SUMMARY_TOLERANCE = 0.25
"""A summary may exceed its planned ``target_tokens`` by this share (plus ``SUMMARY_SLACK``)."""
SUMMARY_SLACK = 16


def allowed_tokens(target_tokens: int) -> int:
    """The most tokens a summary planned at ``target_tokens`` may have.

    >>> allowed_tokens(400)
    516
    """
    return int(max(1, target_tokens) * (1 + SUMMARY_TOLERANCE)) + SUMMARY_SLACK

"""Clipping: keep a text's head and tail, say what was cut between them.

Agents overflow their windows with one huge tool output (a log, a test run, a page); its start
and its end usually say what matters. The cut falls on line boundaries where there are lines,
and a marker names what was elided and the original's size and hash. Deterministic, so the same
output clips the same way on every call.
"""

from __future__ import annotations

from ._canonical import sha256_of
from .estimator import TokenEstimator

__all__ = ["HEAD_SHARE", "clip_marker", "clip_text"]

HEAD_SHARE = 0.6
"""Of what the clip keeps, the share given to the head (the rest goes to the tail)."""
_SHRINK = 0.85
_ROUNDS = 24


def clip_marker(elided_tokens: int, elided_lines: int, tokens: int, digest: str,
                subject: str = "tool result") -> str:
    """The line put between a clipped text's head and tail (``subject``: what was clipped).

    >>> clip_marker(1200, 40, 2000, "ab" * 32)[:61]
    '[... cutctx clipped this tool result: 1200 tokens (40 lines) '
    """
    return (f"[... cutctx clipped this {subject}: {elided_tokens} tokens ({elided_lines} lines) "
            f"elided; original: {tokens} tokens, sha256:{digest} ...]")


def clip_text(
    content: str,
    token_estimate: int,
    max_tokens: int,
    estimator: TokenEstimator,
    *,
    original_tokens: int | None = None,
    original_sha256: str | None = None,
    subject: str = "tool result",
) -> tuple[str, int] | None:
    """``content``'s head and tail around a marker, estimated at <= ``max_tokens``, and that
    estimate; None when no clip fits ``max_tokens`` or none is smaller than ``token_estimate``.

    The marker names the original: ``original_tokens``/``original_sha256`` when ``content`` is
    itself a clip's text, else ``token_estimate`` and ``sha256_of(content)`` (as a mask stub).
    Cut points come from the text's characters per token, then the result is measured with
    ``estimator`` and shrunk until it fits: a bounded number of estimates, whatever its length.
    """
    if max_tokens <= 0 or not content:
        return None
    tokens = token_estimate if original_tokens is None else original_tokens
    digest = sha256_of(content) if original_sha256 is None else original_sha256
    lines = content.count("\n") + 1
    room = max_tokens - estimator.estimate_tokens(
        clip_marker(tokens, lines, tokens, digest, subject))
    if room <= 0:
        return None
    per_token = len(content) / max(1, token_estimate)
    head = int(room * HEAD_SHARE * per_token)
    tail = int(room * (1 - HEAD_SHARE) * per_token)
    for _ in range(_ROUNDS):
        text = _clipped(content, head, tail, per_token, tokens, digest, subject)
        estimate = estimator.estimate_tokens(text)
        if estimate <= max_tokens:
            return (text, estimate) if estimate < token_estimate else None
        if head == tail == 0:
            return None
        head, tail = int(head * _SHRINK), int(tail * _SHRINK)
    return None


def _clipped(content: str, head: int, tail: int, per_token: float, tokens: int,
             digest: str, subject: str) -> str:
    start = _head_end(content, head)
    end = max(start, _tail_start(content, tail))
    middle = content[start:end]
    elided = round(len(middle) / per_token) if per_token else 0
    marker = clip_marker(elided, middle.count("\n") + (1 if middle else 0), tokens, digest,
                         subject)
    before = content[:start]
    if before and not before.endswith("\n"):
        before += "\n"
    after = content[end:]
    return f"{before}{marker}\n{after}" if after else f"{before}{marker}"


def _head_end(content: str, chars: int) -> int:
    """End of the longest run of whole lines within ``chars`` (or ``chars`` if no line fits)."""
    if chars <= 0:
        return 0
    if chars >= len(content):
        return len(content)
    cut = content.rfind("\n", 0, chars)
    return cut + 1 if cut >= 0 else chars


def _tail_start(content: str, chars: int) -> int:
    """Start of the longest run of whole final lines within ``chars`` (or the last ``chars``)."""
    if chars <= 0:
        return len(content)
    if chars >= len(content):
        return 0
    start = len(content) - chars
    cut = content.find("\n", start - 1)
    return cut + 1 if 0 <= cut < len(content) - 1 else start

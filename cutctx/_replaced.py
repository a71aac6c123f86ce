"""What a turn kept with a new body carries: its kind, and the original it stands for.

A masked, clipped or deduplicated turn (and a summary) is *final*: later policies may drop or
summarize it, never mask it again, so a stub always names the original it replaced. A clipped
turn is the one exception: it may still be masked (escalation), and its stub then names the
original's figures, which the clip's metadata carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._canonical import sha256_of
from .types import TranscriptTurn

__all__ = [
    "CONTENT_KEY",
    "KIND_KEY",
    "ORIGINAL_SHA256_KEY",
    "ORIGINAL_TOKENS_KEY",
    "is_final",
    "original_figures",
    "replaced_metadata",
]

KIND_KEY = "cutctx.kind"
"""``masked``, ``clipped``, ``deduplicated`` or ``summary``: set by the engine, not a caller."""
ORIGINAL_TOKENS_KEY = "cutctx.original_tokens"
ORIGINAL_SHA256_KEY = "cutctx.original_sha256"
CONTENT_KEY = "cutctx.content_key"
"""Set by a caller (the adapters) on a tool turn: a hash of its whole body, images included, for
telling identical results apart when their text is only placeholders."""


def is_final(turn: TranscriptTurn) -> bool:
    """Whether an earlier decision made this turn what it is (a stub, a clip, a summary)."""
    return KIND_KEY in turn.metadata


def original_figures(turn: TranscriptTurn) -> tuple[int, str]:
    """Token count and sha256 of the content the turn stands for (its own, if it is original)."""
    tokens = turn.metadata.get(ORIGINAL_TOKENS_KEY)
    digest = turn.metadata.get(ORIGINAL_SHA256_KEY)
    if tokens is not None and digest is not None and tokens.isdigit():
        return int(tokens), digest
    return turn.token_estimate, sha256_of(turn.content)


def replaced_metadata(turn: TranscriptTurn, kind: str) -> Mapping[str, str]:
    """The metadata of ``turn`` kept with a new body of ``kind``.

    ``masked`` gives exactly 0.1.0's (``cutctx.kind`` added); another kind also records the
    original's figures, carried over if the turn already stands for an original.
    """
    if kind == "masked":
        return MappingProxyType({**turn.metadata, KIND_KEY: "masked"})
    tokens, digest = original_figures(turn)
    return MappingProxyType({**turn.metadata, KIND_KEY: kind, ORIGINAL_TOKENS_KEY: str(tokens),
                             ORIGINAL_SHA256_KEY: digest})

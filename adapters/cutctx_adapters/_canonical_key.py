"""Content keys for caches: equal content, equal key, whatever object carried it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from cutctx import SummarizationRequest, TranscriptTurn

__all__ = ["content_key", "span_key"]


def content_key(value: Any) -> str:
    """Hex sha256 of a plain JSON value's canonical form (sorted keys, compact)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def span_key(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    """A summary's cache key: its prompt, target and the spanned turns' roles and texts."""
    digest = hashlib.sha256()
    digest.update(f"{request.prompt_id}\x00{request.target_tokens}".encode())
    for turn in turns:
        digest.update(b"\x00" + turn.role.value.encode() + b"\x00")
        digest.update(turn.content.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()

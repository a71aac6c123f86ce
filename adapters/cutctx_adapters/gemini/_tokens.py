"""Gemini token estimates, without a Gemini tokenizer.

Google publishes no local tokenizer for current Gemini models; the exact figure comes only from
``models.count_tokens`` or a reply's ``usage_metadata``. Locally, text is counted with tiktoken
(``o200k_base`` unless an estimator is injected) and multiplied by ``CALIBRATION = 1.2``:
third-party comparisons put Gemini's SentencePiece tokenizer about 5-10% above ``o200k_base`` on
English prose and below it on CJK and Indic scripts; code and JSON, most of an agent's history,
are not measured in public, so we add margin, as for Claude: an estimate too high only compacts a
little early, one too low gets the request refused. Expected error: about 0 to +15% on English
and code; other scripts over-estimated.

Media follow Google's token guide. Gemini 3 and later: an image costs its ``media_resolution``
(low 280, medium 560, high 1120 — the default for images —, ultra high 2240); a PDF page 560
(medium, the default for documents). Earlier models: an image with both sides at most 384 px is
258 tokens, a larger one 258 per 768x768 tile (its size read from the base64 header; unknown:
four tiles); a PDF page 258. Audio is 32 tokens a second and video 263 (frames and sound) on every
model; a duration is read from ``video_metadata``/``audio_metadata`` offsets when given, else
estimated from the inline bytes (``AUDIO_BYTES_PER_SECOND``, ``VIDEO_BYTES_PER_SECOND``), else
assumed ``ASSUMED_MEDIA_SECONDS``. Framing per content and per function call or response
(``CONTENT_TOKENS``, ``CALL_TOKENS``) are our estimates. Budgeting estimates, not billing.

>>> from cutctx import CharRatioEstimator
>>> counter = GeminiTokenCounter(CharRatioEstimator(1.0), calibration=1.0)
>>> counter.content({"role": "user", "parts": [{"text": "hello"}]})  # 4 framing + 5
9
>>> image_tokens(1000, 500, "gemini-2.5-flash"), image_tokens(1000, 500, "gemini-3-pro")
(516, 1120)
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cutctx import TokenEstimator

from ..counting import (
    GEMINI_CALIBRATION,
    Base64Bytes,
    CalibratedEstimator,
    check_model,
    chosen_estimator,
    decoded_base64,
    estimator_for,
    image_size,
    opaque_tokens,
    pdf_pages,
)
from ._parts import data_kind, field

__all__ = [
    "ASSUMED_MEDIA_SECONDS",
    "AUDIO_TOKENS_PER_SECOND",
    "CALIBRATION",
    "CALL_TOKENS",
    "CONTENT_TOKENS",
    "REQUEST_TOKENS",
    "VIDEO_TOKENS_PER_SECOND",
    "GeminiTokenCounter",
    "ModelEstimator",
    "image_tokens",
    "model_estimator",
]

CALIBRATION = GEMINI_CALIBRATION
"""The tiktoken-to-Gemini factor (the module's docstring says why)."""
CONTENT_TOKENS = 4
"""Framing of one content (role and turn markers): our estimate."""
REQUEST_TOKENS = 4
"""Framing of the request and the reply priming: our estimate."""
CALL_TOKENS = 6
"""Framing of one function call or response (name, id, structure): our estimate."""

_RESOLUTION_TOKENS = {"MEDIA_RESOLUTION_LOW": 280, "MEDIA_RESOLUTION_MEDIUM": 560,
                      "MEDIA_RESOLUTION_HIGH": 1120, "MEDIA_RESOLUTION_ULTRA_HIGH": 2240}
_IMAGE_DEFAULT_LEVEL = "MEDIA_RESOLUTION_HIGH"
_DOCUMENT_DEFAULT_LEVEL = "MEDIA_RESOLUTION_MEDIUM"
_TILE, _TILE_TOKENS, _SMALL_IMAGE = 768, 258, 384
_UNKNOWN_TILES = 4
AUDIO_TOKENS_PER_SECOND = 32
VIDEO_TOKENS_PER_SECOND = 263
AUDIO_BYTES_PER_SECOND = 16_000
"""Inline audio's bytes per second, for its duration (128 kbit/s)."""
VIDEO_BYTES_PER_SECOND = 250_000
"""Inline video's bytes per second, for its duration (2 Mbit/s)."""
ASSUMED_MEDIA_SECONDS = 60
"""The duration assumed for audio or video known only by URI."""
_SCHEMA_TOKENS = 64
"""A tool the SDK declares from an object (a Python function, an MCP session): its parameters'
schema, which cutctx does not build, as a fixed allowance."""


def _per_part_levels(model: str | None) -> bool:
    """Whether ``model`` prices media by resolution level (Gemini 3 and later)."""
    if not model:
        return True  # unknown: the newer, dearer rule
    name = model.rsplit("/", 1)[-1]
    match = re.match(r"gemini-(\d+)", name)
    return match is None or int(match.group(1)) >= 3


def image_tokens(width: int, height: int, model: str | None = None,
                 level: str | None = None) -> int:
    """Tokens of a ``width`` x ``height`` image for ``model`` (see the module's rules)."""
    if _per_part_levels(model):
        return _RESOLUTION_TOKENS.get(level or _IMAGE_DEFAULT_LEVEL, 1120)
    if width <= _SMALL_IMAGE and height <= _SMALL_IMAGE:
        return _TILE_TOKENS
    return -(-width // _TILE) * -(-height // _TILE) * _TILE_TOKENS


def _seconds(offset: Any) -> float | None:
    """``"12.5s"`` (a Duration as JSON) as seconds."""
    if isinstance(offset, str) and offset.endswith("s"):
        try:
            return float(offset[:-1])
        except ValueError:
            return None
    return None


def _level(part: Mapping[str, Any]) -> str | None:
    level = field(field(part, "media_resolution"), "level")
    return level if isinstance(level, str) else None


class ModelEstimator:
    """The shared tiktoken estimator, knowing the Gemini model it counts for (its media rules):
    what a session counts a model's requests with."""

    def __init__(self, model: str | None) -> None:
        self.model = model
        self._inner = estimator_for(None)

    def estimate_tokens(self, text: str) -> int:
        return self._inner.estimate_tokens(text)

    def __repr__(self) -> str:
        return f"ModelEstimator({self.model!r})"


@functools.lru_cache(maxsize=64)
def model_estimator(model: str | None) -> ModelEstimator:
    """One ``ModelEstimator`` per model, kept (sessions tell estimators apart by identity)."""
    return ModelEstimator(check_model(model))


class GeminiTokenCounter:
    """Estimated Gemini input tokens of contents, parts, a system instruction and tools.

    ``estimator`` counts text (default: shared tiktoken ``o200k_base``), scaled by
    ``calibration`` (default ``CALIBRATION``); ``model`` (else a ``ModelEstimator``'s) picks
    the media rules.
    """

    framing = CONTENT_TOKENS
    """Tokens of one content beyond its parts."""

    def __init__(self, estimator: TokenEstimator | None = None, *, model: str | None = None,
                 calibration: float | None = None) -> None:
        if model is None:  # a ModelEstimator's, also through a session's cache of its counts
            named: Any = getattr(estimator, "model", None)
            model = named if isinstance(named, str) else None
        self.model = check_model(model)
        factor = CALIBRATION if calibration is None else calibration
        self.text_estimator = CalibratedEstimator(chosen_estimator(estimator, None), factor)

    def text(self, text: str) -> int:
        """Calibrated tokens of a text."""
        return self.text_estimator.estimate_tokens(text)

    def _json(self, value: Any) -> int:
        if value is None:
            return 0
        return self.text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    def request_overhead(self, system: Any = None, tools: Sequence[Any] | None = None,
                         tool_config: Any = None) -> int:
        """Tokens outside ``contents``: request framing, the system instruction, tool
        definitions and tool config."""
        total = REQUEST_TOKENS + self.instruction(system) + self._json(tool_config)
        for tool in tools or []:
            total += self.tool(tool)
        return total

    def tool(self, tool: Any) -> int:
        """A tool definition: its JSON, or an object's name and docstring (the SDK declares a
        Python function from those) and an allowance for the schema."""
        if isinstance(tool, Mapping):
            return self._json(tool)
        name = getattr(tool, "__name__", None) or type(tool).__name__
        doc = getattr(tool, "__doc__", None) or ""
        return CALL_TOKENS + self.text(f"{name}\n{doc}") + _SCHEMA_TOKENS

    def instruction(self, system: Any) -> int:
        """A ``system_instruction``: a string, a content, a part or a list of them."""
        if system is None:
            return 0
        if isinstance(system, str):
            return self.text(system)
        if isinstance(system, Mapping):
            parts = field(system, "parts")
            if isinstance(parts, list):
                return sum(self.part(part) for part in parts)
            return self.part(system)
        if isinstance(system, list):
            return sum(self.instruction(item) for item in system)
        return 0

    def content(self, content: Mapping[str, Any]) -> int:
        """One content: framing plus its parts."""
        parts = field(content, "parts")
        return self.framing + sum(self.part(part) for part in parts or [])

    def part(self, part: Any) -> int:
        """One part, by what it carries."""
        if not isinstance(part, Mapping):
            return 0
        kind = data_kind(part)
        value = field(part, kind) if kind != "empty" else None
        if kind == "text":
            return self.text(value) if isinstance(value, str) else 0
        if kind in ("inline_data", "file_data"):
            return self.media(part, kind)
        if kind == "function_call":
            return CALL_TOKENS + self.text(str(field(value, "name") or "")) + self._json(
                field(value, "args"))
        if kind == "function_response":
            media = field(value, "parts")
            return (CALL_TOKENS + self.text(str(field(value, "name") or ""))
                    + self._json(field(value, "response"))
                    + sum(self.media(item, "inline_data" if field(item, "inline_data")
                                     is not None else "file_data")
                          for item in (media if isinstance(media, list) else [])))
        if kind == "executable_code":
            return CALL_TOKENS + self.text(str(field(value, "code") or ""))
        if kind == "code_execution_result":
            return CALL_TOKENS + self.text(str(field(value, "output") or ""))
        if kind in ("tool_call", "tool_response"):
            return CALL_TOKENS + self._json(field(value, "args" if kind == "tool_call"
                                                  else "response"))
        return 0

    def media(self, part: Mapping[str, Any], kind: str) -> int:
        """An inline or file media part (or a function response's media part)."""
        data = field(part, kind)
        mime = field(data, "mime_type")
        mime = mime if isinstance(mime, str) else ""
        raw = field(data, "data") if kind == "inline_data" else None
        raw = raw if isinstance(raw, str) else None
        if mime.startswith("image/"):
            size = image_size(Base64Bytes(raw, 0)) if raw is not None else None
            if size is None and not _per_part_levels(self.model):
                return _UNKNOWN_TILES * _TILE_TOKENS
            return image_tokens(*(size or (1, 1)), self.model, _level(part))
        if mime == "application/pdf":
            pages = (pdf_pages(raw) or 1) if raw is not None else 1
            if _per_part_levels(self.model):
                return pages * _RESOLUTION_TOKENS.get(_level(part) or _DOCUMENT_DEFAULT_LEVEL,
                                                      560)
            return pages * _TILE_TOKENS
        if mime.startswith(("audio/", "video/")):
            video = mime.startswith("video/")
            rate = VIDEO_TOKENS_PER_SECOND if video else AUDIO_TOKENS_PER_SECOND
            return math.ceil(rate * self._duration(part, raw, video))
        if mime.startswith("text/") and raw is not None:
            return self.text(decoded_base64(raw).decode("utf-8", "replace"))
        return opaque_tokens(raw) if raw else 258

    def _duration(self, part: Mapping[str, Any], raw: str | None, video: bool) -> float:
        meta = field(part, "video_metadata" if video else "audio_metadata")
        start, end = _seconds(field(meta, "start_offset")), _seconds(field(meta, "end_offset"))
        if end is not None:
            return max(0.0, end - (start or 0.0))
        if raw is not None:
            rate = VIDEO_BYTES_PER_SECOND if video else AUDIO_BYTES_PER_SECOND
            return max(1.0, len(raw) * 3 / 4 / rate)
        return float(ASSUMED_MEDIA_SECONDS)

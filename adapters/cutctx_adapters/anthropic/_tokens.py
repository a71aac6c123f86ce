"""Anthropic Messages token estimates, without a Claude tokenizer.

Anthropic publishes no local tokenizer for current Claude models; the exact figure comes only from
``messages.count_tokens`` (see ``messages.plan(exact_count=client)``, one call per decision).
Locally, text is counted with tiktoken (``o200k_base`` unless an estimator is injected) and
multiplied by the Claude calibration factor (``counting._calibration``).

Images follow Anthropic's vision guide: Claude sees 28x28-pixel patches, one token each, so an
image costs ceil(w/28) x ceil(h/28) tokens after being shrunk (aspect kept) to fit the model's
native resolution: a long edge of at most 1568 px and at most 1568 patches (the "~1,600 tokens"
the guide states), or 2576 px and 4784 patches on Claude Opus 4.7's high-resolution vision.
The size comes from the base64 data's image header; an image known only by URL or file id is
assumed to use the whole patch budget. Documents: text sources count as text; a PDF counts, per
page, ``PDF_TEXT_TOKENS_PER_PAGE`` (the PDF guide says 1,500-3,000 text tokens a page; we take
the middle) plus the page rendered as an image (``PDF_PAGE_SIZE`` by the image rule), pages read
from the PDF's page objects, or one page for a PDF known only by URL or file id.

With tools, Anthropic adds a tool-use system prompt of 346 tokens (``tool_choice`` auto/none) or
313 (any/tool) on current models (tool-use pricing table); the definitions count as JSON text.
Per-message and per-request framing (``MESSAGE_TOKENS``, ``REQUEST_TOKENS``, ``TOOL_BLOCK_TOKENS``)
are our estimates: Anthropic publishes no figure. These are budgeting estimates, not billing.

>>> from cutctx import CharRatioEstimator
>>> counter = AnthropicTokenCounter(CharRatioEstimator(1.0), calibration=1.0)
>>> counter.message({"role": "user", "content": "hello"})  # 4 framing + 5
9
>>> image_tokens(1092, 1092)
1521
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cutctx import TokenEstimator

from ..counting import (
    Base64Bytes,
    CalibratedEstimator,
    calibration_for,
    check_model,
    chosen_estimator,
    image_size,
    opaque_tokens,
    pdf_pages,
)

__all__ = [
    "IMAGE_PATCH",
    "MESSAGE_TOKENS",
    "PDF_PAGE_SIZE",
    "PDF_TEXT_TOKENS_PER_PAGE",
    "REQUEST_TOKENS",
    "TOOL_BLOCK_TOKENS",
    "TOOL_SYSTEM_PROMPT_TOKENS",
    "AnthropicTokenCounter",
    "image_limits",
    "image_tokens",
]

MESSAGE_TOKENS = 4
"""Framing of one message (role and turn markers): our estimate."""
REQUEST_TOKENS = 4
"""Framing of the request and the reply priming: our estimate."""
TOOL_BLOCK_TOKENS = 8
"""Framing of one tool_use or tool_result block (tags, id, name): our estimate."""
TOOL_SYSTEM_PROMPT_TOKENS = {"auto": 346, "none": 346, "any": 313, "tool": 313}
"""The tool-use system prompt Anthropic adds when ``tools`` are given, by ``tool_choice`` type."""

IMAGE_PATCH = 28
_STANDARD_IMAGES = (1568, 1568)  # (long edge in px, patches)
_HIGH_RES_IMAGES = (2576, 4784)
_HIGH_RES_MODELS = ("claude-opus-4-7",)

PDF_TEXT_TOKENS_PER_PAGE = 2250
PDF_PAGE_SIZE = (1275, 1650)
"""A PDF page as an image: US letter at 150 dpi, we assume."""

_OPAQUE_KEYS = frozenset({"data", "encrypted_content", "encrypted_index", "encrypted_stdout"})
_SKIPPED_KEYS = frozenset({"type", "id", "tool_use_id", "cache_control", "signature",
                           "citations", "file_id", "media_type"})


def image_limits(model: str | None) -> tuple[int, int]:
    """``(long edge px, patch budget)`` of ``model``'s native image resolution."""
    model = check_model(model)
    if model and model.startswith(_HIGH_RES_MODELS):
        return _HIGH_RES_IMAGES
    return _STANDARD_IMAGES


def _patches(width: int, height: int) -> int:
    return -(-width // IMAGE_PATCH) * -(-height // IMAGE_PATCH)


def image_tokens(width: int, height: int, model: str | None = None) -> int:
    """Tokens of a ``width`` x ``height`` image: 28px patches after the documented shrink.

    The image is scaled (aspect kept, whole pixels) to the largest size whose long edge and
    patch count fit the model's limits, then costs ceil(w/28) x ceil(h/28).

    >>> image_tokens(200, 200), image_tokens(4000, 3000) <= 1568
    (64, True)
    """
    if isinstance(width, bool) or isinstance(height, bool) or width < 1 or height < 1:
        raise ValueError("image width and height must be positive ints")
    edge, budget = image_limits(model)
    longest = max(width, height)
    if longest > edge:
        width, height = max(1, width * edge // longest), max(1, height * edge // longest)
        longest = edge
    if _patches(width, height) <= budget:
        return _patches(width, height)
    # Shrink to the budget's area, then a pixel at a time until the padded patches fit.
    target = math.floor(longest * math.sqrt(budget * IMAGE_PATCH**2 / (width * height)))
    for long_side in range(target, 0, -1):
        w = max(1, width * long_side // longest)
        h = max(1, height * long_side // longest)
        if _patches(w, h) <= budget:
            return _patches(w, h)
    return 1  # pragma: no cover - a 1x1 image always fits


class AnthropicTokenCounter:
    """Estimated Claude input tokens of messages, blocks, system prompts and tool definitions.

    ``estimator`` counts text (default: shared tiktoken ``o200k_base``); ``calibration`` scales
    it (default: ``calibration_for(model)``); ``model`` also picks the image limits.
    """

    framing = MESSAGE_TOKENS
    """Tokens of one message beyond its content."""

    def __init__(self, estimator: TokenEstimator | None = None, *, model: str | None = None,
                 calibration: float | None = None) -> None:
        factor = calibration_for(model) if calibration is None else calibration
        self.model = model
        self.text_estimator = CalibratedEstimator(chosen_estimator(estimator, None), factor)

    def text(self, text: str) -> int:
        """Calibrated tokens of a text."""
        return self.text_estimator.estimate_tokens(text)

    def request_overhead(self, tools: Sequence[Any] | None = None,
                         tool_choice: Mapping[str, Any] | None = None) -> int:
        """Tokens outside system and messages: request framing, tool prompt and definitions."""
        return REQUEST_TOKENS + self.tools(tools, tool_choice)

    def tools(self, tools: Sequence[Any] | None,
              tool_choice: Mapping[str, Any] | None = None) -> int:
        """Tool definitions as JSON text, plus the tool-use system prompt (none without tools)."""
        if not tools:
            return 0
        kind = tool_choice.get("type") if isinstance(tool_choice, Mapping) else None
        total = TOOL_SYSTEM_PROMPT_TOKENS.get(kind if isinstance(kind, str) else "auto", 346)
        for tool in tools:
            if isinstance(tool, Mapping):
                body = {k: v for k, v in tool.items() if k != "cache_control"}
                total += self.text(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        return total

    def system(self, system: Any) -> int:
        """A ``system`` string or list of text blocks."""
        if isinstance(system, str):
            return self.text(system)
        if isinstance(system, list):
            return sum(self.block(block) for block in system)
        return 0

    def message(self, message: Mapping[str, Any]) -> int:
        """One message: framing plus its content."""
        return self.framing + self.content(message.get("content"))

    def content(self, content: Any) -> int:
        """A string, or a list of content blocks."""
        if isinstance(content, str):
            return self.text(content)
        if isinstance(content, list):
            return sum(self.block(block) for block in content)
        return 0

    def block(self, block: Any) -> int:
        """One content block, by type; an unknown type counts its readable strings."""
        if not isinstance(block, Mapping):
            return 0
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            return self.text(text) if isinstance(text, str) else 0
        if kind == "image":
            return self._image(block.get("source"))
        if kind == "document":
            return self._document(block)
        if kind == "thinking":
            # Counted although the API drops earlier turns' thinking on many models: budgeting
            # errs high. The signature is not read by the model.
            text = block.get("thinking")
            return self.text(text) if isinstance(text, str) else 0
        if kind in ("tool_use", "server_tool_use"):
            name = block.get("name")
            arguments = json.dumps(block.get("input"), ensure_ascii=False, separators=(",", ":"))
            return (TOOL_BLOCK_TOKENS + self.text(arguments)
                    + (self.text(name) if isinstance(name, str) else 0))
        if kind == "tool_result":
            return TOOL_BLOCK_TOKENS + self.content(block.get("content"))
        return self._readable(block)

    def _readable(self, value: Any, key: str | None = None) -> int:
        """Strings a model reads (opaque payloads by size, ids and markers not at all)."""
        if isinstance(value, str):
            if key in _OPAQUE_KEYS:
                return opaque_tokens(value)
            return self.text(value)
        if isinstance(value, Mapping):
            kind = value.get("type")
            if kind in ("text", "image", "document", "tool_result", "tool_use", "thinking"):
                return self.block(value)
            return sum(self._readable(item, name) for name, item in value.items()
                       if name not in _SKIPPED_KEYS)
        if isinstance(value, list):
            return sum(self._readable(item) for item in value)
        return 0

    def _image(self, source: Any) -> int:
        if isinstance(source, Mapping) and source.get("type") == "base64":
            data = source.get("data")
            if isinstance(data, str):
                size = image_size(Base64Bytes(data, 0))
                if size is not None:
                    return image_tokens(*size, self.model)
        return image_limits(self.model)[1]

    def _document(self, block: Mapping[str, Any]) -> int:
        total = sum(self.text(block[key]) for key in ("title", "context")
                    if isinstance(block.get(key), str))
        source = block.get("source")
        if not isinstance(source, Mapping):
            return total
        kind = source.get("type")
        if kind == "text":
            data = source.get("data")
            return total + (self.text(data) if isinstance(data, str) else 0)
        if kind == "content":
            return total + self.content(source.get("content"))
        pages = 1
        data = source.get("data")
        if kind == "base64" and isinstance(data, str):
            if source.get("media_type") != "application/pdf":
                return total + opaque_tokens(data)
            pages = pdf_pages(data) or 1
        page = PDF_TEXT_TOKENS_PER_PAGE + image_tokens(*PDF_PAGE_SIZE, self.model)
        return total + pages * page

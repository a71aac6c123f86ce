"""OpenAI Responses token accounting: documented estimates over the chat adapter's rules.

OpenAI publishes no recipe for Responses items. Each item is estimated like a chat message
(``ITEM_TOKENS`` for its delimiters plus its model-readable text); images, files and tool
definitions use ``_tokens``' published rules; reasoning items, whose payload is encrypted, are
estimated from its size. For budgeting, not billing; errs high where it must guess.

>>> from cutctx_adapters.tiktoken import TiktokenEstimator
>>> estimator = TiktokenEstimator("gpt-4o")
>>> item_tokens({"role": "user", "content": "tiktoken is great!"}, estimator)
10
>>> item_tokens({"type": "reasoning", "id": "rs_1", "summary": [],
...              "encrypted_content": "g" * 1000}, estimator)
203
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, cast

from cutctx import TokenEstimator

from ..tiktoken import DEFAULT_ENCODING, TiktokenEstimator
from ._tokens import (
    DEFAULT_IMAGE_SIZE,
    TOKENS_PER_MESSAGE,
    TOOL_CALL_TOKENS,
    image_size_from_data_url,
    image_tokens,
    message_tokens,
    tools_tokens,
)

__all__ = [
    "BOOKKEEPING_KEYS",
    "ENCRYPTED_CHARS_PER_TOKEN",
    "ITEM_TOKENS",
    "Counter",
    "counter_for",
    "describe",
    "item_tokens",
    "request_tools_tokens",
]

ITEM_TOKENS = TOKENS_PER_MESSAGE
"""Per item, our estimate: the model reads each item as a chat-format segment (role or item
header and delimiters), which the chat recipe prices at 3 tokens a message."""

ENCRYPTED_CHARS_PER_TOKEN = 5
"""Reasoning tokens behind an ``encrypted_content`` string: one per 5 base64 characters.

The payload is opaque, but its size tracks the reasoning it seals: measured against the
``reasoning_tokens`` usage of the responses that produced them, encrypted reasoning runs at about
4.9-5.0 characters a token. Every reasoning item is counted in full, wherever it sits: some models
drop earlier turns' reasoning from the context, but which do is not published, and a budget
should err high. The reasoning summary's text is added on top (it is small).
"""

BOOKKEEPING_KEYS = frozenset({
    "id", "type", "status", "call_id", "approval_request_id", "encrypted_content", "caller",
    "fingerprint", "signature", "execution", "container_id",
})
"""Keys of an item that are API bookkeeping or opaque payloads, never text the model reads."""


class Counter:
    """An estimator with the model name and encoding ``_tokens``' image and tool rules need."""

    __slots__ = ("encoding_name", "estimate_tokens", "model")

    def __init__(self, estimator: TokenEstimator, model: str | None) -> None:
        self.estimate_tokens = estimator.estimate_tokens
        self.model: str | None = getattr(estimator, "model", None) or model
        self.encoding_name: str = getattr(estimator, "encoding_name", DEFAULT_ENCODING)


def counter_for(estimator: TokenEstimator, model: str | None) -> TiktokenEstimator:
    """``estimator`` itself if it is tiktoken's, else a view giving it a model and encoding."""
    if isinstance(estimator, TiktokenEstimator):
        return estimator
    # Duck-typed: ``_tokens`` reads only estimate_tokens, model and encoding_name.
    return cast(TiktokenEstimator, Counter(estimator, model))


def request_tools_tokens(tools: Any, counter: TiktokenEstimator) -> int:
    """Tool definitions by the chat adapter's function-calling formula.

    A Responses function tool is the flat form of a chat one (``{"type": "function", "name",
    "description", "parameters"}``), which the formula reads as a legacy ``functions`` entry.
    Built-in tools (web search, MCP, ...) cost the formula's per-function constant only: the
    prompts the server adds for them are not published.
    """
    if not tools:
        return 0
    return tools_tokens([tool for tool in tools if isinstance(tool, Mapping)], counter)


def item_tokens(item: Mapping[str, Any], counter: TiktokenEstimator) -> int:
    """Estimated tokens of one (plain, validated) input item."""
    count = counter.estimate_tokens
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        return (ITEM_TOKENS + (count(role) if isinstance(role, str) else 0)
                + _content_tokens(item.get("content"), counter))
    if kind in ("function_call", "custom_tool_call"):
        body = item.get("arguments") if kind == "function_call" else item.get("input")
        return ITEM_TOKENS + TOOL_CALL_TOKENS + sum(
            count(value) for value in (item.get("name"), item.get("namespace"), body)
            if isinstance(value, str))
    if kind in ("function_call_output", "custom_tool_call_output"):
        return ITEM_TOKENS + _content_tokens(item.get("output"), counter)
    if kind == "computer_call_output":
        return ITEM_TOKENS + _image_tokens(item.get("output"), counter)
    if kind in ("reasoning", "compaction"):
        return ITEM_TOKENS + _reasoning_tokens(item, counter)
    if kind in ("local_shell_call_output", "apply_patch_call_output", "program_output"):
        body = item.get("result" if kind == "program_output" else "output")
        return ITEM_TOKENS + (count(body) if isinstance(body, str) else 0)
    if kind == "shell_call_output":
        chunks = item.get("output")
        return ITEM_TOKENS + sum(
            count(chunk[key]) for chunk in (chunks if isinstance(chunks, list) else ())
            if isinstance(chunk, Mapping) for key in ("stdout", "stderr")
            if isinstance(chunk.get(key), str))
    media = 0
    if kind == "image_generation_call" and isinstance(item.get("result"), str):
        media = _image_tokens({"image_url": "data:image/png;base64," + item["result"]}, counter)
    return ITEM_TOKENS + media + count(describe(item))


def describe(item: Mapping[str, Any]) -> str:
    """An item's model-readable fields as compact JSON: bookkeeping and media data left out.

    Built-in tool calls and unknown items are read (and counted) this way.
    """
    skip = BOOKKEEPING_KEYS | ({"result"} if item.get("type") == "image_generation_call" else set())
    readable = _readable({key: value for key, value in item.items() if key not in skip})
    return json.dumps(readable, ensure_ascii=False, separators=(",", ":"))


def _readable(value: Any) -> Any:
    if isinstance(value, str):
        return "[data]" if value[:5].lower() == "data:" else value
    if isinstance(value, Mapping):
        return {key: _readable(item) for key, item in value.items()
                if key not in ("encrypted_content", "signature")}
    if isinstance(value, list | tuple):
        return [_readable(item) for item in value]
    return value


def _reasoning_tokens(item: Mapping[str, Any], counter: TiktokenEstimator) -> int:
    total = 0
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list):
            total += sum(counter.estimate_tokens(part["text"]) for part in parts
                         if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    sealed = item.get("encrypted_content")
    if isinstance(sealed, str):
        total += math.ceil(len(sealed) / ENCRYPTED_CHARS_PER_TOKEN)
    return total


def _content_tokens(content: Any, counter: TiktokenEstimator) -> int:
    if isinstance(content, str):
        return counter.estimate_tokens(content)
    if not isinstance(content, list):
        return 0
    return sum(_part_tokens(part, counter) for part in content)


def _part_tokens(part: Any, counter: TiktokenEstimator) -> int:
    """A content part: text as text; images and files by the chat adapter's rules."""
    if not isinstance(part, Mapping):
        return 0
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
        text = part.get("text")
        return counter.estimate_tokens(text) if isinstance(text, str) else 0
    if kind == "refusal":
        refusal = part.get("refusal")
        return counter.estimate_tokens(refusal) if isinstance(refusal, str) else 0
    if kind == "input_image":
        return _image_tokens(part, counter)
    if kind == "input_file":
        # The chat rule for a file part (PDF pages, or text), through its public entry point.
        file = {key: part[key] for key in ("file_data", "file_id", "filename") if key in part}
        if "file_url" in part and "file_id" not in file:
            file["file_id"] = part["file_url"]
        chat_part = {"type": "file", "file": file}
        return message_tokens({"content": [chat_part]}, counter) - TOKENS_PER_MESSAGE
    return sum(counter.estimate_tokens(value) for key, value in part.items()
               if key != "type" and isinstance(value, str) and value[:5].lower() != "data:")


def _image_tokens(image: Any, counter: TiktokenEstimator) -> int:
    """An image by the model's tile or patch rule; size read from a data URL, else assumed.

    ``detail: "original"`` (no downscaling) is counted as ``high``, the largest published rule.
    """
    if not isinstance(image, Mapping):
        return 0
    detail = image.get("detail")
    detail = "high" if detail == "original" else detail
    url = image.get("image_url")
    size = image_size_from_data_url(url) if isinstance(url, str) else None
    width, height = size or DEFAULT_IMAGE_SIZE
    return image_tokens(width, height, detail if isinstance(detail, str) else None, counter.model)

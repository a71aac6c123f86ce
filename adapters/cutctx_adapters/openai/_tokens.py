"""OpenAI Chat Completions token accounting, after OpenAI's published recipe.

The cookbook's "How to count tokens with tiktoken": a message costs 3 tokens plus the tokens of
each of its string values (role, content, name, ...), plus 1 when it has a ``name``; every reply
is primed with 3 more; tool definitions cost what its function-calling formula says. Images follow
the vision guide's tile rule (gpt-4o family) or patch rule (gpt-4.1-mini/nano, o4-mini). The rest
(tool calls, audio, files) are documented estimates: for budgeting, not billing.

Any ``cutctx.TokenEstimator`` counts the text; the model rules come from its ``model`` and
``encoding_name`` when it has them (a ``TiktokenEstimator`` does), else they are gpt-4o's.

>>> from cutctx_adapters.tiktoken import TiktokenEstimator
>>> estimator = TiktokenEstimator("gpt-4o")
>>> message_tokens({"role": "user", "content": "tiktoken is great!"}, estimator)
10
>>> image_tokens(1024, 1024, "high", "gpt-4o")
765
"""

from __future__ import annotations

import binascii
import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from cutctx import TokenEstimator

from ..counting import Base64Bytes as _Base64Bytes
from ..counting import data_url_bytes as _data_url_bytes
from ..counting import image_size_from_data_url, pdf_pages

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "DEFAULT_IMAGE_SIZE",
    "PDF_PAGE_SIZE",
    "PDF_TEXT_TOKENS_PER_PAGE",
    "REPLY_PRIMING_TOKENS",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOOL_CALL_TOKENS",
    "count_request_tokens",
    "image_size_from_data_url",
    "image_tokens",
    "message_tokens",
    "tools_tokens",
]

# The cookbook recipe (gpt-3.5-turbo-0125, gpt-4-0613, gpt-4o, gpt-4o-mini).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3

# Our estimates; OpenAI publishes no figure for these.
TOOL_CALL_TOKENS = 3
"""Per assistant tool call, on top of its name and arguments (the recipient and delimiters)."""
AUDIO_TOKENS_PER_SECOND = 10
"""Input audio, ~1 token per 100 ms as gpt-4o audio usage reports; duration from the data size."""
_MP3_BYTES_PER_SECOND = 16_000  # 128 kbit/s, when a clip's rate cannot be read from a WAV header
PDF_PAGE_SIZE = (1275, 1650)
"""A PDF page is read as text plus an image of the page: a US-letter page at 150 dpi, we assume."""
PDF_TEXT_TOKENS_PER_PAGE = 500
"""The extracted text of a PDF page, we assume (a dense page of prose is ~500-700 tokens)."""
_TEXT_BYTES_PER_TOKEN = 4  # a non-PDF file, read as text

DEFAULT_IMAGE_SIZE = (2048, 768)
"""An image whose size cannot be read (a remote URL) is assumed to be the costliest size: 8 tiles
under the tile rule (1445 tokens on gpt-4o) and the full 1536 patches under the patch rule."""


# ----------------------------------------------------------------------------------------------
# model rules


@dataclass(frozen=True, slots=True)
class _ToolFormula:
    """The cookbook's constants for tool definitions (``num_tokens_for_tools``)."""

    function_start: int  # func_init, per function
    properties_start: int  # prop_init, per function (or nested object) with properties
    property: int  # prop_key, per property
    enum_start: int  # enum_init, per property with an enum
    enum_item: int  # enum_item, per enum value
    tools_end: int  # func_end, once when there are tools


_GPT4O_TOOLS = _ToolFormula(7, 3, 3, -3, 3, 12)  # gpt-4o, gpt-4o-mini
_GPT4_TOOLS = _ToolFormula(10, 3, 3, -3, 3, 12)  # gpt-4, gpt-3.5-turbo (cl100k_base)


@dataclass(frozen=True, slots=True)
class _TileRule:
    """Vision guide, tile models: ``base`` (all of a low-detail image) + ``per_tile`` per 512px."""

    base: int
    per_tile: int


@dataclass(frozen=True, slots=True)
class _PatchRule:
    """Vision guide, patch models: 32px patches, at most 1536, times ``multiplier``."""

    multiplier: float


_ImageRule: TypeAlias = _TileRule | _PatchRule

# First matching prefix wins; anything else (and no model) gets gpt-4o's tile rule.
_IMAGE_RULES: tuple[tuple[str, _ImageRule], ...] = (
    ("gpt-4.1-mini", _PatchRule(1.62)),
    ("gpt-4.1-nano", _PatchRule(2.46)),
    ("o4-mini", _PatchRule(1.72)),
    ("gpt-4o-mini", _TileRule(2833, 5667)),
)
_GPT4O_IMAGES = _TileRule(85, 170)

_TILE = 512
_TILE_FIT = 2048
_TILE_SHORT_SIDE = 768
_PATCH = 32
_PATCH_BUDGET = 1536
_EPSILON = 1e-9


def _tool_formula(estimator: TokenEstimator) -> _ToolFormula:
    # The constants follow the chat format, which follows the tokenizer: the cookbook's gpt-4 /
    # gpt-3.5 figures are those of the cl100k_base models, its gpt-4o / 4o-mini ones o200k's.
    encoding_name = getattr(estimator, "encoding_name", None)
    return _GPT4_TOOLS if encoding_name == "cl100k_base" else _GPT4O_TOOLS


def _model_of(estimator: TokenEstimator) -> str | None:
    # A TiktokenEstimator names its model; any other TokenEstimator gets gpt-4o's rules.
    model = getattr(estimator, "model", None)
    return model if isinstance(model, str) else None


def _image_rule(model: str | None) -> _ImageRule:
    if model is None:
        return _GPT4O_IMAGES
    name = model.removeprefix("ft:")
    for prefix, rule in _IMAGE_RULES:
        if name.startswith(prefix):
            return rule
    return _GPT4O_IMAGES


# ----------------------------------------------------------------------------------------------
# requests and messages


def count_request_tokens(
    messages: Iterable[Mapping[str, Any]],
    estimator: TokenEstimator,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """Prompt tokens of a Chat Completions request: its messages, the reply priming, its tools."""
    total = sum(message_tokens(message, estimator) for message in messages)
    return total + REPLY_PRIMING_TOKENS + tools_tokens(tools, estimator)


def message_tokens(message: Mapping[str, Any], estimator: TokenEstimator) -> int:
    """Tokens of one Chat Completions message given as a plain dict.

    Every string value counts, as in the recipe, whatever its key (an unknown key too); ``content``
    may also be a list of parts; ``tool_calls`` and ``function_call`` count name and arguments plus
    ``TOOL_CALL_TOKENS`` per call. Other non-string values (``None``, ``audio: {"id": ...}``, flags)
    are transport metadata the model does not read as text, and count nothing.
    """
    if not isinstance(message, Mapping):
        raise TypeError(f"a message must be a mapping, got {type(message).__name__}")
    count = estimator.estimate_tokens
    total = TOKENS_PER_MESSAGE
    for key, value in message.items():
        if isinstance(value, str):
            total += count(value)
            if key == "name":
                total += TOKENS_PER_NAME
        elif key == "content" and isinstance(value, list | tuple):
            total += sum(_part_tokens(part, estimator) for part in value)
        elif key == "tool_calls" and isinstance(value, list | tuple):
            total += sum(_call_tokens(call, estimator) for call in value)
        elif key == "function_call" and isinstance(value, Mapping):
            total += _call_tokens({"type": "function", "function": value}, estimator)
    return total


def _call_tokens(call: Any, estimator: TokenEstimator) -> int:
    """One tool call: its body's strings (``function``: name, arguments; ``custom``: name, input).

    The call's ``id`` and ``type`` are API bookkeeping and are not counted.
    """
    if not isinstance(call, Mapping):
        return 0
    kind = call.get("type")
    body = call.get(kind if isinstance(kind, str) else "function")
    if not isinstance(body, Mapping):
        body = call.get("function")
    if not isinstance(body, Mapping):
        return TOOL_CALL_TOKENS
    return TOOL_CALL_TOKENS + _strings_tokens(body, estimator)


def _strings_tokens(mapping: Mapping[str, Any], estimator: TokenEstimator) -> int:
    return sum(estimator.estimate_tokens(v) for v in mapping.values() if isinstance(v, str))


def _part_tokens(part: Any, estimator: TokenEstimator) -> int:
    """One content part: text and refusal as text, media by rule, never base64 as text.

    An unknown part type (a ``document``, a provider's server-tool block) counts every string
    in it, at any depth, except ``type`` values and base64 or data-URL payloads: what is sent,
    as text.
    """
    if isinstance(part, str):
        return estimator.estimate_tokens(part)
    if not isinstance(part, Mapping):
        return 0
    kind = part.get("type")
    if kind == "text" or kind == "refusal":
        value = part.get(kind)
        return estimator.estimate_tokens(value) if isinstance(value, str) else 0
    if kind == "image_url":
        return _image_part_tokens(part.get("image_url"), estimator)
    if kind == "input_audio":
        return _audio_part_tokens(part.get("input_audio"))
    if kind == "file":
        return _file_part_tokens(part.get("file"), estimator)
    return _strings_within(part, estimator, 0)


_PAYLOAD = re.compile(r"data:[^,\s]*,\S*|[A-Za-z0-9+/_=-]{64,}", re.ASCII)
"""A data URL, or a long run of base64 with no space: media or an encrypted blob, not text."""
_MAX_NESTING = 32


def _strings_within(value: Any, estimator: TokenEstimator, depth: int) -> int:
    """Tokens of every string inside ``value`` but ``type`` values and payloads."""
    if isinstance(value, str):
        return 0 if _PAYLOAD.fullmatch(value) else estimator.estimate_tokens(value)
    if depth >= _MAX_NESTING:
        return 0
    if isinstance(value, Mapping):
        return sum(_strings_within(item, estimator, depth + 1) for key, item in value.items()
                   if key != "type")
    if isinstance(value, list | tuple):
        return sum(_strings_within(item, estimator, depth + 1) for item in value)
    return 0


# ----------------------------------------------------------------------------------------------
# tools


def tools_tokens(tools: Sequence[Mapping[str, Any]] | None, estimator: TokenEstimator) -> int:
    """Tokens the tool definitions add to a request, by the cookbook's function-calling formula.

    Accepts ``tools`` entries (``{"type": "function", "function": {...}}``, also ``custom``) and
    legacy ``functions`` entries. Beyond the formula's flat shape, nested object properties are
    counted recursively with the same constants; other schema keywords are not counted.
    """
    if not tools:
        return 0
    formula = _tool_formula(estimator)
    count = estimator.estimate_tokens
    total = formula.tools_end
    for tool in tools:
        function = _function_of(tool)
        name = function.get("name")
        description = function.get("description")
        line = (name if isinstance(name, str) else "") + ":" + _without_period(description)
        total += formula.function_start + count(line)
        parameters = function.get("parameters")
        if isinstance(parameters, Mapping):
            total += _properties_tokens(parameters.get("properties"), formula, estimator)
    return total


def _function_of(tool: Any) -> Mapping[str, Any]:
    if not isinstance(tool, Mapping):
        return {}
    for key in ("function", "custom"):
        body = tool.get(key)
        if isinstance(body, Mapping):
            return body
    return tool  # a legacy ``functions`` entry is the function itself


def _without_period(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    return text[:-1] if text.endswith(".") else text


def _properties_tokens(properties: Any, formula: _ToolFormula, estimator: TokenEstimator) -> int:
    if not isinstance(properties, Mapping) or not properties:
        return 0
    count = estimator.estimate_tokens
    total = formula.properties_start
    for key, schema in properties.items():
        total += formula.property
        if not isinstance(schema, Mapping):
            schema = {}
        enum = schema.get("enum")
        if isinstance(enum, list | tuple):
            total += formula.enum_start
            for item in enum:
                total += formula.enum_item + count(item if isinstance(item, str) else str(item))
        kind = schema.get("type")
        if isinstance(kind, list | tuple):
            kind = " | ".join(str(k) for k in kind)
        kind = kind if isinstance(kind, str) else ""
        total += count(f"{key}:{kind}:{_without_period(schema.get('description'))}")
        total += _properties_tokens(schema.get("properties"), formula, estimator)
        items = schema.get("items")
        if isinstance(items, Mapping):
            total += _properties_tokens(items.get("properties"), formula, estimator)
    return total


# ----------------------------------------------------------------------------------------------
# images


def image_tokens(width: int, height: int, detail: str | None, model: str | None) -> int:
    """Tokens of a ``width`` x ``height`` image at ``detail`` for ``model`` (None: gpt-4o).

    Tile rule (gpt-4o family): ``low`` costs the base (85); ``high``, ``auto`` and unset are
    counted as high (``auto`` may pick low; high is the bound): fit within 2048x2048, shrink so
    the short side is at most 768, then base + per-tile cost for each 512px tile. Patch rule
    (gpt-4.1-mini/nano, o4-mini; ``detail`` has no published effect): 32px patches, rescaled to
    at most 1536, times the model's multiplier, rounded half up.
    """
    if isinstance(width, bool) or isinstance(height, bool) or width < 1 or height < 1:
        raise ValueError("image width and height must be positive ints")
    rule = _image_rule(model)
    if isinstance(rule, _PatchRule):
        return math.floor(_patches(width, height) * rule.multiplier + 0.5)
    if detail == "low":
        return rule.base
    return rule.base + rule.per_tile * _tiles(width, height)


def _tiles(width: int, height: int) -> int:
    # Integer arithmetic, flooring like a resize to whole pixels does.
    longest = max(width, height)
    if longest > _TILE_FIT:
        width, height = width * _TILE_FIT // longest, height * _TILE_FIT // longest
    shortest = min(width, height)
    if shortest > _TILE_SHORT_SIDE:
        width = width * _TILE_SHORT_SIDE // shortest
        height = height * _TILE_SHORT_SIDE // shortest
    return -(-max(width, 1) // _TILE) * -(-max(height, 1) // _TILE)


def _patches(width: int, height: int) -> int:
    raw = -(-width // _PATCH) * -(-height // _PATCH)
    if raw <= _PATCH_BUDGET:
        return raw
    # Shrink to the budget's area, then a little more so one side is a whole number of patches.
    shrink = math.sqrt(_PATCH * _PATCH * _PATCH_BUDGET / (width * height))
    across, down = width * shrink / _PATCH, height * shrink / _PATCH
    fit = min(max(1, math.floor(across)) / across, max(1, math.floor(down)) / down)
    across, down = across * fit, down * fit
    return min(_PATCH_BUDGET, _ceil(across) * _ceil(down))


def _ceil(value: float) -> int:
    return max(1, math.ceil(value - _EPSILON))


def _image_part_tokens(image: Any, estimator: TokenEstimator) -> int:
    if isinstance(image, Mapping):
        url, detail = image.get("url"), image.get("detail")
    else:  # a bare URL string, as some clients send
        url, detail = image, None
    model = _model_of(estimator)
    rule = _image_rule(model)
    if isinstance(rule, _TileRule) and detail == "low":
        return rule.base
    size = image_size_from_data_url(url) if isinstance(url, str) else None
    width, height = size or DEFAULT_IMAGE_SIZE
    return image_tokens(width, height, detail if isinstance(detail, str) else None, model)


def _base64_payload(data: str) -> _Base64Bytes:
    """A data URL's payload, or bare base64 as ``input_audio`` and some ``file_data`` carry."""
    return _data_url_bytes(data) or _Base64Bytes(data, 0)


# ----------------------------------------------------------------------------------------------
# audio and files


def _audio_part_tokens(audio: Any) -> int:
    """Duration from the data size (WAV: its header's byte rate; else 128 kbit/s), never text."""
    if not isinstance(audio, Mapping) or not isinstance(audio.get("data"), str):
        return 0
    data = _base64_payload(audio["data"])
    byte_rate = _MP3_BYTES_PER_SECOND
    try:
        head = data.read(0, 36)
        if head[:4] == b"RIFF" and head[8:16] == b"WAVEfmt ":
            byte_rate = struct.unpack("<I", head[28:32])[0] or byte_rate
    except (struct.error, binascii.Error, ValueError):
        pass
    return math.ceil(data.size / byte_rate * AUDIO_TOKENS_PER_SECOND)


def _file_part_tokens(file: Any, estimator: TokenEstimator) -> int:
    """A PDF counts, per page, a page image by the model's image rule and
    ``PDF_TEXT_TOKENS_PER_PAGE``; pages are counted from its page objects (or, compressed,
    guessed from its size). A file known only by ``file_id`` counts as one page; other data as
    text, 4 bytes a token. The ``filename`` counts as text.
    """
    if not isinstance(file, Mapping):
        return 0
    total = 0
    filename = file.get("filename")
    if isinstance(filename, str):
        total += estimator.estimate_tokens(filename)
    data = file.get("file_data")
    model = _model_of(estimator)
    page = image_tokens(*PDF_PAGE_SIZE, "high", model) + PDF_TEXT_TOKENS_PER_PAGE
    if not isinstance(data, str):
        return total + page
    pages = pdf_pages(data)
    if pages is None:
        return total + -(-_base64_payload(data).size // _TEXT_BYTES_PER_TOKEN)
    return total + pages * page

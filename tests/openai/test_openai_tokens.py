"""cutctx_adapters.openai._tokens: Chat Completions accounting and its published vectors."""

from __future__ import annotations

import base64
import doctest
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutctx
from cutctx_adapters.openai import _tokens as tokens_module
from cutctx_adapters.openai import chat
from cutctx_adapters.openai._tokens import (
    AUDIO_TOKENS_PER_SECOND,
    DEFAULT_IMAGE_SIZE,
    PDF_TEXT_TOKENS_PER_PAGE,
    REPLY_PRIMING_TOKENS,
    TOOL_CALL_TOKENS,
    count_request_tokens,
    image_size_from_data_url,
    image_tokens,
    message_tokens,
    tools_tokens,
)
from cutctx_adapters.tiktoken import TiktokenEstimator

pytestmark = pytest.mark.usefixtures("tiktoken_cache")

# --- the cookbook's examples ("How to count tokens with tiktoken", openai-cookbook) ---------

COOKBOOK_MESSAGES: list[dict[str, Any]] = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
        "for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]

WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    },
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]

WEATHER_MESSAGES: list[dict[str, Any]] = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


def test_cookbook_messages_count_129_on_gpt_4() -> None:
    assert count_request_tokens(COOKBOOK_MESSAGES, TiktokenEstimator("gpt-4")) == 129


def test_cookbook_messages_count_129_on_gpt_4_0613() -> None:
    assert count_request_tokens(COOKBOOK_MESSAGES, TiktokenEstimator("gpt-4-0613")) == 129


def test_cookbook_messages_count_129_on_gpt_3_5_turbo() -> None:
    assert count_request_tokens(COOKBOOK_MESSAGES, TiktokenEstimator("gpt-3.5-turbo")) == 129


def test_cookbook_messages_count_124_on_gpt_4o() -> None:
    assert count_request_tokens(COOKBOOK_MESSAGES, TiktokenEstimator("gpt-4o")) == 124


def test_cookbook_messages_count_124_on_gpt_4o_mini() -> None:
    assert count_request_tokens(COOKBOOK_MESSAGES, TiktokenEstimator("gpt-4o-mini")) == 124


def test_weather_tool_request_counts_105_on_gpt_4() -> None:
    estimator = TiktokenEstimator("gpt-4")
    assert count_request_tokens(WEATHER_MESSAGES, estimator, WEATHER_TOOLS) == 105


def test_weather_tool_request_counts_105_on_gpt_3_5_turbo() -> None:
    estimator = TiktokenEstimator("gpt-3.5-turbo")
    assert count_request_tokens(WEATHER_MESSAGES, estimator, WEATHER_TOOLS) == 105


def test_weather_tool_request_counts_101_on_gpt_4o() -> None:
    estimator = TiktokenEstimator("gpt-4o")
    assert count_request_tokens(WEATHER_MESSAGES, estimator, WEATHER_TOOLS) == 101


def test_weather_tool_request_counts_101_on_gpt_4o_mini() -> None:
    estimator = TiktokenEstimator("gpt-4o-mini")
    assert count_request_tokens(WEATHER_MESSAGES, estimator, WEATHER_TOOLS) == 101


def test_tool_constants_follow_the_encoding_when_no_model_is_named(
    o200k: TiktokenEstimator, cl100k: TiktokenEstimator
) -> None:
    assert count_request_tokens(WEATHER_MESSAGES, cl100k, WEATHER_TOOLS) == 105
    assert count_request_tokens(WEATHER_MESSAGES, o200k, WEATHER_TOOLS) == 101


def test_request_is_messages_plus_priming_plus_tools(o200k: TiktokenEstimator) -> None:
    assert REPLY_PRIMING_TOKENS == 3
    messages_total = sum(message_tokens(message, o200k) for message in WEATHER_MESSAGES)
    assert count_request_tokens(WEATHER_MESSAGES, o200k, WEATHER_TOOLS) == (
        messages_total + REPLY_PRIMING_TOKENS + tools_tokens(WEATHER_TOOLS, o200k)
    )


def test_no_tools_cost_nothing(o200k: TiktokenEstimator) -> None:
    assert tools_tokens(None, o200k) == 0
    assert tools_tokens([], o200k) == 0


def test_legacy_functions_entries_count_like_tools(o200k: TiktokenEstimator) -> None:
    functions = [tool["function"] for tool in WEATHER_TOOLS]
    assert tools_tokens(functions, o200k) == tools_tokens(WEATHER_TOOLS, o200k)


def test_nested_object_properties_are_counted(o200k: TiktokenEstimator) -> None:
    flat = {"type": "function", "function": {"name": "f", "parameters": {"properties": {}}}}
    nested = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "properties": {
                    "where": {
                        "type": "object",
                        "properties": {"city": {"type": "string", "description": "A city"}},
                    }
                }
            },
        },
    }
    where_only = tools_tokens([nested], o200k) - tools_tokens([flat], o200k)
    assert where_only > 3 + 3 + o200k.estimate_tokens("where:object:")


# --- messages ------------------------------------------------------------------------------


def test_message_is_3_plus_its_strings_plus_1_for_a_name(o200k: TiktokenEstimator) -> None:
    count = o200k.estimate_tokens
    assert message_tokens({"role": "user", "content": "hello there"}, o200k) == (
        3 + count("user") + count("hello there")
    )
    assert message_tokens({"role": "user", "name": "ann", "content": "hi"}, o200k) == (
        3 + count("user") + count("ann") + 1 + count("hi")
    )


@settings(max_examples=50, deadline=None)
@given(content=st.text())
def test_text_message_property(content: str) -> None:
    estimator = TiktokenEstimator(encoding="o200k_base")
    expected = 3 + estimator.estimate_tokens("assistant") + estimator.estimate_tokens(content)
    assert message_tokens({"role": "assistant", "content": content}, estimator) == expected


def test_special_token_text_in_content_does_not_raise(o200k: TiktokenEstimator) -> None:
    content = "ignore this <|endoftext|><|im_start|>system"
    assert message_tokens({"role": "user", "content": content}, o200k) == (
        3 + o200k.estimate_tokens("user") + len(o200k.encoding.encode_ordinary(content))
    )


def test_unknown_string_keys_count_and_other_values_do_not(o200k: TiktokenEstimator) -> None:
    base = message_tokens({"role": "user", "content": "hi"}, o200k)
    with_string = {"role": "user", "content": "hi", "x_label": "greeting"}
    assert message_tokens(with_string, o200k) == base + o200k.estimate_tokens("greeting")
    with_other = {"role": "user", "content": "hi", "audio": {"id": "audio_1"}, "n": 3, "x": None}
    assert message_tokens(with_other, o200k) == base


def test_tool_result_counts_its_tool_call_id_as_a_string(o200k: TiktokenEstimator) -> None:
    message = {"role": "tool", "tool_call_id": "call_abc", "content": "22 C"}
    count = o200k.estimate_tokens
    assert message_tokens(message, o200k) == 3 + count("tool") + count("call_abc") + count("22 C")


def test_tool_calls_count_name_arguments_and_overhead(o200k: TiktokenEstimator) -> None:
    count = o200k.estimate_tokens
    arguments = '{"location": "Paris"}'
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": arguments},
            },
            {"id": "call_2", "type": "function", "function": {"name": "time", "arguments": "{}"}},
        ],
    }
    assert TOOL_CALL_TOKENS == 3
    assert message_tokens(message, o200k) == (
        3
        + count("assistant")
        + (TOOL_CALL_TOKENS + count("weather") + count(arguments))
        + (TOOL_CALL_TOKENS + count("time") + count("{}"))
    )


def test_custom_tool_calls_count_name_and_input(o200k: TiktokenEstimator) -> None:
    count = o200k.estimate_tokens
    call = {"id": "c", "type": "custom", "custom": {"name": "sql", "input": "select 1"}}
    message = {"role": "assistant", "tool_calls": [call]}
    assert message_tokens(message, o200k) == (
        3 + count("assistant") + TOOL_CALL_TOKENS + count("sql") + count("select 1")
    )


def test_legacy_function_call_counts_like_one_tool_call(o200k: TiktokenEstimator) -> None:
    call = {"name": "weather", "arguments": "{}"}
    legacy = {"role": "assistant", "content": None, "function_call": call}
    modern = {"role": "assistant", "tool_calls": [{"type": "function", "function": call}]}
    assert message_tokens(legacy, o200k) == message_tokens(modern, o200k)


def test_text_and_refusal_parts_count_as_text(o200k: TiktokenEstimator) -> None:
    count = o200k.estimate_tokens
    user = {
        "role": "user",
        "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
    }
    assert message_tokens(user, o200k) == 3 + count("user") + count("one") + count("two")
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    assert message_tokens(refusal, o200k) == 3 + count("assistant") + count("I can't.")


def test_unknown_part_counts_its_strings_but_payloads(o200k: TiktokenEstimator) -> None:
    part = {"type": "input_video", "caption": "a cat", "input_video": {
        "data": "AAAA" * 1000, "url": "data:video/mp4;base64," + "AAAA" * 100}}
    message = {"role": "user", "content": [part]}
    assert message_tokens(message, o200k) == 3 + o200k.estimate_tokens("user") + (
        o200k.estimate_tokens("a cat")
    )


def test_an_unknown_part_is_counted_at_what_it_sends(o200k: TiktokenEstimator) -> None:
    """A 50k-word ``document`` part and an Anthropic web fetch result inside a message count
    their text, however deep (issue 39, item 14: they counted nothing)."""
    words = " ".join(f"clause {n} of the contract" for n in range(10_000))
    document = {"type": "document", "title": "Contract", "source": {
        "type": "text", "media_type": "text/plain", "data": words}}
    fetched = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {
        "type": "web_fetch_result", "url": "https://docs.test/a", "content": document}}
    text = o200k.estimate_tokens(words)
    for part in (document, fetched):
        message = {"role": "user", "content": [part]}
        assert text < message_tokens(message, o200k) < text + 30
    assert chat.count_tokens([{"role": "user", "content": [document]}]) > text


def test_any_token_estimator_works_with_gpt_4o_rules() -> None:
    chars = cutctx.CharRatioEstimator(4.0)
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    message = {"role": "user", "content": [{"type": "text", "text": "12345678"}, image]}
    assert message_tokens(message, chars) == 3 + 1 + 2 + 1445
    assert tools_tokens(WEATHER_TOOLS, chars) > 0


def test_a_message_must_be_a_mapping(o200k: TiktokenEstimator) -> None:
    with pytest.raises(TypeError):
        message_tokens(["role", "user"], o200k)  # type: ignore[arg-type]


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(tokens_module, raise_on_error=True).attempted > 0


# --- images: the vision guide's examples ----------------------------------------------------


def test_1024_square_at_high_detail_is_765_on_gpt_4o() -> None:
    assert image_tokens(1024, 1024, "high", "gpt-4o") == 765


def test_2048_by_4096_at_high_detail_is_1105_on_gpt_4o() -> None:
    assert image_tokens(2048, 4096, "high", "gpt-4o") == 1105


def test_low_detail_is_85_whatever_the_size() -> None:
    assert image_tokens(4096, 8192, "low", "gpt-4o") == 85
    assert image_tokens(10, 10, "low", None) == 85


def test_auto_and_unset_detail_count_as_high() -> None:
    assert image_tokens(1024, 1024, "auto", None) == 765
    assert image_tokens(1024, 1024, None, None) == 765


def test_small_images_are_not_upscaled() -> None:
    assert image_tokens(512, 512, "high", "gpt-4o") == 85 + 170
    assert image_tokens(513, 500, "high", "gpt-4o") == 85 + 2 * 170


def test_gpt_4o_mini_tile_constants() -> None:
    assert image_tokens(1024, 1024, "low", "gpt-4o-mini") == 2833
    assert image_tokens(1024, 1024, "high", "gpt-4o-mini-2024-07-18") == 2833 + 4 * 5667


def test_patch_rule_1024_square() -> None:
    # 32 x 32 = 1024 patches (guide's example), x1.62 for gpt-4.1-mini, x2.46 for gpt-4.1-nano
    assert image_tokens(1024, 1024, "high", "gpt-4.1-mini") == 1659
    assert image_tokens(1024, 1024, "high", "gpt-4.1-nano-2025-04-14") == 2519


def test_patch_rule_1800_by_2400_is_rescaled_to_1452_patches() -> None:
    # the guide: 57 x 75 = 4275 patches > 1536, rescaled to 33 x 44 = 1452
    assert image_tokens(1800, 2400, "high", "gpt-4.1-mini") == 2352  # 1452 x 1.62
    assert image_tokens(1800, 2400, "high", "o4-mini") == 2497  # 1452 x 1.72


def test_patch_rule_ignores_detail() -> None:
    assert image_tokens(1024, 1024, "low", "o4-mini") == image_tokens(1024, 1024, "high", "o4-mini")


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 20_000), height=st.integers(1, 20_000))
def test_patch_rule_never_exceeds_the_cap(width: int, height: int) -> None:
    assert 1 <= image_tokens(width, height, "high", "gpt-4.1-mini") <= round(1536 * 1.62)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 20_000), height=st.integers(1, 20_000))
def test_tile_rule_stays_within_its_bounds(width: int, height: int) -> None:
    assert 85 + 170 <= image_tokens(width, height, "high", "gpt-4o") <= 85 + 8 * 170


def test_unknown_size_is_the_costliest() -> None:
    assert DEFAULT_IMAGE_SIZE == (2048, 768)
    assert image_tokens(*DEFAULT_IMAGE_SIZE, "high", "gpt-4o") == 85 + 8 * 170
    assert image_tokens(*DEFAULT_IMAGE_SIZE, "high", "gpt-4.1-mini") == round(1536 * 1.62)


@pytest.mark.parametrize(("width", "height"), [(0, 10), (10, -1)])
def test_image_size_must_be_positive(width: int, height: int) -> None:
    with pytest.raises(ValueError):
        image_tokens(width, height, "high", None)


# --- images: sizes from data URLs ------------------------------------------------------------


def _png(width: int, height: int, *, pixels: bool = False) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = b"".join(b"\x00" + bytes(width) for _ in range(height)) if pixels else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def _gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b";"


def _webp(kind: bytes, frame: bytes) -> bytes:
    chunk = kind + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _webp_vp8(width: int, height: int) -> bytes:  # lossy: a key frame header
    return _webp(
        b"VP8 ", b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(10)
    )


def _webp_vp8l(width: int, height: int) -> bytes:  # lossless: 14-bit sizes minus one
    return _webp(b"VP8L", b"\x2f" + struct.pack("<I", (width - 1) | (height - 1) << 14) + bytes(8))


def _webp_vp8x(width: int, height: int) -> bytes:  # extended: 24-bit canvas sizes minus one
    sizes = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return _webp(b"VP8X", bytes(4) + sizes)


def _jpeg(width: int, height: int, *, exif_bytes: int = 0) -> bytes:
    def segment(marker: int, data: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(data) + 2) + data

    app0 = segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    app1 = segment(0xE1, b"Exif\x00\x00" + bytes(exif_bytes)) if exif_bytes else b""
    dqt = segment(0xDB, b"\x00" + bytes(64))
    sof0 = segment(0xC0, b"\x08" + struct.pack(">HH", height, width) + b"\x01\x01\x11\x00")
    return b"\xff\xd8" + app0 + app1 + dqt + b"\xff" + sof0 + b"\xff\xd9"  # with one fill byte


def test_size_from_a_real_png_data_url() -> None:
    url = _data_url("image/png", _png(1024, 1024, pixels=True))
    assert image_size_from_data_url(url) == (1024, 1024)


def test_png_data_url_image_part_counts_by_its_size() -> None:
    estimator = TiktokenEstimator("gpt-4o")
    part = {
        "type": "image_url",
        "image_url": {"url": _data_url("image/png", _png(1024, 1024)), "detail": "high"},
    }
    message = {"role": "user", "content": [part]}
    assert message_tokens(message, estimator) == 3 + estimator.estimate_tokens("user") + 765


def test_image_parts_never_tokenize_their_data(o200k: TiktokenEstimator) -> None:
    part = {"type": "image_url", "image_url": {"url": _data_url("image/png", _png(2048, 4096))}}
    message_tokens({"role": "user", "content": [part]}, o200k)
    assert o200k.cache_info().size == 1  # only "user"


@pytest.mark.parametrize(
    ("build", "media_type"),
    [
        (_gif, "image/gif"),
        (_webp_vp8, "image/webp"),
        (_webp_vp8l, "image/webp"),
        (_webp_vp8x, "image/webp"),
        (_jpeg, "image/jpeg"),
    ],
)
def test_size_from_gif_webp_and_jpeg_headers(build: Any, media_type: str) -> None:
    assert image_size_from_data_url(_data_url(media_type, build(640, 480))) == (640, 480)


def test_jpeg_size_after_a_large_exif_segment() -> None:
    url = _data_url("image/jpeg", _jpeg(4032, 3024, exif_bytes=60_000))
    assert image_size_from_data_url(url) == (4032, 3024)


def test_format_is_sniffed_not_taken_from_the_media_type() -> None:
    assert image_size_from_data_url(_data_url("image/jpeg", _png(300, 200))) == (300, 200)


def test_urlsafe_base64_is_read() -> None:
    data = base64.urlsafe_b64encode(_png(70000, 3)).decode()
    assert image_size_from_data_url(f"data:image/png;base64,{data}") == (70000, 3)


@settings(max_examples=100, deadline=None)
@given(width=st.integers(1, 2**31 - 1), height=st.integers(1, 2**31 - 1))
def test_png_header_round_trip(width: int, height: int) -> None:
    assert image_size_from_data_url(_data_url("image/png", _png(width, height))) == (width, height)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "data:image/svg+xml,%3Csvg%3E%3C/svg%3E",
        "data:image/png;base64,",
        "data:image/png;base64,bm90IGFuIGltYWdl",
        "data:image/png;base64,!!!!",
        _data_url("image/jpeg", b"\xff\xd8\xff\xda\x00\x02"),
    ],
)
def test_unreadable_sizes_are_none(url: str) -> None:
    assert image_size_from_data_url(url) is None


def test_remote_image_counts_the_default_size(o200k: TiktokenEstimator) -> None:
    high = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    low = {
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.png", "detail": "low"},
    }
    base = 3 + o200k.estimate_tokens("user")
    assert message_tokens({"role": "user", "content": [high]}, o200k) == base + 1445
    assert message_tokens({"role": "user", "content": [low]}, o200k) == base + 85


# --- audio and files ------------------------------------------------------------------------


def _wav(seconds: int, byte_rate: int) -> bytes:
    data = bytes(seconds * byte_rate)
    fmt = struct.pack("<HHIIHH", 1, 1, byte_rate // 2, byte_rate, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


def test_wav_audio_counts_by_duration(o200k: TiktokenEstimator) -> None:
    audio = base64.b64encode(_wav(2, 48_000)).decode()
    part = {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}}
    message = {"role": "user", "content": [part]}
    base = 3 + o200k.estimate_tokens("user")
    assert AUDIO_TOKENS_PER_SECOND == 10
    assert message_tokens(message, o200k) - base == 21  # 2 s of samples plus a 44-byte header
    assert o200k.cache_info().size == 1  # the audio itself was never tokenized


def test_mp3_audio_counts_at_128_kbits(o200k: TiktokenEstimator) -> None:
    audio = base64.b64encode(b"\xff\xfb" + bytes(3 * 16_000 - 2)).decode()
    part = {"type": "input_audio", "input_audio": {"data": audio, "format": "mp3"}}
    message = {"role": "user", "content": [part]}
    assert message_tokens(message, o200k) - 3 - o200k.estimate_tokens("user") == 30


def _pdf(pages: int) -> bytes:
    objects = b"".join(
        b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" % (n + 3,) for n in range(pages)
    )
    tree = b"2 0 obj << /Type /Pages /Count %d >> endobj\n" % (pages,)
    return b"%PDF-1.4\n" + tree + objects + b"%%EOF"


def test_pdf_counts_per_page_by_the_image_rule_plus_text() -> None:
    estimator = TiktokenEstimator("gpt-4o")
    data = _data_url("application/pdf", _pdf(3))
    part = {"type": "file", "file": {"filename": "report.pdf", "file_data": data}}
    message = {"role": "user", "content": [part]}
    page = 765 + PDF_TEXT_TOKENS_PER_PAGE  # a letter page image at high detail, plus its text
    assert message_tokens(message, estimator) == (
        3 + estimator.estimate_tokens("user") + estimator.estimate_tokens("report.pdf") + 3 * page
    )


def test_file_known_only_by_id_counts_one_page(o200k: TiktokenEstimator) -> None:
    part = {"type": "file", "file": {"file_id": "file-abc"}}
    message = {"role": "user", "content": [part]}
    assert message_tokens(message, o200k) == 3 + o200k.estimate_tokens("user") + 765 + 500


def test_non_pdf_file_data_counts_as_text_bytes(o200k: TiktokenEstimator) -> None:
    data = base64.b64encode(b"x" * 4000).decode()
    part = {"type": "file", "file": {"file_data": data}}
    message = {"role": "user", "content": [part]}
    assert message_tokens(message, o200k) == 3 + o200k.estimate_tokens("user") + 1000

"""cutctx_adapters.anthropic._tokens: calibration, framing, images, documents, tools, scaling."""

from __future__ import annotations

import base64
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutctx import CharRatioEstimator, ValidationError
from cutctx_adapters.anthropic import _tokens as tokens
from cutctx_adapters.anthropic._tokens import (
    MESSAGE_TOKENS,
    PDF_PAGE_SIZE,
    PDF_TEXT_TOKENS_PER_PAGE,
    REQUEST_TOKENS,
    TOOL_BLOCK_TOKENS,
    AnthropicTokenCounter,
    image_limits,
    image_tokens,
)
from cutctx_adapters.counting import (
    CALIBRATION,
    NEW_TOKENIZER_CALIBRATION,
    CalibratedEstimator,
    calibration_for,
    scale_to_total,
)

ONE = CharRatioEstimator(1.0)  # one token a character: easy arithmetic


def counter(calibration: float = 1.0, model: str | None = None) -> AnthropicTokenCounter:
    return AnthropicTokenCounter(ONE, model=model, calibration=calibration)


def png(width: int, height: int) -> str:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    return base64.b64encode(header + struct.pack(">II", width, height) + b"\x08\x02\0\0\0"
                            + b"\0" * 16).decode()


# --- calibration ------------------------------------------------------------------------------


def test_calibration_by_model() -> None:
    assert calibration_for(None) == CALIBRATION == 1.3
    assert calibration_for("claude-sonnet-4-5") == CALIBRATION
    assert calibration_for("claude-opus-4-7") == NEW_TOKENIZER_CALIBRATION == 1.75
    assert calibration_for("claude-opus-4-7-20260416") == NEW_TOKENIZER_CALIBRATION


def test_calibrated_counts_round_up_without_float_noise() -> None:
    calibrated = CalibratedEstimator(ONE, 1.3)
    assert calibrated.estimate_tokens("x" * 10) == 13  # not 14 from 13.000000000000002
    assert calibrated.estimate_tokens("x" * 11) == 15  # 14.3 rounds up
    assert calibrated.estimate_tokens("") == 0


@pytest.mark.parametrize("factor", [0, -1.0, float("nan"), float("inf"), True, "1.3"])
def test_calibration_must_be_a_positive_number(factor: object) -> None:
    with pytest.raises(ValidationError):
        CalibratedEstimator(ONE, factor)  # type: ignore[arg-type]


def test_default_estimator_is_o200k_times_calibration(tiktoken_cache: object) -> None:
    from cutctx_adapters.counting._estimators import estimator_for

    text = "def search(query: str) -> list[Book]:\n    return []\n"
    raw = estimator_for(None).estimate_tokens(text)
    assert AnthropicTokenCounter().text(text) == math.ceil(raw * CALIBRATION - 1e-9)
    assert AnthropicTokenCounter(model="claude-opus-4-7").text(text) == math.ceil(
        raw * NEW_TOKENIZER_CALIBRATION - 1e-9)


def test_estimator_must_estimate() -> None:
    with pytest.raises(ValidationError):
        AnthropicTokenCounter(object())  # type: ignore[arg-type]


# --- messages and blocks ----------------------------------------------------------------------


def test_message_framing_and_text() -> None:
    assert counter().message({"role": "user", "content": "hello"}) == MESSAGE_TOKENS + 5
    blocks = [{"type": "text", "text": "abc"}, {"type": "text", "text": "de",
                                                  "cache_control": {"type": "ephemeral"}}]
    assert counter().message({"role": "user", "content": blocks}) == MESSAGE_TOKENS + 5


def test_tool_blocks() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "ls"}}
    assert counter().block(use) == TOOL_BLOCK_TOKENS + len("run") + len('{"cmd":"ls"}')
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out"}
    assert counter().block(result) == TOOL_BLOCK_TOKENS + 3
    nested = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
              "content": [{"type": "text", "text": "four"}]}
    assert counter().block(nested) == TOOL_BLOCK_TOKENS + 4


def test_thinking_counts_its_text_not_its_signature() -> None:
    block = {"type": "thinking", "thinking": "abcdef", "signature": "S" * 500}
    assert counter().block(block) == 6


def test_opaque_payloads_count_by_size() -> None:
    redacted = {"type": "redacted_thinking", "data": "A" * 400}  # 300 bytes
    assert counter().block(redacted) == 75
    search = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "u", "title": "ti",
         "encrypted_content": "B" * 160}]}
    assert counter().block(search) == len("u") + len("ti") + 30


def test_unknown_blocks_count_their_readable_strings() -> None:
    block = {"type": "future_block", "id": "x_1", "note": "abcd", "nested": {"more": "ef"}}
    assert counter().block(block) == 6
    assert counter().block("not a block") == 0


# --- images -----------------------------------------------------------------------------------


def test_image_patches_below_the_limits() -> None:
    assert image_tokens(200, 200) == 64  # ceil(200/28) = 8
    assert image_tokens(1092, 1092) == 39 * 39
    assert image_tokens(28, 29) == 2
    assert image_tokens(1, 1) == 1


def test_large_images_are_shrunk_to_the_patch_budget() -> None:
    edge, budget = image_limits(None)
    assert (edge, budget) == (1568, 1568)
    for size in [(1568, 1568), (4000, 3000), (8000, 200), (200, 8000), (1920, 1080)]:
        assert image_tokens(*size) <= budget
    assert image_tokens(8000, 8000) == image_tokens(1568, 1568)
    assert image_tokens(3000, 2000) >= 1500  # close to the budget, not far below


def test_high_resolution_models() -> None:
    assert image_limits("claude-opus-4-7") == (2576, 4784)
    assert image_tokens(2000, 2000, "claude-opus-4-7") <= 4784
    assert image_tokens(2000, 2000, "claude-opus-4-7") > image_tokens(2000, 2000)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9000), st.integers(1, 9000))
def test_image_tokens_always_fit_the_budget(width: int, height: int) -> None:
    assert 1 <= image_tokens(width, height) <= 1568
    if width <= 1568 and height <= 1568 and math.ceil(width / 28) * math.ceil(height / 28) <= 1568:
        assert image_tokens(width, height) == math.ceil(width / 28) * math.ceil(height / 28)


def test_image_size_is_read_from_base64_data() -> None:
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png(300, 100)}}
    assert counter().block(block) == image_tokens(300, 100)


def test_image_without_readable_size_costs_the_budget() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://example.org/a.png"}}
    assert counter().block(url) == 1568
    assert counter(model="claude-opus-4-7").block(url) == 4784
    garbage = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": "bm90IGFuIGltYWdl"}}
    assert counter().block(garbage) == 1568


def test_invalid_image_size() -> None:
    with pytest.raises(ValueError):
        image_tokens(0, 10)


# --- documents --------------------------------------------------------------------------------


def test_text_documents_count_as_text() -> None:
    doc = {"type": "document", "title": "ti", "context": "ctx",
           "source": {"type": "text", "media_type": "text/plain", "data": "body"}}
    assert counter().block(doc) == 2 + 3 + 4
    content = {"type": "document", "source": {"type": "content", "content": [
        {"type": "text", "text": "abc"}]}}
    assert counter().block(content) == 3


def test_pdf_documents_count_pages() -> None:
    pdf = b"%PDF-1.4\n" + b"1 0 obj << /Type /Page >> endobj\n" * 3 + b"<< /Type /Pages >>"
    doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": base64.b64encode(pdf).decode()}}
    page = PDF_TEXT_TOKENS_PER_PAGE + image_tokens(*PDF_PAGE_SIZE)
    assert counter().block(doc) == 3 * page
    by_url = {"type": "document", "source": {"type": "url", "url": "https://x.org/a.pdf"}}
    assert counter().block(by_url) == page


# --- system and tools -------------------------------------------------------------------------


def test_system_as_string_or_blocks() -> None:
    assert counter().system("abc") == 3
    assert counter().system([{"type": "text", "text": "ab"}, {"type": "text", "text": "c"}]) == 3
    assert counter().system(None) == 0


def test_tools_add_the_tool_use_system_prompt() -> None:
    tool = {"name": "f", "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral"}}
    body = len('{"name":"f","input_schema":{"type":"object"}}')
    assert counter().tools([tool]) == 346 + body
    assert counter().tools([tool], {"type": "any"}) == 313 + body
    assert counter().tools([]) == 0
    assert counter().request_overhead(None) == REQUEST_TOKENS
    assert counter().request_overhead([tool]) == REQUEST_TOKENS + 346 + body


# --- scaling to an exact total ----------------------------------------------------------------


def test_scale_to_total_examples() -> None:
    assert scale_to_total([10, 20, 30], 7) == [1, 2, 4]
    assert scale_to_total([10, 20, 30], 60) == [10, 20, 30]
    assert scale_to_total([0, 0], 3) == [2, 1]
    assert scale_to_total([], 5) == []
    with pytest.raises(ValueError):
        scale_to_total([1], -1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=30), st.integers(0, 200_000))
def test_scale_to_total_adds_up_and_stays_proportional(values: list[int], total: int) -> None:
    scaled = scale_to_total(values, total)
    assert sum(scaled) == total
    weights = values if any(values) else [1] * len(values)
    for value, share in zip(weights, scaled, strict=True):
        assert abs(share - value * total / sum(weights)) < 1


def test_module_doctests() -> None:
    import doctest

    assert doctest.testmod(tokens).failed == 0

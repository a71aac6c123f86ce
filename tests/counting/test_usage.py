"""A model's ``Calibration`` from reported usage: the arithmetic, its bounds, and reading the
input a reply reports from the SDKs' own objects (replies and stream events)."""

from __future__ import annotations

import pytest
from anthropic.types import Message, RawMessageStartEvent
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from cutctx_adapters.counting import Calibration, near_limit, reported_input
from cutctx_adapters.counting._usage import BOUNDS, SMALLEST, TOLERANCE


def test_the_first_reading_is_taken_whole() -> None:
    record = Calibration().observed(estimate=10_000, reported=13_000)
    assert (record.factor, record.observations, record.ratio) == (1.3, 1, 1.3)


def test_a_reading_is_relative_to_the_factor_the_estimate_was_made_with() -> None:
    record = Calibration().observed(10_000, 13_000)
    # an estimate made at 1.3 that the bill matches asks for no change
    assert record.observed(13_000, 13_000, used=1.3).factor == 1.3
    # one made before the factor applied (at 1.0) still reads as 1.3
    assert record.observed(10_000, 13_000, used=1.0).wanted == pytest.approx(1.3)


def test_the_factor_moves_only_past_the_tolerance() -> None:
    record = Calibration().observed(10_000, 15_000)
    nudged = record.observed(15_000, round(15_000 * (1 + TOLERANCE / 2)))
    assert nudged.factor == 1.5 and nudged.wanted > 1.5 and nudged.observations == 2
    moved = record.observed(15_000, 18_000)
    assert moved.factor != 1.5 and moved.factor == round(moved.wanted, 3)


def test_settled_readings_weigh_a_quarter_each() -> None:
    record = Calibration()
    for _ in range(8):
        record = record.observed(10_000, 12_000, used=1.0)
    assert record.factor == pytest.approx(1.2)
    odd = record.observed(12_000, 15_000)  # one request of unusual content, at 1.2
    assert odd.wanted == pytest.approx(1.2 * 1.25 ** 0.25, rel=1e-4)


def test_an_exact_count_is_taken_whole() -> None:
    record = Calibration().observed(10_000, 12_000).observed(10_000, 12_000, used=1.0)
    exact = record.observed(12_000, 13_200, exact=True)
    assert exact.factor == pytest.approx(1.32) and exact.wanted == pytest.approx(1.32)


def test_the_factor_is_bounded_and_says_so() -> None:
    high = Calibration().observed(10_000, 60_000)
    assert high.factor == BOUNDS[1] and high.bounded
    low = Calibration().observed(10_000, 3_000)
    assert low.factor == BOUNDS[0] and low.bounded


@pytest.mark.parametrize(("estimate", "reported"), [
    (SMALLEST - 1, 2 * SMALLEST),  # a small request: its framing outweighs its text
    (10_000, 1),  # another request's usage
    (10_000, 200_000),
    (10_000, 0),
    (0, 100),
])
def test_readings_that_cannot_be_this_request_are_ignored(estimate: int, reported: int) -> None:
    assert Calibration().observed(estimate, reported) == Calibration()


def test_a_record_round_trips_through_the_store_and_refuses_junk() -> None:
    record = Calibration().observed(10_000, 14_000)
    assert Calibration.from_bytes(record.to_bytes()) == record
    for junk in (None, b"", b"[]", b"{\"factor\": 99}", b"not json", b"{\"colour\": 1}"):
        assert Calibration.from_bytes(junk) is None


def _anthropic_usage() -> dict[str, int]:
    return {"input_tokens": 20, "output_tokens": 5, "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 4_000}


def test_the_input_of_an_anthropic_reply_includes_its_cache_reads_and_writes() -> None:
    reply = Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": _anthropic_usage()})
    assert reported_input(reply) == reported_input(reply.usage) == 4_320
    event = RawMessageStartEvent.model_validate({"type": "message_start", "message": {
        **reply.model_dump(), "stop_reason": None}})
    assert reported_input(event) == 4_320


def test_openai_counts_cached_input_inside_its_input() -> None:
    chat = ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4o", "choices": [],
        "usage": {"prompt_tokens": 900, "completion_tokens": 3, "total_tokens": 903,
                  "prompt_tokens_details": {"cached_tokens": 512}}})
    assert reported_input(chat) == 900
    response = Response.model_validate({
        "id": "r", "object": "response", "created_at": 0, "model": "gpt-5", "output": [],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 700, "output_tokens": 2, "total_tokens": 702,
                  "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 50},
                  "output_tokens_details": {"reasoning_tokens": 0}}})
    assert reported_input(response) == 700
    assert reported_input({"type": "response.completed", "response": response}) == 700


@pytest.mark.parametrize("value", [None, "12", True, -3, {"usage": None}, {"choices": []}])
def test_no_input_is_read_where_none_is_reported(value: object) -> None:
    assert reported_input(value) is None


def test_near_a_limit() -> None:
    assert near_limit(9_500, 10_000) and near_limit(10_800, 10_000)
    assert not near_limit(8_000, 10_000) and not near_limit(None, 10_000)
    assert near_limit(49_000, 100_000, 50_000) and not near_limit(20_000, None, 50_000)

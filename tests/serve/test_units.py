"""The proxy's parts on their own: SSE reading, reply copies, the CLI's flags, retry figures."""

from __future__ import annotations

import argparse
from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from cutctx_adapters import CompactionSettings
from cutctx_adapters.cli._args import build_parser
from cutctx_adapters.serve._replies import ReplyReader
from cutctx_adapters.serve._retry import context_error, lower_budget
from cutctx_adapters.serve._sse import EventReader
from tests.serve._fake import (
    chat_events,
    chat_reply,
    messages_events,
    messages_reply,
    responses_events,
    responses_reply,
)

_FORMATS = {"chat": (chat_reply, chat_events), "responses": (responses_reply, responses_events),
            "messages": (messages_reply, messages_events)}


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(st.lists(st.integers(min_value=0), max_size=30),
       st.sampled_from(sorted(_FORMATS)))
def test_a_streamed_reply_reads_as_the_whole_reply_however_it_is_cut(
        cuts: list[int], kind: str) -> None:
    make, events = _FORMATS[kind]
    reply = make({}, 7)
    whole = ReplyReader(kind, "application/json", "")
    whole.feed(__import__("json").dumps(reply).encode())
    streamed = ReplyReader(kind, "text/event-stream", "")
    for piece in _split(b"".join(events(reply)), cuts):
        streamed.feed(piece)
    assert streamed.reply() is not None and whole.reply() is not None
    assert streamed.reply().items == whole.reply().items  # type: ignore[union-attr]


@given(st.lists(st.integers(min_value=0), max_size=20))
def test_events_are_the_same_however_the_bytes_are_cut(cuts: list[int]) -> None:
    data = "event: a\r\ndata: x\u2028y\r\n\r\n: comment\ndata: 1\ndata: 2\n\n".encode()
    reader = EventReader()
    got = [event for piece in _split(data, cuts) for event in reader.feed(piece)]
    got += reader.close()
    assert [(event.name, event.data) for event in got] == [("a", "x\u2028y"),
                                                             ("message", "1\n2")]


def test_serve_has_a_flag_for_every_setting() -> None:
    commands = next(action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    serve = commands.choices["serve"]
    flags = {option for action in serve._actions for option in action.option_strings}
    assert {"--" + field.name.replace("_", "-") for field in fields(CompactionSettings)} <= flags


def test_context_length_errors_are_told_apart() -> None:
    openai = (b'{"error": {"code": "context_length_exceeded", "message": "maximum context '
              b'length is 1000 tokens. However, your messages resulted in 2000 tokens."}}')
    anthropic = b'{"error": {"message": "prompt is too long: 3000 tokens > 1500 maximum"}}'
    assert context_error(400, openai) == (2000, 1000)
    assert context_error(400, anthropic) == (3000, 1500)
    assert context_error(429, openai) is False
    assert context_error(400, b'{"error": {"message": "bad tool"}}') is False
    assert lower_budget(1800, (2000, 1000)) == 810 and lower_budget(1000, True) == 750

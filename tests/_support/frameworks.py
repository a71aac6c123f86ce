"""What the framework integration tests check on the wire, whatever the framework.

The scripted model (``examples/integrations/_scripted_api.py``, shared with the examples and
``benchmarks/frameworks.py``) records every body the framework sent; these checks read them
against the reports the hook made, one per request.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "integrations"))

from _scripted_api import (
    ANSWER,
    BASE_URL,
    INSTRUCTIONS,
    TASK,
    ScriptedApi,
    read_file,
    scripted_api,
)

from cutctx_adapters.openai import chat, responses
from cutctx_adapters.session import CallReport
from tests._support.http import mocked_http

__all__ = ["ANSWER", "ANTHROPIC_URL", "BASE_URL", "INSTRUCTIONS", "MODEL", "RESERVE", "TASK",
           "WINDOW", "Wire", "anthropic_api", "billed_at", "check_follows_the_bill", "read_file",
           "scripted_api"]

MODEL = "gpt-4o"
WINDOW, RESERVE = 3_000, 500
"""A small window: the scripted agent's 200+ turns compact again and again."""
COMPACTING = ("compacted", "recompacted")


@dataclass(frozen=True)
class Wire:
    """The bodies one run sent (``key``: ``messages`` or ``input``) and the hook's reports."""

    bodies: list[dict[str, Any]]
    reports: list[CallReport]
    key: str

    @classmethod
    def of(cls, api: ScriptedApi, reports: Sequence[CallReport]) -> Wire:
        key = "input" if "input" in api.sent[0] else "messages"
        return cls(list(api.sent), list(reports), key)

    def tokens(self, body: dict[str, Any]) -> int:
        """The body's prompt tokens, counted by cutctx on what was sent."""
        if self.key == "input":
            return responses.count_tokens(body["input"], instructions=body.get("instructions"),
                                          model=MODEL, tools=body.get("tools"))
        return chat.count_tokens(body["messages"], model=MODEL, tools=body.get("tools"))

    def validate(self, body: dict[str, Any]) -> None:
        """Refuses an orphaned tool call or result (``cutctx.ValidationError``)."""
        (responses.validate if self.key == "input" else chat.validate)(body[self.key])

    def instructions(self, body: dict[str, Any]) -> Any:
        if self.key == "input":
            return body.get("instructions")
        first = body["messages"][0]
        return first["content"] if first.get("role") == "system" else None

    def prefix_breaks(self) -> list[int]:
        """Calls whose history does not start with the one sent before it."""
        items = [body[self.key] for body in self.bodies]
        return [index for index in range(1, len(items))
                if items[index][:len(items[index - 1])] != items[index - 1]]

    def compactions(self) -> list[int]:
        return [index for index, report in enumerate(self.reports)
                if report.decision in COMPACTING]


def check_wire(wire: Wire, *, calls: int, budget: int = WINDOW - RESERVE,
               tools_counted: bool = True) -> None:
    """Every request under the budget, validly paired, with the instructions; the prefix kept
    between compactions, and only a compaction breaks it."""
    assert len(wire.bodies) == len(wire.reports) == calls
    slack = 0 if tools_counted else 200  # a history processor is not told the tools
    assert max(wire.tokens(body) for body in wire.bodies) <= budget + slack
    for body in wire.bodies:
        wire.validate(body)
        assert wire.instructions(body) == INSTRUCTIONS
    compactions = wire.compactions()
    assert len(compactions) >= 10, "the run should compact again and again"
    assert set(wire.prefix_breaks()) <= set(compactions)


def same_objects(given: Sequence[Any], sent: Sequence[Any],
                 equal: Callable[[Any, Any], bool] = lambda a, b: a == b) -> None:
    """Every sent item equal to a given one is that very object."""
    ids = {id(item) for item in given}
    for item in sent:
        if id(item) not in ids:
            assert not any(equal(item, other) for other in given)


def billed_at(factor: float) -> Callable[[dict[str, Any]], int]:
    """A scripted model's bill: ``factor`` times cutctx's own count of the body sent."""
    def bill(body: dict[str, Any]) -> int:
        key = "input" if "input" in body else "messages"
        return round(factor * Wire([body], [], key).tokens(body))

    return bill


def check_follows_the_bill(api: ScriptedApi, reports: Sequence[CallReport],
                           factor: float) -> None:
    """The hook fed its session the reported input: after three replies every estimate is
    within 3% of the bill (5% for a call whose compaction changed what the request holds: the
    factor corrects text, and stubs carry more framing), and the session names the factor it
    learned."""
    bill = billed_at(factor)
    assert len(api.sent) == len(reports) > 10
    for report, body in list(zip(reports, api.sent, strict=True))[3:]:
        assert report.tokens_sent is not None
        allowed = 0.05 if report.decision in COMPACTING else 0.03
        assert abs(report.tokens_sent - bill(body)) <= allowed * bill(body)
    last = reports[-1].calibration
    assert last is not None and abs(last.factor - factor) <= 0.03 * factor


ANTHROPIC_URL = "https://api.anthropic.test"


def _streamed_answer(request: httpx.Request, sent: list[dict[str, Any]]) -> httpx.Response:
    """A Messages stream of one text block, ``ANSWER`` (the body is kept in ``sent``)."""
    body = json.loads(request.content)
    sent.append(body)
    usage = {"input_tokens": 1, "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            "id": f"msg_{len(sent)}", "type": "message", "role": "assistant",
            "model": body["model"], "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": ANSWER}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"}]
    text = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


@contextmanager
def anthropic_api() -> Iterator[list[dict[str, Any]]]:
    """Anthropic's Messages endpoint answering every request with ``ANSWER`` (streamed, as
    pydantic-ai asks); yields the bodies sent."""
    sent: list[dict[str, Any]] = []
    with mocked_http(assert_all_called=False) as router:
        router.post(f"{ANTHROPIC_URL}/v1/messages").mock(
            side_effect=lambda request: _streamed_answer(request, sent))
        yield sent

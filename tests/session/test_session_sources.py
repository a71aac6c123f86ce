"""``Prepared.sources``: for every item a session sends, the given items it comes from (issue 39,
item 13). The framework hooks map their own objects back by it, so it must be exact: a kept item
is its given item, a replaced one keeps its item's place and kind, a summary names the span it
stands for, and no given item is sent twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from cutctx import CharRatioEstimator, SummarizationRequest, TranscriptTurn
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning import HistoryFormat
from cutctx_adapters.reports import Prepared
from cutctx_adapters.session import CompactionSession
from tests._support.agents import AgentRun, anthropic_run, chat_run, responses_run, send

ESTIMATOR = CharRatioEstimator()


def _summarize(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"the agent read {len(turns)} outputs"


def _identity(item: dict[str, Any]) -> tuple[Any, ...]:
    """What a replaced item keeps of the one it stands for."""
    return item.get("role"), item.get("type"), item.get("tool_call_id"), item.get("call_id")


def _check(prepared: Prepared, given: list[dict[str, Any]], key: str) -> None:
    sent = prepared.request[key]
    sources = prepared.sources
    assert sources is not None and len(sources) == len(sent)
    seen: set[int] = set()
    last = -1
    for item, source in zip(sent, sources, strict=True):
        assert not seen & set(source.positions), "a given item sent twice"
        seen |= set(source.positions)
        if source.fate == "summarized":
            assert source.positions and "Summary of the earlier conversation" in str(item)
            continue
        (position,) = source.positions
        assert position > last, "kept and replaced items keep their order"
        last = position
        if source.fate == "kept":
            assert item == given[position]
        else:
            assert source.fate in ("masked", "clipped", "deduplicated")
            assert item != given[position] and _identity(item) == _identity(given[position])


@pytest.mark.parametrize("summarizer", [None, _summarize], ids=["stubs", "summaries"])
@pytest.mark.parametrize(("fmt", "run"), [(chat.FORMAT, chat_run(3, 70)),
                                          (responses.FORMAT, responses_run(3, 70))],
                         ids=["chat", "responses"])
def test_every_item_sent_names_the_given_items_it_comes_from(
        fmt: HistoryFormat, run: AgentRun,
        summarizer: Callable[[SummarizationRequest, Sequence[TranscriptTurn]], str] | None
) -> None:
    session = CompactionSession(fmt, window=9_000, reserve=500, estimator=ESTIMATOR,
                                summarizer=summarizer)
    fates: set[str] = set()
    for items in run.calls():
        prepared = send(session, fmt, run, items)
        _check(prepared, items, fmt.list_key)
        fates |= {source.fate for source in prepared.sources or ()}
    assert {"kept", "masked", "summarized" if summarizer else "kept"} <= fates


def test_a_clip_after_a_dropped_user_message_names_its_own_message() -> None:
    """Two user messages in a row, the newer clipped to its share: the clip comes from the
    newer (the hooks used to guess the older), the older (dropped or clipped) from itself."""
    history = [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "The task. " * 20},
               {"role": "assistant", "content": "Ok."},
               {"role": "user", "content": "An earlier remark. " * 200},
               {"role": "user", "content": "\n".join(f"log line {n}" for n in range(3_000))}]
    session = CompactionSession(chat.FORMAT, window=3_000, reserve=500, estimator=ESTIMATOR)
    prepared = session.prepare(model="gpt-4o", messages=history)
    assert prepared.sources is not None
    sent = prepared.request["messages"]
    assert len(sent) == len(prepared.sources)
    origins = {str(message["content"])[:10]: (source.fate, source.positions)
               for message, source in zip(sent, prepared.sources, strict=True)}
    assert origins["log line 0"] == ("clipped", (4,))
    assert origins.get("An earlier", ("clipped", (3,)))[1] == (3,)


def test_anthropic_merges_blocks_so_it_names_no_sources() -> None:
    run = anthropic_run(1, 10)
    session = CompactionSession(anthropic_messages.FORMAT, window=4_000, reserve=500,
                                estimator=ESTIMATOR)
    prepared = send(session, anthropic_messages.FORMAT, run, run.calls()[-1])
    assert prepared.sources is None

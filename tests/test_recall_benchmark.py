"""The evidence-recall benchmark stays runnable and measures what it says (issue 25)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _histories import requests_of
from recall import Evidence, holds, measure, message_text, salient

from tests._support.long_histories import LONG_HISTORIES


def test_salient_items_are_paths_names_symbols_numbers_and_quoted_strings() -> None:
    text = 'Open ./src/app.py, call load_config and parseArgs at 1474 with "--fast" (x = 7)'
    assert salient(text) == {"./src/app.py", "load_config", "parseArgs", "1474", "--fast"}


def test_an_item_counts_only_as_a_whole_word() -> None:
    assert holds("line 1474: x", "1474") and not holds("sha256:ab1474cd", "1474")
    assert holds("(Open file: /repo/app.py)", "/repo/app.py")


def test_evidence_is_what_the_next_reply_names_that_the_history_already_holds() -> None:
    session = [{"role": "user", "content": "read src/app.py"},
               {"role": "assistant", "content": "open src/app.py and new_file.py"}]
    evidence = Evidence.of(session, [session[:1]])
    assert evidence.items == [("src/app.py",)]
    call = {"id": "c", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    assert message_text({"role": "assistant", "content": None, "tool_calls": [call]}) == "run\n{}"


@pytest.mark.usefixtures("tiktoken_cache")
def test_a_small_replay_measures_every_strategy() -> None:
    from cutctx_adapters.tiktoken import TiktokenEstimator

    history = next(h for h in LONG_HISTORIES if h.name == "user-observations-12-dump")
    names = ["LangChain trim_messages (sliding)", "cutctx compact per call (stateless)",
             "cutctx session (defaults)", "session, all three off"]
    messages = history.messages()
    table = measure(messages, [4_096], TiktokenEstimator("gpt-4o"), names)
    assert {name for name, _ in table} == set(names)
    for name in names[1:]:
        row = table[name, 4_096]
        assert row.wanted > 0 and 0 < row.recall <= 1
        assert row.outcome.calls == len(requests_of(messages)) and row.outcome.errors == 0
        assert row.outcome.over_window == 0 and row.outcome.bad_stubs == 0
    langchain = table[names[0], 4_096]
    assert langchain.outcome.skipped is not None or langchain.wanted > 0

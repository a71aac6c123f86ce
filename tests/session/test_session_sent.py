"""A session compares and sends what is sent (issue 32: 3, 4, 15).

* ``sent_alike`` is JSON text equality: ``1``, ``True`` and ``1.0`` apart, keys in their order.
* A value changed to one Python takes as equal but sent otherwise (``1`` to ``True`` or ``1.0``)
  is sent as changed, in place or in a replaced item, in every format and both prefix modes.
* Keys reloaded in another order are sent in the history's own order, as a fresh worker sends
  them, down to an Anthropic ``tool_use.input``, through compactions and summaries.
* An in-place redaction is seen in any ``Mapping`` (an ``OrderedDict``), not only a ``dict``.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutctx import CharRatioEstimator
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.history import to_plain
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.planning._format import HistoryFormat
from cutctx_adapters.session import CompactionSession
from cutctx_adapters.session._recent import sent_alike
from cutctx_adapters.stores import MemoryStore
from tests._support.session_workers import Replay, SpanLog

SECRET = "hunter2-secret"
MODES = ["content", "identity"]


# --- sent_alike is JSON text equality ------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                         st.sampled_from([0.0, -0.0, 1.0, 2.5]), st.sampled_from(["a", "b", ""]))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=10)


def reordered(value: Any) -> Any:
    """``value`` with the keys of every dict in reverse order."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


@settings(max_examples=400, deadline=None)
@given(a=json_values, b=json_values)
def test_sent_alike_is_json_text_equality(a: Any, b: Any) -> None:
    assert sent_alike(a, b) == (json.dumps(a) == json.dumps(b))
    assert sent_alike(a, reordered(a)) == (json.dumps(a) == json.dumps(reordered(a)))


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_a_caller_value_is_sent_alike_to_its_plain_copy(value: Any) -> None:
    assert sent_alike(value, to_plain(value))
    as_mappings = json.loads(json.dumps(value), object_pairs_hook=OrderedDict)
    assert sent_alike(as_mappings, to_plain(value))


def test_sent_alike_refuses_what_is_nested_past_the_limit() -> None:
    deep_a: Any = "x"
    deep_b: Any = "x"
    for _ in range(200):
        deep_a, deep_b = [deep_a], [deep_b]
    assert not sent_alike(deep_a, deep_b)
    assert sent_alike(deep_a, deep_a)  # the very same value


# --- the three formats, each with a number where the format carries one ---------------------


def chat_history(value: Any) -> dict[str, Any]:
    """Chat has no number in its own fields; a message's other fields travel as given."""
    return {"messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Deploy it. The token is {SECRET}.", "priority": value},
        {"role": "assistant", "content": "Deploying."},
        {"role": "user", "content": "Done?"}]}


def responses_history(value: Any) -> dict[str, Any]:
    return {"instructions": "You are a computer-use agent.", "input": [
        {"role": "user", "content": f"Log in. The token is {SECRET}."},
        {"type": "computer_call", "call_id": "c1", "id": "cu_1", "status": "completed",
         "action": {"type": "click", "button": "left", "x": value, "y": 2},
         "pending_safety_checks": []},
        {"type": "computer_call_output", "call_id": "c1",
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AAAA"}},
        {"role": "user", "content": "Done?"}]}


def anthropic_history(value: Any) -> dict[str, Any]:
    return {"system": "You are a coding agent.", "messages": [
        {"role": "user", "content": f"Open the file. The token is {SECRET}."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "open",
             "input": {"path": "app.py", "line": value, "context": {"before": 1, "after": 2}}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "1: import os"}]},
        {"role": "assistant", "content": "Opened."},
        {"role": "user", "content": "Done?"}]}


FORMATS: dict[str, tuple[HistoryFormat, Callable[[Any], dict[str, Any]], Callable[[Any], Any]]]
FORMATS = {
    "chat": (chat.FORMAT, chat_history, lambda items: items[1]),
    "responses": (responses.FORMAT, responses_history, lambda items: items[1]["action"]),
    "anthropic": (anthropic_messages.FORMAT, anthropic_history,
                  lambda items: items[1]["content"][0]["input"]),
}
"""Each format: its history with a number in it, and where that number sits."""
NUMBER_KEY = {"chat": "priority", "responses": "x", "anthropic": "line"}


def new_session(fmt: HistoryFormat, mode: str, **options: Any) -> CompactionSession:
    return CompactionSession(fmt, model="gpt-4o", window=8_000, reserve=0,
                             estimator=CharRatioEstimator(), check_prefix=mode,  # type: ignore[arg-type]
                             **options)


def body(compactor: CompactionSession, request: dict[str, Any]) -> str:
    return json.dumps(compactor.prepare({"model": "gpt-4o", **request}).request)


# By identity an edit made in place is not seen (documented, by design): not a case here.
CHANGES = [(mode, how) for mode in MODES for how in ("in-place", "replaced-item", "rebuilt")
           if not (mode == "identity" and how == "in-place")]


@pytest.mark.parametrize("new_value", [True, 1.0], ids=["true", "float"])
@pytest.mark.parametrize(("mode", "how"), CHANGES)
@pytest.mark.parametrize("name", FORMATS)
def test_a_number_changed_to_one_sent_otherwise_is_sent_as_changed(
        name: str, mode: str, how: str, new_value: Any) -> None:
    fmt, make, holder = FORMATS[name]
    request = make(1)
    compactor = new_session(fmt, mode)
    assert f'"{NUMBER_KEY[name]}": 1' in body(compactor, request)
    items = request[fmt.list_key]
    if how == "in-place":
        holder(items)[NUMBER_KEY[name]] = new_value
    elif how == "replaced-item":  # a new item in a new list: the other items are the same
        changed = copy.deepcopy(items[1])
        holder([None, changed])[NUMBER_KEY[name]] = new_value
        request = {**request, fmt.list_key: [items[0], changed, *items[2:]]}
    else:  # every item rebuilt, as reloaded from a database
        request = make(new_value)
    sent = body(compactor, request)
    assert f'"{NUMBER_KEY[name]}": {json.dumps(new_value)}' in sent
    assert sent == body(new_session(fmt, mode), request)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", FORMATS)
def test_keys_reloaded_in_another_order_are_sent_in_that_order(name: str, mode: str) -> None:
    fmt, make, _holder = FORMATS[name]
    compactor = new_session(fmt, mode)
    body(compactor, make(1))
    request = reordered(make(1))
    sent = body(compactor, request)
    assert sent == body(new_session(fmt, mode), request)
    assert json.loads(sent)[fmt.list_key] == request[fmt.list_key]
    if name == "anthropic":  # down to the tool's input: context, line, path
        tool_input = json.loads(sent)["messages"][1]["content"][0]["input"]
        assert list(tool_input) == ["context", "line", "path"]
        assert list(tool_input["context"]) == ["after", "before"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["chat", "responses", "anthropic"])
def test_through_compactions_every_call_sends_what_a_fresh_worker_sends(name: str,
                                                                        mode: str) -> None:
    """Calls alternate between the keys as first written and reversed (every dict, at every
    depth): a long-lived session and, for each call, a fresh one over the same store agree."""
    replay = Replay(name, seed={"chat": 0, "responses": 2, "anthropic": 0}[name])
    store = MemoryStore()

    def worker() -> CompactionSession:
        return CompactionSession(replay.history_format, model="gpt-4o", window=replay.window,
                                 reserve=0, estimator=CharRatioEstimator(), summarizer=SpanLog(),
                                 store=store, check_prefix=mode)  # type: ignore[arg-type]

    long_lived = worker()
    decisions = set()
    for index in range(len(replay.calls)):
        request = replay.request(index)
        if index % 2:
            request = reordered(request)
        prepared = long_lived.prepare(request)
        decisions.add(prepared.report.decision)
        fresh = worker().prepare(request).request
        assert json.dumps(prepared.request) == json.dumps(fresh), index
        if prepared.report.decision == "recompacted" and not prepared.report.events:
            # the keys in the other order: not the earlier request's bytes, and said so
            assert "with their keys in this history's order" in prepared.report.reason
    assert {"compacted", "recompacted"} <= decisions


# --- in-place edits of any mapping -----------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_an_in_place_redaction_of_a_mapping_subclass_is_seen(name: str) -> None:
    fmt, make, _holder = FORMATS[name]
    request = json.loads(json.dumps(make(1)), object_pairs_hook=OrderedDict)
    items = request[fmt.list_key]
    assert type(items[0]) is OrderedDict
    compactor = new_session(fmt, "content")
    assert SECRET in body(compactor, request)
    told = next(item for item in items if SECRET in str(item.get("content")))
    told["content"] = told["content"].replace(SECRET, "[redacted]")  # in place
    sent = body(compactor, request)
    assert SECRET not in sent and "[redacted]" in sent
    assert sent == body(new_session(fmt, "content"), request)


# --- fresh copies of a long history: compared by their encodings, in C (issue 39: 25) --------


def long_session() -> CompactionSession:
    return CompactionSession(chat.FORMAT, model="gpt-4o", window=200_000, reserve=0,
                             estimator=CharRatioEstimator(), check_prefix="content")


def long_chat(value: Any, *, reverse: bool = False) -> dict[str, Any]:
    """A chat history long enough to be compared by encodings, a number near its end."""
    filler = [{"role": "user" if index % 2 == 0 else "assistant",
               "content": f"step {index}"} for index in range(120)]
    marked = {"role": "user", "content": "Deploy it.", "priority": value}
    if reverse:
        marked = dict(reversed(marked.items()))
    return {"messages": [{"role": "system", "content": "You are a coding agent."}, *filler,
                         marked, {"role": "assistant", "content": "Deploying."}]}


@pytest.mark.parametrize("change", ["true", "float", "keys"])
def test_fresh_copies_of_a_long_history_tell_what_equality_cannot(change: str) -> None:
    compactor = long_session()
    first = long_chat(1)
    body(compactor, json.loads(json.dumps(first)))
    given = (long_chat(True) if change == "true" else long_chat(1.0) if change == "float"
             else long_chat(1, reverse=True))
    sent = body(compactor, json.loads(json.dumps(given)))
    assert sent == body(long_session(), given)
    assert json.loads(sent)["messages"] == given["messages"]


def test_fresh_copies_of_an_unchanged_long_history_read_only_what_they_append() -> None:
    compactor = long_session()
    history = long_chat(1)
    compactor.prepare({"model": "gpt-4o", **json.loads(json.dumps(history))})
    more = [*history["messages"], {"role": "user", "content": "And now?"}]
    report = compactor.prepare(model="gpt-4o", messages=json.loads(json.dumps(more))).report
    assert report.decision == "unchanged"
    again = compactor.prepare(model="gpt-4o", messages=json.loads(json.dumps(more))).report
    assert (again.decision, again.items_in) == ("unchanged", len(more))


# --- what each mode does not see: as the README and the setting's docstring say (issue 39) ------


def test_the_readme_and_the_setting_say_the_same_of_what_each_mode_takes_as_unchanged() -> None:
    root = Path(__file__).resolve().parents[2]

    def said(path: Path, source: str) -> str:
        text = path.read_text(encoding="utf-8")
        words = text[text.index("What each mode takes as unchanged"):].replace("`", "").split()
        end = next(index for index, word in enumerate(words) if word.startswith("worker"))
        return " ".join(words[:end + 1]).replace(source, "SOURCE")

    assert said(root / "README.md", "CompactionSettings.check_prefix") == said(
        root / "adapters" / "cutctx_adapters" / "settings.py", "the README")


def chat_request() -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "You are a coding agent."},
                         {"role": "user", "content": f"Deploy it. The token is {SECRET}."},
                         {"role": "assistant", "content": "Deploying."},
                         {"role": "user", "content": "Done?", "priority": 1}]}


def test_by_identity_an_item_edited_in_place_is_sent_as_it_was_read() -> None:
    request = chat_request()
    compactor = new_session(chat.FORMAT, "identity")
    body(compactor, request)
    request["messages"][1]["content"] = "[redacted]"  # in place: not seen
    request["messages"].append({"role": "assistant", "content": "Deployed."})
    assert SECRET in body(compactor, request)
    assert SECRET not in body(new_session(chat.FORMAT, "identity"), request)


def test_by_identity_an_equal_item_in_the_very_list_is_sent_as_it_was_read() -> None:
    request = chat_request()
    compactor = new_session(chat.FORMAT, "identity")
    body(compactor, request)
    request["messages"][3] = {"role": "user", "content": "Done?", "priority": True}
    assert '"priority": 1' in body(compactor, request)  # 1 == True: not seen
    copied = {"messages": list(request["messages"])}  # another list: compared as sent
    assert '"priority": true' in body(compactor, copied)


def test_by_content_a_key_moved_within_the_very_mapping_is_not_seen() -> None:
    request = chat_request()
    compactor = new_session(chat.FORMAT, "content")
    body(compactor, request)
    told = request["messages"][1]
    told["role"] = told.pop("role")  # the same keys, another order
    assert list(json.loads(body(compactor, request))["messages"][1]) == ["role", "content"]
    assert list(json.loads(body(new_session(chat.FORMAT, "content"), request))["messages"][1]) == [
        "content", "role"]


@pytest.mark.parametrize("mode", MODES)
def test_an_sdk_object_is_recognised_by_identity_in_both_modes(mode: str) -> None:
    from openai.types.chat import ChatCompletionMessage

    reply = ChatCompletionMessage(role="assistant", content="Deploying.")
    request = chat_request()
    request["messages"][2] = reply
    compactor = new_session(chat.FORMAT, mode)
    body(compactor, request)
    reply.content = "[redacted]"  # in place, in the SDK's own object
    assert json.loads(body(compactor, request))["messages"][2]["content"] == "Deploying."

"""What the framework hooks share: the extra named when a framework is missing, and what a
session sends regrouped into the framework's own messages by the sources it names."""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

import pytest

from cutctx import ValidationError
from cutctx_adapters.integrations._hooks import Kept, Made, Origin, regrouped, untouched
from cutctx_adapters.openai.chat import SUMMARY_HEADER
from cutctx_adapters.reports import Source
from cutctx_adapters.settings import CompactionSettings


@pytest.mark.parametrize(("module", "framework", "extra"), [
    ("openai_agents", "agents", "openai-agents"),
    ("langchain", "langchain", "langchain"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
])
def test_a_missing_framework_names_its_extra(monkeypatch: pytest.MonkeyPatch, module: str,
                                             framework: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, framework, None)  # blocked, as if not installed
    monkeypatch.delitem(sys.modules, f"cutctx_adapters.integrations.{module}", raising=False)
    with pytest.raises(ImportError, match=rf"pip install 'cutctx\[{extra}\]'"):
        importlib.import_module(f"cutctx_adapters.integrations.{module}")


def test_the_package_imports_no_framework() -> None:
    import cutctx_adapters.integrations as integrations

    assert integrations.__all__ == []


USER: dict[str, Any] = {"role": "user", "content": "Fix it."}
CALL: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
RESULT: dict[str, Any] = {"role": "tool", "tool_call_id": "c1", "content": "a long file"}
REPLY: dict[str, Any] = {"role": "assistant", "content": "Done."}


def test_sent_items_regroup_into_the_messages_they_came_from() -> None:
    """A message read as two items (an assistant and a server result of its own) comes back
    once, with what became of each part; a summary names the messages it stands for."""
    origins = [Origin(-1), Origin(0), Origin(1), Origin(1, 3), Origin(2), Origin(3)]
    stub = {**RESULT, "content": "[masked]"}
    summary = {"role": "user", "content": SUMMARY_HEADER + "asked and read"}
    sent = [{"role": "system", "content": "Be brief."}, summary, CALL, stub, REPLY]
    sources = [Source("kept", (0,)), Source("summarized", (1, 2)), Source("kept", (4,)),
               Source("masked", (5,)), Source("kept", (4,))]
    entries = regrouped(sent[:4], sources[:4], origins)
    assert entries == [Made(summary, (0, 1)), Kept(2, {None: None}), Kept(3, {None: stub})]
    assert not untouched(entries, origins, 4)


def test_a_history_sent_whole_and_unchanged_is_untouched() -> None:
    origins = [Origin(0), Origin(1), Origin(1, 2)]
    sources = [Source("kept", (0,)), Source("kept", (1,)), Source("kept", (2,))]
    entries = regrouped([USER, CALL, RESULT], sources, origins)
    assert untouched(entries, origins, 2)
    assert not untouched(entries[:1], origins[:2], 2)
    assert not untouched(regrouped([USER, CALL], sources[:2], origins), origins, 2)


def test_a_request_sent_as_given_needs_no_sources_and_any_other_does() -> None:
    origins = [Origin(0), Origin(1)]
    assert untouched(regrouped([USER, REPLY], None, origins), origins, 2)
    with pytest.raises(ValidationError, match="sources"):
        regrouped([USER], None, origins)


HOOKS = [("openai_agents", "agents", "compacting_input_filter"),
         ("openai_agents", "agents", "CompactingInputFilter"),
         ("langchain", "langchain", "CompactionMiddleware"),
         ("pydantic_ai", "pydantic_ai", "CompactionCapability"),
         ("pydantic_ai", "pydantic_ai", "compacting_history_processor")]


@pytest.mark.parametrize(("module", "framework", "name"), HOOKS)
def test_every_hook_takes_settings_model_and_the_settings_keywords(
        module: str, framework: str, name: str) -> None:
    """One signature for the three hooks (issue 39, item 16: pydantic-ai refused ``model=``):
    ``settings``, then keyword-only ``model`` and the settings' fields (LangChain's
    ``persist`` besides); a model that is no name is refused alike."""
    pytest.importorskip(framework)
    hook = getattr(importlib.import_module(f"cutctx_adapters.integrations.{module}"), name)
    parameters = inspect.signature(hook).parameters
    shape = [(parameter.name, parameter.kind) for parameter in parameters.values()
             if parameter.name != "persist"]
    assert shape == [("settings", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                     ("model", inspect.Parameter.KEYWORD_ONLY),
                     ("keywords", inspect.Parameter.VAR_KEYWORD)]
    made = hook(CompactionSettings(window=9_000), model="gpt-4o-mini", keep_recent=3)
    assert made is not None
    with pytest.raises(ValidationError, match="model must be a str"):
        hook(model=4)

"""What the framework hooks share: the extra named when a framework is missing, and the
caller's items found again in what a session sends."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from cutctx_adapters.integrations._hooks import kept_positions, traced
from cutctx_adapters.openai.chat import SUMMARY_HEADER


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


def test_kept_items_are_found_in_order_and_new_ones_are_not() -> None:
    given = [USER, CALL, RESULT, REPLY, USER]
    stub = {**RESULT, "content": "[masked]"}
    assert kept_positions(given, [USER, CALL, stub, REPLY, USER]) == [0, 1, None, 3, 4]
    assert kept_positions(given, [USER, REPLY]) == [0, 3]


def test_a_stub_is_traced_to_the_result_it_replaces_and_a_summary_to_nothing() -> None:
    given = [USER, CALL, RESULT, REPLY]
    summary = {"role": "user", "content": SUMMARY_HEADER + "read a file"}
    stub = {**RESULT, "content": "[masked]"}
    assert traced(given, [USER, CALL, stub, REPLY]) == [(0, True), (1, True), (2, False),
                                                        (3, True)]
    assert traced(given, [USER, summary, REPLY]) == [(0, True), None, (3, True)]

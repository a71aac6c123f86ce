"""One truth in the docs: the defaults they state are read against the code."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from cutctx_adapters import CompactionSettings
from cutctx_adapters.anthropic import messages
from cutctx_adapters.openai import chat, responses
from cutctx_adapters.settings import SETTING_NAMES

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEFAULTS = {field.name: field.default for field in dataclasses.fields(CompactionSettings)}


def _table(page: Path) -> dict[str, str]:
    """The settings table's ``| `name` | `default` | ... |`` rows."""
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", page.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def test_the_settings_page_states_every_default_as_the_code_has_it() -> None:
    table = _table(ROOT / "docs" / "settings.md")
    assert list(table) == list(SETTING_NAMES)
    for name, written in table.items():
        assert ast.literal_eval(written) == DEFAULTS[name], name


def _stated(text: str) -> list[tuple[str, Any]]:
    """``(setting, value)`` for each "`setting` (value" or "`setting` (default value" that
    names a literal value."""
    out = []
    for found in re.finditer(r"`(\w+)` \((?:default:? )?([-\w.\"']+)", text):
        name, value = found.groups()
        if name not in DEFAULTS:
            continue
        try:
            out.append((name, ast.literal_eval(value.rstrip("."))))
        except (ValueError, SyntaxError):
            continue  # prose ("half the budget"), not a value
    return out


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_a_default_stated_in_prose_is_the_codes(page: Path) -> None:
    for name, value in _stated(page.read_text(encoding="utf-8")):
        assert value == DEFAULTS[name], (page.name, name, value)


def test_the_prose_check_catches_a_wrong_default() -> None:
    assert _stated("Nothing happens below `trigger` (0.9 of the budget)") == [("trigger", 0.9)]


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "settings.md"])
def test_the_trigger_margins_stated_are_the_formats(page: Path) -> None:
    text = " ".join(page.read_text(encoding="utf-8").split())
    found = re.search(r"(\d+) ?%? for Chat Completions, (\d+) ?% for Responses, (\d+) ?% for "
                      r"Anthropic", text)
    assert found is not None, page.name
    margins = [int(share) / 100 for share in found.groups()]
    assert margins == [fmt.FORMAT.safety_margin for fmt in (chat, responses, messages)]

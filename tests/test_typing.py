"""The wrapped clients and ``compact`` results type as the SDK's: mypy (strict) over a snippet.

``tests/typechecks/wrapped_clients.py`` reveals each SDK call beside the same call through the
wrapped client (same NAME: same revealed type), and marks the mistakes mypy must catch.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]
SNIPPET = ROOT / "tests" / "typechecks" / "wrapped_clients.py"
_REVEALED = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): note: Revealed type is \"(?P<type>.*)\"$")


@pytest.fixture(scope="module")
def mypy_output() -> list[str]:
    stdout, stderr, _status = api.run(["--strict", "--config-file", str(ROOT / "pyproject.toml"),
                                       "--hide-error-context", "--no-pretty", str(SNIPPET)])
    assert not stderr, stderr
    lines: list[str] = str(stdout).splitlines()
    return lines


def _names() -> dict[int, str]:
    """The ``# same: NAME`` of each line that has one (a call may span lines: its first)."""
    names: dict[int, str] = {}
    for number, line in enumerate(SNIPPET.read_text(encoding="utf-8").splitlines(), start=1):
        found = re.search(r"# same: ([\w-]+)$", line)
        if found:
            names[number] = found.group(1)
    return names


def test_the_snippet_has_no_type_errors(mypy_output: list[str]) -> None:
    """No error at all: the wrapped calls and results pass where the SDK's do, and every
    ``type: ignore`` marks a mistake mypy really reports (an unneeded one is an error)."""
    errors = [line for line in mypy_output if ": error:" in line]
    assert errors == []


def test_wrapped_calls_reveal_the_sdks_types(mypy_output: list[str]) -> None:
    names = _names()
    revealed: dict[str, list[str]] = defaultdict(list)
    for line in mypy_output:
        found = _REVEALED.match(line)
        if found:
            revealed[names[int(found["line"])]].append(found["type"])
    assert set(revealed) == set(names.values())
    for name, types in revealed.items():
        assert len(types) >= 2 and len(set(types)) == 1, (name, types)
    assert revealed["chat"][0] == "openai.types.chat.chat_completion.ChatCompletion"
    assert revealed["chat-stream"][0].startswith("openai._streaming.Stream[")
    assert revealed["chat-parse"][0].endswith(
        "ParsedChatCompletion[tests.typechecks.wrapped_clients.Answer]")
    assert revealed["wrapper"][0] == (
        "cutctx_adapters.openai.client.CompactingOpenAI[openai._client.OpenAI]")

"""The ``cutctx`` command on Gemini histories: told apart from the other formats, the request's
config counted, the compacted request written back in the shape it was read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cutctx_adapters.cli import main
from cutctx_adapters.cli._io import detect
from cutctx_adapters.gemini import contents
from tests.gemini.histories import agent_history, camel

SYSTEM = "You are a careful coding agent. " * 20


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    out, _ = capsys.readouterr()
    return code, out


@pytest.mark.parametrize(("data", "rule"), [
    ({"model": "gemini-2.5-flash", "contents": []}, "object with 'contents'"),
    (camel({"contents": [], "system_instruction": {"parts": [{"text": "x"}]}}),
     "object with 'contents'"),
    (agent_history(1), "Gemini contents (parts)"),
])
def test_a_saved_request_is_told_to_be_gemini(data: Any, rule: str) -> None:
    fmt, why = detect(data)
    assert (fmt.name, why) == ("gemini", rule)


@pytest.mark.parametrize("spelling", ["sdk", "rest"])
def test_the_config_counts_in_either_spelling(tiktoken_cache: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              spelling: str) -> None:
    history = agent_history(8)
    body: dict[str, Any] = (
        {"model": "gemini-2.5-flash", "contents": history,
         "config": {"system_instruction": SYSTEM}} if spelling == "sdk"
        else camel({"contents": history, "system_instruction": {"parts": [{"text": SYSTEM}]}}))
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    code, out = _run(capsys, "count", path, "--json")
    counted = json.loads(out)
    assert code == 0
    assert counted["total_tokens"] == contents.count_tokens(
        body["contents"], config={"system_instruction": SYSTEM})


def test_compact_writes_the_request_back_in_its_shape(tiktoken_cache: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    body = {"model": "gemini-2.5-flash", "contents": agent_history(20),
            "config": {"system_instruction": SYSTEM}}
    path, out_path = tmp_path / "request.json", tmp_path / "out.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    code, _ = _run(capsys, "compact", path, "--budget", 3_000, "-o", out_path)
    written = json.loads(out_path.read_text(encoding="utf-8"))
    assert code == 0 and written["config"] == body["config"] and written["model"] == body["model"]
    contents.validate(written["contents"])
    assert contents.count_tokens(written["contents"], config=body["config"]) <= 3_000

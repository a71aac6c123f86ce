"""The ``cutctx`` command line, run as users run it: the real entry point in a subprocess.

Every bundled history in ``examples/histories/`` goes through ``inspect``, ``inspect --json``,
``count`` and ``compact -o`` (the output re-read and validated with its format's ``validate``);
malformed files and the shared invalid requests must give exit 2 and one stderr line. The
subprocesses are started together up front (each pays for importing the SDK and loading a BPE
file) and the tests below check their results.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._support.data import INVALID_REQUESTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "histories").glob("*.json"))
INVALID = sorted(INVALID_REQUESTS.glob("*.json"))
SCRIPT = Path(sys.executable).parent / "cutctx"
CHAT = ROOT / "examples" / "histories" / "coding_agent.openai_chat.json"
RESPONSES = ROOT / "examples" / "histories" / "coding_agent.openai_responses.json"
MALFORMED: Mapping[str, bytes] = {
    "not_json.json": b'{"messages": [',
    "empty.json": b"",
    "number.json": b"42",
    "unknown_format.json": b'{"model": "gpt-4o", "prompt": "hi"}',
}
"""Run in a subprocess; more bad files are checked in process (``MORE_MALFORMED``)."""
MORE_MALFORMED: Mapping[str, bytes] = {
    "whitespace.json": b" \n\t\n",
    "string.json": b'"hello"',
    "not_utf8.json": b'["\xff\xfe"]',
    "bad_role.json": b'[{"role": "wizard", "content": "abracadabra"}]',
    "tool_calls_type.json": b'[{"role": "assistant", "content": "abracadabra", "tool_calls": {}}]',
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
}


@dataclass(frozen=True, slots=True)
class Run:
    """A finished subprocess."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return (f"cutctx {' '.join(self.args)} → {self.code}\nstdout:\n{self.stdout[-3000:]}\n"
                f"stderr:\n{self.stderr[-3000:]}")


def _format_name(path: Path) -> str:
    from cutctx_adapters.cli._io import load

    return load(str(path)).format.name


def _missing_module(path: Path) -> str | None:
    """Why ``path``'s format cannot be tested yet (its adapter module is missing), or None."""
    from cutctx_adapters.cli._formats import FORMATS

    fmt = FORMATS[_format_name(path)]
    try:
        importlib.import_module(fmt.module_name)
    except ImportError as exc:
        return f"{fmt.name} adapter not available yet ({fmt.module_name}: {exc})"
    return None


def _cases() -> dict[str, tuple[str, ...]]:
    """Every subprocess the tests need, by name: argument lists with ``{tmp}``/``{tight}``."""
    cases: dict[str, tuple[str, ...]] = {}
    for path in EXAMPLES:
        if _missing_module(path):
            continue
        name, file = path.stem, str(path)
        cases[f"inspect:{name}"] = ("inspect", file)
        cases[f"inspect-json:{name}"] = ("inspect", file, "--json")
        cases[f"count:{name}"] = ("count", file)
        cases[f"compact:{name}"] = ("compact", file, "--budget", "{tight}", "--keep-recent", "2",
                                    "-o", "{tmp}/" + path.name, "--json")
    for path in INVALID:
        if not _missing_module(path):
            cases[f"invalid:{path.stem}"] = ("inspect", str(path))
    for name in MALFORMED:
        cases[f"malformed:{name}"] = ("inspect", "{tmp}/" + name)
    cases["missing-file"] = ("count", "{tmp}/does-not-exist.json")
    cases["bad-format-option"] = ("inspect", str(EXAMPLES[0]), "--format", "openai-completions")
    cases["no-command"] = ()
    cases["no-bpe"] = ("count", str(CHAT))
    return cases


@functools.cache
def _tight_budget(path: Path) -> int:
    """A budget that forces compaction but can be met: about half of what may be removed."""
    from cutctx import BudgetUnsatisfiable, DropOldestPolicy
    from cutctx_adapters.cli._io import load

    doc = load(str(path))
    model = doc.model or doc.format.default_model

    def plan(budget: int) -> Any:
        return doc.format.plan(doc.history, doc.side, doc.body, model=model, budget=budget,
                               policy=DropOldestPolicy(), summarizer=None, keep_recent=2)

    job = plan(2**62)
    overhead, history = int(job.overhead), int(job.plan.tokens_before)
    try:
        plan(overhead)
    except BudgetUnsatisfiable as exc:
        fixed = int(exc.details["untouchable_tokens"])
    else:
        fixed = 0
    return overhead + fixed + (history - fixed) // 2 + _SLACK


_SLACK = 48
"""Room for what a compacted request adds (an Anthropic "messages omitted" note, framing)."""


@functools.cache
def _total_tokens(path: Path) -> int:
    from cutctx_adapters.cli._io import load

    doc = load(str(path))
    job = doc.format.plan(doc.history, doc.side, doc.body, model=doc.model or
                          doc.format.default_model, budget=2**62, policy=None, summarizer=None)
    return int(job.plan.tokens_before + job.overhead)


@dataclass(frozen=True, slots=True)
class Runs:
    """Every case's result, and the directory their files were written to."""

    tmp: Path
    results: Mapping[str, Run]

    def __getitem__(self, name: str) -> Run:
        return self.results[name]


@pytest.fixture(scope="session")
def runs(tiktoken_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Run every case at once (in parallel), then hand the results to the tests."""
    tmp = tmp_path_factory.mktemp("cli")
    for name, data in MALFORMED.items():
        (tmp / name).write_bytes(data)
    empty_cache = tmp_path_factory.mktemp("empty-tiktoken-cache")
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache), "COLUMNS": "100",
           "PYTHONIOENCODING": "utf-8"}
    for variable in ("FORCE_COLOR", "CUTCTX_DEBUG"):
        env.pop(variable, None)
    offline = {**env, "TIKTOKEN_CACHE_DIR": str(empty_cache),
               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
               "NO_PROXY": ""}
    tight = {path.stem: _tight_budget(path) for path in EXAMPLES if not _missing_module(path)}

    def one(item: tuple[str, tuple[str, ...]]) -> tuple[str, Run]:
        name, template = item
        stem = name.partition(":")[2]
        args = tuple(arg.format(tmp=tmp, tight=tight.get(stem, 0)) for arg in template)
        done = subprocess.run([sys.executable, "-m", "cutctx_adapters", *args], cwd=ROOT,
                              env=offline if name == "no-bpe" else env,
                              capture_output=True, timeout=120, check=False)
        return name, Run(args, done.returncode, done.stdout.decode("utf-8"),
                         done.stderr.decode("utf-8"))

    workers = max(2, min(8, (os.cpu_count() or 2) + 1))
    with ThreadPoolExecutor(workers) as pool:
        return Runs(tmp, dict(pool.map(one, _cases().items())))


def _example_ids(paths: Sequence[Path]) -> list[Any]:
    params = []
    for path in paths:
        reason = _missing_module(path)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def _one_error_line(run: Run) -> str:
    assert run.code == 2, run.explain()
    assert "Traceback" not in run.stderr, run.explain()
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.explain()
    assert lines[0].startswith("cutctx: error: "), run.explain()
    assert run.stdout == "", run.explain()
    return lines[0]


# --- every bundled history, in a subprocess ---------------------------------------------------


def test_every_format_has_a_bundled_history() -> None:
    from cutctx_adapters.cli._formats import FORMATS

    assert {_format_name(path) for path in EXAMPLES} == set(FORMATS)


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_inspect_table(runs: Runs, path: Path) -> None:
    run = runs[f"inspect:{path.stem}"]
    assert run.code == 0, run.explain()
    assert run.stderr == "", run.explain()
    out = run.stdout
    assert path.name in out and _format_name(path) in out
    for word in ("role", "tokens", "action", "budget", "policy", "✓ fits"):
        assert word in out, word
    plan_line = next(line for line in out.splitlines() if line.startswith("plan"))
    assert len(plan_line.split()[1]) == 64
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 100


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_inspect_json(runs: Runs, path: Path) -> None:
    run = runs[f"inspect-json:{path.stem}"]
    assert run.code == 0, run.explain()
    data = json.loads(run.stdout)
    assert {"plan", "report", "format", "budget", "turns"} <= set(data)
    assert data["format"] == _format_name(path)
    assert data["fits"] is True and data["report"]["budget_unmet"] is False
    assert all(action["action"] == "keep" for action in data["plan"]["actions"])
    assert len(data["turns"]) == len(data["plan"]["actions"]) == data["report"]["turns_before"]
    budget = data["budget"]
    room = budget["window"] - budget["reserve"]
    assert budget["max_prompt_tokens"] == (room if budget["input_limit"] is None
                                           else budget["input_limit"])
    assert budget["input_limit"] is None or budget["input_limit"] < room
    assert data["report"]["plan_hash"] in runs[f"inspect:{path.stem}"].stdout


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_count(runs: Runs, path: Path) -> None:
    run = runs[f"count:{path.stem}"]
    assert run.code == 0, run.explain()
    total_line = next(line for line in run.stdout.splitlines() if line.startswith("total"))
    assert int(total_line.split()[1].replace(",", "")) > 0
    assert len([line for line in run.stdout.splitlines() if "%" in line]) >= 2


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_compact_is_valid_and_same_shape(runs: Runs, path: Path) -> None:
    from cutctx_adapters.cli._io import load

    run = runs[f"compact:{path.stem}"]
    assert run.code in (0, 1), run.explain()
    report = json.loads(run.stdout)["report"]
    if _total_tokens(path) - _tight_budget(path) > 4 * _SLACK:
        assert (report["masked_turn_ids"] or report["summarized_turn_ids"] or
             report["dropped_turn_ids"])
    out_path = runs.tmp / path.name
    original = json.loads(path.read_text(encoding="utf-8"))
    written = json.loads(out_path.read_text(encoding="utf-8"))
    _assert_same_shape(original, written)
    doc = load(str(out_path))
    assert doc.format.name == _format_name(path)
    doc.format.validate(doc.history, doc.side, doc.body)
    if report["summary_turn_ids"]:
        assert "Earlier turns (" in out_path.read_text(encoding="utf-8")


def _assert_same_shape(original: Any, written: Any) -> None:
    assert type(written) is type(original)
    if not isinstance(original, dict):
        return
    if "request" in original and not {"messages", "input", "contents"} & set(original):
        assert list(written) == list(original)
        assert ({k: v for k, v in written.items() if k != "request"} ==
             {k: v for k, v in original.items() if k != "request"})
        _assert_same_shape(original["request"], written["request"])
        return
    history = ("input", "instructions", "messages", "system", "contents")
    assert [k for k in written if k not in history] == [k for k in original if k not in history]
    assert ({k: v for k, v in written.items() if k not in history} ==
         {k: v for k, v in original.items() if k not in history})


# --- bad input, in a subprocess -------------------------------------------------------------------

_UNDETECTABLE = {
    "anthropic_thinking_block_modified": "a modified thinking block cannot be told from one "
    "request (only the API checks its signature); anthropic.messages.validate needs original=",
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_file(runs: Runs, name: str) -> None:
    line = _one_error_line(runs[f"malformed:{name}"])
    assert name in line
    assert "abracadabra" not in line  # never message content


def _invalid_ids() -> list[Any]:
    params = []
    for path in INVALID:
        reason = _missing_module(path)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        if path.stem in _UNDETECTABLE:
            marks.append(pytest.mark.xfail(strict=True, reason=_UNDETECTABLE[path.stem]))
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


@pytest.mark.parametrize("path", _invalid_ids())
def test_shared_invalid_request(runs: Runs, path: Path) -> None:
    line = _one_error_line(runs[f"invalid:{path.stem}"])
    assert path.name in line and "invalid history" in line and "rule" in line
    assert "message " in line or "item " in line


@pytest.mark.parametrize("case, expected", [
    ("missing-file", "no such file"),
    ("bad-format-option", "invalid choice"),
    ("no-command", "required"),
])
def test_usage_errors_are_one_line(runs: Runs, case: str, expected: str) -> None:
    assert expected in _one_error_line(runs[case])


def test_without_tiktoken_files_it_counts_approximately_and_says_how_to_fix_it(
        runs: Runs) -> None:
    run = runs["no-bpe"]
    assert run.code == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if line]
    assert len(notes) == 1 and notes[0].startswith("cutctx: note: token counts are approximate")
    assert "TIKTOKEN_CACHE_DIR" in notes[0] and "Traceback" not in run.stderr
    assert "total" in run.stdout.lower()


def test_stdin_to_stdout(tiktoken_cache: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    class Stdin:
        buffer = io.BytesIO(CHAT.read_bytes())

    monkeypatch.setattr(sys, "stdin", Stdin())
    code, out, err = _main(capsys, "compact", "-", "--budget", "9000")
    assert code == 0
    assert json.loads(out)["model"] == "gpt-4o"
    assert err.startswith("wrote standard output (openai-chat)")


@pytest.mark.parametrize("name", list(MORE_MALFORMED))
def test_more_malformed_files(tiktoken_cache: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = tmp_path / name
    path.write_bytes(MORE_MALFORMED[name])
    for command in ("inspect", "count", "compact"):
        code, out, err = _main(capsys, command, path)
        assert code == 2 and out == "", err
        assert err.count("\n") == 1 and err.startswith(f"cutctx: error: {path}: "), err
        assert "abracadabra" not in err


@pytest.mark.skipif(not SCRIPT.is_file(), reason="the cutctx console script is not installed")
def test_console_script(tiktoken_cache: Path) -> None:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    done = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("cutctx ")
    done = subprocess.run([str(SCRIPT), "inspect", "/nonexistent/history.json"],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (
        2, "cutctx: error: /nonexistent/history.json: no such file\n")


# --- in process: options, exit codes, shapes (the tokenizer loads once) -----------------------


def _main(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    from cutctx_adapters.cli import main

    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_compact_all_keep_is_lossless(tiktoken_cache: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, _ = _main(capsys, "compact", path, "-o", tmp_path / "out.json")
    assert code == 0 and "nothing to do" in out
    written = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert written == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_inspect_under_pressure(tiktoken_cache: Path, capsys: pytest.CaptureFixture[str],
                                path: Path) -> None:
    code, out, _ = _main(capsys, "inspect", path, "--json", "--budget", _tight_budget(path),
                         "--keep-recent", "2")
    data = json.loads(out)
    assert code == (1 if data["report"]["budget_unmet"] else 0)
    if _total_tokens(path) - _tight_budget(path) > 4 * _SLACK:
        assert data["tokens_after"] < data["tokens_before"]
    planned = [turn for turn in data["turns"] if turn["action"] != "summary"]
    assert ([turn["turn_id"] for turn in planned] ==
         [action["turn_id"] for action in data["plan"]["actions"]])
    code, out, _ = _main(capsys, "inspect", path, "--budget", _tight_budget(path),
                         "--keep-recent", "2", "--all")
    assert data["report"]["plan_hash"] in out


def test_inspect_plans_what_compact_does(tiktoken_cache: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    for path in (CHAT, RESPONSES):
        for summarizer in ("none", "offline"):
            options = ("--budget", "7000", "--keep-recent", "3", "--pin", "2", "--json",
                       "--summarizer", summarizer)
            _, inspected, _ = _main(capsys, "inspect", path, *options)
            _, compacted, _ = _main(capsys, "compact", path, *options, "-o",
                                    tmp_path / "out.json")
            assert json.loads(inspected)["report"] == json.loads(compacted)["report"]
            summaries = json.loads(inspected)["report"]["summary_turn_ids"]
            assert bool(summaries) is (summarizer == "offline")


@pytest.mark.parametrize("command", ["inspect", "compact"])
def test_by_default_the_cli_plans_as_the_library_does(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    """No summarizer unless one is asked for: the plan is ``chat.compact``'s own."""
    from cutctx_adapters.openai import chat

    body = json.loads(CHAT.read_text(encoding="utf-8"))
    library = chat.compact(body["messages"], model=body["model"], budget=3000,
                           tools=body["tools"])
    tail = ("-o", tmp_path / "out.json") if command == "compact" else ()
    code, out, err = _main(capsys, command, CHAT, "--budget", "3000", "--json", *tail)
    assert code == 0, err
    report = json.loads(out)["report"]
    assert report["plan_hash"] == library.report.plan_hash
    assert report["summary_turn_ids"] == []


def test_policy_help_names_every_member_of_the_default_chain(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "inspect", "--help")
    assert code == 0
    help_text = " ".join(out.split())
    for member in ("deduplicate", "clip", "mask", "summarize", "drop"):
        assert member in help_text.partition("--policy")[2], member
    assert "--summarizer {none,offline}" in help_text


def test_a_summarize_policy_without_a_summarizer_is_a_usage_error(
        tiktoken_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(capsys, "inspect", CHAT, "--policy", "summarize")
    assert code == 2 and out == "" and "--summarizer" in err
    assert _main(capsys, "inspect", CHAT, "--policy", "summarize", "--summarizer",
                 "offline")[0] == 0


def test_compact_does_not_overwrite_its_input_unless_forced(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "history.json"
    path.write_bytes(CHAT.read_bytes())
    code, out, err = _main(capsys, "compact", path, "--budget", "8000", "-o", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "is FILE itself" in err and "--force" in err
    assert path.read_bytes() == CHAT.read_bytes()
    link = tmp_path / "same.json"
    link.hardlink_to(path)  # another name for the same file is the same file
    assert _main(capsys, "compact", path, "--budget", "8000", "-o", link)[0] == 2
    code, _, err = _main(capsys, "compact", path, "--budget", "8000", "-o", path, "--force")
    assert code == 0, err
    assert len(json.loads(path.read_text(encoding="utf-8"))["messages"]) < len(
        json.loads(CHAT.read_text(encoding="utf-8"))["messages"])


@pytest.mark.parametrize("command", ["inspect", "count", "compact"])
def test_a_format_the_file_plainly_is_not_is_refused_naming_both(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    anthropic = ROOT / "examples" / "histories" / "coding_agent.anthropic.json"
    tail = ("-o", tmp_path / "out.json") if command == "compact" else ()
    code, out, err = _main(capsys, command, anthropic, "--format", "openai-chat", *tail)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--format openai-chat does not match the file: it reads as anthropic" in err
    assert not (tmp_path / "out.json").exists()
    code, out, err = _main(capsys, command, RESPONSES, "--format", "anthropic", *tail)
    assert code == 2 and "it reads as openai-responses" in err


def test_a_format_detection_only_guesses_can_be_forced(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Plain text messages read as Chat by default; they are valid Anthropic messages too."""
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"role": "user", "content": "Fix the bug."},
                                {"role": "assistant", "content": "Done."}]), encoding="utf-8")
    code, out, err = _main(capsys, "count", path, "--format", "anthropic", "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == "anthropic"


def test_budget_unmet_exits_1(tiktoken_cache: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "inspect", CHAT, "--policy", "mask", "--budget", "4000")
    assert code == 1 and "✗ over by" in out
    code, out, _ = _main(capsys, "compact", CHAT, "--policy", "mask", "--budget", "4000",
                         "-o", tmp_path / "unmet.json")
    assert code == 1 and "over budget" in out
    assert (tmp_path / "unmet.json").is_file()


def test_help_states_every_exit_code_the_commands_return(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """0 fits, 1 compacted but over, 2 bad input or a budget that cannot be met: as --help says."""
    code, out, _ = _main(capsys, "compact", "--help")
    assert code == 0
    help_text = " ".join(out.split())
    assert "0 success (the history fits the budget, or was counted)" in help_text
    assert "1 compacted but still over the budget" in help_text
    assert "2 bad input or usage, or a budget that cannot be met" in help_text
    out_path = tmp_path / "out.json"
    for command in ("inspect", "compact"):
        tail = ("-o", out_path) if command == "compact" else ()
        assert _main(capsys, command, CHAT, "--budget", "8000", *tail)[0] == 0
        assert _main(capsys, command, CHAT, "--policy", "mask", "--budget", "4000", *tail)[0] == 1
        assert _main(capsys, command, CHAT, "--budget", "100", "--strict", *tail)[0] == 2
        assert _main(capsys, command, CHAT, "--budget", "0", *tail)[0] == 2
        assert _main(capsys, command, tmp_path / "missing.json", *tail)[0] == 2
    assert _main(capsys, "count", CHAT)[0] == 0


@pytest.mark.parametrize("path", _example_ids(EXAMPLES))
def test_an_unsatisfiable_budget_names_the_budget_and_what_the_kept_turns_need(
        tiktoken_cache: Path, capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, err = _main(capsys, "inspect", path, "--budget", "0")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "the budget is 0 tokens (--budget)" in err
    assert re.search(r"fixed part \(tool definitions, framing\) alone needs [1-9]", err), err
    assert "only 0" not in err
    overhead = json.loads(_main(capsys, "count", path, "--json")[1])["overhead_tokens"]
    window = overhead + 105
    code, out, err = _main(capsys, "inspect", path, "--window", window, "--reserve", "100",
                           "--strict")
    assert code == 2 and err.count("\n") == 1
    assert (f"the budget is {overhead + 5:,} tokens (window {window:,} (--window) − reserve 100 "
            f"(--reserve)), {overhead:,} of them for the request framing") in err
    need = re.search(r"the \d+ turns no policy may touch .* need ([\d,]+) tokens, largest "
                     r"\S+ \([\d,]+\)", err)
    assert need is not None, err
    assert int(need[1].replace(",", "")) > 5


def test_policies(tiktoken_cache: Path, tmp_path: Path,
                  capsys: pytest.CaptureFixture[str]) -> None:
    from cutctx_adapters.openai import chat

    seen = {}
    for policy in ("default", "mask", "summarize", "drop"):
        code, out, _ = _main(capsys, "inspect", CHAT, "--json", "--budget", "6000",
                             "--policy", policy, "--summarizer", "offline")
        seen[policy] = {turn["action"] for turn in json.loads(out)["turns"]} - {"keep"}
    assert seen["mask"] == {"mask"} and seen["drop"] == {"drop"}
    assert seen["summarize"] == {"summarize", "summary"}
    code, out, _ = _main(capsys, "compact", CHAT, "--policy", "drop", "--budget", "8000",
                         "-o", tmp_path / "dropped.json")
    assert code == 0 and "dropped" in out and "summarized" not in out
    chat.validate(json.loads((tmp_path / "dropped.json").read_text("utf-8"))["messages"])


def test_pin_keep_recent_window_reserve_model(tiktoken_cache: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "inspect", CHAT, "--json", "--budget", "6000",
                         "--pin", "1", "3", "--keep-recent", "6")
    by_where = {turn["where"]: turn for turn in json.loads(out)["turns"]}
    assert by_where["1"]["pinned"] and by_where["1"]["action"] == "keep"
    assert by_where["3"]["pinned"] and by_where["3"]["action"] == "keep"
    assert all(by_where[str(i)]["action"] == "keep" for i in range(52, 58))
    code, out, _ = _main(capsys, "inspect", CHAT, "--json", "--window", "20000",
                         "--reserve", "2000", "--model", "gpt-4.1")
    data = json.loads(out)
    assert data["model"] == "gpt-4.1"
    assert data["budget"] == {"max_prompt_tokens": 18000, "window": 20000,
                              "window_from": "--window", "reserve": 2000,
                              "reserve_from": "--reserve", "input_limit": None}
    code, out, _ = _main(capsys, "inspect", ROOT / "examples" / "histories" /
                         "coding_agent.anthropic.json", "--json")
    if code == 0:  # the body's max_tokens is the default reserve
        assert json.loads(out)["budget"]["reserve_from"] == "max_tokens"


@pytest.mark.parametrize("args, expected", [
    (("inspect", CHAT, "--budget", "100"), "budget cannot be met"),
    (("inspect", CHAT, "--pin", "999"), "pin"),
    (("inspect", CHAT, "--model", "my-local-model"), "no known context window"),
    (("inspect", CHAT, "--budget", "10", "--window", "20"), "not both"),
    (("inspect", CHAT, "--budget", "lots"), "whole number"),
    (("inspect", CHAT, "--format", "openai-responses"), "no 'input' field"),
    (("inspect", CHAT, "--format", "anthropic"), "unknown_role"),
    (("compact", CHAT, "--summarizer", "gpt-4o"), "--summarizer"),
    (("count", ROOT), "is a directory"),
])
def test_errors_in_process(tiktoken_cache: Path, capsys: pytest.CaptureFixture[str],
                           args: tuple[Any, ...], expected: str) -> None:
    code, out, err = _main(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cutctx: error: ") and expected in err, err


def test_long_histories_are_elided(tiktoken_cache: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "inspect", RESPONSES)
    assert code == 0 and "(--all shows them)" in out
    assert len(out.splitlines()) < 75
    code, everything, _ = _main(capsys, "inspect", RESPONSES, "--all")
    assert "(--all shows them)" not in everything
    assert len(everything.splitlines()) > len(out.splitlines())


def test_count_json(tiktoken_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "count", CHAT, "--json")
    data = json.loads(out)
    assert code == 0
    assert data["total_tokens"] == data["history_tokens"] + data["overhead_tokens"]
    assert data["history_tokens"] == sum(turn["tokens"] for turn in data["turns"])
    from cutctx_adapters.openai import chat

    body = json.loads(CHAT.read_text(encoding="utf-8"))
    assert data["total_tokens"] == chat.count_tokens(body["messages"], model=body["model"],
                                                     tools=body["tools"])


# --- in process: detection, the offline summarizer -----------------------------------------------


@pytest.mark.parametrize("data, expected", [
    ([{"role": "user", "content": "hi"}], "openai-chat"),
    ([], "openai-chat"),
    ([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], "openai-responses"),
    ([{"type": "function_call_output", "call_id": "c", "output": "x"}], "openai-responses"),
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}], "anthropic"),
    ({"system": "s", "messages": []}, "anthropic"),
    ({"model": "claude-opus-4-1", "messages": []}, "anthropic"),
    ({"model": "gpt-4o", "messages": []}, "openai-chat"),
    ({"model": "gpt-5", "input": "hi"}, "openai-responses"),
])
def test_detection(data: Any, expected: str) -> None:
    from cutctx_adapters.cli._io import detect

    assert detect(data)[0].name == expected


def test_wrapper_is_detected_and_preserved(tmp_path: Path) -> None:
    from cutctx_adapters.cli._io import load

    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"note": "n", "request": {"model": "m", "messages": [
        {"role": "user", "content": "hi"}]}}))
    doc = load(str(path))
    assert doc.format.name == "openai-chat" and doc.model == "m"
    assert doc.rebuild(None, [{"role": "user", "content": "yo"}]) == {
        "note": "n", "request": {"model": "m", "messages": [{"role": "user", "content": "yo"}]}}


def _turns(count: int, words: int) -> list[Any]:
    from cutctx import EMPTY_METADATA, Role, TranscriptTurn

    roles = [Role.USER, Role.ASSISTANT, Role.TOOL]
    return [TranscriptTurn(f"m{i}", roles[i % 3],
                           " ".join(f"word{i}x{j}" for j in range(words)) + ". More text.", words,
                           metadata={"cutctx.tool": "read_file"} if i % 3 == 2 else EMPTY_METADATA)
            for i in range(count)]


@pytest.mark.parametrize("target", [1, 3, 10, 40, 200, 5000])
def test_offline_summary_fits_its_target(o200k: Any, target: int) -> None:
    from cutctx import SummarizationRequest
    from cutctx_adapters.cli._offline import OfflineSummarizer

    turns = _turns(30, 60)
    request = SummarizationRequest("g", tuple(t.turn_id for t in turns), target, "p")
    summarizer = OfflineSummarizer(o200k)
    text = summarizer(request, turns)
    assert text.strip()
    assert o200k.estimate_tokens(text) <= target
    assert summarizer(request, turns) == text  # deterministic
    if target >= 200:
        assert text.startswith("Earlier turns (10 user, 10 assistant, 10 tool)")


class _Tally:
    """An estimator that adds up the characters it is asked to count."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.characters = 0

    def estimate_tokens(self, text: str) -> int:
        self.characters += len(text)
        count: int = self.inner.estimate_tokens(text)
        return count


@pytest.mark.parametrize("kind", ["tiktoken", "char-ratio"])
def test_offline_summary_counts_text_linear_in_the_turns(o200k: Any, kind: str) -> None:
    from cutctx import CharRatioEstimator, SummarizationRequest
    from cutctx_adapters.cli._offline import OfflineSummarizer

    counted = []
    for count in (300, 1200):  # lines must be dropped: a target far below one line a turn
        turns = _turns(count, 60)
        tally = _Tally(o200k if kind == "tiktoken" else CharRatioEstimator())
        request = SummarizationRequest("g", tuple(t.turn_id for t in turns), count // 2, "p")
        OfflineSummarizer(tally)(request, turns)
        counted.append(tally.characters)
    assert counted[1] <= 4.5 * counted[0]


def _recounted_summary(estimator: Any, request: Any, turns: Any) -> str:
    """The offline summary as first written: each candidate text counted whole."""
    from cutctx_adapters.cli import _offline

    target = max(1, request.target_tokens)
    roles = Counter(turn.role.value for turn in turns)
    header = "Earlier turns ({}), condensed:".format(
        ", ".join(f"{n} {role}" for role, n in roles.items()))
    lines: list[str] = []
    for cap in _offline._LINE_CAPS:
        lines = [_offline._Opening.of(turn).line(cap) for turn in turns]
        text = "\n".join([header, *lines])
        if estimator.estimate_tokens(text) <= target:
            return text
    for keep in range(len(lines) - 1, -1, -1):
        text = _offline._with_more(header, lines, keep)
        if estimator.estimate_tokens(text) <= target:
            return text
    return _offline.OfflineSummarizer(estimator)._truncated(text, target)


_words = st.sampled_from(["Fix", "the", "parser.", "It", "fails", "on", "tabs!", "(see", "x.py)",
                          "\n", "ok?", "Done.", "…", "/tmp", "'s", "don't", "A", "b", "  "])


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(_words, max_size=40).map(" ".join), min_size=1, max_size=30),
       target=st.sampled_from([1, 3, 10, 30, 60, 100, 300, 1000]),
       kind=st.sampled_from(["tiktoken", "char-ratio"]))
def test_offline_summary_keeps_the_most_lines_that_fit(tiktoken_cache: Path, texts: list[str],
                                                       target: int, kind: str) -> None:
    from cutctx import CharRatioEstimator, Role, SummarizationRequest, TranscriptTurn
    from cutctx_adapters.cli._offline import OfflineSummarizer
    from cutctx_adapters.tiktoken import TiktokenEstimator

    estimator = TiktokenEstimator() if kind == "tiktoken" else CharRatioEstimator()
    roles = [Role.USER, Role.ASSISTANT, Role.TOOL]
    turns = [TranscriptTurn(f"m{i}", roles[i % 3], text, 5) for i, text in enumerate(texts)]
    request = SummarizationRequest("g", tuple(t.turn_id for t in turns), target, "p")
    assert OfflineSummarizer(estimator)(request, turns) == _recounted_summary(
        estimator, request, turns)


def test_module_doctests() -> None:
    from cutctx_adapters.cli import _offline

    assert doctest.testmod(_offline).failed == 0


# --- hostile files: every one a one-line error (exit 2) or a clean run, never exit 3 ------------

HOSTILE_NAMES = ["[/bold]", "[red]x[/red]", "\x1b[31mred\x1b[0m", "\x07bell", "a\u2028b",
                 "name\x00nul", "[link=file:///etc/passwd]x[/link]"]


def _tool_history(name: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Run it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": name, "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"},
    ]


@pytest.mark.parametrize("command", ["count", "inspect"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_names_from_the_file_are_printed_literally(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str, name: str) -> None:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(_tool_history(name)), encoding="utf-8")
    code, out, err = _main(capsys, command, path, "--all")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    shown = name.encode("unicode_escape").decode("ascii") if not name.isprintable() else name
    assert shown.replace("\\\\", "\\")[:6] in out.replace("\n", "") or name[:6] in out


def test_a_file_name_with_escapes_is_shown_escaped(tiktoken_cache: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _main(capsys, "count", tmp_path / "no\x1b[2Jsuch.json")
    assert code == 2 and "\x1b" not in err and "\\x1b[2J" in err


def test_input_past_max_bytes_is_refused(tiktoken_cache: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_tool_history("bash")), encoding="utf-8")
    code, _out, err = _main(capsys, "count", path, "--max-bytes", "20")
    assert code == 2 and "larger than 20 bytes" in err and "--max-bytes" in err
    assert _main(capsys, "count", path, "--max-bytes", "100000")[0] == 0


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
def test_an_endless_input_stops_at_the_limit(tiktoken_cache: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _main(capsys, "count", "/dev/zero", "--max-bytes", "1000000")
    assert code == 2 and "larger than 1,000,000 bytes" in err


def test_a_huge_integer_is_a_one_line_error(tiktoken_cache: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "digits.json"
    path.write_text('[{"role": "user", "content": "hi", "n": ' + "9" * 5_000 + "}]",
                    encoding="utf-8")
    code, _out, err = _main(capsys, "count", path)
    assert code == 2 and "too many digits" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["count", "inspect", "compact"])
def test_a_lone_surrogate_in_a_name_is_a_one_line_error(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    path = tmp_path / "lone.json"
    path.write_text(json.dumps(_tool_history("\ud800tool")), encoding="utf-8")
    code, _out, err = _main(capsys, command, path)
    assert code == 2 and "not valid Unicode" in err and len(err.strip().splitlines()) == 1


def test_a_lone_surrogate_in_an_extra_field_is_written_back_as_an_escape(
        tiktoken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Unknown fields travel untouched; what UTF-8 cannot carry is written as JSON escapes."""
    history = [{"role": "user", "content": "hi", "x-note": "\ud800"}]
    path, out_path = tmp_path / "lone.json", tmp_path / "out.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    code, _out, err = _main(capsys, "compact", path, "--budget", "100000", "-o", out_path)
    assert code == 0, err
    assert json.loads(out_path.read_text(encoding="utf-8")) == history


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=30))
def test_any_tool_name_prints_or_fails_in_one_line(tiktoken_cache: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    name: str) -> None:
    path = tmp_path / "any.json"
    path.write_text(json.dumps(_tool_history(name)), encoding="utf-8")
    for command in ("count", "inspect"):
        code, out, err = _main(capsys, command, path, "--all")
        assert code in (0, 2), err
        assert "\x1b" not in out + err
        if code == 2:
            assert len(err.strip().splitlines()) == 1


def test_policy_flags_reach_the_plan(tiktoken_cache: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A huge newest tool result is clipped (strict or not: a result over its share always
    is), and so is a huge newest user message (its share, like a tool result); a huge recent
    assistant message is dropped by default, refused with --strict; the task is kept unless
    --no-keep-task."""
    history = _tool_history("bash")
    history[-1]["content"] = "line of log output\n" * 20_000
    path, out_path = tmp_path / "huge.json", tmp_path / "out.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    code, out, err = _main(capsys, "compact", path, "--budget", "1500", "-o", out_path)
    assert code == 0, err
    assert "1 clipped" in out and "task m0 kept" in out
    written = json.loads(out_path.read_text(encoding="utf-8"))
    assert "cutctx clipped this tool result" in written[-1]["content"]
    observation = tmp_path / "observation.json"
    person = "Please keep the old export format for every file we ship.\n" * 4_000
    observation.write_text(json.dumps([*history[:-1], {**history[-1], "content": "done"},
                                       {"role": "user", "content": person}]),
                           encoding="utf-8")
    code, _out, err = _main(capsys, "compact", observation, "--budget", "1500", "--strict",
                            "-o", out_path)
    assert code == 0, err
    assert "cutctx clipped this message" in json.loads(out_path.read_text())[-1]["content"]
    rambling = tmp_path / "rambling.json"
    rambling.write_text(json.dumps([*history[:-1], {**history[-1], "content": "done"},
                                    {"role": "assistant", "content": person},
                                    {"role": "user", "content": "Go on."}]), encoding="utf-8")
    code, _out, err = _main(capsys, "compact", rambling, "--budget", "1500", "-o", out_path)
    assert code == 0, err
    code, _out, err = _main(capsys, "compact", rambling, "--budget", "1500", "--strict",
                            "-o", out_path)
    assert code == 2 and "budget cannot be met" in err
    code, out, err = _main(capsys, "compact", path, "--budget", "1500", "--no-keep-task",
                           "-o", out_path)
    assert code == 0 and "task m0 kept" not in out

"""The README's test command offline, without tiktoken's files: the tests that count with
tiktoken skip, saying why; none fails for want of them (issue 39)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

import conftest
from cutctx_adapters.errors import TokenizerUnavailable

ROOT = Path(__file__).resolve().parents[1]


def test_tests_that_read_user_observations_pass_offline_or_skip_saying_why(
        tmp_path: Path) -> None:
    empty = tmp_path / "no-tiktoken-files"
    empty.mkdir()
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(empty), "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider",
         "tests/history/test_observations.py", "-k", "conversion_marks or compact_masks or "
         "callable_names or wrapped_client"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped and all("TIKTOKEN_CACHE_DIR" in line for line in skipped)  # -rs says why


def _hook() -> Generator[None, None, None]:
    """The root conftest's ``pytest_runtest_call`` wrapper, stopped where the test runs."""
    hook = conftest.pytest_runtest_call(item=None)  # type: ignore[arg-type]
    assert isinstance(hook, Generator)
    next(hook)
    return hook


def test_a_test_that_counts_without_the_fixture_skips_when_tiktoken_is_unavailable() -> None:
    hook = _hook()
    missing = TokenizerUnavailable("no BPE file", {"encoding": "o200k_base"})
    with pytest.raises(pytest.skip.Exception, match="TIKTOKEN_CACHE_DIR"):
        hook.throw(missing)


def test_any_other_failure_still_fails() -> None:
    hook = _hook()
    with pytest.raises(AssertionError):
        hook.throw(AssertionError("a real failure"))

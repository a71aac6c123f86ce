"""Every example script runs offline and reports a fitting compaction."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_script_runs_offline(script: Path, tiktoken_cache: Path) -> None:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "plan hash:" in result.stdout and "(fits)" in result.stdout


AGENTS = sorted(p for p in (EXAMPLES / "agents").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", AGENTS, ids=[p.stem for p in AGENTS])
def test_agent_loop_example_runs_offline(script: Path, tiktoken_cache: Path) -> None:
    """Each agent loop runs sync, async and streaming against the mocked API, every request
    under the window, and answers."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for mode in ("sync", "async", "streaming"):
        assert any(line.startswith(f"{mode}: ") and "(fits " in line for line in lines), mode
    assert any(line.startswith("compacted ") for line in lines)

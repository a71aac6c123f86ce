"""Where the tests find their data: ``tests/data/``, and the optional SWE-agent runs beside it.

Everything the suite needs is under ``tests/data/`` (its README says where each file came from).
The SWE-agent runs are third-party text kept outside the repository, beside it in
``../shared/histories/openai-chat`` (``CUTCTX_SHARED`` names another ``shared`` folder): the tests
that read them run when they are there and skip with ``SWE_AGENT_SKIP`` when not, while the
generated histories of ``tests/_support/long_histories.py`` go through the same checks everywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "DATA",
    "ENGINE_GOLDENS",
    "INVALID_REQUESTS",
    "REQUESTS",
    "SWE_AGENT_RUNS",
    "SWE_AGENT_SKIP",
    "LoadMessages",
    "load_messages",
    "swe_agent_params",
    "swe_agent_runs",
]

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
ENGINE_GOLDENS = DATA / "goldens" / "engine.jsonl"
REQUESTS = DATA / "requests"
INVALID_REQUESTS = REQUESTS / "invalid"

SWE_AGENT_RUNS = (Path(os.environ.get("CUTCTX_SHARED", REPO.parent / "shared"))
                  / "histories" / "openai-chat")
SWE_AGENT_SKIP = ("SWE-agent runs absent: they are third-party text kept outside the repository, "
                  "read from ../shared/histories/openai-chat when it is there (generated agent "
                  "histories go through the same checks)")

LoadMessages = Callable[[], list[dict[str, Any]]]
"""A fresh copy of one history's Chat Completions messages on every call."""


def load_messages(path: Path) -> list[dict[str, Any]]:
    """The messages of a JSON file: a list, ``{"messages"}`` or ``{"request": {"messages"}}``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return data
    body = data.get("request", data)
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def swe_agent_runs() -> list[Path]:
    """The SWE-agent run files, in name order (none when the folder is absent)."""
    return sorted(SWE_AGENT_RUNS.glob("swe-agent-*.json"))


def swe_agent_params(*stems: str) -> list[Any]:
    """One ``pytest.param`` per SWE-agent run (all, or those named), its value a
    ``LoadMessages``; when the runs are absent, one placeholder skipped with ``SWE_AGENT_SKIP``."""
    runs = [path for path in swe_agent_runs() if not stems or path.stem in stems]
    if not runs:
        return [pytest.param(None, id="swe-agent-runs",
                             marks=pytest.mark.skip(reason=SWE_AGENT_SKIP))]
    return [pytest.param(partial(load_messages, path), id=path.stem) for path in runs]

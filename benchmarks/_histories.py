"""Shared pieces of the benchmarks: the long agent session, offline tiktoken, a summarizer.

The long session is every shared SWE-agent run (``../shared/histories/openai-chat``, read in
place, never copied: third-party text kept outside the repository; ``CUTCTX_SHARED`` names
another ``shared`` folder) one after another behind ONE system prompt: each run's own system
message is dropped, its user/assistant/tool messages kept, and its tool-call ids made unique per
run. A benchmark that needs the runs stops, saying so, when they are not there.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cutctx import SummarizationRequest, TranscriptTurn

__all__ = [
    "HISTORIES",
    "REPO",
    "SHARED",
    "FirstSentences",
    "agent_session",
    "first_sentences",
    "load_langchain",
    "parse_windows",
    "print_table",
    "requests_of",
    "seed_tiktoken",
]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CUTCTX_SHARED", REPO.parent / "shared"))
HISTORIES = SHARED / "histories" / "openai-chat"
_TIKTOKEN_FILES = {  # file in ../shared/tiktoken -> the name tiktoken caches it under
    "o200k_base.tiktoken": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base.tiktoken": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}


def seed_tiktoken() -> Path | None:
    """Point ``TIKTOKEN_CACHE_DIR`` at a temporary copy of the shared BPE files (offline use).

    Call before the first encoding is loaded. A cache directory already set and holding the
    files is left as it is; without the shared files, tiktoken uses its own cache (and network).
    """
    current = os.environ.get("TIKTOKEN_CACHE_DIR")
    if current and all((Path(current) / name).is_file() for name in _TIKTOKEN_FILES.values()):
        return Path(current)
    sources = {SHARED / "tiktoken" / source: name for source, name in _TIKTOKEN_FILES.items()}
    if not all(source.is_file() for source in sources):
        return None
    cache = Path(tempfile.mkdtemp(prefix="cutctx-tiktoken-"))
    for source, name in sources.items():
        shutil.copyfile(source, cache / name)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return cache


def _runs() -> list[tuple[str, list[dict[str, Any]]]]:
    files = sorted(HISTORIES.glob("swe-agent-*.json"))
    if not files:
        raise SystemExit(f"this benchmark reads the SWE-agent runs (third-party text, not in the "
                         f"repository) from ../shared/histories/openai-chat: none in {HISTORIES} "
                         f"(put the shared folder beside the repository, or set CUTCTX_SHARED)")
    return [(path.stem, json.loads(path.read_text(encoding="utf-8"))) for path in files]


def _unique_ids(message: dict[str, Any], tag: str) -> dict[str, Any]:
    """The message with its tool-call ids suffixed by the run's tag (runs reuse ids)."""
    out = dict(message)
    if isinstance(out.get("tool_calls"), list):
        out["tool_calls"] = [{**call, "id": f"{call['id']}_{tag}"} for call in out["tool_calls"]]
    if isinstance(out.get("tool_call_id"), str):
        out["tool_call_id"] = f"{out['tool_call_id']}_{tag}"
    return out


def agent_session() -> list[dict[str, Any]]:
    """The long session: the first run's system prompt, then every run's other messages."""
    runs = _runs()
    system = next(m for m in runs[0][1] if m.get("role") == "system")
    session: list[dict[str, Any]] = [dict(system)]
    for number, (_name, messages) in enumerate(runs):
        session.extend(_unique_ids(m, f"r{number}") for m in messages if m.get("role") != "system")
    return session


def requests_of(session: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The agent's calls: for each assistant message, the history before it (its request)."""
    return [list(session[:index]) for index, message in enumerate(session)
            if message.get("role") == "assistant"]


class FirstSentences:
    """A deterministic, offline summarizer: the first sentence of each folded turn, as many as
    fit the request's ``target_tokens`` (counted with tiktoken's o200k_base, as a model
    keeping to its length would). Counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._count: Callable[[str], int] | None = None

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.calls += 1
        if self._count is None:
            from cutctx_adapters.tiktoken import TiktokenEstimator
            self._count = TiktokenEstimator(encoding="o200k_base").estimate_tokens
        lines: list[str] = []
        spent = 0
        for turn in turns:
            line = f"{turn.role.value}: {turn.content.strip().split('. ')[0][:200]}"
            cost = self._count(line) + 1
            if lines and spent + cost > request.target_tokens:
                break
            lines.append(line)
            spent += cost
        return "\n".join(lines)


def first_sentences() -> FirstSentences:
    """A fresh ``FirstSentences`` summarizer (its own call count)."""
    return FirstSentences()


def load_langchain() -> Any | None:
    """``langchain_core.messages`` if installed (an optional dependency of the benchmarks)."""
    try:
        import langchain_core.messages as messages
    except ImportError:
        return None
    return messages


def as_anthropic(session: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The chat session as an Anthropic ``(system, messages)`` pair: tool calls as ``tool_use``
    blocks, tool messages as ``tool_result`` blocks first in the next user message, roles
    alternating (consecutive same-role content merged)."""
    system = ""
    messages: list[dict[str, Any]] = []
    latest: dict[str, str] = {}  # chat ids may repeat across turns; Anthropic's must not

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for message in session:
        role, content = message["role"], message.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content)
        if role == "system":
            system = text
        elif role == "assistant":
            blocks = [{"type": "text", "text": text}] if text.strip() else []
            for call in message.get("tool_calls") or ():
                arguments = json.loads(call["function"]["arguments"] or "{}")
                latest[call["id"]] = f"{call['id']}_{len(messages)}"
                blocks.append({"type": "tool_use", "id": latest[call["id"]],
                               "name": call["function"]["name"],
                               "input": arguments if isinstance(arguments, dict) else {}})
            add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
        elif role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": latest[message["tool_call_id"]],
                          "content": text or "(empty)"}])
        else:
            add("user", [{"type": "text", "text": text or "(empty)"}])
    return system, messages


def langchain_counter(lc: Any, count: Callable[[str], int]) -> Callable[[list[Any]], int]:
    """A LangChain list counter: the cookbook recipe (3 a message + role + content + name,
    tool calls by name and arguments, 3 for the reply) over ``count``."""
    roles = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

    def counter(messages: list[Any]) -> int:
        total = 3
        for message in messages:
            total += 3 + count(roles.get(message.type, message.type))
            content = message.content
            text = content if isinstance(content, str) else json.dumps(content)
            total += count(text)
            if message.name:
                total += 1 + count(message.name)
            for call in getattr(message, "tool_calls", None) or ():
                total += 3 + count(call["name"]) + count(json.dumps(call["args"]))
            if isinstance(message, lc.ToolMessage):
                total += count(message.tool_call_id)
        return total

    return counter


def start_redis(directory: Path) -> Any | None:
    """A real ``redis-server`` on a loopback port (the tests' own helper), or None if the
    server is not installed."""
    import sys

    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.append(root)
    from tests._support.redis_server import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        return None
    return RedisServer(directory).start()


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                left: Callable[[int], bool]) -> None:
    """A table with ``rich`` (columns ``left(index)`` left-justified, the rest right), or as
    plain aligned text without it; short rows are padded."""
    rows = [[*row, *[""] * (len(header) - len(row))] for row in rows]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        return
    table = Table(title=title)
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if left(index) else "right")
    for row in rows:
        table.add_row(*row)
    Console(width=200).print(table)


def parse_windows(description: str, argv: Sequence[str] | None) -> list[int]:
    """The ``--windows`` a replay runs at (tokens, comma-separated; 8k, 16k and 32k by
    default)."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--windows", default="8192,16384,32768",
                        help="context windows to replay at (tokens, comma-separated)")
    return [int(window) for window in parser.parse_args(argv).windows.split(",")]

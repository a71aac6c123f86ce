"""Reading a saved history, telling its format, and writing one back in the same shape.

Accepted shapes: a bare list (Chat ``messages``, Responses ``input`` items, Anthropic
``messages``), a request body (``{"model", "messages" | "input", ...}``, Anthropic's with
``system``), or either wrapped as ``{"request": {...}, ...}``.

Detection, first match wins (``--format`` skips it):

* object with ``contents`` (a ``generate_content`` request, SDK or REST spelling) → ``gemini``;
* object with ``input`` (or ``instructions`` and no ``messages``) → ``openai-responses``;
* object with ``messages`` and a top-level ``system`` (Chat has none), or Anthropic-only content
  blocks, or a ``claude`` model → ``anthropic``; other objects with ``messages`` → ``openai-chat``;
* list whose items carry a Responses item ``type`` (``message``, ``function_call``, ``reasoning``
  …) or Responses content parts (``input_text``, ``output_text`` …) → ``openai-responses``;
* list with Anthropic content blocks (``tool_use``, ``tool_result``, ``thinking`` …) →
  ``anthropic``; list of objects with ``parts`` (Gemini contents) → ``gemini``; any other list
  → ``openai-chat``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import CliError
from ._formats import FORMATS, Format, format_named
from ._progress import done

__all__ = ["DEFAULT_MAX_BYTES", "Document", "check_output", "detect", "load", "read_json",
           "write_json"]

RESPONSES_ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "custom_tool_call",
    "custom_tool_call_output", "web_search_call", "file_search_call", "computer_call",
    "computer_call_output", "code_interpreter_call", "image_generation_call", "local_shell_call",
    "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
    "apply_patch_call_output", "mcp_call", "mcp_list_tools", "mcp_approval_request",
    "mcp_approval_response", "item_reference", "compaction",
})
RESPONSES_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file",
                                  "input_audio"})
ANTHROPIC_BLOCK_TYPES = frozenset({
    "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
    "mcp_tool_use", "mcp_tool_result", "document", "search_result", "container_upload",
})


@dataclass(frozen=True, slots=True)
class Document:
    """A history as read from a file, with what writing it back in the same shape needs."""

    source: str
    format: Format
    reason: str
    """Why this format: ``"--format"`` or the detection rule that matched."""
    history: Any
    side: Any
    """The system prompt or instructions, if the file has them."""
    body: Mapping[str, Any] | None
    """The request body, when the file is one (not a bare list)."""
    wrapper: Mapping[str, Any] | None
    """The ``{"request": ...}`` object around the body, if any."""

    @property
    def model(self) -> str | None:
        """The model the body names, if any."""
        model = self.body.get("model") if self.body is not None else None
        return model if isinstance(model, str) and model else None

    @property
    def output_allowance(self) -> tuple[str, int] | None:
        """The body field reserving tokens for the reply, and its value, if there is one."""
        if self.body is None:
            return None
        for key in ("max_completion_tokens", "max_output_tokens", "max_tokens"):
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return key, value
        return None

    def rebuild(self, side: Any, history: list[dict[str, Any]]) -> Any:
        """The same shape as the input with the history (and side field) replaced."""
        if self.body is None:
            return history
        body = dict(self.body)
        body[self.format.history_key] = history
        key = self.format.side_key
        if key is not None and (key in body or side is not None):
            body[key] = side
        if self.wrapper is None:
            return body
        return {**self.wrapper, "request": body}


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The largest input read unless ``--max-bytes`` says otherwise (``/dev/zero`` must stop)."""


def read_json(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Parse the JSON at ``path`` (``-``: standard input), or a ``CliError`` naming the problem.

    At most ``max_bytes`` are read: a larger input is refused, not read until memory runs out.
    """
    name = _display(path)
    try:
        raw = _read_at_most(path, max_bytes)
        if len(raw) > max_bytes:
            raise CliError(f"{name}: larger than {max_bytes:,} bytes; raise the limit with "
                           f"--max-bytes")
    except FileNotFoundError:
        raise CliError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{name}: is a directory, not a file") from None
    except PermissionError:
        raise CliError(f"{name}: permission denied") from None
    except OSError as exc:
        raise CliError(f"{name}: cannot read ({exc.strerror or type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"{name}: not UTF-8 text (bad byte at offset {exc.start})") from None
    del raw  # one copy of a large input at a time: the bytes go before the JSON is parsed
    if not text.strip():
        raise CliError(f"{name}: empty file, expected JSON") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise CliError(f"{name}: not JSON: {exc.msg} at {where}") from None
    except RecursionError:
        raise CliError(f"{name}: JSON nested too deeply") from None
    except ValueError:  # Python's limit on the digits of an integer (int_max_str_digits)
        raise CliError(f"{name}: a JSON number has too many digits to read") from None


def _read_at_most(path: str, max_bytes: int) -> bytes:
    """The input's bytes, one more than ``max_bytes`` at most (so "too large" can be told)."""
    if path == "-":
        return sys.stdin.buffer.read(max_bytes + 1)
    with Path(path).open("rb") as stream:
        return stream.read(max_bytes + 1)


def load(path: str, forced: str | None = None,
         max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Read ``path`` and split it into history, side field and shape."""
    name = _display(path)
    data = read_json(path, max_bytes)
    wrapper: Mapping[str, Any] | None = None
    if (isinstance(data, dict) and isinstance(data.get("request"), dict)
            and "messages" not in data and "input" not in data and "contents" not in data):
        wrapper, data = data, data["request"]
    if not isinstance(data, list | dict):
        raise CliError(f"{name}: expected a JSON list of messages or a request object, "
                       f"got {_json_type(data)}")
    try:
        fmt, reason = (_forced(forced, data), "--format") if forced else detect(data)
    except CliError as exc:
        raise CliError(f"{name}: {exc}") from None
    if isinstance(data, list):
        return Document(name, fmt, reason, data, None, None, None)
    if fmt.history_key not in data:
        raise CliError(f"{name}: no {fmt.history_key!r} field for the {fmt.name} format "
                       f"(object keys: {', '.join(sorted(map(str, data))) or 'none'})")
    side = data.get(fmt.side_key) if fmt.side_key is not None else None
    return Document(name, fmt, reason, data[fmt.history_key], side, data, wrapper)


_GUESSES = frozenset({"object with 'messages'", "a claude model", "a list of messages"})
"""Detection rules that guess (what else could it be?) rather than read the format off the
data: ``--format`` may overrule them (a Chat Completions history for a Claude model behind an
OpenAI-compatible proxy, Anthropic messages of plain text)."""


def _forced(name: str, data: Any) -> Format:
    """The format ``--format`` names, unless the data plainly holds another (its fields or
    blocks say so): then the two are named, rather than one read as the other."""
    fmt = format_named(name)
    try:
        found, reason = detect(data)
    except CliError:
        return fmt
    if found is not fmt and reason not in _GUESSES:
        raise CliError(f"--format {fmt.name} does not match the file: it reads as "
                       f"{found.name} ({reason}); drop --format to read it so")
    return fmt


def detect(data: Any) -> tuple[Format, str]:
    """The format of a parsed history and the rule that decided it; see the module docstring."""
    if isinstance(data, dict):
        if "contents" in data:
            return FORMATS["gemini"], "object with 'contents'"
        if "input" in data or ("instructions" in data and "messages" not in data):
            return FORMATS["openai-responses"], "object with 'input'"
        if "messages" not in data:
            raise CliError("cannot tell the format: expected an object with 'messages' or "
                           "'input' (or 'request' holding one); use --format to force one")
        if "system" in data:
            return FORMATS["anthropic"], "top-level 'system'"
        if _has_anthropic_blocks(data["messages"]):
            return FORMATS["anthropic"], "Anthropic content blocks"
        model = data.get("model")
        if isinstance(model, str) and model.startswith("claude"):
            return FORMATS["anthropic"], "a claude model"
        return FORMATS["openai-chat"], "object with 'messages'"
    if isinstance(data, list):
        if _has_responses_items(data):
            return FORMATS["openai-responses"], "Responses item types"
        if _has_anthropic_blocks(data):
            return FORMATS["anthropic"], "Anthropic content blocks"
        if _items(data) and all("parts" in item and "content" not in item
                                for item in _items(data)):
            return FORMATS["gemini"], "Gemini contents (parts)"
        return FORMATS["openai-chat"], "a list of messages"
    raise CliError(f"cannot tell the format of {_json_type(data)}; expected a list or an object")


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` (``-``: standard output).

    UTF-8 as given; text that UTF-8 cannot carry (a lone surrogate, read from a ``\\ud800``
    escape) is written as JSON escapes instead, so the file says exactly what was read.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2, ensure_ascii=True) + "\n"
    if path == "-":
        done()  # the progress spinner ends before the results print
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{path}: cannot write ({exc.strerror or type(exc).__name__})") from None


def check_output(source: str, output: str, force: bool) -> None:
    """Refuse to write over the input itself unless ``force``: ``compact FILE -o FILE`` would
    replace the only copy of the history with its compaction."""
    if force or "-" in (source, output):
        return
    try:
        same = os.path.samefile(source, output)
    except OSError:  # the output does not exist yet (or the input is missing: said later)
        return
    if same:
        raise CliError(f"{output}: is FILE itself; write the compaction elsewhere (-o), or pass "
                       f"--force to replace FILE with it")


def _items(history: Any) -> list[Mapping[str, Any]]:
    if not isinstance(history, list):
        return []
    return [item for item in history if isinstance(item, Mapping)]


def _has_responses_items(history: Any) -> bool:
    for item in _items(history):
        kind = item.get("type")
        if kind in RESPONSES_ITEM_TYPES or (isinstance(kind, str) and "role" not in item):
            return True
        if any(block.get("type") in RESPONSES_PART_TYPES for block in _blocks(item)):
            return True
    return False


def _has_anthropic_blocks(history: Any) -> bool:
    return any(block.get("type") in ANTHROPIC_BLOCK_TYPES
               or (block.get("type") == "image" and "source" in block)
               for item in _items(history) for block in _blocks(item))


def _blocks(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = item.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _display(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string"
    if value is None:
        return "JSON null"
    return f"a JSON {type(value).__name__}"

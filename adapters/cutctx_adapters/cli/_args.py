"""The argument parser; usage errors are one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

import cutctx

from ._errors import EXIT_BAD_INPUT
from ._formats import FORMATS
from ._io import DEFAULT_MAX_BYTES
from ._options import DEFAULT_RESERVE, POLICIES, whole_number

__all__ = ["build_parser"]

_DESCRIPTION = """\
Inspect, count and compact a saved LLM conversation history, offline.

FILE is a JSON list of Chat Completions messages, a Responses `input` list, an Anthropic
{"system", "messages"} object, or a whole request body ({"model", "messages" | "input", ...}),
possibly wrapped as {"request": {...}}; use - for standard input. The format is detected (use
--format to force it).
"""
_EPILOG = """\
format detection: an object with "input" is openai-responses; one with "messages" is anthropic
if it has a top-level "system", Anthropic content blocks or a claude model, else openai-chat; a
list is openai-responses if its items carry Responses types (function_call, reasoning, ...,
input_text parts), anthropic if they hold tool_use/tool_result/thinking blocks, else openai-chat.

exit codes: 0 success (the history fits the budget, or was counted), 1 compacted but still over
the budget (the output is written), 2 bad input or usage, or a budget that cannot be met because
the turns no policy may touch need more (one line on stderr), 3 internal error.
Token counts use tiktoken, which needs its BPE files: offline, point TIKTOKEN_CACHE_DIR at a
directory holding them.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are a single line."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"cutctx: error: {' '.join(message.split())} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _index(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a message index, got {text!r}") from None


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name``, imported when it runs: it needs rich, ``--help`` does not."""

    def run(args: argparse.Namespace) -> int:
        from . import _commands

        command: Callable[[argparse.Namespace], int] = getattr(_commands, name)
        return command(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    """The ``cutctx`` parser: ``inspect``, ``count``, ``compact`` and ``serve``."""
    parser = _Parser(prog="cutctx", description=_DESCRIPTION, epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"cutctx {cutctx.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    source = _Parser(add_help=False)
    source.add_argument("file", metavar="FILE", help="the history (JSON); - for standard input")
    source.add_argument("--format", choices=list(FORMATS), help="skip detection")
    source.add_argument("--model", help="model for token counts and the context window "
                        "(default: the file's, else the format's default)")
    source.add_argument("--json", action="store_true", help="print JSON instead of a table")
    source.add_argument("--max-bytes", type=whole_number, metavar="N", default=DEFAULT_MAX_BYTES,
                        help=f"read at most N bytes of FILE (default {DEFAULT_MAX_BYTES:,})")

    plan = _Parser(add_help=False)
    plan.add_argument("--budget", type=whole_number, metavar="N",
                      help="prompt budget in tokens (default: the model's window minus the "
                           "reserve)")
    plan.add_argument("--window", type=whole_number, metavar="N",
                      help="context window in tokens (default: the model's)")
    plan.add_argument("--reserve", type=whole_number, metavar="N",
                      help="tokens kept for the reply (default: the body's max_tokens / "
                           f"max_completion_tokens / max_output_tokens, else {DEFAULT_RESERVE})")
    # Planning options only: ``count`` plans nothing, so it does not take them.
    plan.add_argument("--pin", type=_index, nargs="+", action="extend", metavar="INDEX",
                      help="message/item indexes no policy may touch (negative from the end)")
    plan.add_argument("--keep-recent", type=whole_number, metavar="K",
                      help="protect the K most recent turns (default 4)")
    plan.add_argument("--policy", choices=POLICIES, default="default",
                      help="default: the library's chain — deduplicate identical tool results, "
                           "clip those over their share, mask old ones, summarize (with "
                           "--summarizer), drop the oldest (user messages last); or one of "
                           "mask, summarize, drop alone")

    plan.add_argument("--no-keep-task", dest="keep_task", action="store_false", default=None,
                      help="let the first user message (the task) be compacted like any other")
    plan.add_argument("--no-keep-user-turns", dest="keep_user_turns", action="store_false",
                      default=None, help="drop user messages with the oldest turns, not last")
    plan.add_argument("--digest-tokens", type=whole_number, metavar="N",
                      help="tokens of digest a masked tool result keeps (0: none; default 48)")
    plan.add_argument("--max-result-tokens", type=whole_number, metavar="N",
                      help="clip tool results over N tokens (default: a quarter of the budget)")
    plan.add_argument("--strict", action="store_true", default=None,
                      help="refuse (exit 2) rather than relax protection or clip the newest turn")

    table = _Parser(add_help=False)
    table.add_argument("--all", action="store_true",
                       help="show every row (long histories are elided in the middle)")

    inspect = commands.add_parser(
        "inspect", parents=[source, plan, table], help="show the planned compaction",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Plan a compaction and show, per turn, its tokens and planned action.")
    inspect.add_argument("--summarizer", choices=("none", "offline"), default="none",
                         help="none (default: no summaries, as the library plans without a "
                              "summarizer), or offline: plan the summaries compact "
                              "--summarizer would write")
    inspect.set_defaults(run=_command("inspect"), command="inspect")

    count = commands.add_parser(
        "count", parents=[source, table], help="per-message and total tokens",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Estimated tokens per turn and for the whole request.")
    count.set_defaults(run=_command("count"), command="count")

    compact = commands.add_parser(
        "compact", parents=[source, plan], help="write the compacted history",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write the compacted history in the same format and shape as FILE.")
    compact.add_argument("-o", "--output", default="-", metavar="OUT",
                         help="where to write (default: standard output)")
    compact.add_argument("--summarizer", default="none", metavar="SPEC",
                         help="none (default: no summaries, as the library), offline "
                              "(deterministic, no model), openai:MODEL or anthropic:MODEL "
                              "(uses the SDK's environment for keys)")
    compact.add_argument("--force", action="store_true",
                         help="let -o name FILE itself (overwritten once it is read whole)")
    compact.set_defaults(run=_command("compact"), command="compact")

    from ._serve import add_serve

    add_serve(commands, _Parser)
    return parser

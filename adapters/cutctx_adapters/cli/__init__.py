"""``cutctx``: inspect, count and compact a saved conversation history from the command line.

Exit codes: 0 success; 1 compacted but still over the budget (``inspect``, ``compact``); 2 bad
input or usage, or a budget that cannot be met (the turns no policy may touch need more),
reported as one line on stderr; 3 an internal error (``CUTCTX_DEBUG=1`` shows the traceback).
Nothing here uses the network unless ``--summarizer openai:…|anthropic:…`` is given.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

from cutctx import CharRatioEstimator, CompactionError

from .._requires import require
from ..counting import use_when_unavailable
from ._errors import EXIT_BAD_INPUT, EXIT_INTERNAL, CliError, describe
from ._visible import visible

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    from ._args import build_parser

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT if exc.code else 0
    if args.command == "serve":  # a server, not a job on a file: no progress, no rich
        try:
            code: int = args.run(args)
        except (CliError, ImportError) as exc:
            return _fail(str(exc))
        except CompactionError as exc:
            return _fail(describe(exc, "settings"))
        return code
    try:  # the console script is installed with any extra; its own needs come with [cli]/[all]
        require("rich", "cli")
        require("tiktoken", "cli")
    except ImportError as exc:
        return _fail(str(exc))
    from ._progress import progress
    source = getattr(args, "file", "-")
    source = "<stdin>" if source == "-" else source
    # The main job must work offline: without tiktoken's files, count ~4 characters a token
    # and say so (a note on stderr), rather than refuse to show anything.
    use_when_unavailable(CharRatioEstimator())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with progress(f"cutctx {args.command}: working on {visible(source)}"):
                    code = args.run(args)
            finally:
                _notes(caught)
        return code
    except CliError as exc:
        return _fail(str(exc))
    except CompactionError as exc:
        return _fail(describe(exc, source))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:
        if os.environ.get("CUTCTX_DEBUG"):
            raise
        return _fail(f"internal error ({type(exc).__name__}); rerun with CUTCTX_DEBUG=1 for "
                     f"the traceback and please report it", EXIT_INTERNAL)
    finally:
        use_when_unavailable(None)


def _fail(line: str, code: int = EXIT_BAD_INPUT) -> int:
    sys.stderr.write(f"cutctx: error: {visible(' '.join(line.split()))}\n")
    return code


def _notes(caught: list[warnings.WarningMessage]) -> None:
    seen: set[str] = set()
    for warning in caught:
        text = " ".join(str(warning.message).split())
        if text not in seen:
            seen.add(text)
            sys.stderr.write(f"cutctx: note: {visible(text)}\n")


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at devnull so the interpreter's final flush is quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())

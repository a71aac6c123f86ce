"""``cutctx serve``: the compacting proxy on uvicorn, a flag for every ``CompactionSettings``
field, the store from a URL (``memory``, ``sqlite:///PATH``, ``redis://HOST:PORT/DB``)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from cutctx import CharRatioEstimator

from ..settings import CompactionSettings
from ._errors import CliError
from ._options import POLICIES, build_policy, build_summarizer, whole_number

__all__ = ["add_serve", "serve", "settings_from", "store_from"]

SALT_VARIABLE = "CUTCTX_SALT"
"""The environment variable holding the salt conversation keys are hashed with (every replica
the same); without it the store keeps one, made by the first replica."""


def _share_or_tokens(text: str) -> float | int:
    """``0.5`` is a share of the budget, ``3000`` tokens."""
    return float(text) if "." in text else whole_number(text)


def _window(text: str) -> tuple[str, int]:
    prefix, sep, tokens = text.partition("=")
    if not sep or not prefix:
        raise argparse.ArgumentTypeError(f"expected PREFIX=TOKENS, got {text!r}")
    return prefix, whole_number(tokens)


_CHOICES: dict[str, tuple[str, ...]] = {
    "policy": POLICIES, "on_summary_error": ("raise", "fallback"),
    "estimator": ("tiktoken", "chars"), "check_prefix": ("content", "identity"),
    "on_compaction": ("none", "log"), "on_call": ("none", "log"),
    "observations": ("auto", "after_assistant", "none"), "digest": ("identifiers", "lines"),
    "give_way": ("value", "oldest"),
}
_TYPES: dict[str, Callable[[str], Any]] = {
    "trigger": _share_or_tokens, "target": _share_or_tokens, "max_result_share": float,
    "summary_timeout": float, "windows": _window, "pin": int,
}
_HELP = {
    "summarizer": "offline (deterministic, no model), openai:MODEL or anthropic:MODEL (the "
                  "operator's key from the environment, never a caller's), or "
                  "import:MODULE:NAME",
    "store": "memory (default), sqlite:///PATH or redis://HOST:PORT/DB: where summaries (and "
             "the replicas' salt) are shared",
    "windows": "PREFIX=TOKENS (repeat): context windows by model-name prefix",
    "pin": "message indexes no policy may touch (repeat)",
}


def add_serve(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """The ``serve`` subcommand, with a flag for every ``CompactionSettings`` field."""
    serve_parser = commands.add_parser(
        "serve", help="run the compacting proxy (needs cutctx[proxy])",
        description="A compacting proxy: point an agent's OPENAI_BASE_URL (with /v1) or "
                    "ANTHROPIC_BASE_URL at it (docs/proxy.md).")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=whole_number, default=8787)
    serve_parser.add_argument("--openai-upstream", default="https://api.openai.com")
    serve_parser.add_argument("--anthropic-upstream", default="https://api.anthropic.com")
    serve_parser.add_argument("--timeout", type=float, default=600.0,
                              help="seconds without a byte from the upstream (default 600)")
    serve_parser.add_argument("--max-sessions", type=whole_number, default=1024,
                              help="conversations held (default 1024)")
    serve_parser.add_argument("--log-level", default="info",
                              choices=("critical", "error", "warning", "info", "debug"))
    settings = serve_parser.add_argument_group("compaction settings (docs/settings.md)")
    for field in fields(CompactionSettings):
        flag = "--" + field.name.replace("_", "-")
        options: dict[str, Any] = {"dest": field.name, "default": None,
                                   "help": _HELP.get(field.name)}
        if isinstance(field.default, bool):
            options["action"] = argparse.BooleanOptionalAction
        elif field.name in ("windows", "pin"):
            options.update(action="append", type=_TYPES[field.name])
        elif field.name in _CHOICES:
            options["choices"] = _CHOICES[field.name]
        elif field.name in ("summarizer", "store"):
            options["metavar"] = field.name.upper()
        else:
            options["type"] = _TYPES.get(field.name, whole_number)
        settings.add_argument(flag, **options)
    serve_parser.set_defaults(run=serve, command="serve")


def settings_from(args: argparse.Namespace) -> CompactionSettings:
    """The settings the flags name (the defaults for those not given); ``store`` apart."""
    given: dict[str, Any] = {}
    for field in fields(CompactionSettings):
        value = getattr(args, field.name, None)
        if value is None or field.name == "store":
            continue
        if field.name == "windows":
            value = dict(value)
        elif field.name == "pin":
            value = tuple(value)
        elif field.name in ("on_compaction", "on_call"):
            if value == "none":
                continue
            value = _log_report
        elif field.name == "estimator":
            value = CharRatioEstimator() if value == "chars" else None
        elif field.name == "policy":
            from ..tiktoken import TiktokenEstimator

            value = build_policy(value, TiktokenEstimator(encoding="o200k_base"))
        elif field.name == "summarizer":
            value = _summarizer(value)
        given[field.name] = value
    return CompactionSettings(**given)


def _log_report(report: object) -> None:
    sys.stderr.write(f"cutctx: {report}\n")


def _summarizer(spec: str) -> Any:
    """The summarizer a spec names (``build_summarizer``'s, with the SDKs' async clients built
    from the operator's environment), or one imported: ``import:MODULE:NAME``."""
    kind, _, rest = spec.partition(":")
    if kind not in ("import", "none", "offline", "openai", "anthropic"):
        raise CliError(f"--summarizer must be none, offline, openai:MODEL, anthropic:MODEL or "
                       f"import:MODULE:NAME, not {spec!r}")
    if kind != "import":
        from ..tiktoken import TiktokenEstimator

        return build_summarizer(spec, TiktokenEstimator(encoding="o200k_base"),
                                asynchronous=True)
    module, _, name = rest.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise CliError(f"--summarizer {spec}: cannot import it ({type(exc).__name__})") from None
    return found() if isinstance(found, type) else found


def store_from(url: str | None) -> Any:
    """The store a URL names."""
    from ..stores import MemoryStore, RedisStore, SQLiteStore

    if url in (None, "", "memory"):
        return MemoryStore()
    assert url is not None
    if url.startswith("sqlite:///"):
        return SQLiteStore(url[len("sqlite:///") - 1:] if url.startswith("sqlite:////")
                           else url[len("sqlite:///"):])
    if url.startswith(("redis://", "rediss://", "unix://")):
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(url, socket_timeout=2.0,
                                              socket_connect_timeout=1.0)
        return RedisStore(client)
    raise CliError("--store must be memory, sqlite:///PATH or redis://HOST:PORT/DB")


def serve(args: argparse.Namespace) -> int:
    """Run the proxy until interrupted."""
    from ..serve import Upstreams, create_app

    try:
        import uvicorn
    except ImportError:
        raise CliError("cutctx serve needs uvicorn: pip install 'cutctx[proxy]'") from None

    settings = settings_from(args)
    store = store_from(args.store)
    salt = os.environ.get(SALT_VARIABLE)
    upstreams = Upstreams(openai=args.openai_upstream, anthropic=args.anthropic_upstream,
                          timeout=args.timeout)
    app = create_app(settings, store, upstreams, salt=salt.encode() if salt else None,
                     max_sessions=max(1, args.max_sessions))
    print(f"cutctx serve: listening on http://{args.host}:{args.port}; OpenAI requests go to "
          f"{upstreams.openai}, Anthropic requests to {upstreams.anthropic}; store "
          f"{store!r}", flush=True)
    # The upstream's own Date and Server headers are relayed: uvicorn adds none of its own.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                server_header=False, date_header=False)
    return 0

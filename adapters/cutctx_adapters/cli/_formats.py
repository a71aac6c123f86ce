"""The formats the CLI handles: one table entry each, naming the module that does the work.

Every format module offers the same functions (``plan``, ``compact``, ``validate``) returning the
same ``CompactionResult``; an entry says where the history and its side field (system prompt,
instructions) live in a request body, which other body fields the module takes, which model to
assume when the file names none, and how the format counts text.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cutctx import CompactionPolicy, TokenEstimator

from ..counting import claude_estimator, estimator_for
from ..fulfil import Summarizer
from ..planning import CompactionResult, Job
from ._errors import CliError

__all__ = ["FORMATS", "Format", "format_named"]


def _tiktoken_estimator(model: str) -> TokenEstimator:
    return estimator_for(model)


def _gemini_text_estimator(model: str) -> TokenEstimator:
    from ..gemini.contents import text_estimator

    return text_estimator(model)


_GEMINI_CONFIG = ("system_instruction", "systemInstruction", "tools", "tool_config",
                  "toolConfig", "cached_content", "cachedContent")


def _gemini_options(body: Mapping[str, Any]) -> dict[str, Any]:
    """A saved ``generate_content`` request's ``config``: the SDK call's own, or what a REST
    body carries at its top level (``systemInstruction``, ``tools``, ``toolConfig``)."""
    config = body.get("config")
    merged = {key: body[key] for key in _GEMINI_CONFIG if body.get(key) is not None}
    if isinstance(config, Mapping):
        merged.update(config)
    return {"config": merged} if merged else {}


@dataclass(frozen=True, slots=True)
class Format:
    """One provider format: its module and where its history sits in a request body."""

    name: str
    module_name: str
    history_key: str
    """The body field holding the history, and the result attribute holding it back."""
    side_key: str | None
    """The body field converted with it (``system``, ``instructions``), or None."""
    default_model: str
    plan_keys: tuple[str, ...] = ("tools",)
    """Other body fields ``plan``/``compact`` take as keyword arguments when present."""
    validate_keys: tuple[str, ...] = ()
    """Other body fields ``validate`` takes."""
    text_estimator: Callable[[str], TokenEstimator] = _tiktoken_estimator
    """model -> how this format counts plain text (summaries, mask stubs)."""
    body_options: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    """body -> the keyword arguments ``plan``/``compact`` take from it, where ``plan_keys``
    cannot say (Gemini: a ``config`` gathered from either spelling of a request)."""

    def module(self) -> ModuleType:
        """The format's module, imported on first use; a ``CliError`` if it is unavailable."""
        try:
            return importlib.import_module(self.module_name)
        except ImportError as exc:
            raise CliError(f"the {self.name} format is not available: {self.module_name} "
                           f"cannot be imported ({_first_line(exc)})") from exc

    def _options(self, side: Any, body: Mapping[str, Any] | None,
                 keys: Sequence[str], *, planning: bool = False) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.side_key is not None and side is not None:
            options[self.side_key] = side
        for key in keys:
            if body is not None and body.get(key) is not None:
                options[key] = body[key]
        if body is not None and self.body_options is not None and planning:
            options.update(self.body_options(body))
        return options

    def validate(self, history: Any, side: Any = None,
                 body: Mapping[str, Any] | None = None) -> None:
        """Raise ``cutctx.ValidationError`` if the provider would reject this history."""
        self.module().validate(history, **self._options(side, body, self.validate_keys))

    def plan(self, history: Any, side: Any, body: Mapping[str, Any] | None, *, model: str,
             budget: int, policy: CompactionPolicy | None, summarizer: Summarizer | None,
             pin: Sequence[int] | None = None, keep_recent: int | None = None,
             settings: Mapping[str, Any] | None = None) -> Job:
        """Convert, estimate and plan (summaries are not produced); ``settings`` are policy
        keywords (``keep_task``, ``strict`` ...)."""
        options = {**self._options(side, body, self.plan_keys, planning=True),
                   **(settings or {})}
        if keep_recent is not None:
            options["keep_recent"] = keep_recent
        job: Job = self.module().plan(history, model=model, budget=budget, policy=policy,
                                      summarizer=summarizer, pin=pin, **options)
        return job

    def compact(self, history: Any, side: Any, body: Mapping[str, Any] | None, *, model: str,
                budget: int, policy: CompactionPolicy | None, summarizer: Summarizer | None,
                pin: Sequence[int] | None = None, keep_recent: int | None = None,
                settings: Mapping[str, Any] | None = None) -> CompactionResult:
        """Plan, fulfil with ``summarizer`` and apply."""
        options = {**self._options(side, body, self.plan_keys, planning=True),
                   **(settings or {})}
        if keep_recent is not None:
            options["keep_recent"] = keep_recent
        result: CompactionResult = self.module().compact(
            history, model=model, budget=budget, policy=policy, summarizer=summarizer, pin=pin,
            **options)
        return result

    def output(self, result: CompactionResult) -> tuple[Any, list[dict[str, Any]]]:
        """The compacted (side value, history) of a result."""
        side = getattr(result, self.side_key) if self.side_key is not None else None
        history: list[dict[str, Any]] = getattr(result, self.history_key)
        return side, history


FORMATS: Mapping[str, Format] = {
    f.name: f
    for f in (
        Format("openai-chat", "cutctx_adapters.openai.chat", "messages", None, "gpt-4o"),
        Format("openai-responses", "cutctx_adapters.openai.responses", "input", "instructions",
               "gpt-5"),
        Format("anthropic", "cutctx_adapters.anthropic.messages", "messages", "system",
               "claude-sonnet-4-5", plan_keys=("tools", "thinking"),
               validate_keys=("tools", "thinking"), text_estimator=claude_estimator),
        Format("gemini", "cutctx_adapters.gemini.contents", "contents", None,
               "gemini-2.5-flash", plan_keys=(), text_estimator=_gemini_text_estimator,
               body_options=_gemini_options),
    )
}
"""Format name → how to handle it. Adding a format is one entry here (plus its detection)."""


def format_named(name: str) -> Format:
    """The table entry for ``name``."""
    try:
        return FORMATS[name]
    except KeyError:
        raise CliError(f"unknown format {name!r}; known: {', '.join(FORMATS)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

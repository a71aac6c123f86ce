"""Turning command-line options into a model, a budget, a policy and a summarizer."""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any

from cutctx import (
    CompactionBudget,
    CompactionPlan,
    CompactionPolicy,
    DropOldestPolicy,
    ObservationMaskingPolicy,
    SummarizingPolicy,
    TokenEstimator,
    Transcript,
)

from ..counting import context_window, prompt_budget
from ..fulfil import Summarizer
from ..planning import stub_estimator
from ..prompts import DEFAULT_PROMPT_ID
from ._errors import CliError
from ._io import Document
from ._offline import OfflineSummarizer

__all__ = ["DEFAULT_RESERVE", "POLICIES", "Budget", "build_policy", "build_summarizer",
           "resolve_budget", "resolve_model"]

DEFAULT_RESERVE = 4096
"""Tokens kept free for the reply when neither ``--reserve`` nor the request body says."""
POLICIES = ("default", "mask", "summarize", "drop")


@dataclass(frozen=True, slots=True)
class Budget:
    """The prompt budget and where it came from."""

    tokens: int
    window: int | None = None
    reserve: int | None = None
    window_from: str | None = None
    """``--window`` or the model name whose window it is."""
    reserve_from: str | None = None
    """``--reserve``, the body field it came from (``max_tokens`` …), or ``default``."""
    input_limit: int | None = None
    """The model's input cap, when it is what bounds the budget (GPT-5: 272,000)."""

    def describe(self) -> str:
        """``--budget``, or ``window 200,000 (gpt-4o) − reserve 4,096 (default)``."""
        if self.window is None or self.reserve is None:
            return "--budget"
        capped = ("" if self.input_limit is None else
                  f", capped at the model's input limit {self.input_limit:,}")
        return (f"window {self.window:,} ({self.window_from}) − reserve {self.reserve:,} "
                f"({self.reserve_from}){capped}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON for ``--json``."""
        return {"max_prompt_tokens": self.tokens, "window": self.window,
                "window_from": self.window_from, "reserve": self.reserve,
                "reserve_from": self.reserve_from, "input_limit": self.input_limit}


def resolve_model(option: str | None, doc: Document) -> str:
    """``--model``, else the body's model, else the format's default."""
    return option or doc.model or doc.format.default_model


def resolve_budget(budget: int | None, window: int | None, reserve: int | None,
                   model: str, doc: Document) -> Budget:
    """``--budget``; else the window (``--window``, else the model's) minus the reserve.

    The reserve is ``--reserve``, else the body's output allowance (``max_tokens`` …), else
    ``DEFAULT_RESERVE``.
    """
    if budget is not None:
        if window is not None or reserve is not None:
            raise CliError("give --budget, or --window/--reserve, not both")
        return Budget(budget)
    window_from = "--window" if window is not None else model
    if window is None:
        window = context_window(model)
        if window is None:
            raise CliError(f"no known context window for model {model!r}; "
                           f"pass --budget N or --window N")
    reserve_from = "--reserve"
    if reserve is None:
        reserve_from, reserve = doc.output_allowance or ("default", DEFAULT_RESERVE)
    if reserve >= window:
        raise CliError(f"the reserve ({reserve:,}) leaves nothing of the window ({window:,})")
    given = window if window_from == "--window" else None
    tokens = prompt_budget(model, reserve, window=given)
    assert tokens is not None  # a window is known: given, or found for the model above
    capped = tokens if tokens < window - reserve else None
    return Budget(tokens, window, reserve, window_from, reserve_from, capped)


def build_policy(name: str, text_estimator: TokenEstimator,
                 summarizer: object | None = None) -> CompactionPolicy | None:
    """The policy for ``--policy``; None for ``default``, which the format module builds.

    ``default`` is the adapters' own chain (mask old tool results, summarize a span, drop the
    oldest), exactly as the library runs it. ``mask`` prices a stub with the format's text
    estimator plus the framing a masked tool turn keeps (the adapters' generic padding rule).
    """
    prompt_id = getattr(summarizer, "prompt_id", None) or DEFAULT_PROMPT_ID
    if name == "default":
        return None
    if name == "mask":
        return _Masking(text_estimator)
    if name == "summarize":
        if summarizer is None:
            raise CliError("--policy summarize needs a summarizer: --summarizer offline, "
                           "openai:MODEL or anthropic:MODEL")
        return SummarizingPolicy(prompt_id)
    if name == "drop":
        return DropOldestPolicy()
    raise CliError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")


class _Masking:
    """``ObservationMaskingPolicy`` alone, its stubs priced on the format's scale."""

    name = ObservationMaskingPolicy.name
    version = ObservationMaskingPolicy.version

    def __init__(self, text_estimator: TokenEstimator) -> None:
        self.text_estimator = text_estimator

    def decide(self, transcript: Transcript, budget: CompactionBudget) -> CompactionPlan:
        stubs = stub_estimator(transcript, self.text_estimator)
        return ObservationMaskingPolicy(estimator=stubs).decide(transcript, budget)


def build_summarizer(spec: str, text_estimator: TokenEstimator, *,
                     asynchronous: bool = False) -> Summarizer | None:
    """``none`` (no summaries: the library's default), ``offline`` (deterministic, no model),
    or ``openai:MODEL`` / ``anthropic:MODEL``.

    Provider summarizers use the SDK's client built from its usual environment (API key, base
    URL), its async one with ``asynchronous`` (a server's); they are imported only when asked
    for.
    """
    if spec == "none":
        return None
    if spec == "offline":
        return OfflineSummarizer(text_estimator)
    provider, _, name = spec.partition(":")
    if provider not in ("openai", "anthropic") or not name:
        raise CliError(f"--summarizer must be none, offline, openai:MODEL or anthropic:MODEL, "
                       f"not {spec!r}")
    sdk_name, class_name, client_name = {
        "openai": ("openai", "OpenAISummarizer", "OpenAI"),
        "anthropic": ("anthropic", "AnthropicSummarizer", "Anthropic"),
    }[provider]
    if asynchronous:
        client_name = "Async" + client_name
    try:
        summarizer_class = getattr(importlib.import_module(f"cutctx_adapters.{provider}"),
                                   class_name)
        client_class = getattr(importlib.import_module(sdk_name), client_name)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--summarizer {provider}: not available ({_first_line(exc)})") from None
    try:
        client = client_class()
    except Exception as exc:  # the SDKs raise their own error class for a missing key
        raise CliError(f"--summarizer {provider}: cannot create the {client_name} client "
                       f"({type(exc).__name__}: {_first_line(exc)})") from None
    summarizer: Summarizer = summarizer_class(client, model=name)
    return summarizer


def whole_number(text: str) -> int:
    """An argument that is a count: ``1_000`` and ``1,000`` read as 1000, never below 0."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

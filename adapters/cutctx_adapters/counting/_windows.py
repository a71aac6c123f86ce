"""Context windows of current models, by name prefix; callers can override any of them.

Figures are the providers' published context lengths (input + output), checked on 2026-12-02
against their model pages (platform.claude.com, developers.openai.com) or, where those were not
to be had, two gateways' listings; where sources disagreed the smaller figure is used, because a
window taken too large lets a request through that the API then refuses. The longest matching
prefix wins, so dated snapshots (``gpt-4o-2024-08-06``) inherit their family's window.

The ids clouds and gateways use are read as the model they name (``model_name``): a route before
the last ``/`` (``openai/gpt-4o``, ``bedrock/...``, an ARN's ``foundation-model/``), Bedrock's
provider and regional prefixes (``us.anthropic.``, ``global.anthropic.``), and dotted Claude
versions (``claude-sonnet-4.5``) go; version suffixes (``-v1:0``, ``@20250929``, ``:nitro``) are
past the prefix that matches. A deployment name (Azure) or an application inference profile
names no model: it is unknown, and a session asks for ``window=``.

Some models accept less input than window − output: GPT-5 (400K = 272K in + 128K out) and the
~1.05M-token models (922K in + 128K out). ``INPUT_LIMITS`` caps the prompt budget for those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["CONTEXT_WINDOWS", "INPUT_LIMITS", "context_window", "input_limit", "model_name",
           "prompt_budget"]

CONTEXT_WINDOWS: Mapping[str, int] = {
    # OpenAI
    "gpt-6": 1_050_000,
    "gpt-5.6": 1_050_000,
    "gpt-5.5": 1_000_000,
    "gpt-5.4": 1_050_000,
    "gpt-5.4-mini": 400_000,
    "gpt-5.4-nano": 400_000,
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-5.1-chat": 128_000,
    "gpt-5.2-chat": 128_000,
    "gpt-5.3-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    # Anthropic: 200K up to the 4.5 models, 1M from Opus/Sonnet 4.6 and for every 5.x model
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-opus-4-6": 1_000_000,
    "claude-opus-4-7": 1_000_000,
    "claude-opus-4-8": 1_000_000,
    "claude-sonnet-4-6": 1_000_000,
    "claude-opus-5": 1_000_000,
    "claude-sonnet-5": 1_000_000,
    "claude-haiku-5": 1_000_000,
    "claude-fable-5": 1_000_000,
    "claude-mythos": 1_000_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    # Google Gemini: the published input limit (1,048,576; 2,097,152 for 1.5 Pro) as the window,
    # so window − reply errs low; output is limited apart (65,536 on 2.5 and later)
    "gemini-": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.0-pro": 32_760,
}

INPUT_LIMITS: Mapping[str, int] = {
    "gpt-5": 272_000,
    "gpt-5.4": 922_000,
    "gpt-5.4-mini": 272_000,
    "gpt-5.4-nano": 272_000,
    "gpt-5.5": 922_000,
    "gpt-5.6": 922_000,
    "gpt-6": 922_000,
}
"""Most input tokens a model accepts, where that is less than its window minus its output."""


_BEDROCK_PROVIDER = re.compile(r"(?:[a-z]+(?:-[a-z]+)?\.)?(?:anthropic|openai)\.")
"""Bedrock's provider prefix, after an optional cross-Region profile (``us.``, ``us-gov.``)."""
_DOTTED = re.compile(r"(?<=\d)\.(?=\d)")


def model_name(model: str) -> str:
    """The model a cloud or gateway id names, as the providers' own APIs name it.

    >>> model_name("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    'claude-sonnet-4-5-20250929-v1:0'
    >>> model_name("openrouter/anthropic/claude-3.7-sonnet"), model_name("openai/gpt-4o")
    ('claude-3-7-sonnet', 'gpt-4o')
    """
    name = model.removeprefix("ft:").rpartition("/")[2]
    found = _BEDROCK_PROVIDER.match(name)
    if found is not None:
        name = name[found.end():]
    if name.startswith("claude-"):
        name = _DOTTED.sub("-", name)
    return name


def _lookup(model: str, table: Mapping[str, int]) -> int | None:
    """The value of the longest prefix of ``model`` in ``table``: as given (a caller's own key
    for a cloud id; Gemini's ``models/`` resource name read as the model), else as the model it
    names."""
    given = model.removeprefix("ft:").removeprefix("models/")
    for name in dict.fromkeys((given, model_name(model))):
        best = max((prefix for prefix in table if name.startswith(prefix)), key=len,
                   default=None)
        if best is not None:
            return table[best]
    return None


def context_window(model: str | None, overrides: Mapping[str, int] | None = None) -> int | None:
    """The context window of ``model``, or None when neither table knows it.

    >>> context_window("gpt-4o-mini-2024-07-18")
    128000
    >>> context_window("claude-sonnet-4-6"), context_window("claude-sonnet-4-5")
    (1000000, 200000)
    >>> context_window("models/gemini-2.5-flash"), context_window("gemini-1.5-pro-002")
    (1048576, 2097152)
    """
    if not model:
        return None
    for table in (overrides or {}, CONTEXT_WINDOWS):
        window = _lookup(model, table)
        if window is not None:
            return window
    return None


def input_limit(model: str | None) -> int | None:
    """The most prompt tokens ``model`` accepts when that is below window − output, else None.

    >>> input_limit("gpt-5-mini"), input_limit("gpt-4o")
    (272000, None)
    """
    return _lookup(model, INPUT_LIMITS) if model else None


def prompt_budget(model: str | None, allowance: int, *, window: int | None = None,
                  overrides: Mapping[str, int] | None = None) -> int | None:
    """Prompt tokens left for ``model`` once ``allowance`` is kept for the reply; None when no
    window is known. A window the caller gave (``window``, or a match in ``overrides``) is taken
    as it is; the built-in one is also capped by the model's input limit.

    >>> prompt_budget("gpt-5", 4_096), prompt_budget("gpt-5", 4_096, window=300_000)
    (272000, 295904)
    """
    if window is None and model and overrides:
        window = _lookup(model, overrides)
    if window is not None:
        return max(0, window - allowance)
    built_in = context_window(model)
    if built_in is None:
        return None
    budget = max(0, built_in - allowance)
    limit = input_limit(model)
    return budget if limit is None else min(budget, limit)

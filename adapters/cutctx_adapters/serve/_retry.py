"""An upstream context-length error, told apart from other errors, and the budget to retry at.

OpenAI says ``context_length_exceeded`` (Chat: "maximum context length is M tokens. However,
your messages resulted in N tokens"); Anthropic ``prompt is too long: N tokens > M maximum``.
The retry aims below what the provider said it takes, scaled onto cutctx's own estimate of
what was sent, with a margin; an error that gives no figures takes three quarters.
"""

from __future__ import annotations

import json
import re

__all__ = ["MARGIN", "context_error", "lower_budget"]

MARGIN = 0.9
"""Share of the provider's limit the retry aims at: its counts and ours differ."""
_OPENAI = re.compile(r"maximum context length is (\d+) tokens.*?resulted in (\d+) tokens",
                     re.IGNORECASE | re.DOTALL)
_ANTHROPIC = re.compile(r"prompt is too long:\s*(\d+) tokens\s*>\s*(\d+) maximum", re.IGNORECASE)
_PHRASES = ("context_length_exceeded", "context length", "context window", "prompt is too long",
            "too many tokens", "input is too long", "exceeds the context")


def context_error(status: int, body: bytes) -> tuple[int, int] | bool:
    """``(tokens sent, limit)`` when ``body`` is a context-length error that says them, True
    for one that does not, False for any other error."""
    if status not in (400, 413, 422):
        return False
    try:
        error = json.loads(body)
    except ValueError:
        return False
    inner = error.get("error") if isinstance(error, dict) else None
    if not isinstance(inner, dict):
        return False
    code = str(inner.get("code") or "")
    message = str(inner.get("message") or "")
    if code != "context_length_exceeded" and not any(
            phrase in message.lower() for phrase in _PHRASES):
        return False
    found = _OPENAI.search(message)
    if found:
        return int(found.group(2)), int(found.group(1))
    found = _ANTHROPIC.search(message)
    if found:
        return int(found.group(1)), int(found.group(2))
    return True


def lower_budget(sent_estimate: int, figures: tuple[int, int] | bool) -> int:
    """The prompt budget to retry at, on cutctx's scale: the provider's limit over its count of
    what was sent, times our estimate of it, less the margin."""
    if isinstance(figures, tuple) and figures[0] > 0:
        counted, limit = figures
        return max(1, int(sent_estimate * min(1.0, limit / counted) * MARGIN))
    return max(1, int(sent_estimate * 0.75))

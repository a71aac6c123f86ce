"""What an SDK client is: sync or async, and of which SDK, checked when a wrapper is made."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

from cutctx import ValidationError

__all__ = ["check_client", "is_async_client"]

_WRAPPERS = {"openai": "CompactingOpenAI", "anthropic": "CompactingAnthropic",
             "google": "CompactingGenAI"}
"""The wrapper for each SDK's clients, to name when the other one is given."""


def is_async_client(client: Any) -> bool:
    """Whether ``client`` is an SDK's async client (its requests return awaitables)."""
    return "Async" in type(client).__name__ or inspect.iscoroutinefunction(
        getattr(client, "post", None))


def check_client(client: object, wrapper: str, sdk: str, classes: Sequence[str]) -> None:
    """Refuse, when the wrapper is made, anything but an instance of one of the ``sdk``
    package's ``classes`` (subclasses, such as Azure's, included): the class itself, another
    SDK's client, or anything else, each named with what to pass instead. A class the installed
    SDK does not have (an older release) is left out."""
    module = sys.modules.get(sdk)  # a client of this SDK means the SDK is imported already
    present = [name for name in classes if module is None or hasattr(module, name)]
    names = [f"{sdk}.{name}" for name in present]
    wanted = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)
    if isinstance(client, type):
        raise ValidationError(
            f"{wrapper} wraps a client instance, got the class {client.__name__}: pass "
            f"{client.__name__}(...)", {"field": "client", "rule": "class_not_instance"})
    kinds = tuple(getattr(module, name) for name in present) if module is not None else ()
    if kinds and isinstance(client, kinds):
        return
    given = type(client)
    package = given.__module__.split(".")[0]
    other = _WRAPPERS.get(package)
    hint = f" (wrap it with {other})" if other is not None and other != wrapper else ""
    raise ValidationError(
        f"{wrapper} wraps an {wanted} client, got {package}.{given.__qualname__}{hint}",
        {"field": "client", "rule": "client_type"})

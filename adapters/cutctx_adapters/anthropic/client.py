"""``CompactingAnthropic``: an ``Anthropic``/``AsyncAnthropic`` client that compacts first.

``client.messages.create`` (``stream=True`` too), ``.stream`` and ``.parse`` keep their
signatures and return types (for type checkers too), and so do the same three under
``client.beta.messages`` (beta requests that continue a server-held ``thread`` are sent
untouched). ``count_tokens``, batches, ``beta.messages.tool_runner`` (it loops on its own, out
of the wrapper's reach) and every other attribute pass through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from ..clients import CompactingClient, Namespace, SdkView, check_client
from ..settings import CompactionSettings, SettingsKeywords
from . import messages

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from anthropic.resources.beta import AsyncBeta, Beta
    from anthropic.resources.messages import AsyncMessages, Messages

__all__ = ["CompactingAnthropic"]

AnthropicClientT = TypeVar("AnthropicClientT", bound="Anthropic | AsyncAnthropic")
_METHODS = ("create", "stream", "parse")


def _messages(wrapper: CompactingAnthropic[Any]) -> Any:
    return wrapper._compacting(wrapper.wrapped.messages, messages.FORMAT.name, _METHODS)


def _beta(wrapper: CompactingAnthropic[Any]) -> Any:
    real = wrapper.wrapped.beta
    return Namespace(real, messages=wrapper._compacting(real.messages, messages.FORMAT.name,
                                                        _METHODS))


class CompactingAnthropic(CompactingClient[AnthropicClientT]):
    """Wraps an ``Anthropic`` or ``AsyncAnthropic`` client; settings as ``CompactingOpenAI``.

    Budget = context window − ``max_tokens`` − tool definitions; same hysteresis, sticky
    views and report callbacks as the OpenAI wrapper. An appended ``Message`` (the SDK's
    response) is sent as its role and content, as ``compact`` reads it.
    """

    messages: SdkView[Anthropic, AsyncAnthropic, Messages, AsyncMessages] = SdkView(_messages)
    """``messages`` whose ``create``/``stream``/``parse`` compact ``system`` + ``messages``
    first."""
    beta: SdkView[Anthropic, AsyncAnthropic, Beta, AsyncBeta] = SdkView(_beta)
    """``beta`` whose ``messages`` compact like ``messages`` (same session and views)."""

    def __init__(self, client: AnthropicClientT, *, settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        check_client(client, "CompactingAnthropic", "anthropic", ("Anthropic", "AsyncAnthropic"))
        super().__init__(client, (messages.FORMAT,), settings=settings, **keywords)

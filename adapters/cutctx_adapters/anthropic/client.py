"""``CompactingAnthropic``: an Anthropic client, first-party or on a cloud, that compacts first.

It wraps ``Anthropic``/``AsyncAnthropic`` and the cloud clients of the same SDK:
``AnthropicBedrock``, ``AnthropicVertex`` (and their async twins), ``AnthropicFoundry`` where the
installed SDK has it. ``client.messages.create`` (``stream=True`` too), ``.stream`` and ``.parse``
keep their signatures and return types (for type checkers too), and so do the same three under
``client.beta.messages`` (beta requests that continue a server-held ``thread`` are sent
untouched). ``count_tokens``, batches, ``beta.messages.tool_runner`` (it loops on its own, out
of the wrapper's reach) and every other attribute pass through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, Unpack

from ..clients import CompactingClient, Namespace, SdkView, check_client
from ..settings import CompactionSettings, SettingsKeywords
from . import messages

if TYPE_CHECKING:
    from anthropic import (
        Anthropic,
        AnthropicBedrock,
        AnthropicVertex,
        AsyncAnthropic,
        AsyncAnthropicBedrock,
        AsyncAnthropicVertex,
    )
    from anthropic.resources.beta import AsyncBeta, Beta
    from anthropic.resources.messages import AsyncMessages, Messages

    SyncClient: TypeAlias = Anthropic | AnthropicBedrock | AnthropicVertex
    AsyncClient: TypeAlias = AsyncAnthropic | AsyncAnthropicBedrock | AsyncAnthropicVertex

__all__ = ["CompactingAnthropic"]

AnthropicClientT = TypeVar("AnthropicClientT", bound="SyncClient | AsyncClient")
_METHODS = ("create", "stream", "parse")
_CLIENTS = ("Anthropic", "AsyncAnthropic", "AnthropicBedrock", "AsyncAnthropicBedrock",
                  "AnthropicVertex", "AsyncAnthropicVertex", "AnthropicFoundry",
                  "AsyncAnthropicFoundry")
"""The ``anthropic`` clients ``CompactingAnthropic`` wraps (those the installed SDK has; the
Foundry clients subclass the first-party ones)."""


def _count(messages_resource: Any) -> Any:
    """The exact count of a wrapped ``messages`` (``counter="provider"``): its
    ``count_tokens`` (on Bedrock the SDK refuses it, and the estimate stands)."""
    return messages_resource.count_tokens


def _messages(wrapper: CompactingAnthropic[Any]) -> Any:
    return wrapper._compacting(wrapper.wrapped.messages, messages.FORMAT.name, _METHODS)


def _beta(wrapper: CompactingAnthropic[Any]) -> Any:
    real = wrapper.wrapped.beta
    return Namespace(real, messages=wrapper._compacting(real.messages, messages.FORMAT.name,
                                                        _METHODS))


class CompactingAnthropic(CompactingClient[AnthropicClientT]):
    """Wraps an Anthropic client (first-party, Bedrock, Vertex or Foundry); settings as
    ``CompactingOpenAI``.

    Budget = context window − ``max_tokens`` − tool definitions; same hysteresis, sticky
    views and report callbacks as the OpenAI wrapper. An appended ``Message`` (the SDK's
    response) is sent as its role and content, as ``compact`` reads it. On Bedrock and Vertex
    the model is the platform's id (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
    ``claude-sonnet-4-5@20250929``), whose window the built-in table knows.
    """

    messages: SdkView[SyncClient, AsyncClient, Messages, AsyncMessages] = SdkView(_messages)
    """``messages`` whose ``create``/``stream``/``parse`` compact ``system`` + ``messages``
    first."""
    beta: SdkView[SyncClient, AsyncClient, Beta, AsyncBeta] = SdkView(_beta)
    """``beta`` whose ``messages`` compact like ``messages`` (same session and views); typed
    as the first-party client's (the cloud clients' ``beta.messages`` have the same
    ``create``/``stream``/``parse``)."""

    def __init__(self, client: AnthropicClientT, *, settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        check_client(client, "CompactingAnthropic", "anthropic", _CLIENTS)
        super().__init__(client, (messages.FORMAT,), settings=settings,
                         counters={messages.FORMAT.name: _count}, **keywords)

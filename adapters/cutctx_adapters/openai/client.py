"""``CompactingOpenAI``: an ``OpenAI``/``AsyncOpenAI`` client whose history calls compact first.

``client.chat.completions.create/parse/stream`` and ``client.responses.create/parse/stream``
keep their signatures and return types (for type checkers too: ``client.chat`` is typed as the
SDK's ``Chat`` or ``AsyncChat``); every other attribute is the wrapped client's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from ..clients import CompactingClient, Namespace, SdkView, check_client
from ..settings import CompactionSettings, SettingsKeywords
from . import chat, responses

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI
    from openai.resources.chat import AsyncChat, Chat
    from openai.resources.responses import AsyncResponses, Responses

__all__ = ["CompactingOpenAI"]

OpenAIClientT = TypeVar("OpenAIClientT", bound="OpenAI | AsyncOpenAI")
_METHODS = ("create", "parse", "stream")


def _count(responses_resource: Any) -> Any:
    """The exact count of a wrapped ``responses`` (``counter="provider"``): its
    ``input_tokens.count``; Chat Completions has none (and counts exactly anyway)."""
    return responses_resource.input_tokens.count


def _chat(wrapper: CompactingOpenAI[Any]) -> Any:
    real = wrapper.wrapped.chat
    return Namespace(real, completions=wrapper._compacting(real.completions, chat.FORMAT.name,
                                                           _METHODS))


def _responses(wrapper: CompactingOpenAI[Any]) -> Any:
    return wrapper._compacting(wrapper.wrapped.responses, responses.FORMAT.name, _METHODS)


class CompactingOpenAI(CompactingClient[OpenAIClientT]):
    """Wraps an ``OpenAI`` or ``AsyncOpenAI`` client; settings as ``CompactionSettings``.

    >>> from openai import OpenAI
    >>> client = CompactingOpenAI(OpenAI(api_key="sk-test"), window=32_000)
    >>> client.settings.window, client.settings.target
    (32000, 0.5)

    Pass a ``CompactionSettings`` (``settings=``) and/or its fields as keywords: ``window``
    (else the built-in table), ``trigger``/``target``, ``reserve``, ``summarizer``, ``store``,
    ``on_compaction`` (called when a request was compacted, or could not be), ``on_call``
    (every call), ... A request with ``previous_response_id`` or ``conversation`` is passed
    through untouched.
    """

    chat: SdkView[OpenAI, AsyncOpenAI, Chat, AsyncChat] = SdkView(_chat)
    """``chat`` whose ``completions`` compact ``messages`` before sending."""
    responses: SdkView[OpenAI, AsyncOpenAI, Responses, AsyncResponses] = SdkView(_responses)
    """``responses`` whose calls compact ``input`` (and ``instructions``) before sending."""

    def __init__(self, client: OpenAIClientT, *, settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        check_client(client, "CompactingOpenAI", "openai", ("OpenAI", "AsyncOpenAI"))
        super().__init__(client, (chat.FORMAT, responses.FORMAT), settings=settings,
                         counters={responses.FORMAT.name: _count}, **keywords)

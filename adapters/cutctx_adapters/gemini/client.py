"""``CompactingGenAI``: a ``google.genai.Client`` whose ``generate_content`` calls compact first.

``client.models.generate_content`` and ``generate_content_stream``, their ``client.aio`` twins,
and the chats of ``client.chats`` / ``client.aio.chats`` (every ``send_message`` sends the chat's
whole history through the same session) keep their signatures and return types, for type
checkers too. ``interactions.create`` with a ``previous_interaction_id`` and Live API sessions
(``client.aio.live.connect``) hold their history on the server: they go out as given, reported
``not_possible``. Every other attribute is the wrapped client's own.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Unpack

from google.genai.chats import AsyncChats, Chats
from google.genai.client import AsyncClient, Client
from google.genai.models import Models

from ..clients import CompactingClient, Count, Namespace, SdkView, check_client
from ..settings import CompactionSettings, SettingsKeywords
from . import contents
from ._reading import config_field

if TYPE_CHECKING:
    from collections.abc import Iterator

    from google.genai import types

__all__ = ["CompactingGenAI"]

_GENERATE = ("generate_content", "generate_content_stream")


def _resource(wrapper: CompactingGenAI, resource: Any, methods: tuple[str, ...], *,
              is_async: bool) -> Any:
    return wrapper._compacting(resource, contents.FORMAT.name, methods, is_async=is_async)


def _count(models: Any) -> Count | None:
    """The exact count of a wrapped ``models`` (``counter="provider"``): its ``count_tokens``
    of the request's contents, with the config's system instruction and tools where the API
    counts them (Vertex AI). The Developer API counts contents alone: a request with either is
    not counted there (its estimate stands). None for a resource without the endpoint."""
    endpoint = getattr(models, "count_tokens", None)
    if endpoint is None:
        return None
    vertex = bool(getattr(getattr(models, "_api_client", None), "vertexai", False))

    def count(*, model: str, contents: Any, config: Any = None) -> Any:
        extra = {name: value for name in ("system_instruction", "tools")
                 if (value := config_field(config, name)) is not None}
        if extra and not vertex:
            raise ValueError("the Developer API counts contents alone")
        counted = endpoint(model=model, contents=contents, config=extra or None)
        return _total(counted) if not inspect.isawaitable(counted) else _atotal(counted)

    return count


def _total(response: Any) -> dict[str, Any]:
    """A ``CountTokensResponse`` as the input tokens it counted."""
    return {"input_tokens": getattr(response, "total_tokens", None)}


async def _atotal(response: Awaitable[Any]) -> dict[str, Any]:
    return _total(await response)


class _ChatModels(Models):
    """The client's ``models`` as a chat sends through it: an SDK ``Models`` (a chat streams
    only through one) whose generate calls compact first."""

    def __init__(self, real: Models, compacting: Any) -> None:
        super().__init__(real._api_client)
        self._compacting = compacting

    def generate_content(self, *, model: str, contents: types.ContentListUnionDict,
                         config: types.GenerateContentConfigOrDict | None = None,
                         ) -> types.GenerateContentResponse:
        reply: types.GenerateContentResponse = self._compacting.generate_content(
            model=model, contents=contents, config=config)
        return reply

    def generate_content_stream(self, *, model: str, contents: types.ContentListUnionDict,
                                config: types.GenerateContentConfigOrDict | None = None,
                                ) -> Iterator[types.GenerateContentResponse]:
        chunks: Iterator[types.GenerateContentResponse] = (
            self._compacting.generate_content_stream(model=model, contents=contents,
                                                     config=config))
        return chunks


def _models(wrapper: CompactingGenAI) -> Any:
    return _resource(wrapper, wrapper.wrapped.models, _GENERATE, is_async=False)


def _chats(wrapper: CompactingGenAI) -> Chats:
    return Chats(modules=_ChatModels(wrapper.wrapped.models, _models(wrapper)))


def _interactions(wrapper: CompactingGenAI, real: Any, *, is_async: bool) -> Any:
    return _resource(wrapper, real, ("create",), is_async=is_async)


def _aio(wrapper: CompactingGenAI) -> Any:
    real: AsyncClient = wrapper.wrapped.aio
    models = _resource(wrapper, real.models, _GENERATE, is_async=True)
    return Namespace(
        real,
        models=models,
        chats=AsyncChats(modules=models),
        live=Namespace(real.live, connect=_resource(wrapper, real.live, ("connect",),
                                                    is_async=True).connect),
        interactions=_LazyInteractions(wrapper, is_async=True),
    )


class _LazyInteractions:
    """``interactions``, built on first use as the SDK builds it, with ``create`` reported."""

    def __init__(self, wrapper: CompactingGenAI, *, is_async: bool) -> None:
        self._wrapper = wrapper
        self._is_async = is_async

    def __getattr__(self, name: str) -> Any:
        client = self._wrapper.wrapped
        real = client.aio.interactions if self._is_async else client.interactions
        return getattr(_interactions(self._wrapper, real, is_async=self._is_async), name)


class CompactingGenAI(CompactingClient[Client]):
    """Wraps a ``google.genai.Client``; settings as ``CompactionSettings``.

    Budget = context window − ``config.max_output_tokens`` (else ``reserve``) − what the
    request's ``config`` spends (system instruction, tools, tool config); the same hysteresis,
    sticky views and callbacks as the other wrappers. An appended ``GenerateContentResponse``
    is read as its first candidate's content.
    """

    models: SdkView[Client, Client, Models, Models] = SdkView(_models)
    """``models`` whose ``generate_content``/``generate_content_stream`` compact ``contents``
    first."""
    chats: SdkView[Client, Client, Chats, Chats] = SdkView(_chats)
    """``chats`` whose chats send every message through the compacting ``models``."""
    aio: SdkView[Client, Client, AsyncClient, AsyncClient] = SdkView(_aio)
    """``aio`` with the same compacting ``models`` and ``chats``, awaited."""

    def __init__(self, client: Client, *, settings: CompactionSettings | None = None,
                 **keywords: Unpack[SettingsKeywords]) -> None:
        check_client(client, "CompactingGenAI", "google.genai", ("Client",))
        super().__init__(client, (contents.FORMAT,), settings=settings,
                         counters={contents.FORMAT.name: _count}, **keywords)

    @property
    def interactions(self) -> Any:
        """``interactions``: passed through, each ``create`` reported (``not_possible``)."""
        return _LazyInteractions(self, is_async=False)


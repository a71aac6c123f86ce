"""Snippets for ``tests/test_typing.py``: mypy (strict) checks this file, never pytest.

Each ``reveal_type`` line ends with ``# same: NAME``: every line of one NAME must reveal the same
type (the SDK's call first, then the wrapped client's). A ``# type: ignore[code]`` marks a
mistake mypy must catch (strict mode reports an ignore that is not needed).
"""

from __future__ import annotations

from typing import reveal_type

from anthropic import (
    Anthropic,
    AnthropicBedrock,
    AnthropicVertex,
    AsyncAnthropic,
    AsyncAnthropicBedrock,
    omit,
)
from google import genai
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

from cutctx_adapters import CompactionSession, CompactionSettings
from cutctx_adapters.anthropic import CompactingAnthropic, messages
from cutctx_adapters.gemini import CompactingGenAI, contents
from cutctx_adapters.openai import CompactingOpenAI, chat, responses


class Answer(BaseModel):
    answer: str


def openai_chat(sdk: OpenAI) -> None:
    wrapped = CompactingOpenAI(sdk, window=32_000)
    reveal_type(wrapped)  # same: wrapper
    reveal_type(CompactingOpenAI(OpenAI(), target=0.4))  # same: wrapper
    history = chat.compact([{"role": "user", "content": "Hi"}], model="gpt-4o", budget=8000)
    reveal_type(sdk.chat.completions.create(model="gpt-4o", messages=history.messages))  # same: chat
    reveal_type(wrapped.chat.completions.create(model="gpt-4o", messages=history.messages))  # same: chat
    reveal_type(sdk.chat.completions.create(model="gpt-4o", messages=[], stream=True))  # same: chat-stream
    reveal_type(wrapped.chat.completions.create(model="gpt-4o", messages=[], stream=True))  # same: chat-stream
    reveal_type(sdk.chat.completions.parse(model="gpt-4o", messages=[], response_format=Answer))  # same: chat-parse
    reveal_type(wrapped.chat.completions.parse(model="gpt-4o", messages=[], response_format=Answer))  # same: chat-parse
    reveal_type(sdk.chat.completions.with_raw_response.create(model="gpt-4o", messages=[]))  # same: chat-raw
    reveal_type(wrapped.chat.completions.with_raw_response.create(model="gpt-4o", messages=[]))  # same: chat-raw
    reveal_type(wrapped.wrapped)  # same: wrapped-sdk
    reveal_type(sdk)  # same: wrapped-sdk
    reveal_type(wrapped.with_options(timeout=5))  # same: wrapper


def openai_responses(sdk: OpenAI) -> None:
    wrapped = CompactingOpenAI(sdk)
    result = responses.compact("Hi", instructions="Be brief.", model="gpt-5", budget=8000)
    reveal_type(sdk.responses.create(model="gpt-5", input=result.input,  # same: responses
                                     instructions=result.instructions))
    reveal_type(wrapped.responses.create(model="gpt-5", input=result.input,  # same: responses
                                         instructions=result.instructions))
    reveal_type(sdk.responses.create(model="gpt-5", input="Hi", stream=True))  # same: responses-stream
    reveal_type(wrapped.responses.create(model="gpt-5", input="Hi", stream=True))  # same: responses-stream
    reveal_type(sdk.responses.parse(model="gpt-5", input="Hi", text_format=Answer))  # same: responses-parse
    reveal_type(wrapped.responses.parse(model="gpt-5", input="Hi", text_format=Answer))  # same: responses-parse


async def openai_async(sdk: AsyncOpenAI) -> None:
    wrapped = CompactingOpenAI(sdk)
    reveal_type(await sdk.chat.completions.create(model="gpt-4o", messages=[]))  # same: achat
    reveal_type(await wrapped.chat.completions.create(model="gpt-4o", messages=[]))  # same: achat
    reveal_type(await sdk.chat.completions.create(model="gpt-4o", messages=[], stream=True))  # same: achat-stream
    reveal_type(await wrapped.chat.completions.create(model="gpt-4o", messages=[], stream=True))  # same: achat-stream
    reveal_type(await sdk.responses.parse(model="gpt-5", input="Hi", text_format=Answer))  # same: aresponses-parse
    reveal_type(await wrapped.responses.parse(model="gpt-5", input="Hi", text_format=Answer))  # same: aresponses-parse


def anthropic_messages(sdk: Anthropic) -> None:
    wrapped = CompactingAnthropic(sdk, settings=CompactionSettings(window=200_000))
    result = messages.compact([{"role": "user", "content": "Hi"}], system="Be brief.",
                              budget=8000)
    system = result.system if result.system is not None else omit
    reveal_type(sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512,  # same: messages
                                    system=system, messages=result.messages))
    reveal_type(wrapped.messages.create(model="claude-sonnet-4-5", max_tokens=512,  # same: messages
                                        system=system, messages=result.messages))
    reveal_type(sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[], stream=True))  # same: messages-stream
    reveal_type(wrapped.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[], stream=True))  # same: messages-stream
    reveal_type(sdk.messages.parse(model="claude-sonnet-4-5", max_tokens=512, messages=[], output_format=Answer))  # same: messages-parse
    reveal_type(wrapped.messages.parse(model="claude-sonnet-4-5", max_tokens=512, messages=[], output_format=Answer))  # same: messages-parse
    reveal_type(sdk.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: beta
    reveal_type(wrapped.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: beta


async def anthropic_async(sdk: AsyncAnthropic) -> None:
    wrapped = CompactingAnthropic(sdk)
    reveal_type(await sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: amessages
    reveal_type(await wrapped.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: amessages


def anthropic_clouds(bedrock: AnthropicBedrock, vertex: AnthropicVertex, sdk: Anthropic) -> None:
    on_bedrock = CompactingAnthropic(bedrock)
    on_vertex = CompactingAnthropic(vertex)
    reveal_type(sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: cloud-messages
    reveal_type(bedrock.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: cloud-messages
    reveal_type(on_bedrock.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: cloud-messages
    reveal_type(on_vertex.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: cloud-messages
    reveal_type(sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[], stream=True))  # same: cloud-stream
    reveal_type(on_vertex.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[], stream=True))  # same: cloud-stream
    reveal_type(on_bedrock.wrapped)  # same: bedrock
    reveal_type(bedrock)  # same: bedrock


async def anthropic_clouds_async(bedrock: AsyncAnthropicBedrock, sdk: AsyncAnthropic) -> None:
    wrapped = CompactingAnthropic(bedrock)
    reveal_type(await sdk.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: acloud
    reveal_type(await wrapped.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[]))  # same: acloud


def gemini(sdk: genai.Client) -> None:
    wrapped = CompactingGenAI(sdk, window=200_000)
    result = contents.compact("Hi", model="gemini-2.5-flash", budget=8000)
    reveal_type(sdk.models.generate_content(model="gemini-2.5-flash", contents=result.contents))  # same: gemini
    reveal_type(wrapped.models.generate_content(model="gemini-2.5-flash", contents=result.contents))  # same: gemini
    reveal_type(sdk.models.generate_content_stream(model="gemini-2.5-flash", contents="Hi"))  # same: gemini-stream
    reveal_type(wrapped.models.generate_content_stream(model="gemini-2.5-flash", contents="Hi"))  # same: gemini-stream
    reveal_type(sdk.chats.create(model="gemini-2.5-flash").send_message("Hi"))  # same: gemini-chat
    reveal_type(wrapped.chats.create(model="gemini-2.5-flash").send_message("Hi"))  # same: gemini-chat


async def gemini_async(sdk: genai.Client) -> None:
    wrapped = CompactingGenAI(sdk)
    reveal_type(await sdk.aio.models.generate_content(model="gemini-2.5-flash", contents="Hi"))  # same: agemini
    reveal_type(await wrapped.aio.models.generate_content(model="gemini-2.5-flash", contents="Hi"))  # same: agemini


def settings_are_checked_by_name_and_type(sdk: OpenAI) -> None:
    CompactingOpenAI(sdk, windw=6000)  # type: ignore[call-arg]
    CompactingOpenAI(sdk, budget=8000)  # type: ignore[call-arg]
    CompactingOpenAI(sdk, window="6000")  # type: ignore[arg-type]
    CompactingOpenAI(sdk, on_compaction="print")  # type: ignore[arg-type]
    CompactingOpenAI(Anthropic())  # type: ignore[type-var]
    CompactingAnthropic(OpenAI())  # type: ignore[type-var]
    CompactionSettings(keep_recnt=4)  # type: ignore[call-arg]
    CompactionSession(chat.FORMAT, "gpt-4o", trigger=0.8, target=0.4, keep_recent=6)
    CompactionSession("openai-chat")  # type: ignore[arg-type]
    chat.compact([], budget=8000, keep_recnt=4)  # type: ignore[call-arg]
    chat.compact([], budget=8000, tools=[], pin=[0], keep_recent=2, summarizer=None)

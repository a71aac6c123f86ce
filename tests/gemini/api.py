"""The mocked Gemini API the client tests send to: the real ``google.genai`` client over respx's
httpcore2 mocker (the transport under the SDK's default httpx2 backend)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx
from google import genai
from google.genai import _api_client

from tests._support.http import mocked_api
from tests.gemini.histories import SIGNATURE

BASE_URL = "https://gemini.test"
MODEL = "gemini-2.5-flash"
SUMMARY_MODEL = "gemini-2.5-flash-lite"
SUMMARY_TEXT = "The agent read files and ran the tests; next it patches parser.py."


def reply(parts: list[dict[str, Any]] | None = None, finish: str = "STOP") -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts or [
        {"text": "ok", "thoughtSignature": SIGNATURE}]}, "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2}}


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks).encode()


def answer(request: httpx.Request) -> httpx.Response:
    """Summaries for the summary model, SSE for streams, one reply otherwise."""
    if SUMMARY_MODEL in request.url.path:
        return httpx.Response(200, json=reply([{"text": SUMMARY_TEXT}]))
    if "streamGenerateContent" in request.url.path:
        first = reply([{"text": "o", "thoughtSignature": SIGNATURE}])
        first["candidates"][0].pop("finishReason")
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=sse([first, reply([{"text": "k"}])]))
    return httpx.Response(200, json=reply())


api = mocked_api(BASE_URL)


@pytest.fixture
def route(api: respx.Router) -> respx.Route:
    return api.post(path__regex=r"/v1beta/models/[^/]+:(stream)?[gG]enerateContent").mock(
        side_effect=answer)


def sdk() -> genai.Client:
    """A real client whose requests the mock answers: with aiohttp installed the SDK would send
    its async requests through it, past respx, so its httpx2 path is chosen here."""
    _api_client.has_aiohttp = False
    return genai.Client(api_key="test", http_options={"base_url": BASE_URL,
                                                      "api_version": "v1beta"})


def bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls]


def main_bodies(route: respx.Route) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls
            if SUMMARY_MODEL not in call.request.url.path]

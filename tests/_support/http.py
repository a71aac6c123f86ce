"""The SDKs' HTTP mocked: respx over httpcore2, the transport under httpx2 that both SDKs (and
google-genai) send through; plain ``respx.mock()`` patches httpx's transport and misses them."""

from __future__ import annotations

from typing import Any

import pytest_httpx2  # noqa: F401  (registers respx's httpcore2 mocker)
import respx

__all__ = ["mocked_http"]


def mocked_http(**options: Any) -> respx.MockRouter:
    """``respx.mock`` on the SDKs' transport (``options``: ``base_url``, ``assert_all_called``)."""
    router: respx.MockRouter = respx.mock(using="httpcore2", **options)
    return router

"""The SDKs' HTTP mocked: respx over httpcore2, the transport under httpx2 that both SDKs (and
google-genai) send through; plain ``respx.mock()`` patches httpx's transport and misses them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import pytest_httpx2  # noqa: F401  (registers respx's httpcore2 mocker)
import respx

__all__ = ["mocked_api", "mocked_http"]


def mocked_http(**options: Any) -> respx.MockRouter:
    """``respx.mock`` on the SDKs' transport (``options``: ``base_url``, ``assert_all_called``)."""
    router: respx.MockRouter = respx.mock(using="httpcore2", **options)
    return router


def mocked_api(base_url: str | None = None) -> Any:
    """A pytest fixture named ``api`` (assign it to a module's ``api``): ``mocked_http`` at
    ``base_url`` for one test, no route required to be called."""
    options = {} if base_url is None else {"base_url": base_url}

    @pytest.fixture(name="api")
    def api() -> Iterator[respx.MockRouter]:
        with mocked_http(assert_all_called=False, **options) as router:
            yield router

    return api

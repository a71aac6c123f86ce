"""Fixtures of the contract tests: each test runs once per provider, over that provider's real
SDK client with its HTTP mocked by respx's httpcore2 mocker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import respx

from tests._support.http import mocked_http
from tests.contracts.providers import PROVIDERS, Provider


@pytest.fixture(autouse=True)
def _tiktoken_offline(tiktoken_cache: Path) -> None:
    """Every test counts with tiktoken from the seeded cache, never the network."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=list(PROVIDERS.values()), ids=list(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    chosen: Provider = request.param
    return chosen


@pytest.fixture
def api(provider: Provider) -> Iterator[respx.Router]:
    """respx over httpcore2, the transport under the SDKs' httpx2 (plain respx misses it)."""
    with mocked_http(base_url=provider.base_url,
                    assert_all_called=False) as router:
        yield router


@pytest.fixture
def route(api: respx.Router, provider: Provider) -> respx.Route:
    """The create endpoint, answered by ``provider.answer``."""
    return api.post(provider.endpoint).mock(side_effect=provider.answer)


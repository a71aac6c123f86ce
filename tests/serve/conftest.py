"""Servers the proxy tests share: the fake provider and proxies, all on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the proxy needs cutctx[proxy]")
pytest.importorskip("uvicorn", reason="the proxy needs cutctx[proxy]")

from cutctx_adapters import CompactionSettings
from cutctx_adapters.serve import Upstreams, create_app
from tests.serve._fake import Fake, fake_app
from tests.serve._served import Served

SALT = b"test-salt"


@pytest.fixture
def fake(tiktoken_cache: Path) -> Iterator[tuple[Fake, Served]]:
    """A fresh fake provider, served."""
    state = Fake()
    served = Served(fake_app(state))
    try:
        yield state, served
    finally:
        served.stop()


ProxyFactory = Callable[..., Served]


@pytest.fixture
def proxy(fake: tuple[Fake, Served]) -> Iterator[ProxyFactory]:
    """Make a proxy in front of the fake: ``proxy(settings=..., store=..., **options)``."""
    made: list[Served] = []

    def make(settings: CompactionSettings | None = None, *, timeout: float = 30.0,
             **options: Any) -> Served:
        upstream = fake[1].url
        app = create_app(settings, upstreams=Upstreams(openai=upstream, anthropic=upstream,
                                                       timeout=timeout, trust_env=False),
                         salt=options.pop("salt", SALT), **options)
        served = Served(app)
        served.app = app  # type: ignore[attr-defined]
        made.append(served)
        return served

    try:
        yield make
    finally:
        for served in made:
            served.stop()

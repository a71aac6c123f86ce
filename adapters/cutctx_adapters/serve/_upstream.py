"""Where requests go, and the one HTTP client (httpx2, as the SDKs use) that sends them."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2

from cutctx import ValidationError

from ._endpoints import Provider

__all__ = ["Upstreams", "new_client"]


@dataclass(frozen=True, slots=True)
class Upstreams:
    """The providers' base URLs, and how long to wait for them.

    A request to ``/v1/...`` goes to the base URL plus that path (a base already ending in
    ``/v1`` is not given a second one). ``timeout``: seconds without a byte from the upstream
    before the request fails (504); ``connect_timeout`` to open a connection.
    """

    openai: str = "https://api.openai.com"
    anthropic: str = "https://api.anthropic.com"
    timeout: float = 600.0
    connect_timeout: float = 10.0
    trust_env: bool = True
    """Whether the client reads proxy settings from the environment (``HTTPS_PROXY``...)."""

    def __post_init__(self) -> None:
        for name in ("openai", "anthropic"):
            url = getattr(self, name)
            parts = urlsplit(url) if isinstance(url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValidationError(f"the {name} upstream must be an http(s) URL",
                                      {"field": f"upstreams.{name}", "rule": "upstream_url"})
        for name in ("timeout", "connect_timeout"):
            seconds = getattr(self, name)
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
                raise ValidationError(f"{name} must be a positive number of seconds",
                                      {"field": f"upstreams.{name}"})

    def url(self, provider: Provider, path: str, query: str) -> str:
        """The upstream URL of a request to ``path`` (with its query string)."""
        base = (self.openai if provider == "openai" else self.anthropic).rstrip("/")
        if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
            path = path[3:]
        return f"{base}{path}" + (f"?{query}" if query else "")


def new_client(upstreams: Upstreams) -> httpx2.AsyncClient:
    """The proxy's client: no redirects followed, no read limit beyond ``timeout``, bodies
    passed as they come (no decoding: the caller gets the upstream's bytes)."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(upstreams.timeout, connect=upstreams.connect_timeout),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=256),
        follow_redirects=False, trust_env=upstreams.trust_env)

"""Which headers go upstream and which come back: credentials and provider headers unchanged,
hop-by-hop headers dropped, lengths left to be recomputed, the report's headers added."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._bodies import READABLE

__all__ = ["BYPASS", "SESSION", "credential", "to_client", "to_upstream", "wants_bypass"]

SESSION = "x-cutctx-session"
"""A caller's own conversation key (it wins over every other); answered with the key's hash."""
BYPASS = "x-cutctx-bypass"
"""``1`` (or ``true``): forward the request untouched."""
_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "trailers", "transfer-encoding", "upgrade", "host", "content-length",
})
_CREDENTIALS = ("authorization", "x-api-key", "api-key")


def _dropped(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Hop-by-hop headers: the fixed ones and those the ``Connection`` header names."""
    named = {token.strip().lower() for name, value in headers if name.lower() == "connection"
             for token in value.split(",")}
    return _HOP_BY_HOP | named


def to_upstream(headers: Iterable[tuple[str, str]], *, body_changed: bool
                ) -> list[tuple[str, str]]:
    """The caller's headers as sent upstream: everything but hop-by-hop and cutctx's own
    headers; ``accept-encoding`` narrowed to what the proxy can read (gzip, deflate); a body
    the proxy rewrote is plain JSON (its ``content-encoding`` dropped)."""
    pairs = list(headers)
    dropped = _dropped(pairs)
    out: list[tuple[str, str]] = []
    for name, value in pairs:
        lower = name.lower()
        if lower in dropped or lower.startswith("x-cutctx-"):
            continue
        if lower == "accept-encoding":
            value = _decodable(value)
            if not value:
                continue
        if body_changed and lower == "content-encoding":
            continue
        out.append((name, value))
    return out


def _decodable(accept: str) -> str:
    kept = [part.strip() for part in accept.split(",")
            if part.split(";")[0].strip().lower() in READABLE - {""}]
    return ", ".join(kept)


def to_client(headers: Iterable[tuple[str, str]], report: Mapping[str, str]
              ) -> list[tuple[str, str]]:
    """The upstream's response headers for the caller (hop-by-hop and lengths dropped: the
    server frames the body itself), then the report's."""
    pairs = list(headers)
    dropped = _dropped(pairs)
    out = [(name, value) for name, value in pairs if name.lower() not in dropped]
    out.extend(report.items())
    return out


def credential(headers: Mapping[str, str]) -> str:
    """The caller's credential (``Authorization``, ``x-api-key`` or Azure's ``api-key``), or ""
    when it sends none. Only ever hashed; never logged, stored or echoed."""
    for name in _CREDENTIALS:
        value = headers.get(name)
        if value:
            return value
    return ""


def wants_bypass(headers: Mapping[str, str]) -> bool:
    """Whether the caller asked for its request to be forwarded untouched."""
    return headers.get(BYPASS, "").strip().lower() in ("1", "true", "yes")

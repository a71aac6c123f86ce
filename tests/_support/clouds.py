"""The clouds' wire formats for mocked Claude endpoints: Bedrock's AWS event stream, and the
fake credentials and regions the cloud clients read from the environment (never a real one)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

__all__ = ["BEDROCK_URL", "VERTEX_URL", "aws_event_stream", "fake_cloud_environment",
           "sse_body"]

AWS_REGION = "us-east-1"
VERTEX_REGION = "us-east5"
VERTEX_PROJECT = "cutctx-test-project"
BEDROCK_URL = f"https://bedrock-runtime.{AWS_REGION}.amazonaws.com"
VERTEX_URL = f"https://{VERTEX_REGION}-aiplatform.googleapis.com/v1"


def fake_cloud_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake AWS keys and region, a Vertex region and project; nothing a developer's own
    configuration (profiles, tokens, base URLs) could point elsewhere."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDCUTCTXTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "cutctx-test-secret")
    monkeypatch.setenv("AWS_REGION", AWS_REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/cutctx-aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/cutctx-aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUD_ML_REGION", VERTEX_REGION)
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", VERTEX_PROJECT)


def sse_body(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Messages stream events as server-sent events (the first-party and Vertex wire)."""
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                   for event in events).encode()


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (struct.pack("B", len(raw_name)) + raw_name + b"\x07"
            + struct.pack(">H", len(raw_value)) + raw_value)


def _frame(payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total and header lengths, their CRC), headers,
    payload, and the CRC of all that."""
    headers = (_header(":event-type", "chunk") + _header(":content-type", "application/json")
               + _header(":message-type", "event"))
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def aws_event_stream(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Messages stream events as Bedrock's ``invoke-with-response-stream`` sends them: each a
    ``chunk`` frame whose ``bytes`` are the event's JSON, base64-encoded."""
    return b"".join(
        _frame(json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()}
                          ).encode())
        for event in events)

"""Gemini histories for the tests: every ``Part`` field google-genai 3.6 defines, as dicts (both
key spellings) and as SDK objects, valid and invalid; and the agent runs the loops replay."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

MARKER = "MARKER-g3m1"  # in the histories; must never reach an error or a report
SIGNATURE = base64.urlsafe_b64encode(b"\x00\x01sig\xfe\xff" * 4).decode()


def png(width: int, height: int) -> str:
    """A real PNG header (enough for a size read) as base64."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    body = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(header)) + chunk
            + struct.pack(">I", zlib.crc32(chunk)))
    return base64.b64encode(body).decode()


def every_part() -> list[dict[str, Any]]:
    """A valid history holding every Part field, snake_case keys, with a current turn last."""
    image = {"inline_data": {"mime_type": "image/png", "data": png(800, 600),
                             "display_name": "shot.png"}}
    return [
        {"role": "user", "parts": [
            {"text": f"Look at these. {MARKER}"},
            image,
            {"file_data": {"file_uri": "https://generativelanguage.googleapis.com/v1beta/files/a1",
                           "mime_type": "video/mp4", "display_name": "clip"},
             "video_metadata": {"start_offset": "1s", "end_offset": "11s", "fps": 1.0},
             "media_resolution": {"level": "MEDIA_RESOLUTION_LOW"},
             "media_processing": "STATIC"},
            {"file_data": {"file_uri": "gs://bucket/report.pdf", "mime_type": "application/pdf"},
             "document_metadata": {"start_page": 1, "end_page": 2}},
            {"file_data": {"file_uri": "gs://bucket/sheet.xlsx",
                           "mime_type": "application/vnd.ms-excel"},
             "spreadsheet_metadata": {"visible_cells": "A1:B2", "sheet_index": 1}},
            {"inline_data": {"mime_type": "audio/wav", "data": base64.b64encode(b"RIFF" * 50)
                             .decode()},
             "audio_metadata": {"start_offset": "0s", "end_offset": "3s"}},
            {"text": "Say it warmly.", "speech_metadata": {"speaker": "Ana", "style": "warm"},
             "part_metadata": {"source": "ui"}},
        ]},
        {"role": "model", "parts": [
            {"text": "Planning the checks.", "thought": True},
            {"executable_code": {"code": "print(6 * 7)", "language": "PYTHON", "id": "ex1"}},
            {"code_execution_result": {"outcome": "OUTCOME_OK", "output": f"42 {MARKER}\n" * 30,
                                       "id": "ex1"}},
            {"tool_call": {"id": "tc1", "tool_type": "GOOGLE_SEARCH_WEB",
                           "args": {"queries": ["gemini"]}}},
            {"tool_response": {"id": "tc1", "tool_type": "GOOGLE_SEARCH_WEB",
                               "response": {"results": [f"result {MARKER}"] * 20}}},
            {"function_call": {"id": "fc1", "name": "read_file", "args": {"path": "a.py"}},
             "thought_signature": SIGNATURE},
            {"function_call": {"id": "fc2", "name": "grep", "args": {"q": "bug"},
                               "partial_args": [{"json_path": "$.q", "string_value": "bug"}],
                               "will_continue": False}},
        ]},
        {"role": "user", "parts": [
            {"function_response": {"id": "fc1", "name": "read_file",
                                   "response": {"output": f"line {MARKER}\n" * 200},
                                   "parts": [{"inline_data": {"mime_type": "image/png",
                                                              "data": png(64, 64)}},
                                             {"file_data": {"file_uri": "gs://b/f.png",
                                                            "mime_type": "image/png"}}]}},
            {"function_response": {"id": "fc2", "name": "grep", "response": {"matches": 3},
                                   "will_continue": False, "scheduling": "SILENT"}},
        ]},
        {"role": "model", "parts": [{"text": "Found it.", "thought_signature": SIGNATURE},
                                    {"audio_transcription": {"text": "found it",
                                                             "finished": True}}]},
        {"role": "model", "parts": []},
        {"role": "user", "parts": [{"text": "Now fix it."}]},
        {"role": "model", "parts": [
            {"function_call": {"id": "fc3", "name": "edit", "args": {"path": "a.py"}},
             "thought_signature": SIGNATURE}]},
        {"role": "user", "parts": [
            {"function_response": {"id": "fc3", "name": "edit", "response": {"output": "ok"}}}]},
    ]


def camel(value: Any) -> Any:
    """``value`` with every key in its wire spelling (free-form args and responses too, as a
    REST body would have them)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            head, *rest = key.split("_")
            out[head + "".join(word.capitalize() for word in rest)] = camel(item)
        return out
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


def agent_history(rounds: int, size: int = 60) -> list[dict[str, Any]]:
    """A task, then rounds of two parallel calls (the first signed) and both responses, a user
    follow-up every fourth round."""
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": f"Fix the failing test. {MARKER}"}]}]
    for i in range(rounds):
        history.append({"role": "model", "parts": [
            {"function_call": {"id": f"c{i}a", "name": "read_file", "args": {"n": i}},
             "thought_signature": SIGNATURE},
            {"function_call": {"id": f"c{i}b", "name": "run_tests", "args": {"n": i}}}]})
        history.append({"role": "user", "parts": [
            {"function_response": {"id": f"c{i}{k}", "name": name,
                                   "response": {"output": f"{name} {i} {MARKER} "
                                                + "lorem ipsum " * size}}}
            for k, name in (("a", "read_file"), ("b", "run_tests"))]})
        if i % 4 == 3:
            history.append({"role": "model", "parts": [{"text": f"Round {i} done."}]})
            history.append({"role": "user", "parts": [{"text": "Go on."}]})
    return history

"""Agent histories that outgrow a small window: a task, then tool exchanges with big results."""

from __future__ import annotations

from typing import Any

from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionFunctionToolParam

SYSTEM = "You are a coding agent. Work step by step."


def result_text(turn: int, lines: int = 60) -> str:
    return "\n".join(f"src/module_{turn}.py:{line}: value_{turn}_{line} = compute({line})"
                     for line in range(lines))


def chat_turn(turn: int) -> list[dict[str, Any]]:
    call = {"id": f"call_{turn}", "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "m{turn}.py"}}'}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": result_text(turn)}]


def responses_turn(turn: int) -> list[dict[str, Any]]:
    return [{"type": "function_call", "call_id": f"call_{turn}", "name": "read_file",
             "arguments": f'{{"path": "m{turn}.py"}}'},
            {"type": "function_call_output", "call_id": f"call_{turn}",
             "output": result_text(turn)}]


def messages_turn(turn: int) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{turn}", "name": "read_file",
                 "input": {"path": f"m{turn}.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{turn}",
                 "content": result_text(turn)}]}]


TOOLS_CHAT: list[ChatCompletionFunctionToolParam] = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
# Without "strict", which the API defaults but the SDK's FunctionToolParam requires.
TOOLS_RESPONSES: list[Any] = [{"type": "function", "name": "read_file",
                               "description": "Read a file",
                               "parameters": {"type": "object",
                                              "properties": {"path": {"type": "string"}}}}]
TOOLS_MESSAGES: list[ToolParam] = [{"name": "read_file", "description": "Read a file",
                   "input_schema": {"type": "object",
                                    "properties": {"path": {"type": "string"}}}}]

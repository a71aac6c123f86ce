"""An independent checker of the Chat Completions API's structural rules, for tests.

Written from the API's documented behaviour (and the error texts in
``tests/data/requests/invalid/``), not from ``cutctx_adapters.openai.chat.validate``, so a
bug shared by the codec and its validator still shows up here. Plain dicts only: run it on what
would be sent.

* every ``tool`` message answers a call of the nearest preceding assistant message that has
  ``tool_calls``, with only tool messages in between, and answers it once;
* every call is answered before the next non-tool message (or the end of the list);
* no ``tool_calls: []`` (the API rejects an empty array) and call ids are distinct per message;
* content is present where the API requires it: system/developer/user/tool need a string or a
  non-empty list of parts; an assistant needs content, tool calls, a function call or a refusal;
* legacy ``function`` messages follow an assistant ``function_call``, with a ``name``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["check", "violations"]

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_CONTENT_REQUIRED = frozenset({"system", "developer", "user", "tool"})


def violations(messages: Sequence[Any]) -> list[str]:
    """Every rule the list breaks, as short texts naming the message index (empty if valid)."""
    found: list[str] = []
    if not isinstance(messages, list):
        return [f"messages is a {type(messages).__name__}, not a list"]
    open_calls: dict[str, int] = {}  # call id -> index of the assistant that issued it
    answered: set[str] = set()
    caller: int | None = None  # index of the assistant whose results may still follow
    function_caller: int | None = None

    def close_open(before: int | None) -> None:
        where = "the end" if before is None else f"message {before}"
        for call_id, index in open_calls.items():
            found.append(f"message {index}: tool call {call_id!r} unanswered before {where}")
        open_calls.clear()

    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            found.append(f"message {index}: not a dict ({type(message).__name__})")
            continue
        role = message.get("role")
        if role not in _ROLES:
            found.append(f"message {index}: unknown role {role!r}")
            continue
        if role != "tool":
            close_open(index)
            caller = None
        if role != "function" and role != "assistant":
            function_caller = None
        found.extend(_content_problems(index, role, message))
        if role == "assistant":
            function_caller = index if isinstance(message.get("function_call"), Mapping) else None
            calls = message.get("tool_calls")
            if calls is None:
                continue
            if not isinstance(calls, list) or not calls:
                found.append(f"message {index}: tool_calls must be a non-empty list")
                continue
            caller = index
            answered = set()
            for position, call in enumerate(calls):
                call_id = call.get("id") if isinstance(call, Mapping) else None
                if not isinstance(call_id, str) or not call_id:
                    found.append(f"message {index}: tool_calls[{position}] has no id")
                elif call_id in open_calls:
                    found.append(f"message {index}: tool call id {call_id!r} repeated")
                else:
                    open_calls[call_id] = index
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                found.append(f"message {index}: tool message without tool_call_id")
            elif caller is None:
                found.append(f"message {index}: tool message does not follow an assistant "
                             "message with tool_calls")
            elif call_id in answered:
                found.append(f"message {index}: tool call {call_id!r} answered twice")
            elif call_id not in open_calls:
                found.append(f"message {index}: tool message answers {call_id!r}, which message "
                             f"{caller} did not call")
            else:
                del open_calls[call_id]
                answered.add(call_id)
        elif role == "function":
            if not isinstance(message.get("name"), str):
                found.append(f"message {index}: function message without a name")
            if function_caller is None:
                found.append(f"message {index}: function message does not follow an assistant "
                             "function_call")
            function_caller = None
    close_open(None)
    return found


def _content_problems(index: int, role: str, message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, list) and not content:
        return [f"message {index}: empty content list"]
    if content is not None and not isinstance(content, str | list):
        return [f"message {index}: content is a {type(content).__name__}"]
    if isinstance(content, list):
        for position, part in enumerate(content):
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                return [f"message {index}: content[{position}] has no type"]
            kind = part["type"]
            if kind in ("text", "refusal") and not isinstance(part.get(kind), str):
                return [f"message {index}: content[{position}] has no {kind} string"]
    if role in _CONTENT_REQUIRED and content is None:
        return [f"message {index}: {role} message without content"]
    if role == "assistant" and content is None and not any(
        message.get(key) for key in ("tool_calls", "function_call", "refusal", "audio")
    ):
        return [f"message {index}: assistant message with neither content nor calls"]
    return []


def check(messages: Sequence[Any]) -> None:
    """Fail (AssertionError listing the problems) if ``messages`` breaks an API rule."""
    problems = violations(messages)
    assert not problems, "chat rules broken:\n" + "\n".join(problems)

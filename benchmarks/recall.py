"""Evidence recall: does each compacted request still hold what the agent uses next?

Run from the repository root: ``python benchmarks/recall.py [--windows 8192,16384,32768]``.
The long agent session (``_histories.agent_session``: every shared SWE-agent run behind one
system prompt, most of their command output in user messages) is replayed call by call, as
``replay.py`` does; the reply allowance is an eighth of the window.

Evidence recall: at each call, the salient items of the real next assistant message (its text
and tool-call arguments) — paths, file names, snake_case and camelCase identifiers, numbers of
two or more digits, quoted strings — that occur earlier in the history; of those, the share
still present in what was sent. Summed over every call (items, not calls, are averaged).

Strategies: LangChain ``trim_messages`` (sliding window; optional dependency), stateless
``chat.compact`` on every call, and one ``CompactionSession`` (a wrapped client) with the
defaults, with each setting of issue 25 off (``observations="none"``, ``digest="lines"``,
``give_way="oldest"``), with ``keep_user_turns=False`` and with ``digest_tokens=0``; and the
same session of the Gemini format, the history sent as ``generate_content`` contents. Beside
recall: effective cost (cached prefix tokens at 0.1x) as a multiple of LangChain's, and prefix
breaks (calls whose request does not start with the whole previous request).

Beside each cost, in brackets, its floor: the cost had every call been a pure append (of each
request, as many tokens as the one before had at 0.1x, the rest in full).

Targets (issue 38; issue 25's were 0.45x, 0.3x, 0.26x): the session's recall at least
LangChain's at every window, at <= 0.30x its effective cost at 8k, <= 0.20x at 16k and <= 0.17x
at 32k; no more prefix breaks at 32k than with issue 25's settings off.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from _histories import agent_session, parse_windows, print_table, requests_of, seed_tiktoken
from replay import CACHED_PRICE, Meter, Outcome, replay_trim

MODEL = "gpt-4o"
TARGETS = {8_192: 0.30, 16_384: 0.20, 32_768: 0.17}
"""Effective cost the session may reach, as a multiple of LangChain's, at each window (issue 38;
issue 25's were 0.45, 0.30 and 0.26)."""
OFF = {"observations": "none", "digest": "lines", "give_way": "oldest"}
"""Issue 25's settings, each turned off (the behaviour before it)."""

Messages = list[dict[str, Any]]

_ITEMS = re.compile(
    r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+"                       # paths (a slash inside)
    r"|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}\b"                  # file names (name.ext)
    r"|\b_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"          # snake_case
    r"|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b"                 # camelCase
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"                 # PascalCase (two humps or more)
    r"|\b\d{2,}\b"                                            # numbers of two digits or more
    r"|\"[^\"\n]{2,80}\"|'[^'\n]{2,80}'")                     # quoted strings
"""What counts as a salient item of an assistant message."""


def salient(text: str) -> set[str]:
    """The salient items of ``text`` (quoted strings without their quotes).

    >>> sorted(salient('open src/app.py at line 1474: fix "round it" in td_field'))
    ['1474', 'round it', 'src/app.py', 'td_field']
    """
    out: set[str] = set()
    for match in _ITEMS.finditer(text):
        item = match.group()
        if item[0] in "\"'":
            item = item[1:-1].strip()
        if len(item) >= 2:
            out.add(item)
    return out


def message_text(message: Mapping[str, Any]) -> str:
    """What a model reads of a Chat message: its text (or text parts) and its tool calls."""
    content = message.get("content")
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        pieces.extend(part.get("text", "") for part in content if isinstance(part, dict))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        pieces.extend((function.get("name") or "", function.get("arguments") or ""))
    return "\n".join(pieces)


def holds(text: str, item: str) -> bool:
    """Whether ``item`` stands in ``text`` as a whole (not inside a longer word or number)."""
    return re.search(rf"(?<![\w]){re.escape(item)}(?![\w])", text) is not None


@dataclass
class Evidence:
    """Per call: the next assistant message's salient items that the history already holds."""

    items: list[tuple[str, ...]]

    @classmethod
    def of(cls, session: Sequence[Mapping[str, Any]], requests: Sequence[Messages]) -> Evidence:
        out: list[tuple[str, ...]] = []
        for request in requests:
            history = "\n".join(message_text(m) for m in request)
            wanted = salient(message_text(session[len(request)]))
            out.append(tuple(sorted(item for item in wanted if holds(history, item))))
        return cls(out)

    @property
    def total(self) -> int:
        return sum(len(items) for items in self.items)


@dataclass
class Recalled:
    """One strategy's recall over a replay, with its meter's outcome."""

    outcome: Outcome
    found: int = 0
    wanted: int = 0
    floor: float = 0.0
    """The cost had every call been a pure append: of each request, as many tokens as the one
    before it had at the cached price, the rest in full."""
    per_call: list[float] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.wanted if self.wanted else 1.0


class RecallMeter(Meter):
    """``replay.Meter`` that also counts, per call, the evidence still in the request."""

    def __init__(self, meter: Meter, evidence: Evidence, recalled: Recalled) -> None:
        super().__init__(meter.outcome, meter.window, meter.tokens, meter.priming,
                         meter.originals, meter.task)
        self.evidence = evidence
        self.recalled = recalled
        self.call = 0
        self.before = 0

    def record(self, messages: Sequence[dict[str, Any]]) -> None:
        sent = self.outcome.sent
        super().record(messages)
        tokens = self.outcome.sent - sent
        self.recalled.floor += (CACHED_PRICE * min(self.before, tokens)
                                + max(0, tokens - self.before))
        self.before = tokens
        self._count(messages)

    def failed(self) -> None:
        super().failed()
        self._count(())

    def _count(self, messages: Sequence[dict[str, Any]]) -> None:
        items = self.evidence.items[self.call]
        self.call += 1
        text = "\n".join(message_text(m) for m in messages)
        found = sum(holds(text, item) for item in items)
        self.recalled.found += found
        self.recalled.wanted += len(items)
        if items:
            self.recalled.per_call.append(found / len(items))


def replay_stateless(requests: Iterable[Messages], meter: Meter, budget: int,
                     estimator: Any) -> None:
    """``chat.compact`` to the budget on every call, no summarizer."""
    from cutctx import CompactionError
    from cutctx_adapters.openai import chat

    for messages in requests:
        try:
            result = chat.compact(messages, model=MODEL, budget=budget, estimator=estimator)
        except CompactionError:
            meter.failed()
            continue
        assert result.messages is not None
        meter.record(result.messages)


def replay_session(requests: Iterable[Messages], meter: Meter, window: int, reserve: int,
                   estimator: Any, **settings: Any) -> None:
    """One ``CompactionSession`` (no summarizer) taking every call."""
    from cutctx import CompactionError
    from cutctx_adapters import CompactionSession
    from cutctx_adapters.openai import chat

    session = CompactionSession(chat.FORMAT, model=MODEL, window=window, reserve=reserve,
                                estimator=estimator, **settings)
    for messages in requests:
        try:
            prepared = session.prepare(model=MODEL, messages=messages)
        except CompactionError:
            meter.failed()
            continue
        meter.record(prepared.request["messages"])


def as_gemini(messages: Messages) -> tuple[str | None, Messages]:
    """A Chat request as Gemini ``(system instruction, contents)``: the same text, tool calls
    as ``function_call`` parts, each run of tool messages one content of responses."""
    import json

    system, contents, names = None, [], {}
    for message in messages:
        role, text = message["role"], message.get("content") or ""
        if role == "system":
            system = text
        elif role == "tool":
            name = names.get(message["tool_call_id"], "tool")
            part = {"function_response": {"id": message["tool_call_id"], "name": name,
                                          "response": {"output": text}}}
            if contents and contents[-1]["role"] == "user" and "function_response" in \
                    contents[-1]["parts"][-1]:
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
        else:
            parts: list[dict[str, Any]] = [{"text": text}] if text else []
            for call in message.get("tool_calls") or ():
                function = call["function"]
                names[call["id"]] = function["name"]
                try:
                    args = json.loads(function["arguments"] or "{}")
                except ValueError:
                    args = {"input": function["arguments"]}
                parts.append({"function_call": {"id": call["id"], "name": function["name"],
                                                "args": args if isinstance(args, dict)
                                                else {"input": args}}})
            contents.append({"role": "model" if role == "assistant" else "user",
                             "parts": parts or [{"text": ""}]})
    return system, contents


def as_chat(system: str | None, contents: Messages) -> Messages:
    """Gemini contents back as the Chat messages the meter reads (the same text and calls)."""
    import json

    out: Messages = [{"role": "system", "content": system}] if system is not None else []
    for content in contents:
        parts = content["parts"]
        calls = [part["function_call"] for part in parts if "function_call" in part]
        responses = [part["function_response"] for part in parts
                     if "function_response" in part]
        text = "\n".join(part["text"] for part in parts if "text" in part)
        if responses:
            out.extend({"role": "tool", "tool_call_id": response["id"],
                        "content": response["response"].get("output", "")}
                       for response in responses)
        elif content["role"] == "model":
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [{"id": call["id"], "type": "function", "function": {
                    "name": call["name"], "arguments": json.dumps(call["args"])}}
                    for call in calls]
            out.append(message)
        else:
            out.append({"role": "user", "content": text})
    return out


def replay_gemini(requests: Iterable[Messages], meter: Meter, window: int, reserve: int,
                  estimator: Any) -> None:
    """One ``CompactionSession`` of the Gemini format taking every call, the same history
    as ``generate_content`` contents (measured as Chat messages, like the other rows)."""
    from cutctx import CompactionError
    from cutctx_adapters import CompactionSession
    from cutctx_adapters.gemini import contents

    session = CompactionSession(contents.FORMAT, model="gemini-2.5-flash", window=window,
                                reserve=reserve, estimator=estimator)
    for messages in requests:
        system, history = as_gemini(messages)
        try:
            prepared = session.prepare(model="gemini-2.5-flash", contents=history,
                                       config={"system_instruction": system})
        except CompactionError:
            meter.failed()
            continue
        meter.record(as_chat(system, prepared.request["contents"]))


Strategy = Callable[[Sequence[Messages], Meter, int], None]


def strategies(session: Messages, estimator: Any) -> dict[str, Strategy | None]:
    """The rows of the table: name -> replay(requests, meter, window)."""

    def trim(requests: Sequence[Messages], meter: Meter, window: int) -> None:
        replay_trim(requests, session, meter, window - window // 8, estimator.estimate_tokens)

    def stateless(requests: Sequence[Messages], meter: Meter, window: int) -> None:
        replay_stateless(requests, meter, window - window // 8, estimator)

    def settled(**settings: Any) -> Strategy:
        def run(requests: Sequence[Messages], meter: Meter, window: int) -> None:
            replay_session(requests, meter, window, window // 8, estimator, **settings)
        return run

    rows: dict[str, Strategy | None] = {
        "LangChain trim_messages (sliding)": trim,
        "cutctx compact per call (stateless)": stateless,
        "cutctx session (defaults)": settled(),
    }
    for name, value in OFF.items():
        rows[f"session, {name}={value!r}"] = settled(**{name: value})
    rows["session, all three off"] = settled(**OFF)
    rows["session, keep_user_turns=False"] = settled(keep_user_turns=False)
    rows["session, digest_tokens=0"] = settled(digest_tokens=0)

    def gemini(requests: Sequence[Messages], meter: Meter, window: int) -> None:
        replay_gemini(requests, meter, window, window // 8, estimator)

    rows["cutctx session, Gemini format"] = gemini
    return rows


def measure(session: Messages, windows: Sequence[int], estimator: Any,
            names: Sequence[str] | None = None) -> dict[tuple[str, int], Recalled]:
    """Replay ``session`` at each window through each strategy (``names``: only those)."""
    from cutctx._canonical import sha256_of, sha256_text
    from cutctx_adapters.openai import chat
    from cutctx_adapters.openai._tokens import REPLY_PRIMING_TOKENS, message_tokens

    requests = requests_of(session)
    evidence = Evidence.of(session, requests)
    conv = chat.to_transcript(session, estimator=estimator)
    originals = {digest for turn in conv.transcript.turns
                 for digest in (sha256_of(turn.content), sha256_text(turn.content))}
    task = next(m for m in session if m["role"] == "user")
    table: dict[tuple[str, int], Recalled] = {}
    for window in windows:
        for name, strategy in strategies(session, estimator).items():
            if names is not None and name not in names:
                continue
            recalled = Recalled(Outcome(name))
            meter = RecallMeter(Meter(recalled.outcome, window, lambda message: message_tokens(
                message, estimator), REPLY_PRIMING_TOKENS, originals, task), evidence, recalled)
            if strategy is not None:
                strategy(requests, meter, window)
            table[name, window] = recalled
    return table


def show(table: Mapping[tuple[str, int], Recalled], windows: Sequence[int]) -> None:
    names = list(dict.fromkeys(name for name, _ in table))
    header = ["strategy", *(f"{w // 1024}k recall / cost (floor) / breaks" for w in windows)]
    rows: list[list[str]] = []
    for name in names:
        cells = [name]
        for window in windows:
            row = table[name, window]
            base = table.get(("LangChain trim_messages (sliding)", window))
            if row.outcome.skipped is not None:
                cells.append(row.outcome.skipped)
                continue
            cost = (f"{row.outcome.cost / base.outcome.cost:.2f}x "
                    f"({row.floor / base.outcome.cost:.2f}x)"
                    if base is not None and base.outcome.skipped is None and base.outcome.cost
                    else f"{row.outcome.cost / 1e6:.2f}M ({row.floor / 1e6:.2f}M)")
            cells.append(f"{row.recall:.1%} / {cost} / {row.outcome.breaks}")
        rows.append(cells)
    print_table(f"Evidence recall, effective cost (cached prefix at {CACHED_PRICE}x, as a "
                "multiple of LangChain's) and prefix breaks", header, rows,
                lambda index: index == 0)


def checks(table: Mapping[tuple[str, int], Recalled],
           windows: Sequence[int]) -> list[tuple[str, bool | None, str]]:
    out: list[tuple[str, bool | None, str]] = []
    for window in windows:
        session = table["cutctx session (defaults)", window]
        sliding = table["LangChain trim_messages (sliding)", window]
        if sliding.outcome.skipped is not None:
            out.append((f"{window // 1024}k: recall above LangChain's", None,
                        sliding.outcome.skipped))
            continue
        out.append((f"{window // 1024}k: session recall at least LangChain's",
                    session.recall >= sliding.recall,
                    f"{session.recall:.1%} vs {sliding.recall:.1%}"))
        limit = TARGETS.get(window)
        if limit is not None:
            ratio = session.outcome.cost / sliding.outcome.cost
            out.append((f"{window // 1024}k: session cost <= {limit}x LangChain's",
                        ratio <= limit, f"{ratio:.3f}x"))
    for window in (w for w in windows if w >= 32_768):
        new, old = table["cutctx session (defaults)", window], table.get(
            ("session, all three off", window))
        if old is not None:
            out.append((f"{window // 1024}k: no new prefix breaks", new.outcome.breaks
                        <= old.outcome.breaks, f"{new.outcome.breaks} vs {old.outcome.breaks}"))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    windows = parse_windows(__doc__.splitlines()[0], argv)
    seed_tiktoken()
    from cutctx_adapters.tiktoken import TiktokenEstimator

    session = agent_session()
    print(f"session: {len(session)} messages, {len(requests_of(session))} calls")
    table = measure(session, windows, TiktokenEstimator(MODEL))
    show(table, windows)
    verdicts = checks(table, windows)
    names = {True: "PASS", False: "FAIL", None: "skipped"}
    print()
    for name, ok, note in verdicts:
        print(f"{names[ok]:7} {name}: {note}")
    return 0 if all(ok is not False for _, ok, _ in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

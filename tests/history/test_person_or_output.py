"""When unsure, a message is the person's: what a person types in any script, quoting code in
fences, a markdown table, a numbered list or ending on ``93%`` is never taken for tool output,
nor is the task after an assistant's greeting; real agents' observations still are (issue 39)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cutctx import OBSERVATION_KEY, CharRatioEstimator, Role
from cutctx_adapters.anthropic import messages as anthropic_messages
from cutctx_adapters.history import marked
from cutctx_adapters.history._observations import output_shape
from cutctx_adapters.openai import chat, responses
from tests._support.data import LoadMessages, swe_agent_params
from tests.history.test_observations import FILE_VIEW, LISTING, LOG, STATE, TRACEBACK

CHARS = CharRatioEstimator()
"""Counts without tiktoken: marking reads text, not tokens."""
DIFF = "diff --git a/src/app.py b/src/app.py\n@@ -1,2 +1,2 @@\n-    return a\n+    return b"
OUTPUTS = (TRACEBACK, FILE_VIEW, LISTING, LOG, DIFF)
WORDS = ("please", "keep", "the", "old", "export", "format", "and", "run", "tests", "again",
         "before", "you", "ship", "it", "rename", "module", "to", "reports", "every", "file")

# --- what a person types ----------------------------------------------------------------------

prose_lines = st.lists(st.sampled_from(WORDS), min_size=3, max_size=12).map(
    lambda words: " ".join(words).capitalize() + ".")
unspaced_lines = st.one_of(
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF, categories=["Lo"]),
            min_size=3, max_size=30),  # Chinese
    st.text(st.characters(min_codepoint=0x3041, max_codepoint=0x30FA, categories=["Lo"]),
            min_size=3, max_size=30),  # Japanese kana
    st.tuples(st.sampled_from("กขคงจชดตทนบปผพมยรลวสหอเแโไ"),
              st.text(st.sampled_from("กขคงจชดตทนบปผพมยรลวสหอะาิีึืุูเแโไ่้"), min_size=2,
                      max_size=30)).map("".join),  # Thai: a letter first, then any
).map(lambda text: text + "。")
fenced = st.tuples(st.sampled_from(("```", "```python", "```text", "~~~")),
                   st.sampled_from(OUTPUTS)).map(
    lambda pair: f"{pair[0]}\n{pair[1]}\n{pair[0][:3]}")
cells = st.one_of(st.sampled_from(WORDS), st.integers(0, 10_000).map(str))
tables = st.tuples(st.integers(2, 5), st.integers(1, 8)).flatmap(
    lambda shape: st.lists(st.lists(cells, min_size=shape[0], max_size=shape[0]),
                           min_size=shape[1] + 1, max_size=shape[1] + 1)).map(
    lambda rows: "\n".join(["| " + " | ".join(rows[0]) + " |",
                            "|" + "|".join("---" for _ in rows[0]) + "|",
                            *("| " + " | ".join(row) + " |" for row in rows[1:])]))
numbered = st.lists(st.lists(st.sampled_from(WORDS), min_size=3, max_size=8).map(" ".join),
                    min_size=3, max_size=9).map(
    lambda items: "\n".join(f"{n}) {item}" for n, item in enumerate(items, start=1)))
last_lines = st.one_of(st.integers(0, 100).map(lambda n: f"{n}%"),
                       st.sampled_from("CF").map(lambda letter: f"{letter}#"),
                       st.sampled_from(("99.5%", "Q#")))


@st.composite
def person_messages(draw: st.DrawFn) -> str:
    """A person's message: prose or unspaced text, with quoted shapes, maybe ending on a
    figure or a language's name."""
    lines = [draw(st.one_of(prose_lines, unspaced_lines))]
    for block in draw(st.lists(st.one_of(prose_lines, unspaced_lines, fenced, tables, numbered),
                               min_size=1, max_size=4)):
        lines.append(block)
    if draw(st.booleans()):
        lines.append(draw(last_lines))
    return "\n".join(lines)


@given(person_messages())
def test_what_a_person_types_is_never_output(text: str) -> None:
    assert output_shape(text) is None


@pytest.mark.parametrize("text", [
    "请修复导出功能中的舍入错误。\n导出的文件必须保留原来的格式。\n完成后请运行全部测试并告诉我结果。",
    "エクスポート機能の丸め誤差を直してください。\n古い形式はそのまま残してください。\n終わったら結果を教えてください。",
    "กรุณาแก้ไขข้อผิดพลาดในการปัดเศษ\nให้คงรูปแบบไฟล์เดิมไว้\nเสร็จแล้วช่วยรันเทสต์ทั้งหมดด้วย",
    f"I get this when I run it:\n```\n{TRACEBACK}\n```\nCan you fix it without touching the API?",
    f"Apply this instead:\n```diff\n{DIFF}\n```\nand keep the old name.",
    "Use these limits:\n| env | limit |\n|-----|-------|\n| dev | 10 |\n| prod | 100 |\nThanks.",
    "Please do this:\n1) rename the module to exports\n2) keep the old import path\n3) add a note",
    "Coverage went up nicely after your change, thanks.\nThe target for this sprint is\n93%",
    "Rewrite the service in another language please.\nWe picked the one our team knows:\nC#",
], ids=["chinese", "japanese", "thai", "fenced-traceback", "fenced-diff", "table", "numbered",
        "percent", "language"])
def test_the_shapes_people_write_are_theirs(text: str) -> None:
    assert output_shape(text) is None


# --- what a program prints --------------------------------------------------------------------

prompts = st.sampled_from(("bash-$", "$", "#", ">>>", "root@box:/src#", "user@host:~/repo$",
                           "sh-5.1#", "mysql>", "(venv) $", "%"))


@given(st.sampled_from(OUTPUTS), st.one_of(st.just(STATE), prompts.map(lambda p: "\n" + p)))
def test_output_ending_on_a_prompt_is_output(output: str, tail: str) -> None:
    assert output_shape(output + tail) is not None


@given(st.sampled_from(OUTPUTS))
def test_output_alone_is_output(output: str) -> None:
    assert output_shape(output) is not None


def test_a_fence_left_open_hides_nothing() -> None:
    """A program may print a fence (a README cut mid-block): what follows still counts."""
    assert output_shape("```\n" + TRACEBACK) == "traceback"
    assert output_shape("README.md\n```python\n" + LISTING) == "output"


@pytest.mark.parametrize("load", swe_agent_params())
def test_every_swe_agent_observation_is_recognised(load: LoadMessages) -> None:
    history = load()
    marks = {t.turn_id: t.metadata.get(OBSERVATION_KEY)
             for t in chat.to_transcript(history, estimator=CHARS).transcript.turns
             if t.role is Role.USER}
    observed = [f"m{index}" for index, message in enumerate(history)
                if message["role"] == "user" and index
                and history[index - 1]["role"] in ("assistant", "tool")]
    assert all(marks[turn_id] is not None for turn_id in observed)
    task = next(f"m{index}" for index, message in enumerate(history)
                if message["role"] == "user")
    assert marks[task] is None


# --- the task after a greeting ----------------------------------------------------------------

Convert = Callable[[list[dict[str, Any]]], Any]
CONVERSIONS: dict[str, Convert] = {
    "chat": lambda history: chat.to_transcript(history, estimator=CHARS),
    "anthropic": lambda history: anthropic_messages.to_transcript(history, estimator=CHARS),
    "responses": lambda history: responses.to_transcript(history, estimator=CHARS),
}


def greeted(task: str) -> list[dict[str, Any]]:
    """A chat app: the assistant greets, the person states the task, the agent works."""
    return [{"role": "assistant", "content": "Hi! What can I help you with today?"},
            {"role": "user", "content": task},
            {"role": "assistant", "content": "Running the tests."},
            {"role": "user", "content": TRACEBACK + STATE}]


def user_marks(conversion: Any, rule: Any = "auto") -> list[str | None]:
    def message_of(turn_id: str) -> tuple[Mapping[str, Any], int]:
        part = conversion.parts[turn_id]
        return part.payload, part.index

    transcript = marked(conversion.transcript, rule, message_of)
    return [t.metadata.get(OBSERVATION_KEY) for t in transcript.turns if t.role is Role.USER]


@pytest.mark.parametrize("name", list(CONVERSIONS))
@pytest.mark.parametrize("rule", ["auto", "after_assistant"])
@pytest.mark.parametrize("task", [TRACEBACK, LOG + STATE, "Fix the export, please."],
                         ids=["traceback", "log", "prose"])
def test_the_task_after_a_greeting_is_the_persons(name: str, rule: str, task: str) -> None:
    task_mark, later_mark = user_marks(CONVERSIONS[name](greeted(task)), rule)
    assert task_mark is None
    assert later_mark is not None  # the agent's output after it still is an observation


def test_a_history_read_on_after_a_greeting_marks_what_reading_it_whole_marks() -> None:
    history = greeted(TRACEBACK)
    assert chat.FORMAT.extend is not None
    first = chat.to_transcript(history[:1], estimator=CHARS)
    grown = chat.FORMAT.extend(first, history, 1, CHARS, None, False)
    assert grown is not None
    whole = chat.to_transcript(history, estimator=CHARS)
    assert user_marks(grown.conversion()) == user_marks(whole) == [None, "traceback"]


@given(person_messages(), st.sampled_from(list(CONVERSIONS)))
def test_a_person_after_the_assistant_is_kept_as_a_person(text: str, name: str) -> None:
    history = [{"role": "user", "content": "Fix the export."},
               {"role": "assistant", "content": "Done. Anything else?"},
               {"role": "user", "content": text}]
    assert user_marks(CONVERSIONS[name](history)) == [None, None]


"""The salient and code lines a digest or a clip chooses among are found fast and exactly as a
plain search finds them (issue 39.28).

``lines_of`` looks for places a match could be with literal searches and tries its patterns only
on the lines holding one; the reference is the previous implementation, kept in
``benchmarks/clip.py``: each pattern run over the whole text with ``re.finditer``.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from clip import TEXTS, reference_lines

from cutctx import _digest
from cutctx._digest import _CASE_FOLDS, _SEEN, LINE_CHARS, lines_of

FRAGMENTS = (
    # salient words, in every case, inside longer words, split and folded
    "error", "ERRORS", "Error:", "errorHandler", "exit code", "EXIT CODE 2", "exit  code",
    "ſtatus", "TRACEBACK", "tracebacK", "assertion_x", "AssertionError", "failures", "failover",
    "warnings", "totally", "found", "Result:", "summary", "passed", "success", "successful",
    "returned", "ıgnored", "İ", "exceptİon",
    # codes: joined forms, versions, hex, their near misses
    "a1-b2", "x86_64", "abc_def9", "E-1432", "TOOL-1A2B3C", "v1.2.3", "1.2.3", "١.٢.٣", "1.2",
    "0x1f2e", "0x1f", "deadbeef", "DEADBEEF", "12345678", "1234567", "2024-05-01",
    "2024-05-01T12:00", "12:00:00.123", "ab.cd", "ab.cd..9", "ab-cd٣", "py3.x", "v2-beta",
    "3d-model", "self.value", "a" * 41 + "1", "f" * 45,
    # separators, spaces, other scripts, a clip marker's opening
    "-", "_", ".", "..", " ", "  ", "\t", "\r", "✓", "?", "漢字", "K", "e", "r", "0", "9",
    "[... cutctx clipped", "x" * 150, "y" * 60,
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Lines of fragments joined by nothing or a space: words cut off at a line's 200th
    character, matches right at its end, blank and marker lines."""
    part = st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(("", " ", "", ",")))
    lines = draw(st.lists(st.lists(part, max_size=12), max_size=30))
    return "\n".join("".join(fragment + gap for fragment, gap in line) for line in lines)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Search in pieces of a few lines, so pieces begin and end everywhere."""
    monkeypatch.setattr(_digest, "_PIECE", 64)
    monkeypatch.setattr(_digest, "_SAMPLE", 32)
    yield


@settings(max_examples=100, deadline=None)
@given(texts())
def test_lines_tried_one_by_one_are_those_found_by_places(text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_digest, "_PIECE", 40)
        patch.setattr(_digest, "_LONG_LINE", 0)  # every piece counts as long lines
        assert lines_of(text) == reference_lines(text)


@settings(max_examples=150, deadline=None)
@given(texts())
def test_the_lines_found_are_those_a_plain_search_finds(text: str) -> None:
    assert lines_of(text) == reference_lines(text)


@settings(max_examples=100, deadline=None)
@given(texts())
def test_pieces_of_any_size_find_the_same_lines(text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_digest, "_PIECE", 40)
        patch.setattr(_digest, "_SAMPLE", 16)
        assert lines_of(text) == reference_lines(text)


@pytest.mark.parametrize("name", list(TEXTS))
def test_each_benchmark_text_gives_the_same_lines(name: str) -> None:
    text = TEXTS[name](300_000, random.Random(3))
    assert lines_of(text) == reference_lines(text)


def test_a_match_just_inside_or_past_a_lines_first_characters(small_pieces: None) -> None:
    lines = []
    for indent in ("", "   ", "\t"):
        for before in range(LINE_CHARS - 12, LINE_CHARS + 3):
            for word in ("ERROR", "exit code", "successful", "v1.2.3", "a1-b2", "deadbeef00"):
                lines.append(indent + "w" * before + " " + word + " tail")
    text = "\n".join(lines)
    assert lines_of(text) == reference_lines(text)


def test_one_long_line_is_read_up_to_its_first_characters() -> None:
    item = '{"status":"ok","id":"a1-b2"},'
    text = "[" + item * 1_000 + "]"
    assert lines_of(text) == reference_lines(text)
    longer = "[" + item * 200_000 + "]"  # the reference looks back to the line's start per match
    assert lines_of(longer) == lines_of(text)
    assert lines_of(longer).salient == lines_of(longer).codes == ((0, LINE_CHARS),)


def test_the_search_stops_at_the_cap(small_pieces: None) -> None:
    text = "\n".join(f"step {n}: error E-{n}" for n in range(_SEEN + 50))
    found = lines_of(text)
    assert len(found.salient) == len(found.codes) == _SEEN
    assert found == reference_lines(text)


def test_case_folds_name_every_other_character_a_letter_matches() -> None:
    letter = re.compile("(?i)[a-z]")
    folds = {chr(code) for code in range(0x80, 0x110000) if letter.fullmatch(chr(code))}
    assert folds == {char for char, _letter in _CASE_FOLDS}
    for char, ascii_letter in _CASE_FOLDS:
        assert re.fullmatch(f"(?i){ascii_letter}", char)


# --- identifiers: the runs worth searching, found from a copy of character classes -----------

ASCII_TEXT = st.text(alphabet="abcfxyzXYZE019_./-:()[]'\"=, \n\t#@?\\", max_size=80)


def _tokens_by_pattern(text: str) -> list[tuple[int, str]]:
    return [(match.start(), match.group()) for match in _digest._TOKEN.finditer(text)]


@settings(max_examples=200, deadline=None)
@given(st.one_of(ASCII_TEXT, texts()))
def test_identifier_runs_are_those_the_token_pattern_finds(text: str) -> None:
    assert list(_digest._tokens(text)) == _tokens_by_pattern(text)

"""A masked tool result's digest: what of it is most likely to matter later.

Two styles, both ranges of the result's own text, in order, within a token cap. ``lines``: its
first line, lines that look like errors or results, lines holding identifier-like codes, and its
last line, each at most ``LINE_CHARS`` characters. ``identifiers``: what it names — error types
(with the rest of their line), paths and file names, symbols, numbers — each once, the most
telling first, so a stub still answers "which file, which line, which error". Deterministic, so
a stub renders the same bytes on every call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .actions import Excerpt, TurnReplacement
from .estimator import TokenEstimator
from .transcript import TEXT_FACTS as _TEXT_FACTS
from .transcript import Transcript, TranscriptTurn

__all__ = ["DIGEST_STYLES", "LINE_CHARS", "Found", "Lines", "TextFacts", "choose", "digest",
           "digest_ranges", "identifier_ranges", "identifiers", "lines_of", "share_text_facts",
           "text_facts"]

DIGEST_STYLES = ("lines", "identifiers")

LINE_CHARS = 200
_CANDIDATES = 24
_CLIP_MARKER = "[... cutctx clipped"
"""A clip's own marker line is never part of a digest of the clipped text."""
_SALIENT = re.compile(
    r"\b(errors?|exception|traceback|fail(s|ed|ure|ures)?|warn(ing|ings)?|assert(ion)?\w*|"
    r"passed|success(ful)?|results?|total|summary|status|exit code|returned|found)\b",
    re.IGNORECASE)
_CODE = re.compile(
    r"\b(?=[A-Za-z0-9_.-]*\d)(?=[A-Za-z0-9_.-]*[A-Za-z])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+\b"
    r"|\b0x[0-9a-fA-F]{4,}\b|\b[0-9a-f]{8,40}\b|\bv?\d+\.\d+\.\d+\b")


def digest(content: str, max_tokens: int, estimator: TokenEstimator,
           style: str = "lines") -> str:
    """The digest of ``content`` in order, one piece a line, estimated at <= ``max_tokens``
    (empty if none fit).

    >>> from cutctx import CharRatioEstimator
    >>> digest("running\\nok\\nERROR E1432: disk full\\ndone", 40, CharRatioEstimator())
    'running\\nERROR E1432: disk full\\ndone'
    >>> digest("[File: src/app.py]\\n12: x = load_config()\\nKeyError: 'home'", 40,
    ...        CharRatioEstimator(), "identifiers")
    "src/app.py\\n12\\nload_config\\nKeyError: 'home'"
    """
    ranges = (identifier_ranges(content, max_tokens, estimator) if style == "identifiers"
              else digest_ranges(content, max_tokens, estimator))
    return "\n".join(content[start:end] for start, end in ranges)


def digest_ranges(content: str, max_tokens: int, estimator: TokenEstimator, *,
                  ends: bool = True) -> Excerpt:
    """Where ``digest``'s lines stand in ``content``: each line stripped and cut to
    ``LINE_CHARS`` characters, as a ``(start, end)`` range, in order. ``ends=False`` leaves the
    first and last lines to their own merit (for the middle of a text whose ends are kept)."""
    if max_tokens <= 0:
        return ()
    return choose(lines_of(content), content, max_tokens, estimator, ends=ends)


@dataclass(frozen=True, slots=True)
class Lines:
    """Where a text's digest may take lines from: its first and last non-blank lines, and the
    lines that look salient (each stripped and cut to ``LINE_CHARS``). Found once, by
    searching the whole text (not line by line), so a clip trying several cuts of a long text
    chooses among them without reading it again, in memory that does not grow with it."""

    first: Span | None
    last: Span | None
    salient: tuple[Span, ...]
    """Lines that look like errors or results, in order (at most ``_SEEN``)."""
    codes: tuple[Span, ...]
    """Lines holding identifier-like codes, in order (at most ``_SEEN``)."""


Span = tuple[int, int]
_SEEN = 4096


def lines_of(content: str) -> Lines:
    """``content``'s candidate lines as ``choose`` reads them (a clip's own marker left out)."""
    return Lines(_edge_line(content, forward=True), _edge_line(content, forward=False),
                 _matching_lines(content, _SALIENT, _salient_places),
                 _matching_lines(content, _CODE, _code_places))


def _line_at(content: str, start: int) -> Span | None:
    """The stripped, cut line starting at ``start`` (None if blank or a clip's marker)."""
    end = content.find("\n", start)
    end = len(content) if end < 0 else end
    while start < end and content[start].isspace():
        start += 1
    while end > start and content[end - 1].isspace():
        end -= 1
    if start == end or content.startswith(_CLIP_MARKER, start):
        return None
    return start, min(end, start + LINE_CHARS)


def _edge_line(content: str, *, forward: bool) -> Span | None:
    """The first (or last) non-blank line of ``content``."""
    if forward:
        position = 0
        while position <= len(content):
            found = _line_at(content, position)
            if found is not None:
                return found
            next_line = content.find("\n", position)
            if next_line < 0:
                return None
            position = next_line + 1
        return None
    end = len(content)
    while end >= 0:
        start = content.rfind("\n", 0, end) + 1
        found = _line_at(content, start)
        if found is not None:
            return found
        if start == 0:
            return None
        end = start - 1
    return None


# --- finding the lines a pattern matches, at the speed of str.find ---------------------------
#
# A line counts when the first match of its pattern on it lies within the line's first
# LINE_CHARS characters. Running the pattern over a long text costs ~50 ns a character (the
# regex engine tries every position), so the text is searched in pieces for places a match
# could be (literal searches: str.find, patterns that open with a literal) and only the lines
# holding such a place are tried with the pattern itself. Each search for places finds a
# superset of where the pattern matches (tests/test_digest_lines.py checks the result against
# a plain finditer over generated and adversarial texts).

_PIECE = 1 << 16
"""Characters searched for places at a time (whole lines): a search stops soon after
``_SEEN`` lines are found, and holds copies of one piece, not of the text."""
_REACH = 16
"""An attempt starting within a line's first LINE_CHARS characters reads at most this much
further before a character no pattern can read past (a keyword's letters, then ``\\b``)."""
_STOP = re.compile(r"[^\w.-]")
"""Characters every construct of ``_SALIENT`` and ``_CODE`` stops at (and ``\\b`` reads the
same way at the end of a search)."""
_CASE_FOLDS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
"""The characters besides ASCII letters that IGNORECASE matches to an ASCII letter."""
_SALIENT_WORDS = tuple(word.encode() for word in (
    "error", "exception", "traceback", "fail", "warn", "assert", "passed", "success", "result",
    "total", "summary", "status", "exit code", "returned", "found"))
"""A match of ``_SALIENT`` holds one of these, lowercased."""
_SALIENT_WORDS_LETTERS = tuple((word, frozenset(bytes([byte]) for byte in word))
                               for word in _SALIENT_WORDS)
_SALIENT_LETTERS = frozenset().union(*(letters for _word, letters in _SALIENT_WORDS_LETTERS))
_HEX_CLASS = bytes(ord("h") if chr(byte) in "0123456789abcdef" else byte if byte == 10
                   else ord(" ") for byte in range(256))
"""Hex digits as ``h``, lines kept: ``_CODE``'s hashes are eight of them in a row."""
_DIGIT_CLASS = bytes(ord("d") if chr(byte) in "0123456789?" else byte if byte == 10
                     else ord(" ") for byte in range(256))
"""Digits as ``d``, lines kept; ``?`` too (what the ASCII copy made of other characters,
among them other scripts' digits)."""
_LONG_LINE = 2048
"""Lines longer than this on average are tried one by one rather than searched for places."""
_LINE_COST = 16
"""Trying a line with ``_CODE`` costs about as much as this many separators looked at."""
_SAMPLE = 4096
"""Characters of a piece looked at to guess whether it is a log."""


def _separator_places(separator: str, *, backwards: bool) -> re.Pattern[str]:
    """Where ``_CODE``'s joined form may be: letters and digits joined by ``-``, ``_`` or
    ``.``, with a digit and a letter in its run, found at its first separator. Forwards: a
    letter right before it and a digit after it in the run, or a digit right before it and a
    letter after. In the reversed text (``backwards``), the rest: the letters and digits
    before it hold what the one right before it is not. Versions (``1.2.3``) at their first
    dot."""
    sep = re.escape(separator)
    if backwards:  # looking ahead in the reversed text reads what stands before the separator
        return re.compile(f"{sep}(?=[A-Za-z]++[0-9]|[0-9]++[A-Za-z])")
    after = (f"(?<=[A-Za-z]{sep})(?=[A-Za-z_.-]*+\\d)"
             f"|(?<=[0-9]{sep})(?=[0-9_.-]*+[A-Za-z])")
    if separator == ".":
        after += "|(?<=\\d\\.)(?=\\d+\\.\\d)"
    return re.compile(f"{sep}(?:{after})")


_FORWARD_PLACES = (*(_separator_places(sep, backwards=False) for sep in "-_."),
                   re.compile(r"0x[0-9a-fA-F]{4}"))
_BACKWARD_PLACES = tuple(_separator_places(sep, backwards=True) for sep in "-_.")


def _salient_places(piece: str) -> list[int]:
    """Where in ``piece`` a ``_SALIENT`` match may start: its keywords, found in a lowercased
    ASCII copy of the same length (other characters as ``?``)."""
    if not piece.isascii():
        for char, letter in _CASE_FOLDS:
            if char in piece:
                piece = piece.replace(char, letter)
    lowered = piece.encode("ascii", "replace").lower()
    # A keyword with a letter the piece lacks is not looked for (a letter is found at memchr
    # speed, a keyword is not).
    absent = {letter for letter in _SALIENT_LETTERS if letter not in lowered}
    places: list[int] = []
    for word, letters in _SALIENT_WORDS_LETTERS:
        if absent and not absent.isdisjoint(letters):
            continue
        found = _first_on_each_line(lowered, word, len(lowered))
        assert found is not None
        places += found
    return places


def _code_places(piece: str) -> list[int]:
    """Places in ``piece`` a ``_CODE`` match holds. Eight hex digits, else a digit: every other
    form holds one (a character that is not ASCII may be one). Where digits are few (code,
    prose), the lines holding one are the places; where they are many (logs), the separators of
    the joined form (looked for forwards and, for what stands before them, in the reversed
    piece), ``0x`` and versions' dots."""
    encoded = piece.encode("ascii", "replace")
    places = _first_on_each_line(encoded.translate(_HEX_CLASS), b"hhhhhhhh", len(piece))
    assert places is not None
    if _few_digits(encoded[:_SAMPLE]):
        separators = piece.count("-") + piece.count("_") + piece.count(".")
        digit_lines = _first_on_each_line(encoded.translate(_DIGIT_CLASS), b"d",
                                          separators // _LINE_COST)
        if digit_lines is not None:
            return places + digit_lines
    places += [match.start() for pattern in _FORWARD_PLACES for match in pattern.finditer(piece)]
    backwards = piece[::-1]
    last = len(piece) - 1
    places += [last - match.start() for pattern in _BACKWARD_PLACES
               for match in pattern.finditer(backwards)]
    return places


def _few_digits(sample: bytes) -> bool:
    """Whether a piece beginning with ``sample`` looks like code or prose (fewer digits than
    separators) rather than a log: only a guess at which search is faster, both find every
    place."""
    separators = sample.count(b"-") + sample.count(b"_") + sample.count(b".")
    return sample.translate(_DIGIT_CLASS).count(b"d") <= separators


def _first_on_each_line(haystack: bytes, needle: bytes, most: int) -> list[int] | None:
    """Where ``needle`` first occurs on each line of ``haystack`` that holds it; None if more
    than ``most`` lines do."""
    find = haystack.find
    places: list[int] = []
    at = find(needle)
    while at >= 0:
        if len(places) >= most:
            return None
        places.append(at)
        line_end = find(b"\n", at)
        at = -1 if line_end < 0 else find(needle, line_end + 1)
    return places


def _matching_lines(content: str, pattern: re.Pattern[str],
                    places: Callable[[str], list[int]]) -> tuple[Span, ...]:
    """The lines where ``pattern`` first matches within their first ``LINE_CHARS`` characters
    (at most ``_SEEN``, in order); ``places`` finds, in a piece of whole lines, a superset of
    where the pattern matches, so only the lines holding one are tried. A piece of long lines
    (minified JSON, one-line logs) has each line tried instead: a try reads a line's first
    characters only, a search for places all of it."""
    out: list[Span] = []
    size = len(content)
    start = 0
    while start < size and len(out) < _SEEN:
        end = content.find("\n", start + _PIECE) + 1 or size
        if end - start > _LONG_LINE * (content.count("\n", start, end) + 1):
            found: Iterable[int] = _line_starts(content, start, end)
        else:
            found = [at + start for at in sorted(places(content[start:end]))]
        next_line = start
        for at in found:
            if at < next_line:
                continue
            line_start = content.rfind("\n", start, at) + 1 or start
            line_end = content.find("\n", at, end)
            line_end = end if line_end < 0 else line_end
            next_line = line_end + 1
            span = _first_match_within(content, pattern, line_start, line_end)
            if span is not None:
                out.append(span)
                if len(out) >= _SEEN:
                    break
        start = end
    return tuple(out)


def _line_starts(content: str, start: int, end: int) -> Iterator[int]:
    """Where each line of ``content[start:end]`` (whole lines) begins."""
    while start < end:
        yield start
        line_end = content.find("\n", start, end)
        if line_end < 0:
            return
        start = line_end + 1


def _first_match_within(content: str, pattern: re.Pattern[str], line_start: int,
                        line_end: int) -> Span | None:
    """The line's span if the first match of ``pattern`` on it lies within the span. The
    search stops at the first character past the span's reach that no match reads across, so
    a long line costs what its first ``LINE_CHARS`` do."""
    span = _line_at(content, line_start)
    if span is None:
        return None
    stop = line_end
    reach = span[0] + LINE_CHARS + _REACH
    if reach < line_end:
        found = _STOP.search(content, reach, line_end)
        stop = line_end if found is None else found.start()
    match = pattern.search(content, line_start, stop)
    if match is not None and span[0] <= match.start() and match.end() <= span[1]:
        return span
    return None


def choose(lines: Lines, content: str, max_tokens: int, estimator: TokenEstimator, *,
           ends: bool = True, within: Span | None = None) -> Excerpt:
    """The digest's lines among ``lines`` (of ``content``): the first and last (``ends``), then
    salient lines, then lines with codes, each while it fits ``max_tokens``; only lines lying
    ``within`` a range of ``content``, if given (then without ``ends``). In order, as ranges."""
    if max_tokens <= 0:
        return ()
    edges = (lines.first, lines.last) if ends and within is None else ()

    def among(spans: tuple[Span, ...]) -> list[Span]:
        if within is not None:
            low, high = within
            spans = tuple(span for span in spans if low <= span[0] and span[1] <= high)
        return [span for span in spans if span not in edges][:_CANDIDATES]

    order = [*among(lines.salient), *among(lines.codes)]
    if edges:
        order = [span for span in (edges[0], *order, edges[1]) if span is not None]
    chosen: set[Span] = set()
    seen: set[str] = set()
    spent = 0
    for span in order:
        line = content[span[0]:span[1]]
        if span in chosen or line in seen:
            continue
        cost = estimator.estimate_tokens(line) + 1
        if spent + cost > max_tokens:
            continue
        chosen.add(span)
        seen.add(line)
        spent += cost
    return tuple(sorted(chosen))


_IDENTIFIER = re.compile(
    r"(?P<error>\b[A-Z][A-Za-z0-9]*+(?:(?<=Error)|(?<=Exception)|(?<=Warning)|(?<=Interrupt))\b)"
    r"|(?P<code>\b(?=[A-Za-z0-9.-]*\d)(?=[A-Za-z0-9.-]*[A-Za-z])[A-Za-z0-9]++"
    r"(?:[-.][A-Za-z0-9]++)++\b|\b0x[0-9a-fA-F]{4,}+\b|\b[0-9a-f]{8,40}\b"
    r"|\bv?\d+\.\d+\.\d+\b)"
    r"|(?P<path>(?<![\w.-])(?:\.{0,2}/)?+(?:[\w.-]++/)++[\w.-]*+(?<=\w)"
    r"|\b[\w-]++\.[A-Za-z][A-Za-z0-9]{0,5}+\b)"
    r"|(?P<symbol>\b_*+[A-Za-z][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)++\b"
    r"|\b[a-z][a-z0-9]*+(?:[A-Z][a-z0-9]*+)++\b|\b[A-Z][a-z0-9]++(?:[A-Z][a-z0-9]*+)++\b)"
    r"|(?P<number>\b\d{2,}+\b)")
"""Error types; codes (letters and digits joined by ``-`` or ``.``: ``E-1432``, ``TOOL-1A2B3C``;
hex hashes, versions); paths and file names (``name.ext``, dotted names); snake_case,
camelCase and PascalCase symbols; numbers of two digits or more."""
_RANK = {"error": 0, "code": 1, "path": 2, "symbol": 3, "number": 4}
_ERROR_LINE_CHARS = 120


_TOKEN = re.compile(r"(?<![\w./-])(?=[\w./-]*[0-9_./A-Z-])[\w./-]+")
"""Runs of the characters identifiers are made of that hold more than lowercase letters: only
those are searched (most of a text is plain words, and one pattern per run is cheaper than one
per place)."""
_TOKEN_CLASS = bytes(ord("S") if chr(byte) in "0123456789_./-" or chr(byte).isupper()
                     else ord("w") if chr(byte).islower() else ord(" ")
                     for byte in range(128)) + b" " * 128
"""For ASCII: the characters a ``_TOKEN`` run needs one of (``S``), its lowercase letters
(``w``), and the characters that end a run (`` ``)."""


Found = tuple[tuple[int, int, str], ...]
"""Identifiers as ``(start, end, kind)``, in order."""


@dataclass(slots=True)
class TextFacts:
    """What one caller's decisions found in texts, by text: their identifiers, and the names
    later turns may refer back to (``_references``). Kept in the caller's transcript's derived
    facts and shared with the views a chain plans over it (which hold the same texts), so every
    member and every decision over that transcript reads each text once, and all of it goes when
    the caller lets the transcript go: never in a process-wide cache, which would keep one
    tenant's text after its request."""

    identifiers: dict[str, Found] = field(default_factory=dict)
    names: dict[str, frozenset[str]] = field(default_factory=dict)
    replacements: dict[tuple[object, ...], tuple[TranscriptTurn, TurnReplacement]] = field(
        default_factory=dict)
    """What a policy replaced a turn with, by the policy's options and the turn's identity (the
    turn and options kept in the value, so an identity is never read for another object's)."""


def text_facts(transcript: Transcript) -> TextFacts:
    """The facts found so far in ``transcript``'s texts (made empty on first use, in the holder
    its pinned copies share: ``Transcript.with_pinned``)."""
    holder: list[TextFacts] = transcript._derived.setdefault(_TEXT_FACTS, [])
    if not holder:
        holder.append(TextFacts())
    return holder[0]


def share_text_facts(source: Transcript, view: Transcript) -> Transcript:
    """``view`` (a transcript planned over in ``source``'s place, holding its texts) reading
    and adding to ``source``'s text facts."""
    view._derived[_TEXT_FACTS] = source._derived.setdefault(_TEXT_FACTS, [])
    return view


def identifiers(content: str, known: dict[str, Found] | None = None) -> Found:
    """Every identifier ``content`` names, as ``(start, end, kind)`` in order (``kind``: error,
    code, path, symbol or number). Clip markers are left out. ``known``: what was found before
    in the same caller's texts (``TextFacts.identifiers``), read and added to."""
    if known is not None:
        found = known.get(content)
        if found is None:
            found = known[content] = identifiers(content)
        return found
    out: list[tuple[int, int, str]] = []
    search = _IDENTIFIER.finditer
    for base, text in _tokens(content):
        if text.isalpha() and text[1:].islower():
            continue  # a capitalised plain word: "Found"
        for match in search(text):
            kind = match.lastgroup
            assert kind is not None
            out.append((base + match.start(), base + match.end(), kind))
    if _CLIP_MARKER in content:
        out = [entry for entry in out if not _in_marker(content, entry[0])]
    return tuple(out)


def _tokens(content: str) -> Iterator[tuple[int, str]]:
    """``_TOKEN``'s matches as ``(start, text)``. An ASCII text is read as classes in a copy of
    the same length (``_TOKEN_CLASS``): each run holding more than lowercase letters is found
    from one such character by ``bytes.find``, not by trying the pattern at every place."""
    if not content.isascii():
        for token in _TOKEN.finditer(content):
            yield token.start(), token.group()
        return
    classes = content.encode("ascii").translate(_TOKEN_CLASS)
    find, rfind, size = classes.find, classes.rfind, len(classes)
    at = find(b"S")
    while at >= 0:
        start = rfind(b" ", 0, at) + 1
        end = find(b" ", at)
        end = size if end < 0 else end
        yield start, content[start:end]
        at = find(b"S", end)


def _in_marker(content: str, position: int) -> bool:
    """Whether ``position`` lies on a clip marker's line."""
    line_start = content.rfind("\n", 0, position) + 1
    head = content[line_start:line_start + len(_CLIP_MARKER) + 16]
    return head.lstrip().startswith(_CLIP_MARKER)


def identifier_ranges(content: str, max_tokens: int, estimator: TokenEstimator,
                      known: dict[str, Found] | None = None) -> Excerpt:
    """Where the identifiers a digest keeps stand in ``content``: each distinct one once (its
    first occurrence; an error type with the rest of its line), chosen by kind (errors, codes,
    paths, symbols, numbers), then by how often it occurs, then by position, while within
    ``max_tokens``; one contained in another already chosen is left out. In order. ``known``:
    as for ``identifiers``."""
    if max_tokens <= 0:
        return ()
    first: dict[str, tuple[int, int, str]] = {}
    counts: dict[str, int] = {}
    for start, end, kind in identifiers(content, known):
        if kind == "error":
            line_end = content.find("\n", end)
            line_end = len(content) if line_end < 0 else line_end
            end = len(content[start:min(line_end, start + _ERROR_LINE_CHARS)].rstrip()) + start
        text = content[start:end]
        counts[text] = counts.get(text, 0) + 1
        first.setdefault(text, (start, end, kind))
    ranked = sorted(first.items(), key=lambda item: (_RANK[item[1][2]], -counts[item[0]],
                                                     item[1][0]))
    chosen: list[tuple[int, int]] = []
    kept: list[str] = []
    spent = 0
    for text, (start, end, _kind) in ranked[:_CANDIDATES * 4]:
        if any(text in other for other in kept):
            continue
        if any(start < other_end and other_start < end for other_start, other_end in chosen):
            continue
        cost = estimator.estimate_tokens(text) + 1
        if spent + cost > max_tokens:
            continue
        chosen.append((start, end))
        kept.append(text)
        spent += cost
    return tuple(sorted(chosen))

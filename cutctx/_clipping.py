"""Clipping: keep a text's head and tail, say what was cut between them.

Agents overflow their windows with one huge tool output (a log, a test run, a page); its start
and its end usually say what matters. The cut falls on line boundaries where there are lines and
never inside a grapheme cluster; parts that are not text (an image's placeholder, with its real
cost) are kept whole or not at all; a marker names what was elided, any such parts among it, and
the original's size and hash. Deterministic, so the same output clips the same way on every call.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._canonical import sha256_text
from ._digest import Lines, choose, lines_of
from ._replaced import replaced_text
from .actions import Action, Excerpt, TurnReplacement
from .estimator import TokenEstimator

__all__ = ["HEAD_SHARE", "TEXT_SHARE", "Atom", "Clip", "atoms_of", "clip_marker", "clip_text",
           "plan_clip"]

HEAD_SHARE = 0.6
"""Of the head and tail a clip keeps, the share given to the head (the rest: the tail)."""
SALIENT_SHARE = 0.25
"""Of the text a clip keeps, at most this share goes to salient lines of the middle (errors,
results, codes: what a digest keeps), shown after the marker."""
TEXT_SHARE = 0.25
"""Of what a clip keeps, at least this share is left to text (or all of it, if less): parts
that are not text are kept whole, in order, in the rest."""
_ROUNDS = 24


@dataclass(frozen=True, slots=True)
class Atom:
    """A part that is not text: where its placeholder stands in the content, what it costs."""

    start: int
    end: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Clip:
    """What a clip keeps (head, parts kept whole, tail), its marker and its estimate."""

    excerpt: Excerpt
    marker: str
    token_estimate: int

    @property
    def keeps_something(self) -> bool:
        """Whether any of the text is kept (a clip of nothing would be a stub in disguise)."""
        return any(end > start for start, end in self.excerpt)

    def replacement(self) -> TurnReplacement:
        """As a CLIP's replacement."""
        return TurnReplacement._checked(self.marker, self.token_estimate, self.excerpt)


def atoms_of(metadata: Mapping[str, str], length: int) -> tuple[Atom, ...]:
    """The non-text parts a caller recorded (``cutctx.atoms``); malformed entries are ignored,
    as are ranges outside a text of ``length`` characters."""
    raw = metadata.get("cutctx.atoms")
    if not raw:
        return ()
    out: list[Atom] = []
    end_before = 0
    for entry in raw.split(","):
        fields = entry.split(":")
        if len(fields) != 3 or not all(field.isdigit() for field in fields):
            continue
        start, end, tokens = (int(field) for field in fields)
        if end_before <= start <= end <= length:
            out.append(Atom(start, end, tokens))
            end_before = end
    return tuple(out)


def clip_marker(elided_tokens: int, elided_lines: int, tokens: int, digest: str,
                subject: str = "tool result", elided_parts: str = "",
                kept_lines: int = 0) -> str:
    """The line put between a clipped text's head and tail (``subject``: what was clipped;
    ``elided_parts``: the non-text parts cut, as ``1 [image]``, named alone when no text was;
    ``kept_lines``: salient lines of the middle kept after it).

    >>> clip_marker(1200, 40, 2000, "ab" * 32)[:61]
    '[... cutctx clipped this tool result: 1200 tokens (40 lines) '
    >>> clip_marker(0, 0, 900, "ab" * 32, elided_parts="1 [image]")[:50]
    '[... cutctx clipped this tool result: 1 [image] el'
    """
    elided = f"{elided_tokens} tokens ({elided_lines} lines)"
    if elided_parts:
        elided = f"{elided}, with {elided_parts}," if elided_tokens else elided_parts
    kept = (f", {kept_lines} salient line{'s' if kept_lines != 1 else ''} of it kept below"
            if kept_lines else "")
    return (f"[... cutctx clipped this {subject}: {elided} elided{kept}; original: {tokens} "
            f"tokens, sha256:{digest} ...]")


def plan_clip(
    content: str,
    token_estimate: int,
    max_tokens: int,
    estimator: TokenEstimator,
    *,
    original_tokens: int | None = None,
    original_sha256: str | None = None,
    subject: str = "tool result",
    atoms: tuple[Atom, ...] = (),
) -> Clip | None:
    """The largest clip of ``content`` estimated at <= ``max_tokens``; None when none fits or
    none is smaller than ``token_estimate``.

    The marker names the original: ``original_tokens``/``original_sha256`` when ``content`` is
    itself a clip's text, else ``token_estimate`` and the sha256 of ``content``'s UTF-8 bytes.
    ``atoms`` are kept whole, in order, while they leave ``TEXT_SHARE`` of the room to text
    (their estimate is their cost, not their placeholder's). A bounded number of estimates, whatever
    the text's length: cut points come from its characters per token, then a bisection.
    """
    if max_tokens <= 0 or not content:
        return None
    tokens = token_estimate if original_tokens is None else original_tokens
    digest = sha256_text(content) if original_sha256 is None else original_sha256
    text_chars = len(content) - sum(atom.end - atom.start for atom in atoms)
    per_token = max(text_chars, 1) / max(1, token_estimate - sum(a.tokens for a in atoms))
    newlines = content.count("\n")
    marker_tokens = estimator.estimate_tokens(
        clip_marker(tokens, newlines + 1, tokens, digest, subject))
    room = max_tokens - marker_tokens
    if room <= 0:
        return None
    kept_atoms: list[Atom] = []
    spent = 0
    text_floor = min(room * TEXT_SHARE, max(0, token_estimate - sum(a.tokens for a in atoms)))
    for atom in atoms:
        if spent + atom.tokens <= room - text_floor:
            kept_atoms.append(atom)
            spent += atom.tokens
    shape = _Shape(content, atoms, tuple(kept_atoms), per_token, tokens, digest, subject,
                   newlines)
    best: Clip | None = None
    low, high = -1, text_chars + 1  # the most characters known to fit, the fewest known not to
    chars = min(text_chars, max(0, int((room - spent) * per_token)))
    tolerance = max(2, max_tokens // 100)
    for _ in range(_ROUNDS):
        made = shape.clip(chars, estimator)
        if made.token_estimate <= max_tokens and made.keeps_something:
            low = chars
            if best is None or made.token_estimate >= best.token_estimate:
                best = made
            if max_tokens - made.token_estimate <= tolerance:
                break
        else:
            high = chars
        if high - low <= 1:
            break
        used = max(1, made.token_estimate - marker_tokens - spent)
        guess = int(chars * (room - spent) / used) if chars else (low + high) // 2
        chars = guess if low < guess < high else (low + high) // 2
    if best is None or best.token_estimate >= token_estimate:
        return None
    return best


@dataclass(frozen=True, slots=True)
class _Shape:
    """What every candidate clip of one text shares: the text, its parts, the marker's terms."""

    content: str
    atoms: tuple[Atom, ...]
    kept_atoms: tuple[Atom, ...]
    per_token: float
    tokens: int
    digest: str
    subject: str
    newlines: int
    """How many line breaks ``content`` holds (counted once for every cut tried)."""
    _lines: list[Lines] = field(default_factory=list)

    def _cut(self, ends: int, salient: int, estimator: TokenEstimator
             ) -> tuple[tuple[int, int], tuple[int, int], list[tuple[int, int]]]:
        """Head and tail keeping ``ends`` characters between them, and the salient lines of
        the middle within ``salient`` characters' worth of tokens."""
        content, atoms = self.content, self.atoms
        if ends + sum(atom.end - atom.start for atom in atoms) >= len(content):
            start = end = len(content)  # all the text: only parts not kept are left out
        else:
            start = _head_end(content, int(ends * HEAD_SHARE))
            end = max(start, _tail_start(content, ends - int(ends * HEAD_SHARE)))
        start, end = _outside_atoms(start, end, atoms)
        head_from, start, end, tail_to = _around_cut_parts(content, start, end, atoms,
                                                           self.kept_atoms)
        lines = [(a, b) for a, b in choose(
            self.lines(), content, int(salient / self.per_token), estimator, ends=False,
            within=(start, end)) if not any(atom.start < b and a < atom.end for atom in atoms)]
        return (head_from, start), (end, tail_to), lines

    def lines(self) -> Lines:
        """The text's lines, read once for every cut tried."""
        if not self._lines:
            self._lines.append(lines_of(self.content))
        return self._lines[0]

    def clip(self, chars: int, estimator: TokenEstimator) -> Clip:
        """The clip keeping about ``chars`` characters of text: head and tail, and salient
        lines of the middle within ``SALIENT_SHARE`` of it; parts not kept whole (past the room
        text leaves them) are left out even where they stand in the head or the tail."""
        content, atoms, kept_atoms = self.content, self.atoms, self.kept_atoms
        salient_budget = int(chars * SALIENT_SHARE)
        head, tail, lines = self._cut(chars - salient_budget, salient_budget, estimator)
        used = sum(b - a for a, b in lines)
        if used < salient_budget:  # what salient lines leave goes to the head and tail
            head, tail, lines = self._cut(chars - used, used, estimator)
        start, end = head[1], tail[0]
        kept_ranges = [head, tail]
        middle = [atom for atom in kept_atoms if start <= atom.start and atom.end <= end]
        kept = sorted([*((atom.start, atom.end) for atom in middle), *lines])
        excerpt = (head, *kept, tail)
        whole = [atom for atom in atoms if any(a <= atom.start and atom.end <= b
                                               for a, b in (*kept_ranges, *kept))]
        cut = [atom for atom in atoms if atom not in whole]
        kept_chars = sum(b - a for a, b in excerpt)
        elided_chars = len(content) - kept_chars - sum(atom.end - atom.start for atom in cut)
        elided_lines = max(0, self.newlines + 1 - sum(
            content.count("\n", a, b) + 1 for a, b in excerpt if b > a))
        marker = clip_marker(round(max(0, elided_chars) / self.per_token), elided_lines,
                             self.tokens, self.digest, self.subject, _named(content, cut),
                             len(lines))
        cost = sum(atom.tokens - estimator.estimate_tokens(content[atom.start:atom.end])
                   for atom in whole)
        text = _render(content, excerpt, marker)
        return Clip(excerpt, marker, estimator.estimate_tokens(text) + max(0, cost))


def _around_cut_parts(content: str, start: int, end: int, atoms: tuple[Atom, ...],
                      kept: tuple[Atom, ...]) -> tuple[int, int, int, int]:
    """The head ``(head_from, start)`` and tail ``(end, tail_to)`` holding no part that is not
    kept: a part at the very start (or end) is stepped over, one further in ends the head
    (starts the tail) before it."""
    head_from, tail_to = 0, len(content)
    for atom in atoms:
        if atom in kept or atom.start >= start:
            continue
        if atom.start <= head_from:
            head_from = min(start, atom.end + (1 if content.startswith("\n", atom.end) else 0))
        else:
            start = atom.start
            break
    end = max(end, start)
    for atom in reversed(atoms):
        if atom in kept or atom.end <= end:
            continue
        if atom.end >= tail_to:
            before = atom.start - (1 if atom.start and content[atom.start - 1] == "\n" else 0)
            tail_to = max(end, before)
        else:
            end = atom.end
            break
    return head_from, max(head_from, start), end, max(end, tail_to)


def _render(content: str, excerpt: Excerpt, marker: str) -> str:
    return replaced_text(Action.CLIP, content, TurnReplacement._checked(marker, 0, excerpt))


def _named(content: str, cut: list[Atom]) -> str:
    """``2 [image], 1 [document]``: the placeholders of the parts cut, counted, in order."""
    counts: dict[str, int] = {}
    for atom in cut:
        label = content[atom.start:atom.end].strip()[:40]
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{count} {label}" for label, count in counts.items())


def _outside_atoms(start: int, end: int, atoms: tuple[Atom, ...]) -> tuple[int, int]:
    """Cut points moved off any atom: a head ending inside one ends before it, a tail starting
    inside one starts after it."""
    for atom in atoms:
        if atom.start < start < atom.end:
            start = atom.start
        if atom.start < end < atom.end:
            end = atom.end
    return start, max(start, end)


def clip_text(content: str, token_estimate: int, max_tokens: int, estimator: TokenEstimator,
              *, subject: str = "tool result") -> tuple[str, int] | None:
    """``plan_clip``'s text and estimate, written out (None when no clip fits)."""
    clip = plan_clip(content, token_estimate, max_tokens, estimator, subject=subject)
    if clip is None:
        return None
    return _render(content, clip.excerpt, clip.marker), clip.token_estimate


def _joins(before: str, after: str) -> bool:
    """Whether a cut between ``before`` and ``after`` (single characters) would split a
    grapheme cluster: a combining mark, joiner, variation selector or emoji modifier after,
    a zero-width joiner before, or the two halves of a regional-indicator flag or CR LF."""
    if before == "\r" and after == "\n":
        return True
    if before == "\u200d":
        return True
    code = ord(after)
    if (after == "\u200d" or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF
            or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F):
        return True
    if unicodedata.category(after) in ("Mn", "Me", "Mc"):
        return True
    return 0x1F1E6 <= ord(before) <= 0x1F1FF and 0x1F1E6 <= code <= 0x1F1FF


def _boundary(content: str, cut: int, step: int) -> int:
    """The nearest cut at or beyond ``cut`` (``step``: -1 back, +1 forward) that splits no
    grapheme cluster."""
    while 0 < cut < len(content) and _joins(content[cut - 1], content[cut]):
        cut += step
    return cut


def _head_end(content: str, chars: int) -> int:
    """End of the longest run of whole lines within ``chars`` (else, when whole lines would
    keep less than half of it, ``chars`` moved back to a word or grapheme boundary)."""
    if chars <= 0:
        return 0
    if chars >= len(content):
        return len(content)
    cut = content.rfind("\n", 0, chars)
    if cut + 1 >= chars // 2:
        return cut + 1
    space = content.rfind(" ", chars * 3 // 4, chars)
    return space + 1 if space >= 0 else _boundary(content, chars, -1)


def _tail_start(content: str, chars: int) -> int:
    """Start of the longest run of whole final lines within ``chars`` (else, when whole lines
    would keep less than half of it, the last ``chars`` moved forward to a word or grapheme
    boundary)."""
    if chars <= 0:
        return len(content)
    if chars >= len(content):
        return 0
    start = len(content) - chars
    cut = content.find("\n", start - 1)
    if 0 <= cut < len(content) - 1 and len(content) - (cut + 1) >= chars // 2:
        return cut + 1
    space = content.find(" ", start, start + chars // 4)
    return space + 1 if space >= 0 else _boundary(content, start, 1)

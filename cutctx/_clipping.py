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
from dataclasses import dataclass

from ._canonical import sha256_text
from ._digest import digest_ranges
from .estimator import TokenEstimator
from .types import Action, Excerpt, TurnReplacement

__all__ = ["HEAD_SHARE", "Atom", "Clip", "atoms_of", "clip_marker", "clip_text", "plan_clip"]

HEAD_SHARE = 0.6
"""Of the head and tail a clip keeps, the share given to the head (the rest: the tail)."""
SALIENT_SHARE = 0.25
"""Of the text a clip keeps, at most this share goes to salient lines of the middle (errors,
results, codes: what a digest keeps), shown after the marker."""
ATOM_SHARE = 0.5
"""Of what the clip keeps, at most this share goes to parts that are not text (kept in order)."""
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
    ``elided_parts``: the non-text parts cut, as ``1 [image]``; ``kept_lines``: salient lines
    of the middle kept after it).

    >>> clip_marker(1200, 40, 2000, "ab" * 32)[:61]
    '[... cutctx clipped this tool result: 1200 tokens (40 lines) '
    """
    parts = f", with {elided_parts}," if elided_parts else ""
    kept = (f", {kept_lines} salient line{'s' if kept_lines != 1 else ''} of it kept below"
            if kept_lines else "")
    return (f"[... cutctx clipped this {subject}: {elided_tokens} tokens ({elided_lines} lines)"
            f"{parts} elided{kept}; original: {tokens} tokens, sha256:{digest} ...]")


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
    ``atoms`` are kept whole, in order, within ``ATOM_SHARE`` of what the clip keeps (their
    estimate is their cost, not their placeholder's). A bounded number of estimates, whatever
    the text's length: cut points come from its characters per token, then a bisection.
    """
    if max_tokens <= 0 or not content:
        return None
    tokens = token_estimate if original_tokens is None else original_tokens
    digest = sha256_text(content) if original_sha256 is None else original_sha256
    text_chars = len(content) - sum(atom.end - atom.start for atom in atoms)
    per_token = max(text_chars, 1) / max(1, token_estimate - sum(a.tokens for a in atoms))
    marker_tokens = estimator.estimate_tokens(
        clip_marker(tokens, content.count("\n") + 1, tokens, digest, subject))
    room = max_tokens - marker_tokens
    if room <= 0:
        return None
    kept_atoms: list[Atom] = []
    spent = 0
    for atom in atoms:
        if spent + atom.tokens <= room * ATOM_SHARE:
            kept_atoms.append(atom)
            spent += atom.tokens
    shape = _Shape(content, atoms, tuple(kept_atoms), per_token, tokens, digest, subject)
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

    def clip(self, chars: int, estimator: TokenEstimator) -> Clip:
        """The clip keeping about ``chars`` characters of text: head and tail, and salient
        lines of the middle within ``SALIENT_SHARE`` of it."""
        content, atoms = self.content, self.atoms
        ends = chars - int(chars * SALIENT_SHARE)
        start = _head_end(content, int(ends * HEAD_SHARE))
        end = max(start, _tail_start(content, ends - int(ends * HEAD_SHARE)))
        start, end = _outside_atoms(start, end, atoms)
        inside = [atom for atom in atoms if start <= atom.start and atom.end <= end]
        middle = [atom for atom in inside if atom in self.kept_atoms]
        lines = [(start + a, start + b) for a, b in digest_ranges(
            content[start:end], int((chars - ends) / self.per_token), estimator, ends=False)
            if not any(atom.start < start + b and start + a < atom.end for atom in atoms)]
        kept = sorted([*((atom.start, atom.end) for atom in middle), *lines])
        excerpt = ((0, start), *kept, (end, len(content)))
        elided = content[start:end]
        elided_chars = (len(elided) - sum(atom.end - atom.start for atom in inside)
                        - sum(b - a for a, b in lines))
        marker = clip_marker(round(max(0, elided_chars) / self.per_token),
                             max(0, elided.count("\n") + (1 if elided else 0) - len(lines)),
                             self.tokens, self.digest, self.subject,
                             _named(content, [atom for atom in inside if atom not in middle]),
                             len(lines))
        whole = [atom for atom in atoms if atom.end <= start or atom.start >= end] + middle
        cost = sum(atom.tokens - estimator.estimate_tokens(content[atom.start:atom.end])
                   for atom in whole)
        text = _render(content, excerpt, marker)
        return Clip(excerpt, marker, estimator.estimate_tokens(text) + max(0, cost))


def _render(content: str, excerpt: Excerpt, marker: str) -> str:
    from ._replaced import replaced_text

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
              **options: object) -> tuple[str, int] | None:
    """``plan_clip``'s text and estimate, written out (None when no clip fits)."""
    clip = plan_clip(content, token_estimate, max_tokens, estimator, **options)  # type: ignore[arg-type]
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
    """End of the longest run of whole lines within ``chars`` (else ``chars``, moved back to a
    grapheme boundary)."""
    if chars <= 0:
        return 0
    if chars >= len(content):
        return len(content)
    cut = content.rfind("\n", 0, chars)
    return cut + 1 if cut >= 0 else _boundary(content, chars, -1)


def _tail_start(content: str, chars: int) -> int:
    """Start of the longest run of whole final lines within ``chars`` (else the last ``chars``,
    moved forward to a grapheme boundary)."""
    if chars <= 0:
        return len(content)
    if chars >= len(content):
        return 0
    start = len(content) - chars
    cut = content.find("\n", start - 1)
    return cut + 1 if 0 <= cut < len(content) - 1 else _boundary(content, start, 1)

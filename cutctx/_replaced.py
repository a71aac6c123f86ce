"""What a turn kept with a new body carries: its kind, the original it stands for, its text.

A masked, clipped or deduplicated turn (and a summary) is *final*: later policies may drop or
summarize it, never mask it again, so a stub always names the original it replaced. A clipped
turn is the one exception: it may still be masked (escalation), and its stub then names the
original's figures, which the clip's metadata carries.

A plan names what to keep of a turn (``TurnReplacement.excerpt``); ``replaced_text`` writes the
body from it, here and only here, for the executor and for a chain's projection alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._canonical import sha256_of, sha256_text
from .actions import REPLACEMENT_KIND, Action, Excerpt, TurnReplacement
from .transcript import Role, TranscriptTurn

__all__ = [
    "ATOMS_KEY",
    "CONTENT_KEY",
    "EXCERPT_KEY",
    "KIND_KEY",
    "MARKER_KEY",
    "OBSERVATION_KEY",
    "ORIGINAL_SHA256_KEY",
    "ORIGINAL_TOKENS_KEY",
    "REFERS_TO_KEY",
    "REF_LABEL_KEY",
    "excerpt_of",
    "is_final",
    "is_person",
    "is_result",
    "original_figures",
    "replaced_metadata",
    "replaced_text",
    "text_sha256",
]

KIND_KEY = "cutctx.kind"
"""``masked``, ``clipped``, ``deduplicated`` or ``summary``: set by the engine, not a caller."""
ORIGINAL_TOKENS_KEY = "cutctx.original_tokens"
ORIGINAL_SHA256_KEY = "cutctx.original_sha256"
CONTENT_KEY = "cutctx.content_key"
"""Set by a caller (the adapters) on a tool turn: a hash of its whole body, images included, for
telling identical results apart when their text is only placeholders."""
ATOMS_KEY = "cutctx.atoms"
"""Set by a caller on a turn with non-text parts: ``start:end:tokens`` per part, comma-separated,
the character range of its placeholder in the content and what the part really costs. A clip
keeps such a part whole or not at all."""
REF_LABEL_KEY = "cutctx.ref"
"""Set by a caller on a tool turn: how a model can find it (``the result of tool call X``), for
a deduplicated stub naming it; the turn id otherwise."""
REFERS_TO_KEY = "cutctx.refers_to"
"""On a deduplicated turn: the id of the later turn holding the identical result."""
EXCERPT_KEY = "cutctx.excerpt"
"""On a clipped turn: the ranges of the original it keeps, ``start:end`` comma-separated (so a
caller can rebuild structured content around them: the parts kept whole, the text cut)."""
MARKER_KEY = "cutctx.marker"
"""On a clipped turn: its marker line (figures and a hash, no content)."""
OBSERVATION_KEY = "cutctx.observation"
"""Set by a caller on a USER turn that carries tool output (an agent loop sending a command's
output back as a user message): the policies added after 0.1.0 treat it as a tool result —
deduplicated, clipped, masked, dropped before what a person typed. The value says why
(content-free: ``shape``, ``size``, ``rule``...); 0.1.0's policies ignore it."""

# Members read in per-turn loops, bound once (an enum member read off its class costs ~100 ns).
_TOOL, _USER = Role.TOOL, Role.USER
_MASK, _CLIP = Action.MASK, Action.CLIP


def excerpt_of(turn: TranscriptTurn) -> Excerpt:
    """The ranges a clipped turn keeps of its original (empty for any other turn)."""
    raw = turn.metadata.get(EXCERPT_KEY)
    if not raw:
        return ()
    out: list[tuple[int, int]] = []
    for entry in raw.split(","):
        start, _, end = entry.partition(":")
        if start.isdigit() and end.isdigit():
            out.append((int(start), int(end)))
    return tuple(out)


def is_result(turn: TranscriptTurn) -> bool:
    """Whether ``turn`` is a tool result: a TOOL turn, or a USER turn marked as an observation
    (``cutctx.observation``)."""
    role = turn.role
    return role is _TOOL or (role is _USER and OBSERVATION_KEY in turn.metadata)


def is_person(turn: TranscriptTurn) -> bool:
    """Whether ``turn`` is a message a person typed: a USER turn not marked as an observation."""
    return turn.role is _USER and OBSERVATION_KEY not in turn.metadata


def is_final(turn: TranscriptTurn) -> bool:
    """Whether an earlier decision made this turn what it is (a stub, a clip, a summary)."""
    return KIND_KEY in turn.metadata


def text_sha256(turn: TranscriptTurn) -> str:
    """The sha256 a new stub or clip marker names: the caller's hash of the original body when
    it gave one (structured content), else that of the text's UTF-8 bytes."""
    given = turn.metadata.get(ORIGINAL_SHA256_KEY)
    return given if given is not None else sha256_text(turn.content)


def original_figures(turn: TranscriptTurn, *, quoted: bool = True) -> tuple[int, str]:
    """Token count and sha256 of the content the turn stands for (its own, if it is original).

    ``quoted`` hashes an original's text as 0.1.0's stubs did (its JSON-quoted form); otherwise
    as ``text_sha256`` (its UTF-8 bytes, or the caller's hash of a structured body).
    """
    tokens = turn.metadata.get(ORIGINAL_TOKENS_KEY)
    digest = turn.metadata.get(ORIGINAL_SHA256_KEY)
    if tokens is not None and digest is not None and tokens.isdigit():
        return int(tokens), digest
    return turn.token_estimate, sha256_of(turn.content) if quoted else text_sha256(turn)


def replaced_metadata(turn: TranscriptTurn, action: Action,
                      replacement: TurnReplacement | None = None) -> Mapping[str, str]:
    """The metadata of ``turn`` kept with a new body by ``action`` (MASK, CLIP, DEDUPLICATE).

    A MASK gives exactly 0.1.0's (``cutctx.kind`` added); the others also record the
    original's figures, carried over if the turn already stands for an original, and a
    DEDUPLICATE the turn it points to.
    """
    kind = REPLACEMENT_KIND[action]
    if action is _MASK:
        return MappingProxyType({**turn.metadata, KIND_KEY: kind})
    tokens, digest = original_figures(turn, quoted=False)
    extra = {KIND_KEY: kind, ORIGINAL_TOKENS_KEY: str(tokens), ORIGINAL_SHA256_KEY: digest}
    if replacement is not None and replacement.refers_to is not None:
        extra[REFERS_TO_KEY] = replacement.refers_to
    if action is Action.CLIP and replacement is not None:
        extra[EXCERPT_KEY] = ",".join(f"{start}:{end}" for start, end in replacement.excerpt)
        extra[MARKER_KEY] = replacement.content
    return MappingProxyType({**turn.metadata, **extra})


def replaced_text(action: Action, content: str, replacement: TurnReplacement) -> str:
    """The body ``action`` gives a turn whose text is ``content``.

    MASK: the stub, then the excerpt's pieces (a digest), one per line. DEDUPLICATE: the stub.
    CLIP: the first range (the head), the marker, any middle ranges (parts kept whole), the last
    range (the tail), each on its own line(s).
    """
    if not replacement.excerpt and action is not _CLIP:  # a stub alone
        return replacement.content
    pieces = [content[start:end] for start, end in replacement.excerpt]
    if action is _CLIP:
        head, middle, tail = pieces[0], pieces[1:-1], pieces[-1]
        if head and not head.endswith("\n"):
            head += "\n"
        body = head + replacement.content
        for piece in (*middle, tail):
            if piece:
                body += "\n" + piece
        return body
    if not pieces:
        return replacement.content
    return replacement.content + "\n" + "\n".join(pieces)


def source_ranges(action: Action, content: str, replacement: TurnReplacement,
                  ranges: Excerpt) -> Excerpt:
    """``ranges`` of ``replaced_text(action, content, replacement)`` as ranges of ``content``:
    where a later decision over a replaced turn (a digest of a clip) keeps text the original
    holds. Ranges inside text cutctx wrote (a stub, a marker) are left out."""
    written = replaced_text(action, content, replacement)
    pieces: list[tuple[int, int, int]] = []  # (start in written, start in content, length)
    cursor = 0
    for start, end in replacement.excerpt:
        piece = content[start:end]
        if not piece:
            continue
        found = written.find(piece, cursor)
        if found < 0:
            continue
        pieces.append((found, start, len(piece)))
        cursor = found + len(piece)
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        for at, source, length in pieces:
            if at <= start and end <= at + length:
                out.append((source + start - at, source + end - at))
                break
    return tuple(out)

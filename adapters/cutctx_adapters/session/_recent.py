"""The histories a session read last, so that a call extending one reads only what it appends.

One session (or wrapped client) often serves many conversations at once, so it keeps several:
for each, the plain copies of its items, its conversion, and what tells that a later history
extends it. Which one a call extends is found cheaply (the last item read stands at the same
place in the call's history) and then checked whole, by identity or by content
(``check_prefix``). By content, an item is unchanged when it is sent as before (``sent_alike``:
``1``, ``True`` and ``1.0`` apart, keys in their order), whatever mapping class carries it; ``==``
decides for the very mappings read before, where no edit in place can make them equal but sent
otherwise (they hold no numbers), unless one only moves a key. Fresh copies of a whole history
(a service parsing each request's JSON) are compared in C: their ``marshal`` encodings (which
tell ``1``, ``True`` and ``1.0`` and keys' order apart) against those of the copies read.
Bounded by count and by the bytes of text held; safe under threads.
"""

from __future__ import annotations

import itertools
import marshal
import operator
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..history import MAX_DEPTH, Growing, GrownList
from ..settings import PrefixCheck
from ._known import text_size

__all__ = ["PrefixCheck", "Recent", "RecentHistories", "Reused", "encodings", "sent_alike"]

@dataclass(frozen=True, slots=True, eq=False)
class Recent:
    """A history read, to read of a later one only what it appends."""

    held: GrownList[Any]
    """How the caller's items are recognised: with ``check_prefix="identity"``, the items
    themselves; with ``"content"``, a mapping itself (compared by content: by ``==`` while it is
    the very mapping read, as sent otherwise), ``AS_SENT`` for one holding numbers (always
    compared as sent), and a weak reference to an object (the session holds none of them)."""
    plain: GrownList[dict[str, Any]]
    """The plain copies of the items, as converted."""
    reading: tuple[Any, ...]
    """What the conversion depended on besides the items: side, estimator, the pin setting,
    task pinning."""
    conv: Growing[Any]
    boundaries: GrownList[tuple[int, int]]
    """``closed_boundaries(conv)``."""
    sums: GrownList[int]
    """Running token sums of ``conv``'s turns (0 first)."""
    seed: str | None = None
    chain: GrownList[str] = field(default_factory=GrownList)
    objects: int = 0
    """How many of the items were objects (not mappings); counted for ``"content"`` only."""
    size: int = 0
    """Bytes of text of the plain copies (for the memory bound)."""
    source: Any = None
    """By identity (which holds the items anyway), the caller's list they were read from: when
    a call passes that very list again, the items in it are compared with ``==`` (in C), not as
    sent, so an item replaced there by one Python takes as equal is not seen (see
    ``CompactionSession.check_prefix``)."""
    encoded: Encodings = field(default_factory=lambda: Encodings())
    """The plain copies' encodings, made when a call first brings fresh copies of them."""

    def extended_by(self, raw: Sequence[Any], check: PrefixCheck
                    ) -> tuple[GrownList[Any], int] | None:
        """When ``raw`` starts with all of this history's items, unchanged: ``raw``'s items as
        ``held`` and how many are objects; None otherwise (cheaply, mostly: the last item read
        is looked at first)."""
        length = len(self.plain)
        if not length or len(raw) < length or not self._same(raw[length - 1], length - 1,
                                                              check):
            return None
        if check == "identity":
            grown = self.held.grown_to(raw)  # the very items (or equal ones): compared in C
            if grown is None or (raw is not self.source and self._first_unlike(raw, length)
                                 < length):
                return None
            return grown, 0
        if self._unchanged(raw, check) < length:
            return None
        held, objects = recognised(self.held, raw[length:], check)
        return held, objects + self.objects

    def read_on(self, raw: Sequence[Any], check: PrefixCheck) -> Reused:
        """How many leading items of ``raw`` are this history's, unchanged; and ``raw``'s items
        as ``held`` and how many are objects."""
        count = self._unchanged(raw, check)
        held, objects = recognised(self.held.prefix(count), raw[count:], check)
        if self.objects and check == "content":
            objects += (self.objects if count == len(self.held)
                        else sum(map(_is_object_entry, self.held[:count])))
        return Reused(self, count, held, objects)

    def _same(self, item: Any, index: int, check: PrefixCheck) -> bool:
        """Whether ``item`` is the item read at ``index``: the same object (or one sent alike),
        for ``"identity"``; for ``"content"``, a mapping sent as its copy, or the same object."""
        held = self.held[index]
        if check == "identity":
            return item is held or sent_alike(item, held)
        if isinstance(item, Mapping):
            return sent_alike(item, self.plain[index])
        return _is_object_entry(held) and held() is item

    def _unchanged(self, raw: Sequence[Any], check: PrefixCheck) -> int:
        """How many leading items of ``raw`` are this history's, unchanged (see ``_same``: a
        mapping sent as its copy, for ``"content"``, so an edit made in place is seen)."""
        count = min(len(raw), len(self.plain))
        start = self._encoded_alike(raw, count) if check == "content" else 0
        if start == count:
            return count
        compared = self.held if check == "identity" else self.plain
        if not start and (check == "identity" or self.objects == 0) and compared.prefix(
                count).same_as(raw[:count]):  # equal, compared in C; then as sent where it can
            return count if check == "identity" and raw is self.source else self._first_unlike(
                raw, count)
        return next((index for index in range(start, count)
                     if not self._same(raw[index], index, check)), count)

    def _first_unlike(self, raw: Sequence[Any], count: int) -> int:
        """The first of ``raw``'s leading ``count`` items, all equal (``==``) to those read, that
        is not sent as read (``count`` if none): only the items that are not the very ones
        held (rebuilt, reloaded) and, by content, mappings with numbers need comparing."""
        start = self._encoded_alike(raw, count)
        held, plain = self.held[start:count], self.plain[start:count]
        others = itertools.compress(range(start, count),
                                    map(operator.is_not, raw[start:count], held))
        return next((index for index in others
                     if not sent_alike(raw[index], plain[index - start])), count)

    def _encoded_alike(self, raw: Sequence[Any], count: int) -> int:
        """How many of ``raw``'s leading ``count`` items encode as the copies read (the rest may
        still be sent alike); 0 when few are fresh copies, or one cannot be encoded. Compares
        in C what ``==`` cannot tell apart: ``1``, ``True`` and ``1.0``, and keys' order."""
        if count < ENCODE_FROM or sum(map(operator.is_not, raw[:count],
                                          self.held[:count])) < ENCODE_FROM:
            return 0
        theirs = self.encoded.upto(self.plain, count)
        mine = encodings(raw[:count])
        if theirs is None or mine is None:
            return 0
        return next(itertools.compress(itertools.count(), map(operator.ne, mine, theirs)), count)


ENCODE_FROM = 64
"""Items not held as the very objects read, from which a comparison starts by encodings."""


def encodings(items: Sequence[Any]) -> list[bytes] | None:
    """Each item's ``marshal`` encoding (version 0: no references, no interning, so equal values
    of the same kinds, keys in the same order, encode alike); None if one holds anything but
    plain data (a mapping or ``str`` subclass: compared as sent instead)."""
    try:
        return list(map(marshal.dumps, items, itertools.repeat(0)))
    except ValueError:
        return None


class Encodings:
    """The encodings of a history's plain copies, made up to where a call needs them; a later
    history read on from this one takes them over."""

    def __init__(self, made: GrownList[bytes] | None = None,
                 ends: GrownList[int] | None = None) -> None:
        self._made: GrownList[bytes] = made if made is not None else GrownList()
        self._ends: GrownList[int] = ends if ends is not None else GrownList()
        """Bytes of the encodings up to each item (for the memory bound)."""
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes the encodings hold (for the memory bound)."""
        ends = self._ends
        return ends[-1] if len(ends) else 0

    def upto(self, plain: GrownList[dict[str, Any]], count: int) -> list[bytes] | None:
        """The encodings of ``plain``'s first ``count`` items (None if one cannot be encoded)."""
        with self._lock:
            made = self._made
            if len(made) < count:
                more = encodings(plain[len(made):count])
                if more is None:
                    return None
                before = self.size
                self._made = made = made.extended(more)
                self._ends = self._ends.extended(
                    before + end for end in itertools.accumulate(map(len, more)))
            return made[:count]

    def taken_over(self, count: int) -> Encodings:
        """Those of the first ``count`` items, for a history that continues them."""
        with self._lock:
            return Encodings(self._made.prefix(count), self._ends.prefix(count))


@dataclass(frozen=True, slots=True)
class Reused:
    """What a call's history takes from a history read before."""

    recent: Recent | None
    count: int
    """Leading items of the call's history that are ``recent``'s, unchanged."""
    held: GrownList[Any]
    """The call's items as ``Recent.held``."""
    objects: int
    source: Any = None
    """The call's list (``Recent.source``)."""

    def size_of(self, items: GrownList[dict[str, Any]]) -> int:
        """``Recent.size`` for ``items`` (the call's plain items): what is appended, measured."""
        recent, count = self.recent, self.count
        before = (recent.size if recent is not None and count == len(recent.plain)
                  else text_size(items[:count]))
        return before + text_size(items[count:])


def recognised(held: GrownList[Any], new: Sequence[Any], check: PrefixCheck
               ) -> tuple[GrownList[Any], int]:
    """``held`` followed by how a later call recognises ``new``'s items (themselves, for
    ``"identity"``), and how many of ``new`` are objects (counted for ``"content"`` only)."""
    if check == "identity":
        return held.extended(new), 0
    return (held.extended(_held_entry(item) for item in new),
            sum(not isinstance(item, Mapping) for item in new))


AS_SENT: Final = object()
"""How ``"content"`` holds a mapping with numbers: never the very one, always compared as sent
(an edit in place could turn 1 into True, equal to Python, sent otherwise)."""


def _held_entry(item: Any) -> Any:
    """How ``"content"`` recognises an item: a mapping itself (``AS_SENT`` if it holds numbers);
    a weak reference to an object (or, for one that takes none, a reference to nothing)."""
    if isinstance(item, Mapping):
        return AS_SENT if _holds_numbers(item) else item
    try:
        return weakref.ref(item)
    except TypeError:
        return _gone


def _is_object_entry(entry: Any) -> bool:
    """Whether a ``"content"`` entry of ``held`` stands for an object (not a mapping)."""
    return isinstance(entry, weakref.ref) or entry is _gone


def _holds_numbers(value: Any) -> bool:
    """Whether a value holds a number or a boolean anywhere (or anything else that is not text:
    it is checked when converted; or nests past ``MAX_DEPTH``, or into itself)."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str) or value is None:
            continue
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, Mapping):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1) for item in value)
        else:
            return True
    return False


def _gone() -> None:
    return None


class RecentHistories:
    """The histories read last, newest first to be tried; the newest is always kept."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._entries: list[Recent] = []  # oldest first
        self._max_entries = max(1, max_entries)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def find(self, raw: Sequence[Any], check: PrefixCheck) -> Reused:
        """The history ``raw`` extends, if it extends one whole; else what it shares with the
        newest (a history edited, rolled back, or new)."""
        with self._lock:
            entries = list(self._entries)
        source = raw if check == "identity" else None  # by content, objects are not held
        for recent in reversed(entries):
            whole = recent.extended_by(raw, check)
            if whole is not None:
                return Reused(recent, len(recent.plain), *whole, source=source)
        if entries:
            return replace(entries[-1].read_on(raw, check), source=source)
        return Reused(None, 0, *recognised(GrownList(), raw, check), source=source)

    def put(self, recent: Recent, reused: Reused) -> None:
        """Keep ``recent`` as the newest; instead of the history it extends whole, if it does
        (one it shares only a part with is another conversation, or an earlier branch)."""
        whole = reused.recent if reused.recent is not None and reused.count == len(
            reused.recent.plain) else None
        encoded = (reused.recent.encoded.taken_over(reused.count) if reused.recent is not None
                   else Encodings())
        recent = replace(recent, source=reused.source, encoded=encoded)
        with self._lock:
            entries = [entry for entry in self._entries if entry is not whole]
            entries.append(recent)
            total = sum(entry.size + entry.encoded.size for entry in entries)
            while len(entries) > 1 and (len(entries) > self._max_entries
                                        or total > self._max_bytes):
                gone = entries.pop(0)
                total -= gone.size + gone.encoded.size
            self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)


def sent_alike(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` serialize to the same JSON text (a caller's value against the
    plain copy read from it: mappings of any class, tuples as lists, ``str``/``int`` subclasses
    as their plain values). Anything else (an SDK object) is alike only to itself.

    >>> sent_alike({"a": 1, "b": [True]}, {"a": 1, "b": [True]})
    True
    >>> sent_alike({"a": 1}, {"a": True}), sent_alike({"a": 1, "b": 2}, {"b": 2, "a": 1})
    (False, False)

    Values nested deeper than ``MAX_DEPTH`` (which no plain copy is) are not alike.
    """
    return _alike(a, b, MAX_DEPTH)


def _alike(a: Any, b: Any, depth: int) -> bool:
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b) or depth <= 0:
        return _alike_as_sent(a, b, depth)
    if kind is dict:
        if len(a) != len(b):
            return False
        for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True):
            if key_a != key_b or (value_a is not value_b
                                  and not _alike(value_a, value_b, depth - 1)):
                return False
        return True
    if kind is list:
        if len(a) != len(b):
            return False
        for value_a, value_b in zip(a, b, strict=True):
            if value_a is not value_b and not _alike(value_a, value_b, depth - 1):
                return False
        return True
    if kind is float:
        return a == b and repr(a) == repr(b)  # 0.0 and -0.0 are sent apart
    if kind is str or kind is int or kind is bool:
        return bool(a == b)
    return _alike_as_sent(a, b, depth)


def _alike_as_sent(a: Any, b: Any, depth: int) -> bool:
    """``sent_alike`` for values of different classes: compared as the plain JSON they are."""
    plain_a, plain_b = _json_kind(a), _json_kind(b)
    if plain_a is None or plain_a != plain_b:
        return False
    if plain_a in ("object", "array") and depth <= 0:
        return False
    if plain_a == "object":
        return len(a) == len(b) and all(
            _alike(key_a, key_b, depth - 1) and _alike(value_a, value_b, depth - 1)
            for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True))
    if plain_a == "array":
        return len(a) == len(b) and all(
            _alike(value_a, value_b, depth - 1) for value_a, value_b in zip(a, b, strict=True))
    if plain_a == "number":
        if isinstance(a, float) or isinstance(b, float):
            return isinstance(a, float) and isinstance(b, float) and repr(float(a)) == repr(
                float(b))
        return int(a) == int(b)
    return bool(a == b)


def _json_kind(value: Any) -> str | None:
    """The JSON kind ``value`` is sent as (None: not plain JSON data)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return "null" if value is None else None

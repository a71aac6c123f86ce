"""Sequences and mappings that grow by sharing: what a session carries from call to call.

A history only grows, so what a session derived from it last time (plain copies, chained
hashes, running sums, parts by turn id) is a prefix of what it derives now. Copying that prefix
every call would make a call cost the whole history; instead the values below are views of
one shared store: each sees the store's first ``length`` entries, and extending the view that
sees all of it appends to the store in place. Extending an older view (a history that
branched) copies, so no view ever sees another's entries. Safe under threads.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

__all__ = ["GrownList", "GrownMap"]

T = TypeVar("T")
V = TypeVar("V")

_GROWING = threading.Lock()
"""Held while a store is appended to (and while a mapping's keys are listed)."""


class GrownList(Sequence[T]):
    """The first ``len(self)`` items of a shared list that only grows."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._length = len(self._items)

    @classmethod
    def _seeing(cls, items: list[T], length: int) -> GrownList[T]:
        view = cls.__new__(cls)
        view._items, view._length = items, length
        return view

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[slice(*index.indices(self._length))]
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError("GrownList index out of range")
        return self._items[position]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._length)

    def __repr__(self) -> str:
        return f"GrownList({self[:]!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GrownList):
            other = other[:]
        return isinstance(other, list) and self[:] == other

    __hash__ = None  # type: ignore[assignment]  # mutable like a list: unhashable

    def prefix(self, count: int) -> GrownList[T]:
        """The first ``count`` items (no copy)."""
        return self._seeing(self._items, max(0, min(count, self._length)))

    def extended(self, more: Iterable[T]) -> GrownList[T]:
        """These items followed by ``more``: in place when nothing was appended after them."""
        added = list(more)
        with _GROWING:
            if len(self._items) == self._length:
                self._items.extend(added)
                return self._seeing(self._items, len(self._items))
        return GrownList([*self._items[:self._length], *added])

    def grown_to(self, values: Sequence[T]) -> GrownList[T] | None:
        """``values``, when it starts with these very items (or equal ones), held as these
        extended by the rest; None when it does not. At the tip of a list, this costs one
        comparison of the two lists' references in C, without touching the items."""
        length = self._length
        if len(values) < length:
            return None
        tip = False
        if type(values) is list:
            with _GROWING:
                tip = len(self._items) == length
                if tip:  # tentatively: no other view sees past ``length`` until one is returned
                    self._items.extend(values[length:])
        if not tip:
            return self.extended(values[length:]) if self.same_as(values[:length]) else None
        if self._items == values:
            return self._seeing(self._items, len(values))
        with _GROWING:
            del self._items[length:]
        return None

    def same_as(self, values: Sequence[Any]) -> bool:
        """Whether ``values`` holds these very items (or equal ones) in order: one comparison
        in C when this view sees its whole store."""
        if len(values) != self._length:
            return False
        if not isinstance(values, list):
            values = list(values)
        items = self._items
        return values == (items if len(items) == self._length else items[:self._length])


class GrownMap(Mapping[str, V], Generic[V]):
    """The first ``len(self)`` entries of a shared dict that only grows (keys never repeat)."""

    __slots__ = ("_at", "_length")

    def __init__(self, entries: Mapping[str, V] | None = None) -> None:
        self._at: dict[str, tuple[int, V]] = {
            key: (ordinal, value) for ordinal, (key, value) in enumerate((entries or {}).items())}
        self._length = len(self._at)

    def __getitem__(self, key: str) -> V:
        entry = self._at.get(key)
        if entry is None or entry[0] >= self._length:
            raise KeyError(key)
        return entry[1]

    def get(self, key: str, default: Any = None) -> Any:
        entry = self._at.get(key)
        return default if entry is None or entry[0] >= self._length else entry[1]

    def __contains__(self, key: object) -> bool:
        entry = self._at.get(key) if isinstance(key, str) else None
        return entry is not None and entry[0] < self._length

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[str]:
        with _GROWING:  # a dict cannot be iterated while another thread adds to it
            keys = list(itertools.islice(self._at, self._length))
        return iter(keys)

    def __repr__(self) -> str:
        return f"GrownMap({dict(self)!r})"

    def extended(self, more: Mapping[str, V]) -> GrownMap[V]:
        """These entries followed by ``more`` (later wins): in place when nothing was added
        after them and no key repeats."""
        with _GROWING:
            if len(self._at) == self._length and not any(key in self._at for key in more):
                for ordinal, (key, value) in enumerate(more.items(), start=self._length):
                    self._at[key] = (ordinal, value)
                view = GrownMap.__new__(GrownMap)
                view._at, view._length = self._at, len(self._at)
                return view
        return GrownMap({**self, **more})

"""Shared growing lists and maps behave exactly like the plain copies they stand for.

A session carries its derived state from call to call by extending views of one shared store;
any view extended (the latest, or an older one: a history that branched) must read as a fresh
list or dict of the same entries, never seeing another view's.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutctx_adapters.history._grown import GrownList, GrownMap

steps = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 30),
                           st.lists(st.integers(0, 5), max_size=4)), max_size=25)


@settings(max_examples=200)
@given(steps)
def test_every_grown_list_reads_as_its_plain_copy(moves: list[tuple[int, int, list[int]]]
                                                  ) -> None:
    made: list[tuple[GrownList[int], list[int]]] = [(GrownList(), [])]
    for pick, keep, more in moves:
        grown, plain = made[pick % len(made)]
        grown, plain = grown.prefix(keep), plain[:keep]
        made.append((grown.extended(more), [*plain, *more]))
    for grown, plain in made:
        assert list(grown) == plain and len(grown) == len(plain)
        assert grown[:] == plain and grown[1:-1] == plain[1:-1] and grown[::2] == plain[::2]
        assert [grown[i] for i in range(len(plain))] == plain
        assert [grown[i] for i in range(-len(plain), 0)] == plain
        assert grown.same_as(plain) and grown.same_as(tuple(plain))
        assert not grown.same_as([*plain, 0])
        assert grown == plain and plain == grown and grown == GrownList(plain)
        assert grown != [*plain, 0] and grown != tuple(plain)
        for outside in (len(plain), -len(plain) - 1):
            with pytest.raises(IndexError):
                grown[outside]


@settings(max_examples=200)
@given(steps)
def test_every_grown_map_reads_as_its_plain_copy(moves: list[tuple[int, int, list[int]]]
                                                 ) -> None:
    made: list[tuple[GrownMap[int], dict[str, int]]] = [(GrownMap(), {})]
    for number, (pick, value, keys) in enumerate(moves):
        grown, plain = made[pick % len(made)]
        # mostly new keys; a repeated one (later wins) now and then
        more = {f"k{number}.{key}" if key else f"k{value % 3}": value for key in keys}
        made.append((grown.extended(more), {**plain, **more}))
    for grown, plain in made:
        assert dict(grown) == plain and len(grown) == len(plain) and list(grown) == list(plain)
        for key in {f"k{i}" for i in range(3)} | set(plain) | {"k99.1"}:
            assert (key in grown) == (key in plain)
            assert grown.get(key) == plain.get(key)


def test_threads_extending_one_view_each_get_their_own() -> None:
    base = GrownList(range(100))
    start = threading.Barrier(8)
    results: dict[int, GrownList[int]] = {}

    def grow(worker: int) -> None:
        start.wait()
        view = base
        for step in range(200):
            view = view.extended([worker * 1000 + step])
        results[worker] = view

    threads = [threading.Thread(target=grow, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for worker, view in results.items():
        assert list(view) == [*range(100), *(worker * 1000 + step for step in range(200))]
    assert list(base) == list(range(100))

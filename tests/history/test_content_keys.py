"""Content keys (sticky views, pins): equal content gives equal keys whatever objects or key
order carried it, and different content gives different keys."""

from __future__ import annotations

import json
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cutctx_adapters.history._keys import content_bytes, content_key
from tests.engine.test_engine_properties import PROPERTY_SETTINGS

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=16)


def reordered(value: Any) -> Any:
    """The same value rebuilt: dict keys reversed, every string a fresh object."""
    if isinstance(value, dict):
        return {"".join(list(key)): reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    if isinstance(value, str):
        return "".join(list(value))
    return value


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@PROPERTY_SETTINGS
@given(json_values)
def test_equal_content_in_another_key_order_has_the_same_key(value: Any) -> None:
    assert content_key(reordered(value)) == content_key(value)


@PROPERTY_SETTINGS
@given(json_values, json_values)
def test_different_content_has_different_bytes(first: Any, second: Any) -> None:
    same_json = canonical(first) == canonical(second)
    # JSON cannot tell 1 from 1.0 (nor -0.0 from 0.0); the key can, which only costs a miss
    if same_json and content_bytes(first) != content_bytes(second):
        return
    assert (content_bytes(first) == content_bytes(second)) == same_json


def test_types_that_json_tells_apart_get_different_keys() -> None:
    values = [1, True, "1", [1], {"1": 1}, None, "", [], {}, 1.5, "true"]
    assert len({content_key(value) for value in values}) == len(values)


def test_interned_and_built_strings_key_alike() -> None:
    built = "".join(["ro", "le"])
    assert content_key({sys.intern("role"): "user"}) == content_key({built: "user"})
    shared = "text" * 10
    assert content_key([shared, shared]) == content_key(["text" * 10, "".join(["text"] * 10)])


def test_lone_surrogates_are_keyed_not_refused() -> None:
    assert content_key("\ud800") != content_key("\ud801")

"""Results read as the plain dicts they are at run time (for tests that index into them).

``compact`` results and wrapped calls are typed with the SDKs' parameter TypedDicts, which a test
indexing a message by any key cannot satisfy; ``dicts`` checks the value really is a list of
dicts and gives it that type.
"""

from __future__ import annotations

from typing import Any

__all__ = ["dicts"]


def dicts(items: object) -> list[dict[str, Any]]:
    """``items``, checked to be a list of dicts."""
    assert isinstance(items, list) and all(isinstance(item, dict) for item in items), items
    return items

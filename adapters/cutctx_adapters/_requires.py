"""Check that an optional SDK is installed, or fail with the extra that installs it.

Only its presence is checked (``find_spec``), not imported: importing the SDKs costs a second of
start-up that the CLI and the estimation paths never need.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["require"]


def require(module: str, extra: str) -> None:
    """Raise an ImportError saying ``pip install 'cutctx[extra]'`` if ``module`` is missing."""
    if module in sys.modules:
        missing = sys.modules[module] is None  # blocked on purpose (tests, sandboxes)
    else:
        try:
            missing = importlib.util.find_spec(module) is None
        except (ImportError, ValueError):
            missing = True
    if missing:
        raise ImportError(
            f"cutctx_adapters needs the '{module}' package for this: "
            f"pip install 'cutctx[{extra}]'"
        )

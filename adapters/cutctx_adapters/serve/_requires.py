"""The proxy's optional packages: present, or an ImportError naming the extra that installs them."""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["require"]


# TODO(house): the adapters' ``_requires.require`` does exactly this; use it once it is public.
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
        raise ImportError(f"cutctx serve needs the '{module}' package: "
                          f"pip install 'cutctx[{extra}]'")

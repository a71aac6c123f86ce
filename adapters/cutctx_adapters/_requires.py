"""Import an optional SDK, or fail with the extra that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise an ImportError that says ``pip install 'cutctx[extra]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"cutctx_adapters needs the '{module}' package for this: "
            f"pip install 'cutctx[{extra}]'"
        ) from exc

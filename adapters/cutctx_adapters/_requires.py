"""Check that an optional SDK is installed, or fail with the extra that installs it.

Only its presence is checked (``find_spec``), not imported: importing the SDKs costs a second of
start-up that the CLI and the estimation paths never need.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["imported_when_used", "require"]


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


def imported_when_used(package: str, names: Mapping[str, str], needs: Sequence[str],
                       extra: str) -> Callable[[str], Any]:
    """A package's ``__getattr__``: each of ``names`` imported from its module in ``package``
    when first used, once ``needs`` are found installed (else the error naming ``extra``)."""
    def attribute(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        for module in needs:
            require(module, extra)
        return getattr(import_module(f"{package}.{names[name]}"), name)

    return attribute

"""Every public name says what it is: a docstring on each class and function in ``__all__``,
and one under each constant or type alias (the string after its assignment)."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil

import pytest

MODULES = [
    "cutctx_adapters", "cutctx_adapters.settings", "cutctx_adapters.session",
    "cutctx_adapters.stores", "cutctx_adapters.errors", "cutctx_adapters.fulfil",
    "cutctx_adapters.prompts", "cutctx_adapters.tiktoken", "cutctx_adapters.openai",
    "cutctx_adapters.openai.chat", "cutctx_adapters.openai.responses",
    "cutctx_adapters.anthropic", "cutctx_adapters.anthropic.messages",
]


def _documented_assignments(module: object) -> set[str]:
    """Names assigned at module level and followed by a string (an attribute docstring)."""
    source = inspect.getsource(module)  # type: ignore[arg-type]
    body = ast.parse(source).body
    names: set[str] = set()
    for statement, following in itertools.pairwise(body):
        targets = (statement.targets if isinstance(statement, ast.Assign) else
                   [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _every_module() -> list[object]:
    import cutctx_adapters

    names = [info.name for info in pkgutil.walk_packages(cutctx_adapters.__path__,
                                                          "cutctx_adapters.")
             if ".cli" not in info.name and not info.name.endswith("__main__")]
    return [importlib.import_module(name) for name in ["cutctx_adapters", *names]]


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_has_a_docstring(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, name
    missing = []
    for public in module.__all__:
        value = getattr(module, public)
        if inspect.ismodule(value) or inspect.isclass(value) or inspect.isfunction(value):
            if not (value.__doc__ or "").strip():
                missing.append(public)
            continue
        if not any(public in _documented_assignments(home) for home in _every_module()):
            missing.append(public)
    assert missing == [], f"{name}: {missing}"

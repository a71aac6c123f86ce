"""The engine is pure: it imports only the standard library and does no I/O, clock, randomness,
environment or logging."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cutctx

PACKAGE = Path(cutctx.__file__).resolve().parent
ROOT = PACKAGE.parent
SOURCES = sorted(PACKAGE.rglob("*.py"))

FORBIDDEN_MODULES = {
    "os", "time", "random", "logging", "socket", "datetime", "subprocess", "threading",
    "asyncio", "urllib", "http", "secrets", "uuid", "tempfile", "shutil", "pathlib", "io",
    "warnings", "sys", "builtins", "importlib",
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "compile", "__import__", "breakpoint"}
FORBIDDEN_ATTRIBUTES = {("os", "environ"), ("os", "getenv"), ("time", "time"),
                        ("sys", "stdout"), ("sys", "stderr")}

FRESH_IMPORT = """
import sys
sys.path.insert(0, {root!r})
before = set(sys.modules)
import cutctx
new = sorted(set(sys.modules) - before)
import json
print(json.dumps({{"file": cutctx.__file__, "new": new}}))
"""


def test_import_loads_only_the_standard_library() -> None:
    completed = subprocess.run(
        [sys.executable, "-E", "-s", "-c", FRESH_IMPORT.format(root=str(ROOT))],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).resolve().parent == PACKAGE
    new_modules: list[str] = result["new"]
    assert "cutctx" in new_modules
    foreign = sorted({
        name for name in new_modules
        if name.split(".")[0] != "cutctx" and name.split(".")[0] not in sys.stdlib_module_names
    })
    assert foreign == []


def test_the_engine_sources_are_found() -> None:
    names = {path.relative_to(PACKAGE).as_posix() for path in SOURCES}
    assert {"__init__.py", "types.py", "executor.py", "policies/chain.py"} <= names


def _trees() -> list[tuple[str, ast.Module]]:
    return [(path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
            for path in SOURCES]


@pytest.mark.parametrize(("name", "tree"), _trees(), ids=lambda v: v if isinstance(v, str) else "")
def test_engine_source_imports_nothing_impure(name: str, tree: ast.Module) -> None:
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert imported & FORBIDDEN_MODULES == set(), name
    assert all(module in sys.stdlib_module_names or module == "cutctx" for module in imported)


@pytest.mark.parametrize(("name", "tree"), _trees(), ids=lambda v: v if isinstance(v, str) else "")
def test_engine_source_calls_no_io_builtins(name: str, tree: ast.Module) -> None:
    calls = {
        node.func.id for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert calls & FORBIDDEN_CALLS == set(), name
    attributes = {
        (node.value.id, node.attr) for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    assert attributes & FORBIDDEN_ATTRIBUTES == set(), name
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert names & {"datetime", "logging", "random", "environ"} == set(), name


def test_the_scan_would_catch_impurity() -> None:
    tree = ast.parse("import os\nfrom time import time\nprint(open('x').read())\n")
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    calls = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert imported & FORBIDDEN_MODULES == {"os", "time"}
    assert calls & FORBIDDEN_CALLS == {"open", "print"}

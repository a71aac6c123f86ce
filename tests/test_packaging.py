"""Packaging promises: optional SDKs fail with the extra to install; public names are exported."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest


def _run(code: str, tiktoken_cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None if tiktoken_cache is None else {**os.environ,
                                               "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=60, env=env)


@pytest.mark.parametrize(("module", "sdk", "wrapper"), [
    ("cutctx_adapters.openai", "openai", "CompactingOpenAI"),
    ("cutctx_adapters.anthropic", "anthropic", "CompactingAnthropic"),
])
def test_provider_wrapper_without_its_sdk_names_the_extra(module: str, sdk: str,
                                                          wrapper: str) -> None:
    code = (f"import sys; sys.modules[{sdk!r}] = None\n"
            f"import {module}\n"
            f"try:\n    from {module} import {wrapper}\n"
            f"except ImportError as exc:\n    print(exc)\nelse:\n    print('imported')")
    result = _run(code)
    assert f"pip install 'cutctx[{sdk}]'" in result.stdout, result.stderr


@pytest.mark.parametrize(("package", "module"), [("openai", "chat"), ("anthropic", "messages")])
def test_plain_dicts_convert_and_count_without_the_sdk(package: str, module: str,
                                                       tiktoken_cache: Path) -> None:
    code = (f"import sys; sys.modules[{package!r}] = None\n"
            f"from cutctx_adapters.{package} import {module}\n"
            "history = [{'role': 'user', 'content': 'Hello there'}]\n"
            f"conv = {module}.to_transcript(history)\n"
            f"print(len(conv.transcript.turns), {module}.count_tokens(history) > 0,\n"
            f"      {module}.compact(history, budget=500).budget_unmet)")
    result = _run(code, tiktoken_cache)
    assert result.stdout.split() == ["1", "True", "False"], result.stderr


def test_counting_without_tiktoken_names_the_extra() -> None:
    code = ("import sys; sys.modules['openai'] = sys.modules['tiktoken'] = None\n"
            "from cutctx import CharRatioEstimator\n"
            "from cutctx_adapters.openai import chat\n"
            "history = [{'role': 'user', 'content': 'Hello there'}]\n"
            "print(chat.count_tokens(history, estimator=CharRatioEstimator()))\n"
            "try:\n    chat.count_tokens(history)\n"
            "except ImportError as exc:\n    print(exc)")
    result = _run(code)
    assert "pip install 'cutctx[tiktoken]'" in result.stdout, result.stderr


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_cli_version_and_help_need_no_rich(option: str) -> None:
    code = ("import sys\nsys.modules['rich'] = None\n"
            "from cutctx_adapters.cli import main\n"
            f"raise SystemExit(main([{option!r}]))")
    result = _run(code)
    assert result.returncode == 0 and "cutctx" in result.stdout, result.stderr


def test_readme_lists_every_extra() -> None:
    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert [extra for extra in extras if f"`cutctx[{extra}]`" not in readme] == []


def test_adapters_core_imports_without_any_sdk() -> None:
    code = ("import sys\nfor name in ('openai', 'anthropic'): sys.modules[name] = None\n"
            "import cutctx_adapters\nprint(sorted(cutctx_adapters.__all__)[:1])")
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_public_names_are_importable() -> None:
    import cutctx_adapters
    from cutctx_adapters.openai import CompactingOpenAI, OpenAISummarizer, chat

    for name in cutctx_adapters.__all__:
        assert hasattr(cutctx_adapters, name)
    assert callable(chat.compact) and callable(chat.acompact) and callable(chat.count_tokens)
    assert CompactingOpenAI.__name__ == "CompactingOpenAI"
    assert OpenAISummarizer.__name__ == "OpenAISummarizer"


def test_adapters_core_imports_without_tiktoken_or_sdks() -> None:
    code = ("import sys\n"
            "for name in ('openai', 'anthropic', 'tiktoken'): sys.modules[name] = None\n"
            "import cutctx_adapters\nprint('ok')")
    result = _run(code)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_cli_without_rich_names_the_extra() -> None:
    code = ("import sys\nsys.modules['rich'] = None\n"
            "from cutctx_adapters.cli import main\n"
            "raise SystemExit(main(['count', 'missing.json']))")
    result = _run(code)
    assert result.returncode == 2
    assert "pip install 'cutctx[cli]'" in result.stderr and "Traceback" not in result.stderr


# --- a framework page installs what its example imports (issue 39, item 24) -----------------

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = [("openai-agents.md", "openai_agents_agent.py"),
              ("langchain.md", "langchain_agent.py"),
              ("pydantic-ai.md", "pydantic_ai_agent.py")]


def _installed_by(specs: list[str]) -> set[str]:
    """The distributions ``pip install <specs>`` brings (as installed here), by walking each
    one's declared requirements, extras included."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [Requirement(spec) for spec in specs]
    while stack:
        wanted = stack.pop()
        key = (canonicalize_name(wanted.name), frozenset(wanted.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.distribution(wanted.name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            need = Requirement(line)
            extras = wanted.extras or {""}
            if need.marker is None or any(need.marker.evaluate({"extra": extra})
                                          for extra in extras):
                stack.append(need)
    return {name for name, _extras in seen}


def _page_installs(page: str) -> list[str]:
    """The requirements the page's ``pip install`` lines name."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return [spec.strip("'\"") for line in text.splitlines()
            if line.startswith("pip install ")
            for spec in line.partition("#")[0].split()[2:]]


def _imported_distributions(example: str) -> set[str]:
    """The distributions the example's own imports come from (its offline scaffolding, the
    scripted API, aside)."""
    import ast
    from importlib import metadata

    from packaging.utils import canonicalize_name

    tree = ast.parse((ROOT / "examples" / "integrations" / example).read_text(encoding="utf-8"))
    modules = {alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    owners = metadata.packages_distributions()
    return {canonicalize_name(owners[module][0]) for module in modules if module in owners}


@pytest.mark.parametrize(("page", "example"), FRAMEWORKS)
def test_a_framework_page_installs_what_its_example_needs(page: str, example: str) -> None:
    installs = _page_installs(page)
    assert installs and installs[0].startswith("cutctx[")
    missing = _imported_distributions(example) - _installed_by(installs) - {"cutctx"}
    assert missing == set(), f"docs/{page} does not install {sorted(missing)}"

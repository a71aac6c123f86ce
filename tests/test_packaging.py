"""Packaging promises: optional SDKs fail with the extra to install; public names are exported."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=60)


@pytest.mark.parametrize(("module", "sdk", "extra"), [
    ("cutctx_adapters.openai", "openai", "openai"),
    ("cutctx_adapters.anthropic", "anthropic", "anthropic"),
])
def test_provider_package_without_its_sdk_names_the_extra(module: str, sdk: str,
                                                          extra: str) -> None:
    code = (f"import sys; sys.modules[{sdk!r}] = None\n"
            f"try:\n    import {module}\n"
            f"except ImportError as exc:\n    print(exc)\nelse:\n    print('imported')")
    result = _run(code)
    assert f"pip install 'cutctx[{extra}]'" in result.stdout


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

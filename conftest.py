"""Shared pytest fixtures (at the root, so module doctests get them too)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

# Property tests are deterministic: the same examples on every run and every machine (CI
# included); explore new ones locally with HYPOTHESIS_PROFILE=explore.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

if TYPE_CHECKING:
    from cutctx_adapters.tiktoken import TiktokenEstimator

# --- tiktoken: its BPE files, downloaded by tiktoken itself or found in its cache -----------
# tiktoken caches a downloaded file in TIKTOKEN_CACHE_DIR (else DATA_GYM_CACHE_DIR, else
# <tmp>/data-gym-cache) under the sha1 of its download URL. Offline (CI), point
# TIKTOKEN_CACHE_DIR at a folder holding the files under these names (.ci/run does).

TIKTOKEN_CACHE_NAMES = {
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}
TIKTOKEN_UNAVAILABLE = ("tiktoken could not download its BPE files (o200k_base, cl100k_base) "
                        "into {cache} ({cause}): to run these tests offline, set "
                        "TIKTOKEN_CACHE_DIR to a folder holding them (README, 'Running offline')")


def _tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken caches its files in; None when caching is turned off (set to "")."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return Path(os.environ[variable]) if os.environ[variable] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """tiktoken's cache folder holding o200k_base and cl100k_base, set as TIKTOKEN_CACHE_DIR for
    the session (so tiktoken reports a folder it cannot write instead of skipping it). tiktoken
    downloads what is missing; the tests skip (TIKTOKEN_UNAVAILABLE) only when that fails."""
    from cutctx_adapters.errors import TokenizerUnavailable
    from cutctx_adapters.tiktoken import load_encoding

    cache = _tiktoken_cache_dir() or tmp_path_factory.mktemp("tiktoken-cache")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        try:
            for name in TIKTOKEN_CACHE_NAMES:
                load_encoding(name)
        except TokenizerUnavailable as exc:
            cause = type(exc.__cause__ or exc).__name__
            pytest.skip(TIKTOKEN_UNAVAILABLE.format(cache=cache, cause=cause))
        missing = [name for name, file_name in TIKTOKEN_CACHE_NAMES.items()
                   if not (cache / file_name).is_file()]
        assert not missing, f"{missing} loaded before this fixture, from another cache than {cache}"
        yield cache
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@pytest.fixture
def o200k(tiktoken_cache: Path) -> TiktokenEstimator:
    """A fresh (empty-cache) estimator on o200k_base, no model."""
    from cutctx_adapters.tiktoken import TiktokenEstimator

    return TiktokenEstimator(encoding="o200k_base")


@pytest.fixture
def cl100k(tiktoken_cache: Path) -> TiktokenEstimator:
    """A fresh (empty-cache) estimator on cl100k_base, no model."""
    from cutctx_adapters.tiktoken import TiktokenEstimator

    return TiktokenEstimator(encoding="cl100k_base")


@pytest.fixture(autouse=True)
def _doctests_count_offline(request: pytest.FixtureRequest) -> None:
    """Docstring examples that count tokens get the seeded tiktoken cache too."""
    if isinstance(request.node, pytest.DoctestItem):
        request.getfixturevalue("tiktoken_cache")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that counts with tiktoken without asking for ``tiktoken_cache`` skips like those
    that do when the files cannot be had (offline, no cache), saying why, rather than failing."""
    from cutctx_adapters.errors import TokenizerUnavailable

    try:
        return (yield)
    except TokenizerUnavailable as exc:
        cause = type(exc.__cause__ or exc).__name__
        pytest.skip(TIKTOKEN_UNAVAILABLE.format(cache=_tiktoken_cache_dir(), cause=cause))


# --- end of tiktoken fixtures -----------------------------------------------------------------

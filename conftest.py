"""Shared pytest fixtures (at the root, so module doctests get them too)."""

from __future__ import annotations

import os
import shutil
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

# --- tiktoken: BPE files for running offline ------------------------------------------------
# /work/shared/tiktoken (beside the repo) holds the files; tiktoken finds a downloaded file in
# TIKTOKEN_CACHE_DIR under the sha1 of its download URL (names from that folder's README).

SHARED_TIKTOKEN_DIR = Path(__file__).resolve().parent.parent / "shared" / "tiktoken"
TIKTOKEN_CACHE_NAMES = {
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}


def _tiktoken_default_cache_dir() -> Path:
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A TIKTOKEN_CACHE_DIR holding o200k_base and cl100k_base, set for the rest of the session."""
    sources = {name: SHARED_TIKTOKEN_DIR / f"{name}.tiktoken" for name in TIKTOKEN_CACHE_NAMES}
    if all(source.is_file() for source in sources.values()):
        cache = tmp_path_factory.mktemp("tiktoken-cache")
        for name, source in sources.items():
            shutil.copyfile(source, cache / TIKTOKEN_CACHE_NAMES[name])
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        try:
            yield cache
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
        return
    existing = _tiktoken_default_cache_dir()
    if not all((existing / file_name).is_file() for file_name in TIKTOKEN_CACHE_NAMES.values()):
        pytest.skip(
            f"tiktoken BPE files unavailable offline: neither {SHARED_TIKTOKEN_DIR} nor a cached "
            f"o200k_base/cl100k_base in {existing}"
        )
    yield existing


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


# --- end of tiktoken fixtures -----------------------------------------------------------------

"""cutctx_adapters.tiktoken: the tiktoken-backed TokenEstimator, its cache and offline errors."""

from __future__ import annotations

import doctest
import pickle
import threading
import time
import uuid
import warnings
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
from hypothesis import given, settings
from hypothesis import strategies as st

import cutctx
from conftest import TIKTOKEN_CACHE_NAMES
from cutctx_adapters import tiktoken as tiktoken_module
from cutctx_adapters.errors import TokenizerUnavailable
from cutctx_adapters.tiktoken import (
    CacheInfo,
    TiktokenEstimator,
    UnknownModelWarning,
    encoding_from_file,
    load_encoding,
)

pytestmark = pytest.mark.usefixtures("tiktoken_cache")


def bpe_file(cache: Path, name: str) -> Path:
    """The local .tiktoken file of ``name``: the cache holds it under the sha1 of its URL."""
    return cache / TIKTOKEN_CACHE_NAMES[name]


# --- choosing the encoding ------------------------------------------------------------------


def test_neither_model_nor_encoding_means_o200k_base() -> None:
    estimator = TiktokenEstimator()
    assert estimator.encoding_name == "o200k_base"
    assert estimator.model is None
    assert estimator.encoding is tiktoken.get_encoding("o200k_base")


@pytest.mark.parametrize(
    ("model", "encoding_name"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_model_selects_the_encoding_from_tiktokens_map(model: str, encoding_name: str) -> None:
    estimator = TiktokenEstimator(model)
    assert estimator.encoding_name == encoding_name
    assert estimator.model == model


def test_encoding_by_name_or_object() -> None:
    by_name = TiktokenEstimator(encoding="cl100k_base")
    by_object = TiktokenEstimator(encoding=tiktoken.get_encoding("cl100k_base"))
    assert by_name.encoding is by_object.encoding
    assert by_object.encoding_name == "cl100k_base"
    assert by_object.model is None


def test_estimator_satisfies_the_engine_protocol() -> None:
    assert isinstance(TiktokenEstimator(), cutctx.TokenEstimator)


def test_model_and_encoding_together_are_refused() -> None:
    with pytest.raises(cutctx.ValidationError):
        TiktokenEstimator("gpt-4o", encoding="o200k_base")


@pytest.mark.parametrize("cache_size", [-1, True, 1.5, None])
def test_cache_size_must_be_a_non_negative_int(cache_size: object) -> None:
    with pytest.raises(ValueError):
        TiktokenEstimator(cache_size=cache_size)  # type: ignore[arg-type]


def test_unknown_encoding_name_is_a_validation_error() -> None:
    with pytest.raises(cutctx.ValidationError) as caught:
        TiktokenEstimator(encoding="o300k_base")
    assert caught.value.details["encoding"] == "o300k_base"


def test_empty_model_name_is_refused() -> None:
    with pytest.raises(cutctx.ValidationError):
        TiktokenEstimator("")


def test_unknown_model_falls_back_to_o200k_and_warns_once_per_name() -> None:
    model = f"acme-llm-{uuid.uuid4().hex}"
    with pytest.warns(UnknownModelWarning, match=model) as record:
        first = TiktokenEstimator(model)
    assert record[0].filename == __file__  # points at the caller
    assert first.encoding_name == "o200k_base"
    assert first.model == model
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        second = TiktokenEstimator(model)
    assert again == []
    assert second.encoding_name == "o200k_base"
    with pytest.warns(UnknownModelWarning):
        TiktokenEstimator(f"acme-llm-{uuid.uuid4().hex}")


# --- counting -------------------------------------------------------------------------------


def test_published_count_tiktoken_is_great() -> None:
    # cookbook: "tiktoken is great!" is 6 tokens in cl100k_base
    assert TiktokenEstimator("gpt-4").estimate_tokens("tiktoken is great!") == 6
    assert TiktokenEstimator("gpt-4o").estimate_tokens("tiktoken is great!") == 6


def test_empty_text_is_zero_tokens(o200k: TiktokenEstimator) -> None:
    assert o200k.estimate_tokens("") == 0


@pytest.mark.parametrize("special", ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>"])
def test_special_token_text_counts_as_ordinary_text(
    o200k: TiktokenEstimator, cl100k: TiktokenEstimator, special: str
) -> None:
    text = f"before {special} after"
    for estimator in (o200k, cl100k):
        count = estimator.estimate_tokens(text)
        assert count == len(estimator.encoding.encode_ordinary(text))
        assert count > len(estimator.encoding.encode_ordinary("before  after"))


def test_non_str_is_a_type_error(o200k: TiktokenEstimator) -> None:
    with pytest.raises(TypeError):
        o200k.estimate_tokens(b"bytes")  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_count_is_len_of_encode_ordinary(text: str) -> None:
    estimator = TiktokenEstimator(encoding="o200k_base")
    assert estimator.estimate_tokens(text) == len(estimator.encoding.encode_ordinary(text))


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(max_size=50), max_size=30))
def test_cache_never_changes_answers(texts: list[str]) -> None:
    cached = TiktokenEstimator(encoding="cl100k_base", cache_size=4)
    uncached = TiktokenEstimator(encoding="cl100k_base", cache_size=0)
    first = [cached.estimate_tokens(text) for text in texts]
    second = [cached.estimate_tokens(text) for text in reversed(texts)]
    assert first == [uncached.estimate_tokens(text) for text in texts]
    assert second == first[::-1]


# --- long texts: counted in pieces, exactly --------------------------------------------------

# Characters and snippets around every rule of the split patterns: whitespace of each kind
# (Python's and the patterns'), newlines before slashes and letters, contractions, letter case
# runs, marks, digits, punctuation runs, surrogates, astral characters.
_TRICKY = [" ", "\n", "\r", "\t", "/", "'", "a", "Z", "é", "ß", "中", "1", "9",
           ".", ",", "-", '"', "(", "\u0301", "\u00a0", "\u2028", "\x1c", "\x85", "\u3000",
           "\u180e", "\u200b", "😀", "’", "\ud800", "\udc00"]
_SNIPPETS = ["don't", "'s", "'LL", "HTTPServer", "iPhone", "123456", "...\n", ".\n/", "\n\n",
             " \n", "\n ", "a\n/b", "x/y", "<|endoftext|>", "def f():\n    return 1\n",
             '{"k":"v","n":[1,2]}', "naïve café", "ЁЖИК", "👍🏽"]
_texts = st.lists(st.sampled_from(_SNIPPETS) | st.text(st.sampled_from(_TRICKY), max_size=4)
                  | st.text(max_size=3), max_size=60).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=_texts, size=st.integers(min_value=1, max_value=12))
def test_pieces_count_as_the_whole_text(text: str, size: int) -> None:
    pieces = list(tiktoken_module._pieces(text, size))
    assert "".join(pieces) == text
    for name in ("o200k_base", "cl100k_base"):
        encoding = tiktoken.get_encoding(name)
        assert (sum(len(encoding.encode_ordinary(piece)) for piece in pieces)
                == len(encoding.encode_ordinary(text)))


def test_a_long_text_is_counted_in_pieces_with_the_whole_texts_count(
        o200k: TiktokenEstimator, cl100k: TiktokenEstimator) -> None:
    line = "Traceback (most recent call last): File \"app.py\", line 12, in <module>\n"
    text = line * (3 * tiktoken_module.PIECE_CHARS // len(line))
    assert len(list(tiktoken_module._pieces(text, tiktoken_module.PIECE_CHARS))) >= 3
    for estimator in (o200k, cl100k):
        assert estimator.estimate_tokens(text) == len(estimator.encoding.encode_ordinary(text))


def test_a_long_text_is_cached_by_hash_not_held(o200k: TiktokenEstimator) -> None:
    text = "word " * (tiktoken_module.PIECE_CHARS * 2)
    first = o200k.estimate_tokens(text)
    assert o200k.estimate_tokens("".join(["word "] * (tiktoken_module.PIECE_CHARS * 2))) == first
    assert o200k.cache_info() == CacheInfo(hits=1, misses=1, size=1, maxsize=65536)
    assert all(type(key) is bytes and len(key) == 32 for key in o200k._long._entries)  # sha256


def test_only_the_registered_split_patterns_are_cut() -> None:
    base = tiktoken.get_encoding("o200k_base")
    assert tiktoken_module._splits_safely(base)
    assert tiktoken_module._splits_safely(tiktoken.get_encoding("cl100k_base"))
    other = tiktoken.Encoding("o200k_base", pat_str=r"\S+|\s+",
                              mergeable_ranks=base._mergeable_ranks, special_tokens={})
    assert not tiktoken_module._splits_safely(other)


# --- the cache ------------------------------------------------------------------------------


def test_unchanged_text_is_tokenized_once(o200k: TiktokenEstimator) -> None:
    history = ["a system prompt", "a question", "a long answer " * 100]
    for _ in range(5):  # a growing history is re-estimated on every call
        for text in history:
            o200k.estimate_tokens(text)
    assert o200k.cache_info() == CacheInfo(hits=12, misses=3, size=3, maxsize=65536)


def test_cache_is_a_bounded_lru() -> None:
    estimator = TiktokenEstimator(cache_size=2)
    for text in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        estimator.estimate_tokens(text)
    assert estimator.cache_info() == CacheInfo(hits=1, misses=3, size=2, maxsize=2)
    estimator.estimate_tokens("a")
    assert estimator.cache_info().hits == 2
    estimator.estimate_tokens("b")
    assert estimator.cache_info().misses == 4


def test_cache_size_zero_tokenizes_every_time() -> None:
    estimator = TiktokenEstimator(cache_size=0)
    estimator.estimate_tokens("same")
    estimator.estimate_tokens("same")
    assert estimator.cache_info() == CacheInfo(hits=0, misses=2, size=0, maxsize=0)


def test_cache_clear_empties_the_cache(o200k: TiktokenEstimator) -> None:
    o200k.estimate_tokens("text")
    o200k.cache_clear()
    assert o200k.cache_info() == CacheInfo(hits=0, misses=0, size=0, maxsize=65536)


def test_concurrent_counting_gives_the_same_answers() -> None:
    texts = [f"turn {i}: " + "word " * (i % 37) + "<|endoftext|>" * (i % 3) for i in range(300)]
    reference = TiktokenEstimator(cache_size=0)
    expected = [reference.estimate_tokens(text) for text in texts]
    shared = TiktokenEstimator(cache_size=64)  # small, so threads evict each other constantly
    mismatches: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(worker: int) -> None:
        order = texts[worker:] + texts[:worker]
        want = expected[worker:] + expected[:worker]
        try:
            start.wait()
            for _ in range(3):
                if [shared.estimate_tokens(text) for text in order] != want:
                    mismatches.append(worker)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (errors, mismatches) == ([], [])
    info = shared.cache_info()
    assert info.size <= 64
    assert info.hits + info.misses == 16 * 3 * len(texts)


def test_repr_names_model_encoding_and_cache() -> None:
    assert repr(TiktokenEstimator("gpt-4")) == (
        "TiktokenEstimator(model='gpt-4', encoding='cl100k_base', cache_size=65536)"
    )


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(tiktoken_module, raise_on_error=True).attempted > 0


# --- offline -------------------------------------------------------------------------------


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No encoding loaded yet, an empty cache directory, and every download failing at once."""

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise ConnectionError("network disabled in tests")
        with open(blobpath, "rb") as file:
            return file.read()

    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return empty


def test_missing_bpe_file_raises_tokenizer_unavailable(offline: Path) -> None:
    started = time.monotonic()
    with pytest.raises(TokenizerUnavailable) as caught:
        TiktokenEstimator()
    assert time.monotonic() - started < 5
    error = caught.value
    assert isinstance(error, cutctx.CompactionError)
    assert error.code == "TOKENIZER_UNAVAILABLE"
    assert error.details == {"encoding": "o200k_base"}
    message = str(error)
    assert "TIKTOKEN_CACHE_DIR" in message
    assert "fb374d419588a4632f3f557e76b4b70aebbca790" in message
    assert "o200k_base.tiktoken" in message
    assert "encoding_from_file" in message
    assert "load_tiktoken_bpe" in message
    assert "network" in message
    assert isinstance(error.__cause__, ConnectionError)


def test_missing_bpe_file_by_model_names_that_models_file(offline: Path) -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        TiktokenEstimator("gpt-4")
    assert caught.value.details == {"encoding": "cl100k_base"}
    assert "9b5ad71b2ce5302211f9c61530b329a4922fc6a4" in str(caught.value)


def test_tokenizer_unavailable_pickles_with_details(offline: Path) -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        load_encoding("o200k_base")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (type(copy), copy.code, copy.details, str(copy)) == (
        TokenizerUnavailable,
        "TOKENIZER_UNAVAILABLE",
        {"encoding": "o200k_base"},
        str(caught.value),
    )


def test_encoding_from_file_works_offline(offline: Path, tiktoken_cache: Path) -> None:
    encoding = encoding_from_file(bpe_file(tiktoken_cache, "o200k_base"))
    assert encoding.name == "o200k_base"
    assert encoding.special_tokens_set == {"<|endoftext|>", "<|endofprompt|>"}
    estimator = TiktokenEstimator(encoding=encoding)
    assert estimator.encoding_name == "o200k_base"
    assert estimator.estimate_tokens("tiktoken is great! <|endoftext|>") == 13
    assert list(offline.iterdir()) == []  # nothing was written to the cache directory


def test_encoding_from_file_matches_the_registered_encoding(tiktoken_cache: Path) -> None:
    registered = tiktoken.get_encoding("cl100k_base")
    built = encoding_from_file(bpe_file(tiktoken_cache, "cl100k_base"), "cl100k_base")
    text = "Let's circle back when we have more bandwidth. 12345 <|endoftext|> お誕生日"
    assert built.encode_ordinary(text) == registered.encode_ordinary(text)
    assert built.encode(text, allowed_special="all") == registered.encode(
        text, allowed_special="all"
    )
    assert built.n_vocab == registered.n_vocab


def test_encoding_from_file_refuses_another_encodings_file(tiktoken_cache: Path) -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        encoding_from_file(bpe_file(tiktoken_cache, "o200k_base"), "cl100k_base")
    assert caught.value.details == {"encoding": "cl100k_base"}
    assert "sha256" in str(caught.value)


def test_encoding_from_file_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        encoding_from_file(tmp_path / "nowhere.tiktoken")
    assert caught.value.details == {"encoding": "o200k_base"}


def test_encoding_from_file_refuses_a_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.tiktoken"
    path.write_bytes(b"not base64! 0\n")
    with pytest.raises(TokenizerUnavailable, match="sha256") as caught:
        encoding_from_file(path)
    assert caught.value.details == {"encoding": "o200k_base"}


def test_encoding_from_file_refuses_encodings_without_a_tiktoken_file(tmp_path: Path) -> None:
    with pytest.raises(cutctx.ValidationError):
        encoding_from_file(tmp_path / "vocab.bpe", "gpt2")

"""Token estimation with tiktoken: a cached, thread-safe ``cutctx.TokenEstimator``.

Text is counted with ``encode_ordinary``: transcript text is untrusted and may contain
special-token text such as ``<|endoftext|>``, which must count as text, not raise. Counts are kept
in a bounded LRU cache keyed by the text, so a growing history is tokenized once per distinct
string rather than on every call. A very long text is counted in pieces cut where the encoding's
pre-tokenizer never joins two characters (``_pieces``), so counting it holds one piece's tokens at
a time, not a list of them all; the count is the same.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import importlib
import os
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import tiktoken
import tiktoken.registry

from cutctx import ValidationError

from .errors import TokenizerUnavailable

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_ENCODING",
    "CacheInfo",
    "TiktokenEstimator",
    "UnknownModelWarning",
    "encoding_from_file",
    "load_encoding",
]

DEFAULT_ENCODING = "o200k_base"
"""The encoding used when neither a model nor an encoding is given."""
DEFAULT_CACHE_SIZE = 65536
"""Texts whose counts an estimator remembers (an LRU)."""
PIECE_CHARS = 1 << 18
"""Characters of a long text encoded at a time (the cut falls at the next safe boundary)."""


class UnknownModelWarning(UserWarning):
    """tiktoken does not map this model name to an encoding; ``DEFAULT_ENCODING`` is used."""


class CacheInfo(NamedTuple):
    """Counters of a ``TiktokenEstimator``'s cache; ``misses`` is the number of tokenizations."""

    hits: int
    misses: int
    size: int
    maxsize: int


class TiktokenEstimator:
    """Count tokens with a tiktoken encoding chosen by model name, encoding name, or ``Encoding``.

    Give a model name *or* an encoding, or neither (``o200k_base``). A model tiktoken does not know
    falls back to ``o200k_base`` with an ``UnknownModelWarning``, once per model name per process.

    >>> estimator = TiktokenEstimator("gpt-4o")
    >>> estimator.encoding_name
    'o200k_base'
    >>> estimator.estimate_tokens("tiktoken is great!")
    6
    >>> estimator.estimate_tokens("tiktoken is great!")
    6
    >>> estimator.cache_info()
    CacheInfo(hits=1, misses=1, size=1, maxsize=65536)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding: str | tiktoken.Encoding | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if model is not None and encoding is not None:
            raise ValidationError(
                "give a model or an encoding, not both",
                {"field": "encoding", "rule": "model_xor_encoding"},
            )
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValidationError(
                "cache_size must be an int >= 0", {"field": "cache_size", "rule": "non_negative"}
            )
        if isinstance(encoding, tiktoken.Encoding):
            self._encoding = encoding
        elif isinstance(encoding, str):
            self._encoding = load_encoding(encoding)
        elif encoding is not None:
            raise ValidationError(
                "encoding must be an encoding name or a tiktoken.Encoding",
                {"field": "encoding", "rule": "type", "type": type(encoding).__name__},
            )
        elif model is not None:
            self._encoding = load_encoding(_encoding_name_for_model(model))
        else:
            self._encoding = load_encoding(DEFAULT_ENCODING)
        self._model = model
        self._maxsize = cache_size
        encode = self._encoding.encode_ordinary
        splits = _splits_safely(self._encoding)

        def count(text: str) -> int:
            if not splits or len(text) <= 2 * PIECE_CHARS:
                return len(encode(text))
            return sum(len(encode(piece)) for piece in _pieces(text, PIECE_CHARS))

        # functools' C LRU is thread-safe and costs ~0.1 µs a hit, against ~2 µs to tokenize even
        # a short string, so every text goes through it. It holds the encoding, never ``self``.
        self._count = functools.lru_cache(maxsize=cache_size)(count)
        self._long = _LongCounts(count, min(cache_size, _LONG_ENTRIES))

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The tiktoken encoding used for counting."""
        return self._encoding

    @property
    def encoding_name(self) -> str:
        """The encoding's name, e.g. ``"o200k_base"``."""
        return self._encoding.name

    @property
    def model(self) -> str | None:
        """The model name given at construction (even if tiktoken did not know it), else None."""
        return self._model

    def estimate_tokens(self, text: str) -> int:
        """The number of tokens in ``text``, special-token text counted as ordinary text."""
        if not isinstance(text, str):
            raise TypeError(f"estimate_tokens expects str, got {type(text).__name__}")
        if len(text) > _LONG_CHARS:
            return self._long.count(text)
        return self._count(text)

    def cache_info(self) -> CacheInfo:
        """Hits, misses (tokenizations), current size and bound of the count cache."""
        info = self._count.cache_info()
        return CacheInfo(info.hits + self._long.hits, info.misses + self._long.misses,
                         info.currsize + len(self._long), self._maxsize)

    def cache_clear(self) -> None:
        """Empty the count cache and reset its counters."""
        self._count.cache_clear()
        self._long.clear()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self._model!r}, encoding={self.encoding_name!r}, "
            f"cache_size={self._maxsize})"
        )


def load_encoding(name: str) -> tiktoken.Encoding:
    """tiktoken's encoding ``name`` (cached process-wide by tiktoken), or a clear error.

    Raises ``TokenizerUnavailable`` when its BPE file cannot be loaded (no network, no cache), and
    ``cutctx.ValidationError`` for a name tiktoken does not know.
    """
    known = tiktoken.list_encoding_names()
    if name not in known:
        raise ValidationError(
            f"unknown tiktoken encoding {name!r}; known: {', '.join(known)}",
            {"encoding": name, "field": "encoding", "rule": "known_encoding"},
        )
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network, missing optional dependency, hash mismatch, cache I/O
        raise _unavailable(name, exc) from exc


def encoding_from_file(
    path: str | os.PathLike[str], name: str = DEFAULT_ENCODING
) -> tiktoken.Encoding:
    """Build encoding ``name`` from a local ``.tiktoken`` file, without network or cache directory.

    The split pattern and special tokens are those of tiktoken's registered ``name``; the file must
    be the one tiktoken would download for it (its sha256 is checked). Results are cached per file.
    """
    request = _bpe_request(name)
    if request is None:
        raise ValidationError(
            f"encoding {name!r} is not built from a single .tiktoken file",
            {"encoding": name, "field": "name", "rule": "tiktoken_file_encoding"},
        )
    resolved = os.fspath(Path(path).resolve())
    try:
        stat = os.stat(resolved)
        return _encoding_from_file(
            resolved, name, request.expected_hash, stat.st_mtime_ns, stat.st_size
        )
    except OSError as exc:
        raise TokenizerUnavailable(
            f"cannot read the BPE file for encoding {name!r} at {resolved!r} "
            f"({type(exc).__name__})",
            {"encoding": name},
        ) from exc


# ----------------------------------------------------------------------------------------------
# internals

_LONG_CHARS = 1 << 20
"""Texts longer than this are cached by their sha256, not held by the cache."""
_LONG_ENTRIES = 256


class _LongCounts:
    """Counts of long texts keyed by their sha256 (hashed piece by piece), so the cache holds no
    copy of, nor reference to, a text of many megabytes. Thread-safe; LRU."""

    def __init__(self, count: Callable[[str], int], maxsize: int) -> None:
        self._counted = count
        self._maxsize = maxsize
        self._entries: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def count(self, text: str) -> int:
        digest = hashlib.sha256()
        for start in range(0, len(text), PIECE_CHARS):
            digest.update(text[start:start + PIECE_CHARS].encode("utf-8", "surrogatepass"))
        key = digest.digest()
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        value = self._counted(text)
        with self._lock:
            self.misses += 1
            if self._maxsize:
                self._entries[key] = value
                while len(self._entries) > self._maxsize:
                    self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


# Where a text can be cut without changing its count: no pre-token of the encodings below
# (their split patterns, as tiktoken registers them) spans such a position, and none is decided
# by looking past it (their only look-arounds, ``\s+(?!\S)`` and ``\s++$``, sit in whitespace
# runs, which no cut ends), so each piece splits exactly as it does inside the whole text:
#  * before a space that follows a non-space (no pre-token holds a non-space then a space);
#  * after a newline between two non-spaces, unless a "/" follows (o200k lets punctuation take
#    the newlines and slashes after it);
#  * between an ASCII letter and an ASCII non-letter other than an apostrophe (a letter run ends
#    there: o200k's contractions start with the apostrophe).
# Python's ``\s`` holds every character the patterns' ``\s`` does (and a few more), so these
# cuts are never fewer-safe. tests/test_tiktoken_estimator.py checks the counts against
# encoding the whole text.
_CUT = re.compile(r"(?<=\S)(?= )|(?<=\S\n)(?=[^\s/])|(?<=[A-Za-z])(?=[\x00-\x7f])(?![A-Za-z'])")
_SAFELY_SPLIT = frozenset({"cl100k_base", "o200k_base", "o200k_harmony"})
"""Encodings whose registered split pattern the cuts were checked against."""


def _splits_safely(encoding: tiktoken.Encoding) -> bool:
    """Whether ``encoding`` splits text with the pattern registered for one of
    ``_SAFELY_SPLIT`` (a custom encoding of the same name but another pattern does not)."""
    if encoding.name not in _SAFELY_SPLIT:
        return False
    try:
        registered = _construct(encoding.name, lambda *_args, **_kwargs: {})
    except Exception:  # a tiktoken whose constructors look otherwise: encode whole texts
        return False
    return bool(registered.get("pat_str") == getattr(encoding, "_pat_str", None))


def _pieces(text: str, size: int) -> Iterator[str]:
    """``text`` in consecutive pieces of about ``size`` characters or more, cut only where
    ``_CUT`` allows (one piece, the whole text, when it allows nowhere)."""
    start = 0
    while len(text) - start > size:
        cut = _CUT.search(text, start + size)
        if cut is None:
            break
        yield text[start:cut.start()]
        start = cut.start()
    yield text[start:]


_warned_models: set[str] = set()
_warned_lock = threading.Lock()


def _encoding_name_for_model(model: str) -> str:
    if not isinstance(model, str) or not model:
        raise ValidationError(
            "model must be a non-empty str", {"field": "model", "rule": "non_empty_str"}
        )
    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        pass
    with _warned_lock:
        first = model not in _warned_models
        _warned_models.add(model)
    if first:
        warnings.warn(
            f"tiktoken does not know the model {model!r}; counting with {DEFAULT_ENCODING}",
            UnknownModelWarning,
            stacklevel=3,
        )
    return DEFAULT_ENCODING


_BpeLoader = Callable[..., dict[bytes, int]]


class _BpeRequest(Exception):
    """Raised by a stand-in loader to report which file a constructor asked for."""

    def __init__(self, url: str, expected_hash: str | None) -> None:
        super().__init__(url)
        self.url = url
        self.expected_hash = expected_hash


class _NotATiktokenFile(Exception):
    """The encoding is not built from a single ``.tiktoken`` file (e.g. ``gpt2``)."""


def _refuse_data_gym(*_args: Any, **_kwargs: Any) -> dict[bytes, int]:
    raise _NotATiktokenFile


# tiktoken has no public way to get an encoding's split pattern and special tokens, or the URL of
# its file, without downloading that file: we run its registered constructor with a stand-in for
# the download, under tiktoken's own registry lock so no concurrent construction sees the swap.
_CONSTRUCTOR_LOCK: Any = getattr(tiktoken.registry, "_lock", None) or threading.RLock()


def _construct(name: str, loader: _BpeLoader) -> dict[str, Any]:
    module: Any = importlib.import_module("tiktoken_ext.openai_public")
    constructors: Mapping[str, Callable[[], dict[str, Any]]] = module.ENCODING_CONSTRUCTORS
    constructor = constructors.get(name)
    if constructor is None:
        raise ValidationError(
            f"{name!r} is not an encoding registered by tiktoken_ext.openai_public",
            {"encoding": name, "field": "name", "rule": "known_encoding"},
        )
    with _CONSTRUCTOR_LOCK:
        saved = module.load_tiktoken_bpe, module.data_gym_to_mergeable_bpe_ranks
        module.load_tiktoken_bpe, module.data_gym_to_mergeable_bpe_ranks = loader, _refuse_data_gym
        try:
            return dict(constructor())
        finally:
            module.load_tiktoken_bpe, module.data_gym_to_mergeable_bpe_ranks = saved


def _bpe_request(name: str) -> _BpeRequest | None:
    """The URL and expected sha256 of the file tiktoken downloads for ``name``; None if the
    encoding is not built from one ``.tiktoken`` file."""

    def report(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        raise _BpeRequest(url, expected_hash)

    try:
        _construct(name, report)
    except _BpeRequest as request:
        return request
    except _NotATiktokenFile:
        return None
    return None


def _unavailable(name: str, cause: BaseException) -> TokenizerUnavailable:
    try:
        request = _bpe_request(name)
    except Exception:  # a constructor of another shape: the message just says less
        request = None
    if request is None:
        ways = "set TIKTOKEN_CACHE_DIR to a directory where tiktoken has cached its files"
    else:
        file_name = request.url.rsplit("/", 1)[-1]
        cache_name = hashlib.sha1(request.url.encode()).hexdigest()
        ways = (
            f"set TIKTOKEN_CACHE_DIR to a directory holding {file_name} saved under the name "
            f"{cache_name} (the sha1 of its URL {request.url}); or build the encoding from a "
            f"local copy with cutctx_adapters.tiktoken.encoding_from_file(path, {name!r}) (or "
            f"from tiktoken.load.load_tiktoken_bpe(path)) and pass it as "
            f"TiktokenEstimator(encoding=...)"
        )
    return TokenizerUnavailable(
        f"tiktoken could not load encoding {name!r} ({type(cause).__name__}; no network and no "
        f"cached copy?). To supply it: {ways}; or run once with network access so tiktoken "
        f"caches it.",
        {"encoding": name},
    )


def _parse_tiktoken_file(data: bytes, source: str, name: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        token, _, rank = line.partition(b" ")
        try:
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (binascii.Error, ValueError) as exc:
            raise TokenizerUnavailable(
                f"{source!r} is not a .tiktoken file: line {number} is not '<base64> <rank>'",
                {"encoding": name},
            ) from exc
    return ranks


@functools.lru_cache(maxsize=8)
def _encoding_from_file(
    path: str, name: str, expected_hash: str | None, _mtime_ns: int, _size: int
) -> tiktoken.Encoding:
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise TokenizerUnavailable(
            f"{path!r} is not the BPE file of encoding {name!r} (sha256 {digest}, expected "
            f"{expected_hash})",
            {"encoding": name},
        )
    ranks = _parse_tiktoken_file(data, path, name)
    return tiktoken.Encoding(**_construct(name, lambda *_args, **_kwargs: ranks))

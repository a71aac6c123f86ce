"""``SQLiteStore``: a file shared by the processes of one machine, kept across restarts.

One connection per process (re-opened after a fork), used under a lock by its threads. The file
is in WAL mode so readers never wait for a writer; writers wait up to ``busy_timeout`` and then
fail as ``StoreUnavailable``. Times are wall-clock (``time.time``): processes share them.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from cutctx import ValidationError

from . import _base
from ._base import ThreadTwins

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cutctx_values (
    key TEXT PRIMARY KEY, value BLOB NOT NULL, size INTEGER NOT NULL,
    expires_at REAL, stored_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS cutctx_values_age ON cutctx_values (stored_at, key);
CREATE INDEX IF NOT EXISTS cutctx_values_expiry ON cutctx_values (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS cutctx_claims (
    key TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cutctx_totals (
    id INTEGER PRIMARY KEY CHECK (id = 0), entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO cutctx_totals VALUES (0, 0, 0);
CREATE TRIGGER IF NOT EXISTS cutctx_values_added AFTER INSERT ON cutctx_values BEGIN
    UPDATE cutctx_totals SET entries = entries + 1, bytes = bytes + NEW.size WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS cutctx_values_removed AFTER DELETE ON cutctx_values BEGIN
    UPDATE cutctx_totals SET entries = entries - 1, bytes = bytes - OLD.size WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS cutctx_values_resized AFTER UPDATE OF size ON cutctx_values BEGIN
    UPDATE cutctx_totals SET bytes = bytes + NEW.size - OLD.size WHERE id = 0; END;
"""
_PUT = """
INSERT INTO cutctx_values (key, value, size, expires_at, stored_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, size = excluded.size,
    expires_at = excluded.expires_at, stored_at = excluded.stored_at
"""
# One statement: take the claim if nobody holds it or the holder's lease has run out.
_CLAIM = """
INSERT INTO cutctx_claims (key, token, expires_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
    WHERE cutctx_claims.expires_at <= ?
"""
_CHUNK = 500  # keys per SELECT, well under SQLite's limit on bound parameters
_BUSY = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED: another connection holds the file, for now

# A forked child must neither use nor close its parent's connection (closing could checkpoint
# the parent's WAL): the child keeps it here, untouched, and opens its own.
_INHERITED: list[sqlite3.Connection] = []
_STORES: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()


class SQLiteStore(ThreadTwins):
    """Values and claims in an SQLite file at ``path`` (its directory must exist). The file is
    opened when the store is made: a path that cannot hold it is a ``ValidationError`` then,
    not an outage later.

    Past ``max_entries`` or ``max_bytes`` (keys plus values) the oldest-written values are
    evicted; a value larger than ``max_bytes`` on its own is not stored. Expired values are
    never returned and are purged on writes. ``ttl`` is the default lifetime (``None``: none).
    The async twins (``aget``, ...) run in a worker thread, off the event loop.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_entries: int = 100_000,
                 max_bytes: int = 512 * 1024 * 1024, ttl: float | None = None,
                 busy_timeout: float = 5.0) -> None:
        self.path = _file_path(path)
        self.max_entries = _base.check_limit(max_entries, "max_entries")
        self.max_bytes = _base.check_limit(max_bytes, "max_bytes")
        self.ttl = _base.check_optional_seconds(ttl, "ttl")
        self.busy_timeout = _base.check_seconds(busy_timeout, "busy_timeout")
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False
        self._open_now()
        _STORES.add(self)

    def __repr__(self) -> str:
        return (f"SQLiteStore(path={self.path!r}, max_entries={self.max_entries}, "
                f"max_bytes={self.max_bytes}, ttl={self.ttl})")

    def get(self, key: str) -> bytes | None:
        _base.check_key(key)
        with self._use("get") as db:
            row = db.execute(
                "SELECT value FROM cutctx_values WHERE key = ? "
                "AND (expires_at IS NULL OR expires_at > ?)", (key, time.time())).fetchone()
        return None if row is None else bytes(row[0])

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = _base.check_keys(keys)
        unique = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        with self._use("get_many") as db, _read_transaction(db, len(unique) > _CHUNK):
            now = time.time()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start:start + _CHUNK]
                rows = db.execute(
                    f"SELECT key, value FROM cutctx_values WHERE key IN "
                    f"({', '.join('?' * len(chunk))}) AND (expires_at IS NULL OR expires_at > ?)",
                    (*chunk, now))
                found.update((name, bytes(value)) for name, value in rows)
        return [found.get(key) for key in keys]

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        _base.check_key(key)
        _base.check_value(value)
        lifetime = _base.check_optional_seconds(ttl, "ttl") or self.ttl
        size = len(key) + len(value)
        with self._use("put") as db, _write_transaction(db):
            now = time.time()
            if size > self.max_bytes:
                db.execute("DELETE FROM cutctx_values WHERE key = ?", (key,))
                return
            expires_at = None if lifetime is None else now + lifetime
            db.execute(_PUT, (key, value, size, expires_at, now))
            db.execute("DELETE FROM cutctx_values WHERE expires_at <= ?", (now,))
            db.execute("DELETE FROM cutctx_claims WHERE expires_at <= ?", (now,))
            self._evict(db)

    def claim(self, key: str, *, lease: float) -> str | None:
        _base.check_key(key)
        seconds = _base.check_seconds(lease, "lease")
        token = secrets.token_hex(16)
        with self._use("claim") as db:
            now = time.time()
            taken = db.execute(_CLAIM, (key, token, now + seconds, now)).rowcount == 1
        return token if taken else None

    def release(self, key: str, token: str) -> None:
        _base.check_key(key)
        with self._use("release") as db:
            db.execute("DELETE FROM cutctx_claims WHERE key = ? AND token = ?", (key, token))

    def close(self) -> None:
        """Close this process's connection; later calls raise ``StoreUnavailable``."""
        with self._lock:
            self._closed = True
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    @contextmanager
    def _use(self, operation: str) -> Iterator[sqlite3.Connection]:
        """This process's connection, under the lock; sqlite errors become StoreUnavailable."""
        with self._lock:
            if self._closed:
                raise _base.unavailable(self, operation, None)
            try:
                yield self._connect()
            except sqlite3.Error as exc:
                raise _base.unavailable(self, operation, exc) from exc

    def _connect(self) -> sqlite3.Connection:
        if self._pid != os.getpid():
            self._after_fork()
        if self._connection is None:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                 check_same_thread=False)
            try:
                _use_wal(db, time.monotonic() + self.busy_timeout)
                db.execute("PRAGMA synchronous = NORMAL")
                with _write_transaction(db):
                    for statement in _statements(_SCHEMA):
                        db.execute(statement)
            except BaseException:
                db.close()
                raise
            self._connection = db
        return self._connection

    def _open_now(self) -> None:
        """Open (and set up) the file while the store is made, so a path that cannot hold it
        (no place for files, not a database, a full device) is refused with its cause; a file
        another process holds locked is an outage, met on first use instead."""
        try:
            with self._lock:
                self._connect()
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY:
                return
            name = getattr(exc, "sqlite_errorname", type(exc).__name__)
            raise ValidationError(
                f"SQLiteStore cannot use {self.path!r}: {exc} ({name})",
                {"rule": "store_database", "path": self.path, "cause": name}) from exc

    def _after_fork(self) -> None:
        """In a forked child: put the parent's connection aside and start with a fresh lock."""
        if self._connection is not None:
            _INHERITED.append(self._connection)
        self._connection = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _evict(self, db: sqlite3.Connection) -> None:
        entries, total = db.execute(
            "SELECT entries, bytes FROM cutctx_totals WHERE id = 0").fetchone()
        extra_entries = entries - self.max_entries
        extra_bytes = total - self.max_bytes
        if extra_entries <= 0 and extra_bytes <= 0:
            return
        doomed: list[tuple[str]] = []
        oldest = db.execute("SELECT key, size FROM cutctx_values ORDER BY stored_at, key")
        for key, size in oldest:  # read lazily: only as many rows as must go
            if extra_entries <= 0 and extra_bytes <= 0:
                break
            doomed.append((key,))
            extra_entries -= 1
            extra_bytes -= size
        oldest.close()
        db.executemany("DELETE FROM cutctx_values WHERE key = ?", doomed)


def _file_path(path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise ValidationError("SQLiteStore needs a file path (str or os.PathLike)",
                              {"rule": "store_path", "type": type(path).__name__})
    text = os.fspath(path)
    if not isinstance(text, str) or text in ("", ":memory:") or text.startswith("file:"):
        raise ValidationError("SQLiteStore needs a file path, not an in-memory or URI database",
                              {"rule": "store_path"})
    if Path(text).is_dir():
        raise ValidationError("SQLiteStore's path is a directory; give a file inside it",
                              {"rule": "store_path"})
    directory = Path(text).absolute().parent
    if not directory.is_dir():
        raise ValidationError(f"SQLiteStore's directory {str(directory)!r} does not exist "
                              "(create it first)", {"rule": "store_directory",
                                                    "directory": str(directory)})
    return text


def _use_wal(db: sqlite3.Connection, deadline: float) -> None:
    """Switch the file to WAL. The switch fails at once, busy timeout or not, while another
    process opens the file, so it is retried until ``deadline``."""
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _statements(script: str) -> list[str]:
    """Split the schema on statement ends (triggers end with ``END;``, their inner ``;`` not)."""
    statements: list[str] = []
    current = ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current)
            current = ""
    return statements


@contextmanager
def _write_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE (take the write lock now, waiting up to the busy timeout) ... COMMIT."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        _rollback(db)
        raise


@contextmanager
def _read_transaction(db: sqlite3.Connection, needed: bool) -> Iterator[None]:
    """One snapshot across several SELECTs (nothing to do for one)."""
    if not needed:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    finally:
        _rollback(db)


def _rollback(db: sqlite3.Connection) -> None:
    # Nothing to roll back, or the connection is gone: the original error is the one to raise.
    with suppress(sqlite3.Error):
        db.execute("ROLLBACK")


def _reset_after_fork() -> None:
    for store in list(_STORES):
        store._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)

"""The PostgreSQL store's connection: opening it (a clear error for what is missing), transactions, reads.

Rule: a server pointed at a PostgreSQL URL never falls back to a SQLite file; an
unreachable server, a missing driver or a database without the ``vector``
extension is a ``StoreError`` that says what is missing. Every write runs under a
transaction-level advisory lock, so writers are serialised across every process
of the database as SQLite serialises them on one file: a duplicate check made
inside a write sees every write acknowledged before it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cuedrecall.errors import StoreError
from cuedrecall.store.postgres.dialect import POSTGRES

WRITE_LOCK = 0x63756564  # the advisory lock key every writer of a cuedrecall database takes ("cued")


def connect(url: str) -> Any:
    """An autocommit psycopg connection with pgvector's adapters; StoreError naming what is missing."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            "a postgresql:// database needs the psycopg driver: pip install 'cuedrecall[postgres]'"
        ) from exc
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the PostgreSQL database {redact(url)}: {exc}".strip()) from exc
    found = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if found is None:
        _create_vector(conn, url)
    try:
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        conn.close()
        raise StoreError(
            "a postgresql:// database needs the pgvector package: pip install 'cuedrecall[postgres]'"
        ) from exc
    register_vector(conn)
    return conn


def _create_vector(conn: Any, url: str) -> None:
    """Create the vector extension when the role may; otherwise say what the database lacks."""
    import psycopg

    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        conn.close()
        raise StoreError(
            f"the PostgreSQL database {redact(url)} lacks the pgvector extension and this role cannot create it: "
            "run CREATE EXTENSION vector; as a role that may (pgvector must be installed on the server)"
        ) from exc


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, user = head.partition("://")
    return f"{scheme}://{user.split(':', 1)[0]}@{tail}"


READER_POOL = 4  # idle reader connections a process keeps (more are opened while more snapshots run at once)


class PgConnection:
    """One connection for writes and plain reads, a pool of reader connections for snapshots, and the
    transaction forms the ``Store`` protocol asks for.

    Rule: a snapshot runs on a reader connection of its own (taken from the pool, opened when none is idle),
    so one thread's recall never waits for another's: concurrent recalls in one server process read at
    once, each in its own REPEATABLE READ transaction. A snapshot opened by the thread that holds a write
    joins the write's transaction (it sees the write's own rows)."""

    read_only = False  # set by a read-only opener (the explorer without --write): ``write`` refuses

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn = connect(url)
        self._closed = False
        self._lock = threading.RLock()
        self._depth = 0  # open write() levels of the main connection
        self._writer: int | None = None  # the thread inside write()
        self._idle: list[Any] = []  # reader connections not in a snapshot
        self._pool_lock = threading.Lock()
        self._local = threading.local()  # .conn / .memo: this thread's open snapshot
        self._session: list[str] = []  # settings every connection of the store runs once opened (ensure_hnsw's)

    def close(self) -> None:
        """Close every connection; what is asked of the store afterwards raises StoreClosedError."""
        with self._lock, self._pool_lock:
            self._closed = True
            for reader in self._idle:
                reader.close()
            self._idle.clear()
            self._conn.close()

    def configure(self, statement: str) -> None:
        """A session setting for every connection of the store, those open now and those opened later."""
        with self._lock, self._pool_lock:
            self._session.append(statement)
            for conn in (self._conn, *self._idle):
                conn.execute(statement)

    @contextmanager
    def translated(self) -> Iterator[None]:
        """The driver's errors raised inside leave as the project's: StoreError (StoreClosedError once the store
        is closed), the driver's error its cause (``Dialect.failure``)."""
        try:
            yield
        except POSTGRES.driver_error as exc:
            raise POSTGRES.failure(exc, closed=self._closed) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read (``_snapshot``); the driver's errors inside it leave as StoreError."""
        with self.translated(), self._snapshot():
            yield

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A consistent read: one REPEATABLE READ transaction on a reader connection (nested snapshots join it;
        one inside this thread's write joins the write)."""
        if getattr(self._local, "conn", None) is not None or self._writer == threading.get_ident():
            yield
            return
        reader = self._take_reader()
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self._local.conn, self._local.memo = reader, {}
        try:
            yield
        finally:
            self._local.conn = self._local.memo = None
            try:
                reader.execute("COMMIT")
            finally:
                self._give_back(reader)

    def _take_reader(self) -> Any:
        with self._pool_lock:
            if self._idle:
                return self._idle.pop()
            session = list(self._session)
        reader = connect(self.url)
        for statement in session:
            reader.execute(statement)
        return reader

    def _give_back(self, reader: Any) -> None:
        """Back to the pool when it is healthy and the pool has room; closed otherwise."""
        with self._pool_lock:
            if not reader.closed and not reader.broken and len(self._idle) < READER_POOL:
                self._idle.append(reader)
                return
        reader.close()

    @contextmanager
    def write(self) -> Iterator[Any]:
        """One write transaction (``_write``); the driver's errors inside it leave as StoreError."""
        with self.translated(), self._write() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One write transaction, serialised with every other writer of the database by the advisory lock."""
        if self.read_only:  # a read-only opener (the explorer without --write)
            raise StoreError("this store was opened for reading only: nothing was written")
        with self._lock:
            if self._depth or getattr(self._local, "conn", None) is not None:
                raise StoreError("write() inside snapshot() or write(): a write is one transaction of its own")
            self._conn.execute("BEGIN")
            self._depth, self._writer = self._depth + 1, threading.get_ident()
            try:
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._depth, self._writer = self._depth - 1, None

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """The connection this thread reads on: its snapshot's, else the main one (held under the lock)."""
        reader = getattr(self._local, "conn", None)
        if reader is not None:
            yield reader
            return
        with self._lock:
            yield self._conn

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of one statement, in this thread's open transaction when there is one."""
        with self.translated(), self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Any:
        """No process-local cache: every server process over the database reads what is committed now."""
        return compute()

    def _per_snapshot(self, key: tuple[Any, ...], compute: Any) -> Any:
        """What one read snapshot computes once (a recall's arms share it): a REPEATABLE READ transaction sees
        the same rows throughout, so the value cannot change inside it. Outside a snapshot, computed each time."""
        memo = getattr(self._local, "memo", None)
        if memo is None:
            return compute()
        if key not in memo:
            memo[key] = compute()
        return memo[key]

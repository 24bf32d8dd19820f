"""The PostgreSQL store's connection: opening it (a clear error for what is missing), transactions, reads.

Rule: a server pointed at a PostgreSQL URL never falls back to a SQLite file; an
unreachable server, a missing driver or a database without the ``vector``
extension is a ``StoreError`` that says what is missing. Every write runs under a
transaction-level advisory lock, so writers are serialised across every process
of the database as SQLite serialises them on one file: a duplicate check made
inside a write sees every write acknowledged before it.

Rule: a connection the server dropped (a restart, a failover, an idle timeout) is opened again between
transactions, never inside one. An idle connection the server ended (it says so before it closes) is replaced
before it is used; one that went without a word is found by its first statement: a write whose ``BEGIN`` fails
on it begins again on a new one (nothing was sent), a plain read outside a transaction is read again once, a
pooled reader that fails its ``BEGIN`` is replaced with the rest of the pool. A statement that fails inside a
transaction fails the call (the caller is told, nothing is acknowledged), and the next call finds a new
connection.
"""

from __future__ import annotations

import re
import select
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from cuedrecall.errors import StoreError
from cuedrecall.store.beside import MISSED, Helpers
from cuedrecall.store.postgres.dialect import POSTGRES

T = TypeVar("T")
_EXPORTED = re.compile(r"[0-9A-Fa-f-]+")  # what pg_export_snapshot() names a snapshot

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
        self._main = connect(url)
        self._closed = False
        self._lock = threading.RLock()
        self._depth = 0  # open write() levels of the main connection
        self._writer: int | None = None  # the thread inside write()
        self.commits = 0  # write transactions this process has committed (caches of counts key on it)
        self._idle: list[Any] = []  # reader connections not in a snapshot
        self._pool_lock = threading.Lock()
        self._local = threading.local()  # .conn / .memo: this thread's open snapshot
        self._session: list[str] = []  # settings every connection of the store runs once opened (ensure_hnsw's)
        self._helpers = Helpers("cuedrecall-beside")  # threads that read beside a snapshot (``beside``)

    @property
    def _conn(self) -> Any:
        """The connection for writes and plain reads (used under ``_lock``): opened again when the server dropped
        it, unless a write is open on it (its transaction is lost: the write fails) or the store is closed."""
        if self._depth == 0 and not self._closed and _stale(self._main):
            old, self._main = self._main, self._open()
            old.close()
        return self._main

    def _open(self) -> Any:
        """A new connection with every session setting of the store."""
        with self._pool_lock:
            session = list(self._session)
        conn = connect(self.url)
        for statement in session:
            conn.execute(statement)
        return conn

    def close(self) -> None:
        """Close every connection; what is asked of the store afterwards raises StoreClosedError."""
        with self._lock, self._pool_lock:
            self._closed = True
            for reader in self._idle:
                reader.close()
            self._idle.clear()
            self._main.close()
        self._helpers.stop()

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

    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Start ``work`` (reads only) on a helper thread inside this thread's snapshot: the helper's transaction
        takes the snapshot PostgreSQL exports for it, so it reads the same rows; when it cannot, this thread
        reads it when asked for (store/beside.py, docs/storage.md#arms-beside-each-other)."""
        reader = getattr(self._local, "conn", None)
        if reader is None or self._writer == threading.get_ident() or not self._helpers.available:
            return work  # no round trip to export a snapshot no helper will take
        exported = reader.execute("SELECT pg_export_snapshot()").fetchone()[0]
        if not _EXPORTED.fullmatch(exported):
            return work
        memo = self._local.memo  # the same snapshot: what one thread read once, the other need not read again
        return self._helpers.start(lambda: self._helped(work, exported, memo), work)

    def _helped(self, work: Callable[[], T], exported: str, memo: dict[Any, Any]) -> Any:
        """``work`` on this helper thread in the exported snapshot, sharing its per-snapshot reads; MISSED when it
        cannot be taken (the snapshot's transaction has ended, the server is gone)."""
        if self._closed:
            return MISSED
        try:
            reader = self._take_reader()
        except (StoreError, POSTGRES.driver_error):
            return MISSED
        try:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            reader.execute(f"SET TRANSACTION SNAPSHOT '{exported}'")
        except POSTGRES.driver_error:
            if not _dropped(reader) and reader.info.transaction_status:
                reader.execute("ROLLBACK")
            self._give_back(reader)
            return MISSED
        self._local.conn, self._local.memo, self._local.helper = reader, memo, True
        try:
            return work()
        finally:
            self._snapshot_ended()
            self._local.conn = self._local.memo = None
            self._local.helper = False
            try:
                if not _dropped(reader):
                    reader.execute("COMMIT")
            finally:
                self._give_back(reader)

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
        try:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except POSTGRES.driver_error:
            if not _dropped(reader):
                self._give_back(reader)
                raise
            reader.close()  # dropped while idle in the pool: so were the others, most likely (a restart)
            self._drop_idle()
            reader = self._take_reader()
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self._local.conn, self._local.memo = reader, {}
        try:
            yield
        finally:
            self._snapshot_ended()
            self._local.conn = self._local.memo = None
            try:
                if not _dropped(reader):  # a dropped reader's snapshot is gone: its failure is the one to raise
                    reader.execute("COMMIT")
            finally:
                self._give_back(reader)

    def _snapshot_ended(self) -> None:
        """What a mixin keeps for one snapshot is given back here (the vector index's hold: vectors.py)."""

    def _snapshot_connection(self) -> Any:
        """The connection of this thread's open snapshot (StoreError outside one)."""
        reader = getattr(self._local, "conn", None)
        if reader is None:
            raise StoreError("a read that needs a snapshot was asked outside one")
        return reader

    def _main_read(self, sql: str) -> list[tuple]:
        """One statement on the main connection, outside any snapshot of this thread (what is committed now)."""
        with self.translated(), self._lock:
            return list(self._conn.execute(sql).fetchall())

    def _take_reader(self) -> Any:
        """An idle reader of the pool the server has not dropped, else a new one."""
        while True:
            with self._pool_lock:
                reader = self._idle.pop() if self._idle else None
            if reader is None:
                return self._open()
            if not _stale(reader):
                return reader
            reader.close()

    def _drop_idle(self) -> None:
        with self._pool_lock:
            idle, self._idle = self._idle, []
        for reader in idle:
            reader.close()

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
            try:
                self._conn.execute("BEGIN")
            except POSTGRES.driver_error:
                if not _dropped(self._main):
                    raise
                self._conn.execute("BEGIN")  # dropped while idle: nothing was sent, so once more on a new one
            conn = self._main
            self._depth, self._writer = self._depth + 1, threading.get_ident()
            try:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield conn
                conn.execute("COMMIT")
                self.commits += 1
            except BaseException:
                if not _dropped(conn):  # a dropped connection's transaction is gone with it
                    conn.execute("ROLLBACK")
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
        """The rows of one statement, in this thread's open transaction when there is one; outside one, read
        again once on a new connection when the server had dropped the main one."""
        with self.translated():
            try:
                with self._connection() as conn:
                    return conn.execute(sql, params).fetchall()
            except POSTGRES.driver_error:
                outside = getattr(self._local, "conn", None) is None and self._writer != threading.get_ident()
                if not (outside and _dropped(self._main)):
                    raise
            with self._connection() as conn:
                return conn.execute(sql, params).fetchall()

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Any:
        """No process-local cache: every server process over the database reads what is committed now. Inside a
        snapshot a value is read once (``_per_snapshot``): a recall asks its calibration and whether the agent has
        a graph from several stages, and one REPEATABLE READ transaction sees the same rows throughout."""
        return self._per_snapshot(key, compute)

    def _per_snapshot(self, key: tuple[Any, ...], compute: Any) -> Any:
        """What one read snapshot computes once (a recall's arms share it): a REPEATABLE READ transaction sees
        the same rows throughout, so the value cannot change inside it. Outside a snapshot, computed each time."""
        memo = getattr(self._local, "memo", None)
        if memo is None:
            return compute()
        if key not in memo:
            memo[key] = compute()
        return memo[key]


def _dropped(conn: Any) -> bool:
    """Whether the server dropped ``conn`` (psycopg marks it once a statement found the connection gone)."""
    return bool(conn.closed or conn.broken)


def _stale(conn: Any) -> bool:
    """Whether an idle ``conn`` is dropped or being dropped: an idle connection outside a transaction has
    nothing to read unless the server ended its session (a shutdown or restart sends the reason, then closes),
    so that is seen before a statement is sent. A server gone without a word is seen by the first statement."""
    if _dropped(conn):
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)

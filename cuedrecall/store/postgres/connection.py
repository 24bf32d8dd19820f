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
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from cuedrecall.errors import StoreError

WRITE_LOCK = 0x63756564  # the advisory lock key every writer of a cuedrecall database takes ("cued")


def connect(url: str) -> Any:
    """An autocommit psycopg connection with pgvector's adapters; StoreError naming what is missing."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError("a postgresql:// database needs the psycopg driver: pip install 'cuedrecall[postgres]'") \
            from exc
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
        raise StoreError("a postgresql:// database needs the pgvector package: pip install 'cuedrecall[postgres]'") \
            from exc
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
            "run CREATE EXTENSION vector; as a role that may (pgvector must be installed on the server)") from exc


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, user = head.partition("://")
    return f"{scheme}://{user.split(':', 1)[0]}@{tail}"


class PgConnection:
    """One connection, a lock around it, and the transaction forms the ``Store`` protocol asks for."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn = connect(url)
        self._lock = threading.RLock()
        self._depth = 0  # open snapshot()/write() levels of this connection
        self._memo: dict[tuple[Any, ...], Any] | None = None  # what one snapshot has read once (None outside)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read: one REPEATABLE READ transaction (nested ones, and one inside a write, join it)."""
        with self._lock:
            if self._depth:
                yield
                return
            self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._depth += 1
            self._memo = {}
            try:
                yield
            finally:
                self._memo = None
                self._depth -= 1
                self._conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[Any]:
        """One write transaction, serialised with every other writer of the database by the advisory lock."""
        with self._lock:
            if self._depth:
                raise StoreError("write() inside snapshot() or write(): a write is one transaction of its own")
            self._conn.execute("BEGIN")
            self._depth += 1
            try:
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._depth -= 1

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of one statement, in the open transaction when there is one."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Any:
        """No process-local cache: every server process over the database reads what is committed now."""
        return compute()

    def _per_snapshot(self, key: tuple[Any, ...], compute: Any) -> Any:
        """What one read snapshot computes once (a recall's arms share it): a REPEATABLE READ transaction sees
        the same rows throughout, so the value cannot change inside it. Outside a snapshot, computed each time."""
        with self._lock:
            if self._memo is None:
                return compute()
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]

"""SQLite's locks between processes: a write waits for another process's write lock within a bound, and a
reading thread gets a connection of its own.

The rule: the driver's "database is locked" never reaches a caller. A write's
``BEGIN IMMEDIATE`` lets SQLite wait ``BUSY_TIMEOUT_MS`` at a time (SQLite answers
busy at once where waiting cannot help) and retries each busy answer, with a short
growing pause, until ``wait_s`` has passed since the write was asked for (its time
queued behind this process's other writers counts: the bound is on the whole wait);
then it raises a StoreError saying the database was busy and nothing was written
(``errors.describe_storage_error`` words it for the caller). Reads never wait on a
writer in WAL mode.
"""

from __future__ import annotations

import sqlite3
import time

from cuedrecall.errors import StoreError

WRITE_WAIT_S = 30.0  # how long a write waits for another process's write lock before it answers "busy"
BUSY_TIMEOUT_MS = 5000  # one wait inside SQLite; a write retries such waits until its bound has passed
WRITE_SLICE_S = 0.25  # SQLite's lock is waited for this long at a time, the process's lock free between
_BUSY_WORDS = ("database is locked", "database is busy", "table is locked")


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite answered busy (another connection holds the lock), not some other failure."""
    return any(word in str(exc).lower() for word in _BUSY_WORDS)


def begin_write(conn: sqlite3.Connection, wait_s: float, deadline: float | None = None) -> None:
    """``BEGIN IMMEDIATE`` on ``conn``, retried while SQLite answers busy, for ``wait_s`` seconds in all, or
    until ``deadline`` (``time.monotonic()``) when one is given: tried once at least."""
    _until_free(conn, "BEGIN IMMEDIATE", wait_s, deadline)


def enter_wal(conn: sqlite3.Connection, wait_s: float | None = None) -> None:
    """Put the database in WAL mode, retried as a write is: two processes opening one file at once both need
    the exclusive lock for the switch, and SQLite answers one of them busy at once (waiting cannot help a
    connection the other is waiting for), so the busy timeout alone does not cover it."""
    _until_free(conn, "PRAGMA journal_mode=WAL", WRITE_WAIT_S if wait_s is None else wait_s)


def _until_free(conn: sqlite3.Connection, statement: str, wait_s: float, deadline: float | None = None) -> None:
    """Run ``statement``, retrying SQLite's busy answer with a short growing pause until ``deadline`` (or
    ``wait_s`` from now); then a StoreError saying the database was busy and nothing was written."""
    deadline = time.monotonic() + wait_s if deadline is None else deadline
    pause = 0.01
    try:
        while True:
            left = deadline - time.monotonic()
            conn.execute(f"PRAGMA busy_timeout={int(max(min(left * 1000, BUSY_TIMEOUT_MS), 0))}")
            try:
                conn.execute(statement)
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"the database is busy: another process held its write lock for over "
                        f"{wait_s:g} s (database is locked); nothing was written"
                    ) from None
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.5)
    finally:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # reads keep the usual wait


def open_reader(path: str) -> sqlite3.Connection:
    """A read-only connection to the database file for one thread's snapshots (WAL: it never blocks a writer)."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only=1")  # a snapshot only reads; a write through it is a bug, refused
    return conn

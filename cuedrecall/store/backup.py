"""A consistent copy of a live SQLite database, through SQLite's online backup API.

The rule: the copy is the database as one committed state. It is taken in one
backup step from a read-only connection of its own; in WAL mode that read holds no
lock a writer waits on, so stores go on (into the WAL) while the pages are copied,
and none of them is half in the copy. The copy is written beside the destination
under a temporary name and renamed over it only once it is whole and checked, so a
crash leaves either no copy or a complete one.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cuedrecall.errors import StoreError


def _read_only(path: Path) -> sqlite3.Connection:
    """The source opened read-only by URI, so a wrong path is an error, never a new empty database."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, isolation_level=None)


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("memories", "episodes", "profiles")}


def backup_database(source: Path, dest: Path) -> dict[str, Any]:
    """Copy ``source`` to ``dest`` (replaced whole if it exists) as one committed state; what the copy holds.

    Raises StoreError when the source cannot be read, is not a cuedrecall database, or the copy fails its
    integrity check; nothing is left at ``dest`` then.
    """
    try:
        return _copy(source, dest)
    except sqlite3.Error as exc:
        raise StoreError(str(exc)) from None


def _copy(source: Path, dest: Path) -> dict[str, Any]:
    partial = dest.with_name(dest.name + ".partial")
    try:
        src = _read_only(source)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {source} read-only: {exc}") from None
    try:
        if src.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() is None:
            raise StoreError(f"{source} is not a cuedrecall database (it has no schema_version table)")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, as the database is
        os.close(fd)
        dst = sqlite3.connect(partial, isolation_level=None)
        try:
            src.backup(dst, pages=-1)  # one step: every page from one read transaction, so one committed state
            dst.execute("PRAGMA journal_mode=DELETE")  # the copy is one self-contained file
            problems = [row[0] for row in dst.execute("PRAGMA integrity_check").fetchall()]
            if problems != ["ok"]:
                raise StoreError(f"the copy failed its integrity check: {'; '.join(problems[:5])}")
            counts = _counts(dst)
            version = dst.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
        finally:
            dst.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    return {**counts, "schema_version": version, "bytes": dest.stat().st_size}

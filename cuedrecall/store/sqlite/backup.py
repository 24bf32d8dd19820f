"""A consistent copy of a live SQLite database, through SQLite's online backup API.

The rule: the copy is the database as one committed state. It is taken in one
backup step from a read-only connection of its own; in WAL mode that read holds no
lock a writer waits on, so stores go on (into the WAL) while the pages are copied,
and none of them is half in the copy. The copy is written beside the destination
under a temporary name and renamed over it only once it is whole and checked, so a
crash leaves either no copy or a complete one.

The temporary copy is made in a fresh private folder (``mkdir`` 0700 in the opened
destination folder, a random name, never one that was there), and SQLite reaches it
through ``/proc/self/fd`` where the platform has it, so neither a planted
``<dest>.partial`` nor a folder swapped for a symbolic link can make it write
elsewhere. The copy is created 0600 (``O_EXCL | O_NOFOLLOW``) and linked (or, with
``replace``, renamed) into the destination folder by its descriptor.
"""

from __future__ import annotations

import errno
import os
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cuedrecall.errors import StoreError


def _read_only(path: Path) -> sqlite3.Connection:
    """The source opened read-only by URI, so a wrong path is an error, never a new empty database."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, isolation_level=None)


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {
        table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("memories", "episodes", "profiles")
    }


def backup_database(source: Path, dest: Path, *, replace: bool = True) -> dict[str, Any]:
    """Copy ``source`` to ``dest`` as one committed state; what the copy holds. An existing ``dest`` is
    replaced whole only with ``replace`` (else FileExistsError, nothing written).

    Raises StoreError when the source cannot be read, is not a cuedrecall database, or the copy fails its
    integrity check; nothing is left at ``dest`` then.
    """
    try:
        return _copy(source, dest, replace)
    except sqlite3.Error as exc:
        raise StoreError(str(exc)) from None


_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
COPY_NAME = "copy.db"


@contextmanager
def _private_folder(folder_fd: int, folder: Path) -> Iterator[tuple[int, str]]:
    """A new 0700 folder of a random name in the open folder: (its descriptor, the path SQLite opens it by).

    Removed (with whatever SQLite left in it) on leaving."""
    for _ in range(16):
        name = f".cuedrecall-backup-{secrets.token_hex(8)}"
        try:
            os.mkdir(name, 0o700, dir_fd=folder_fd)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(errno.EEXIST, "no fresh temporary folder name")
    fd = os.open(name, _DIR | _NOFOLLOW, dir_fd=folder_fd)
    try:
        if os.fstat(fd).st_uid != os.getuid() or stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            raise OSError(errno.EPERM, "the temporary folder is not private")
        # through the descriptor where the platform allows: a folder renamed or swapped meanwhile changes nothing
        by_fd = f"/proc/self/fd/{fd}"
        yield fd, by_fd if os.path.isdir(by_fd) else str(folder / name)
    finally:
        for leftover in os.listdir(fd):
            with suppress(OSError):
                os.unlink(leftover, dir_fd=fd)
        os.close(fd)
        with suppress(OSError):
            os.rmdir(name, dir_fd=folder_fd)


def _copy(source: Path, dest: Path, replace: bool) -> dict[str, Any]:
    try:
        src = _read_only(source)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {source} read-only: {exc}") from None
    folder_fd = os.open(dest.parent, _DIR)
    try:
        if src.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() is None:
            raise StoreError(f"{source} is not a cuedrecall database (it has no schema_version table)")
        with _private_folder(folder_fd, dest.parent) as (private_fd, private_path):
            # created here, private and new; SQLite then opens this very file through the open folder
            os.close(os.open(COPY_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=private_fd))
            held = _fill(src, f"{private_path}/{COPY_NAME}")
            copy_fd = os.open(COPY_NAME, os.O_RDONLY | _NOFOLLOW, dir_fd=private_fd)
            try:
                os.fchmod(copy_fd, 0o600)
                os.fsync(copy_fd)
                size = os.fstat(copy_fd).st_size
            finally:
                os.close(copy_fd)
            _put(private_fd, folder_fd, dest.name, replace)
        with suppress(OSError):
            os.fsync(folder_fd)
    finally:
        os.close(folder_fd)
        src.close()
    return {**held, "bytes": size}


def _fill(src: sqlite3.Connection, path: str) -> dict[str, Any]:
    """The backup into the (empty) file at ``path``, checked; what it holds."""
    dst = sqlite3.connect(path, isolation_level=None)
    try:
        src.backup(dst, pages=-1)  # one step: every page from one read transaction, so one committed state
        dst.execute("PRAGMA journal_mode=DELETE")  # the copy is one self-contained file
        problems = [row[0] for row in dst.execute("PRAGMA integrity_check").fetchall()]
        if problems != ["ok"]:
            raise StoreError(f"the copy failed its integrity check: {'; '.join(problems[:5])}")
        version = dst.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
        return {**_counts(dst), "schema_version": version}
    finally:
        dst.close()


def _put(private_fd: int, folder_fd: int, name: str, replace: bool) -> None:
    """The copy moved from the private folder to ``name`` in the destination folder, by descriptors: linked
    (never replacing) unless ``replace``, then renamed over what is there."""
    if replace:
        os.rename(COPY_NAME, name, src_dir_fd=private_fd, dst_dir_fd=folder_fd)
        return
    os.link(COPY_NAME, name, src_dir_fd=private_fd, dst_dir_fd=folder_fd, follow_symlinks=False)

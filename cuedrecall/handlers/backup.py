"""``cuedrecall backup <db> <dest>``: a consistent copy of a live database, while its server goes on writing.

The rules: the copy is one committed state (``store/sqlite/backup.py``: SQLite's online
backup API, one step from a read-only connection); the source is only read, and a
path that names no database is refused without creating one; an existing
destination is kept unless the operator says ``force``; the destination is never
the database itself or one of its side files; the copy is private (0600), checked
(``integrity_check``) and renamed into place whole, from a fresh private folder
made in the destination's folder (never a name that was there: a planted
``<dest>.partial`` or link is not followed). A refusal is an answer
``{"ok": false, "error": ...}`` naming what was wrong, with nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuedrecall.errors import StoreError
from cuedrecall.store.sqlite.backup import backup_database

_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def _refusal(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def _destination_problem(source: Path, dest: Path, force: bool) -> str | None:
    """Why ``dest`` may not receive the copy, or None."""
    if any(dest == source.with_name(source.name + suffix) for suffix in _SIDE_FILES):
        return f"the destination {dest} is the database itself (or one of its side files)"
    if dest.is_dir():
        return f"the destination {dest} is a folder: name the file to write"
    if dest.exists() and not force:
        return f"the destination {dest} exists: choose another name, or pass --force to replace it"
    if not dest.parent.is_dir():
        return f"the destination's folder {dest.parent} does not exist"
    return None


def backup(db: str, dest: str, *, force: bool = False) -> dict[str, Any]:
    """Copy the database at ``db`` to ``dest``; the answer names both and counts what the copy holds."""
    source = Path(db).expanduser().resolve()
    target = Path(dest).expanduser().resolve()
    if not source.is_file():
        return _refusal(f"no database file at {db}")
    problem = _destination_problem(source, target, force)
    if problem is not None:
        return _refusal(problem)
    try:
        held = backup_database(source, target, replace=force)
    except (StoreError, OSError) as exc:
        return _refusal(f"the backup failed, nothing was written at {dest}: {exc}")
    return {"ok": True, "source": str(source), "dest": str(target), **held}

"""The export folder: where a caller's path is taken, and how its files are read and written.

Files live in one folder. A tool caller's path is taken inside the export folder
(``CPERSONA_EXPORT_DIR``, default ``exports/`` beside the database): nothing
outside it is read or written, through ``..``, an absolute path or a symbolic
link, and never the database's own files. A refused path gets the same answer
whether or not something exists there. Only the operator's command line
(``cuedrecall import`` / ``export``) passes ``anywhere=True``, a Python keyword no
tool caller can send, to take any path.

A file is read only when it is a regular file within the import size cap, and
written only as a 0600 file under a temporary name renamed into place.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.runtime import Runtime

# The database's own files, by suffix of its name: never an export's source or destination.
_DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_SIDECAR = ".calibration.json"


@dataclass(frozen=True)
class ResolvedPath:
    """A caller's path after confinement: the name answered, the file opened, and whether it was confined."""

    shown: Path  # what the answer names
    real: Path  # the same file with every symbolic link resolved: what is opened
    confined: bool


def refuse(name: str, rule: str) -> ToolArgumentError:
    """The refusal of argument ``name``, saying which rule it broke."""
    return ToolArgumentError(f"argument '{name}' {rule}")


def _database_on_disk(db_path: str) -> bool:
    """Whether the database is a file of its own (not in memory, not a SQLite URI): only then has it a folder."""
    return bool(db_path) and db_path != ":memory:" and not db_path.startswith("file:")


def export_folder(rt: Runtime, name: str) -> Path:
    """The export folder, absolute. A configured one must exist; the default one may not exist yet."""
    configured = rt.settings.export_dir
    db_path = rt.settings.db_path
    if configured:
        folder = Path(os.path.abspath(Path(configured).expanduser()))
        if not folder.is_dir():
            raise refuse(name, "cannot be used: the export folder does not exist (CPERSONA_EXPORT_DIR must name "
                               "an existing folder; export never creates it)")
        return folder
    if not _database_on_disk(db_path):
        raise refuse(name, "cannot be used: this server has no export folder (the database is in memory and "
                           "CPERSONA_EXPORT_DIR is not set)")
    return default_folder(db_path)


def default_folder(db_path: str) -> Path:
    """``exports/`` beside the database: made 0700 by the first export that writes into it."""
    return Path(os.path.abspath(Path(db_path).expanduser().parent / "exports"))


def _within(path: Path, folder: Path) -> Path | None:
    """path relative to folder when it lies inside it (lexically), else None."""
    try:
        return path.relative_to(folder)
    except ValueError:
        return None


def resolve(rt: Runtime, name: str, given: str, *, anywhere: bool) -> ResolvedPath:
    """The caller's path, confined to the export folder unless ``anywhere`` (the operator's command line).

    Every refusal is decided from the path's spelling, the export folder and the
    symbolic links inside that folder, never from whether the named file exists, so
    the answer says nothing about files outside the folder.
    """
    if "\x00" in given:
        raise refuse(name, "must not contain a NUL character")
    if anywhere:
        shown = Path(os.path.abspath(Path(given).expanduser()))
        found = ResolvedPath(shown, Path(os.path.realpath(shown)), confined=False)
    else:
        found = _confined(rt, name, given)
    if _is_database_file(rt, found.real):
        raise refuse(name, "names one of the database's own files, which export and import never touch")
    return found


def _confined(rt: Runtime, name: str, given: str) -> ResolvedPath:
    """A tool caller's path inside the export folder: no ``..``, an absolute path only inside the folder, and
    no symbolic link leading out of it."""
    raw = Path(given)
    if ".." in raw.parts:
        raise refuse(name, "must not contain '..': a path is taken inside the export folder")
    folder = export_folder(rt, name)
    real_folder = Path(os.path.realpath(folder))
    if raw.is_absolute():
        normal = Path(os.path.normpath(raw))
        # the folder may be named as configured or with its own links resolved: either spelling is inside
        relative = _within(normal, folder)
        relative = relative if relative is not None else _within(normal, real_folder)
        if relative is None:
            raise refuse(name, "is outside the export folder: a path is taken relative to it, and an "
                               "absolute path must lie inside it")
    else:
        relative = raw
    real = Path(os.path.realpath(real_folder / relative))
    if real != real_folder and _within(real, real_folder) is None:
        raise refuse(name, "leads out of the export folder through a symbolic link")
    return ResolvedPath(folder / relative, real, confined=True)


def _is_database_file(rt: Runtime, real: Path) -> bool:
    """Whether ``real`` is the database, its journal files or its calibration sidecar: never read or written."""
    db_path = rt.settings.db_path
    if not _database_on_disk(db_path):
        return False
    db = Path(os.path.realpath(Path(db_path).expanduser()))
    if real.parent != db.parent:
        return False
    return real.name in {db.name + suffix for suffix in _DATABASE_SUFFIXES} or real.name.startswith(
        db.name + _SIDECAR)


# -- reading ----------------------------------------------------------------------------------

def read_text(rt: Runtime, path: ResolvedPath) -> str:
    """The file's text: a regular file, at most max_import_bytes, UTF-8; else a refusal naming input_path.

    A missing file, a folder, a device or a pipe all get the one answer, and the
    file is opened without following a link and without blocking on a pipe.
    """
    unreadable = "is not a readable file" + (" in the export folder" if path.confined else "")
    limit = rt.settings.max_import_bytes
    too_big = f"is larger than the import limit of {limit} bytes (CPERSONA_MAX_IMPORT_BYTES)"
    raw = _read_regular(path.real, limit, unreadable, too_big)
    if len(raw) > limit:  # it grew after the size was read
        raise refuse("input_path", too_big)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise refuse("input_path", "is not UTF-8 text") from None


def _read_regular(real: Path, limit: int, unreadable: str, too_big: str) -> bytes:
    """At most limit + 1 bytes of a regular file, opened without following a link or blocking on a pipe."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError:
        raise refuse("input_path", unreadable) from None
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise refuse("input_path", unreadable)
            if info.st_size > limit:
                raise refuse("input_path", too_big)
            return handle.read(limit + 1)
    except OSError:
        raise refuse("input_path", unreadable) from None


# -- writing ----------------------------------------------------------------------------------

def write_private(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write the lines to a 0600 temp file beside path, then rename it over path: never half a file."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # created 0600
    except OSError as exc:
        raise refuse("output_path", f"cannot be written ({exc.strerror or type(exc).__name__})") from None
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise refuse("output_path", f"cannot be written ({exc.strerror or type(exc).__name__})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    """Remove a leftover temp file, quietly: the error being answered is the one that matters."""
    try:
        os.remove(path)
    except OSError:
        pass

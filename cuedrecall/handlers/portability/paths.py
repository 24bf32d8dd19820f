"""The export folder: where a caller's path is taken, and how its files are read and written.

Files live in one folder. A tool caller's path is taken inside the export folder
(``CPERSONA_EXPORT_DIR``, default ``exports/`` beside the database): nothing
outside it is read or written, through ``..``, an absolute path or a symbolic
link, and never the database's own files. A refused path gets the same answer
whether or not something exists there. Only the operator's command line
(``cuedrecall import`` / ``export``) passes ``anywhere=True``, a Python keyword no
tool caller can send, to take any path.

Every file operation is made relative to an opened folder, never by path: the
export folder is opened once, each component below it is opened in the one
before with ``O_NOFOLLOW | O_DIRECTORY`` (a symbolic link is read and followed
only while it stays inside the folder, by walking its target from folders
already open), and the file is then opened, created (``O_EXCL``, 0600, under a
temporary name) and renamed inside that opened folder. Swapping a component for a
symbolic link while an export or import runs therefore cannot move either out of
the folder. A file is read only when it is a regular file within the import size
cap, opened without following a link and without blocking on a pipe.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.runtime import Runtime

# The database's own files, by suffix of its name: never an export's source or destination.
_DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_SIDECAR = ".calibration.json"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
NAME_MAX = 255  # bytes in one path component (POSIX file systems)
MAX_LINKS = 40  # symbolic links followed in one path, as the kernel allows
HEADER_BYTES = 64 * 1024  # the most of an existing file read to find its header
_LEADS_OUT = "leads out of the export folder through a symbolic link"


@dataclass(frozen=True)
class ResolvedPath:
    """A caller's path after the spelling checks: the name answered and where it is walked from.

    ``confined``: ``parts`` are walked below ``folder`` (see ``opened``). Otherwise (the operator) ``real``
    is the path with every link resolved.
    """

    shown: Path  # what the answer names
    real: Path  # confined: folder / parts, lexically; else the path with every link resolved
    confined: bool
    argument: str = "output_path"
    folder: Path | None = None  # the export folder (confined only)
    parts: tuple[str, ...] = ()  # the components below it (confined only)
    follow_folder: bool = True  # whether the export folder itself may be a symbolic link (configured)


def refuse(name: str, rule: str) -> ToolArgumentError:
    """The refusal of argument ``name``, saying which rule it broke."""
    return ToolArgumentError(f"argument '{name}' {rule}")


def _reason(exc: OSError) -> str:
    """An OS error's reason, for an answer (never a traceback)."""
    return exc.strerror or type(exc).__name__


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
            raise refuse(
                name,
                "cannot be used: the export folder does not exist (CPERSONA_EXPORT_DIR must name "
                "an existing folder; export never creates it)",
            )
        return folder
    if not _database_on_disk(db_path):
        raise refuse(
            name,
            "cannot be used: this server has no export folder (the database is in memory and "
            "CPERSONA_EXPORT_DIR is not set)",
        )
    return default_folder(db_path)


def default_folder(db_path: str) -> Path:
    """``exports/`` beside the database: made 0700 by the first export that writes into it."""
    return Path(os.path.abspath(Path(db_path).expanduser().parent / "exports"))


def _within(path: Path, folder: Path) -> Path | None:
    """path relative to folder when it lies inside it (lexically, by whole components), else None."""
    if path.parts[: len(folder.parts)] != folder.parts:
        return None
    return Path(*path.parts[len(folder.parts) :]) if len(path.parts) > len(folder.parts) else Path(".")


def _check_lengths(name: str, path: Path) -> None:
    """Each component at most NAME_MAX bytes: a clear refusal rather than the file system's error."""
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise refuse(
                name,
                f"has a name longer than {NAME_MAX} bytes ({part[:40]!r}...): a file or folder "
                f"name is at most {NAME_MAX} bytes",
            )


def resolve(rt: Runtime, name: str, given: str, *, anywhere: bool) -> ResolvedPath:
    """The caller's path, confined to the export folder unless ``anywhere`` (the operator's command line).

    Every refusal is decided from the path's spelling, the export folder and the
    symbolic links inside that folder, never from whether the named file exists, so
    the answer says nothing about files outside the folder.
    """
    if "\x00" in given:
        raise refuse(name, "must not contain a NUL character")
    _check_lengths(name, Path(given))
    if anywhere:
        shown = Path(os.path.abspath(Path(given).expanduser()))
        real = Path(os.path.realpath(shown))
        if _is_database_file(rt, real):
            raise refuse(name, "names one of the database's own files, which export and import never touch")
        return ResolvedPath(shown, real, confined=False, argument=name)
    return _confined(rt, name, given)


def _confined(rt: Runtime, name: str, given: str) -> ResolvedPath:
    """A tool caller's path inside the export folder: no ``..``, an absolute path only inside the folder."""
    raw = Path(given)
    if ".." in raw.parts:
        raise refuse(name, "must not contain '..': a path is taken inside the export folder")
    folder = export_folder(rt, name)
    if raw.is_absolute():
        normal = Path(os.path.normpath(raw))
        # the folder may be named as configured or with its own links resolved: either spelling is inside
        relative = _within(normal, folder)
        relative = relative if relative is not None else _within(normal, Path(os.path.realpath(folder)))
        if relative is None:
            raise refuse(
                name,
                "is outside the export folder: a path is taken relative to it, and an absolute path must lie inside it",
            )
    else:
        relative = raw
    parts = tuple(part for part in relative.parts if part not in ("", "."))
    return ResolvedPath(
        folder / relative,
        folder.joinpath(*parts),
        confined=True,
        argument=name,
        folder=folder,
        parts=parts,
        follow_folder=bool(rt.settings.export_dir),
    )


# -- walking inside the folder ----------------------------------------------------------------


def _missing(path: ResolvedPath) -> str:
    """What a caller hears when a folder on the way is missing or is not a folder."""
    if path.argument == "input_path":
        return "is not a readable file" + (" in the export folder" if path.confined else "")
    return "names a folder that does not exist (export never creates folders)"


@contextmanager
def opened(rt: Runtime, path: ResolvedPath) -> Iterator[tuple[int, str]]:
    """(the folder holding the file, opened; the file's name in it), closed on leaving.

    The name is "." when the path names the folder itself. The database's own files
    (by folder and name, or by identity: a hard link) are refused here.
    """
    if path.confined:
        root = _open_folder(path)
        try:
            folder_fd, name = _beneath(root, path)
        finally:
            os.close(root)
    else:
        try:
            folder_fd = os.open(path.real.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        except OSError:
            raise refuse(path.argument, _missing(path)) from None
        name = path.real.name or "."
    try:
        if _is_database_entry(rt, folder_fd, name):
            raise refuse(path.argument, "names one of the database's own files, which export and import never touch")
        yield folder_fd, name
    finally:
        os.close(folder_fd)


def _open_folder(path: ResolvedPath) -> int:
    """The export folder, opened; the default folder (ours) is never taken through a symbolic link."""
    assert path.folder is not None
    flags = _DIR_FLAGS if not path.follow_folder else _DIR_FLAGS & ~_NOFOLLOW
    try:
        return os.open(path.folder, flags)
    except OSError:
        if path.argument == "input_path":
            raise refuse(path.argument, _missing(path)) from None
        raise refuse(path.argument, "cannot be used: the export folder cannot be opened") from None


def _beneath(root: int, path: ResolvedPath) -> tuple[int, str]:
    """Walk ``path.parts`` from the open folder ``root`` without leaving it; (an open folder, a name in it).

    Each folder is opened in the one before with O_NOFOLLOW. A symbolic link is read
    (``readlink`` in its open folder) and its target walked in its place: a relative
    one from the folders already open (``..`` goes back to one of them, never past
    ``root``), an absolute one only when it lies inside the export folder.
    """
    assert path.folder is not None
    stack = [os.dup(root)]
    todo = list(path.parts)
    links = 0
    try:
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise refuse(path.argument, _LEADS_OUT)
                os.close(stack.pop())
                continue
            if _is_link(stack[-1], part):
                links += 1
                if links > MAX_LINKS:
                    raise refuse(path.argument, "leads through too many symbolic links")
                todo = _link_target(stack, part, path) + todo
                continue
            if not todo:
                return stack.pop(), part
            try:
                stack.append(os.open(part, _DIR_FLAGS, dir_fd=stack[-1]))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK) and _is_link(stack[-1], part) and links < MAX_LINKS:
                    links += 1
                    todo.insert(0, part)  # it became a link after we looked: look again
                    continue
                raise refuse(path.argument, _missing(path)) from None
        return stack.pop(), "."
    finally:
        for fd in stack:
            os.close(fd)


def _is_link(folder_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_target(stack: list[int], name: str, path: ResolvedPath) -> list[str]:
    """The components a link stands for, walked from the folder now open on top of ``stack``.

    An absolute target goes back to the export folder (the stack's bottom) and must lie inside it.
    """
    assert path.folder is not None
    try:
        target = os.readlink(name, dir_fd=stack[-1])
    except OSError:
        raise refuse(path.argument, _missing(path)) from None
    if not os.path.isabs(target):
        return target.split("/")
    relative = _within(Path(target), path.folder)
    if relative is None:
        relative = _within(Path(target), Path(os.path.realpath(path.folder)))
    if relative is None:
        raise refuse(path.argument, _LEADS_OUT)
    while len(stack) > 1:
        os.close(stack.pop())
    return list(relative.parts)


def _is_database_file(rt: Runtime, real: Path) -> bool:
    """Whether ``real`` is the database, its journal files or its calibration sidecar: never read or written."""
    db_path = rt.settings.db_path
    if not _database_on_disk(db_path):
        return False
    db = Path(os.path.realpath(Path(db_path).expanduser()))
    if real.parent != db.parent:
        return False
    return _database_name(db, real.name)


def _database_name(db: Path, name: str) -> bool:
    return name in {db.name + suffix for suffix in _DATABASE_SUFFIXES} or name.startswith(db.name + _SIDECAR)


def _is_database_entry(rt: Runtime, folder_fd: int, name: str) -> bool:
    """Whether ``name`` in the open folder is one of the database's files: the database's folder and one of its
    names, or (a hard link) the very file of one of them."""
    db_path = rt.settings.db_path
    if not _database_on_disk(db_path):
        return False
    db = Path(os.path.realpath(Path(db_path).expanduser()))
    try:
        if os.path.samestat(os.fstat(folder_fd), os.stat(db.parent)) and _database_name(db, name):
            return True
        found = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError:
        return False
    for suffix in _DATABASE_SUFFIXES:
        try:
            if os.path.samestat(found, os.stat(f"{db}{suffix}")):
                return True
        except OSError:
            continue
    return False


# -- reading ----------------------------------------------------------------------------------


def read_text(rt: Runtime, path: ResolvedPath) -> str:
    """The file's text: a regular file, at most max_import_bytes, UTF-8; else a refusal naming input_path.

    A missing file, a folder, a device or a pipe all get the one answer, and the
    file is opened in its open folder without following a link and without blocking on a pipe.
    """
    # one answer for all (a missing file and a pipe alike), in CPersona's words too: "not a regular file"
    unreadable = "is not a readable file" + (" in the export folder" if path.confined else "")
    unreadable += " (missing, or not a regular file)"
    limit = rt.settings.max_import_bytes
    too_big = f"is larger than the import limit of {limit} bytes (CPERSONA_MAX_IMPORT_BYTES)"
    with opened(rt, path) as (folder_fd, name):
        raw = _read_regular(folder_fd, name, limit, unreadable, too_big)
    if len(raw) > limit:  # it grew after the size was read
        raise refuse("input_path", too_big)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise refuse("input_path", "is not UTF-8 text: could not read it") from None


def _read_regular(folder_fd: int, name: str, limit: int, unreadable: str, too_big: str) -> bytes:
    """At most limit + 1 bytes of a regular file in the open folder (no link followed, no pipe waited on)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder_fd)
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


@dataclass(frozen=True)
class Existing:
    """A regular file already at the destination: its identity and its first line, when that is a JSON object."""

    ident: tuple[int, int]
    header: dict[str, Any] | None


def existing(folder_fd: int, name: str, argument: str) -> Existing | None:
    """What is at ``name`` in the open folder: None (nothing), a regular file's header; anything else refused.

    Looked at with lstat first and opened without blocking, so a pipe, a device or a
    socket is refused before any open that could wait.
    """
    if name == ".":
        raise refuse(argument, "names a folder, not a file")
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise refuse(argument, f"cannot be checked ({_reason(exc)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise refuse(argument, "names a folder, not a file")
    not_regular = (
        "names something that is not a regular file (a pipe, a device, a socket or a link): "
        "export replaces only a regular file"
    )
    if not stat.S_ISREG(info.st_mode):
        raise refuse(argument, not_regular)
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder_fd)
    except OSError as exc:
        raise refuse(argument, f"names a file that cannot be read to check whose it is ({_reason(exc)})") from None
    with os.fdopen(fd, "rb") as handle:
        if not os.path.samestat(os.fstat(handle.fileno()), info):
            raise refuse(argument, not_regular)  # swapped between the look and the open
        first = handle.readline(HEADER_BYTES)
    try:
        header = json.loads(first.decode("utf-8-sig") or "null")
    except (ValueError, RecursionError):
        header = None
    return Existing((info.st_dev, info.st_ino), header if isinstance(header, dict) else None)


def write_private(
    folder_fd: int, name: str, lines: list[dict[str, Any]], replacing: Existing | None, argument: str = "output_path"
) -> None:
    """Write the lines to a new 0600 temp file in the open folder, then put it at ``name``: never half a file.

    With nothing there before, the file is linked in only if the name is still free
    (``link`` never replaces); otherwise it is renamed over the file only while that is
    still the file ``replacing`` looked at.
    """
    temp = _create_temp(folder_fd, argument)
    try:
        fd = os.open(temp, os.O_WRONLY | _NOFOLLOW | _CLOEXEC, dir_fd=folder_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        _put_in_place(folder_fd, temp, name, replacing, argument)
    except OSError as exc:
        raise refuse(argument, f"cannot be written ({_reason(exc)})") from None
    finally:
        _remove(folder_fd, temp)
    _sync(folder_fd)


def _create_temp(folder_fd: int, argument: str) -> str:
    """A new, empty 0600 file of a fresh name in the open folder (O_EXCL: never one that was there)."""
    for _ in range(16):
        temp = f".cuedrecall-{secrets.token_hex(8)}.tmp"
        try:
            os.close(os.open(temp, _CREATE_FLAGS, 0o600, dir_fd=folder_fd))
            return temp
        except FileExistsError:
            continue
        except OSError as exc:
            raise refuse(argument, f"cannot be written ({_reason(exc)})") from None
    raise refuse(argument, "cannot be written (no fresh temporary name in its folder)")


def _put_in_place(folder_fd: int, temp: str, name: str, replacing: Existing | None, argument: str) -> None:
    if replacing is None:
        try:
            os.link(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
            return
        except FileExistsError:
            raise refuse(
                argument, "names a file that appeared while the export was written: nothing was replaced"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK):
                raise
        if _present(folder_fd, name):  # no hard links on this file system: look, then rename
            raise refuse(argument, "names a file that appeared while the export was written: nothing was replaced")
    else:
        try:
            now = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) != replacing.ident:
            raise refuse(argument, "names a file that was replaced while the export was written: nothing was replaced")
    os.rename(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def _present(folder_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _remove(folder_fd: int, temp: str) -> None:
    """Remove the temp name (after a link, or a failure), quietly: the answer is what matters."""
    with suppress(OSError):
        os.unlink(temp, dir_fd=folder_fd)


def _sync(folder_fd: int) -> None:
    """Make the new name durable; best effort."""
    with suppress(OSError):
        os.fsync(folder_fd)

"""Errors of cuedrecall, in one place.

    CuedRecallError
    ├── SettingsError       a CUEDRECALL_* (or CPERSONA_*) variable is malformed (startup stops)
    ├── ToolArgumentError   a caller passed a bad argument (answered ok:false, nothing written)
    └── StoreError          the database refused or is unusable (the driver's error, if any, is its __cause__)
        └── StoreClosedError    the store was closed: nothing more is read or written through it

``describe_storage_error`` turns a storage failure of any kind (the driver's or the OS's) into the sentence a
caller is answered with.
"""


class CuedRecallError(Exception):
    """Root of every error this package raises on purpose."""


class SettingsError(CuedRecallError):
    """A setting's value cannot be read; the message names the variable and what it accepts."""


class ToolArgumentError(CuedRecallError):
    """A tool argument is wrong; the message names the argument and what was expected."""


class StoreError(CuedRecallError):
    """The storage layer could not do what was asked. A backend raises it for every failure of its database:
    no driver's exception type leaves ``store/`` (the driver's error is the ``__cause__``)."""


class StoreClosedError(StoreError):
    """The store was closed: nothing more is read or written through it."""


# What a storage failure means to the caller, by the words SQLite (or the OS) uses for it. Matched on the
# message, so any backend's driver that words them alike is read the same; the first match wins.
_STORAGE_FAILURES: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("readonly database", "read-only", "sqlite_readonly"),
        "the database is read-only (check the file's and its folder's permissions, and that the disk is mounted "
        "writable): nothing was written",
    ),
    (
        ("database or disk is full", "no space left", "sqlite_full"),
        "the disk holding the database is full: nothing was written; free some space and try again",
    ),
    (
        ("database is locked", "database table is locked", "database is busy", "sqlite_busy", "sqlite_locked"),
        "the database is busy (another process held its write lock longer than the wait allows): nothing was "
        "written; try again",
    ),
    (
        ("unable to open database", "sqlite_cantopen"),
        "the database file cannot be opened (check that its folder exists and is readable and writable)",
    ),
    (
        ("database disk image is malformed", "file is not a database", "sqlite_corrupt", "sqlite_notadb"),
        "the database file is damaged or is not a cuedrecall database: nothing was written; restore a backup",
    ),
    (
        ("disk i/o error", "sqlite_ioerr"),
        "the disk holding the database failed to read or write (an I/O error): nothing was written; try again",
    ),
)


def describe_storage_error(exc: BaseException) -> str | None:
    """A clear sentence for a storage failure (read-only, disk full, locked, cannot open, damaged, I/O), or None
    when ``exc`` is not one; the caller's answer carries the sentence, never the driver's traceback."""
    cause = exc.__cause__  # a StoreError a backend raised for its driver's error: that error's name counts too
    words = f"{exc} {getattr(exc, 'sqlite_errorname', '')} {getattr(cause, 'sqlite_errorname', '')}".lower()
    if isinstance(exc, OSError) and getattr(exc, "errno", None) == 28:  # ENOSPC: writing a file beside the database
        words += " no space left"
    for needles, sentence in _STORAGE_FAILURES:
        if any(needle in words for needle in needles):
            return sentence
    return None

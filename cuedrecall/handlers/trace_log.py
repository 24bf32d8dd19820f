"""The trace log (``CUEDRECALL_TRACE_LOG``): every recall and reconstruct appends its trace, one JSON line each,
so recalls nobody asked to trace can be read afterwards.

The call is traced for the log whether or not the caller asked, and its answer is the one it would have had; a
log that cannot be written never fails the call. What an entry holds (no stored text; the query only as a hash
keyed by the database's secret), the size and age bounds, the lock several processes share and the file's
privacy: docs/trace-storage.md.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import logging
import os
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

from cuedrecall.clock import iso, parse_instant
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Scope
from cuedrecall.store.database_secret import database_secret, stored_secret

try:  # POSIX: a lock between processes sharing the log
    import fcntl
except ImportError:  # pragma: no cover - Windows: the in-process lock only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("cuedrecall")

ENTRY_VERSION = 1
ROTATED_SUFFIX = ".1"
PRUNE_EVERY = timedelta(hours=1)  # the most often an append looks for entries past the age limit
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_APPEND = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
QUERY_SECRET = "trace_query_hmac"  # the database secret keying query hashes
_guard = threading.Lock()
_logs: dict[tuple[str, int, float], TraceLog] = {}


class TraceLog:
    """One JSONL trace log with its size bound and optional age bound; ``append`` never raises."""

    def __init__(self, path: str | Path, max_bytes: int, max_age_days: float = 0.0) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.max_age = timedelta(days=max_age_days) if max_age_days > 0 else None
        self._every = min(PRUNE_EVERY, self.max_age / 10) if self.max_age is not None else PRUNE_EVERY
        self._checked: datetime | None = None
        self._lock = threading.Lock()
        self._warned = False
        self._prune_warned = False

    @property
    def rotated(self) -> Path:
        return self.path.with_name(self.path.name + ROTATED_SUFFIX)

    def append(self, entry: dict[str, Any], now: datetime | None = None) -> bool:
        """Write one entry as a line, rotating first when it would pass the bound; False (logged once) on
        failure. With ``now`` (the recall's clock) and an age limit, old entries are dropped first, when due.
        """
        if now is not None and self.max_age is not None:
            self._prune_when_due(now)
        try:
            line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
            with self._lock:
                for _ in range(3):
                    with os.fdopen(open_private(self.path), "ab") as handle:
                        _lock(handle)
                        if not _same_file(handle, self.path):
                            continue  # another process rotated it between our open and our lock
                        size = os.fstat(handle.fileno()).st_size
                        if size and size + len(line) > self.max_bytes:
                            os.replace(self.path, self.rotated)
                            with os.fdopen(open_private(self.path), "ab") as fresh:
                                fresh.write(line)
                        else:
                            handle.write(line)
                        return True
                raise OSError("the file kept being rotated by another process")
        except Exception as exc:  # the log must never fail a recall
            if not self._warned:
                self._warned = True
                log.warning(
                    "the trace log %s cannot be written (%s: %s); traces are not logged until it can",
                    self.path,
                    type(exc).__name__,
                    exc,
                )
            return False

    def _prune_when_due(self, now: datetime) -> None:
        """The age pass an append runs, at most once per ``_every`` of the clock; failures are logged once."""
        checked = self._checked
        if checked is not None and abs(now - checked) < self._every:
            return
        self._checked = now
        try:
            self.prune(now, only_when_oldest_is_old=True)
        except Exception as exc:  # the age pass must never fail a recall either
            if not self._prune_warned:
                self._prune_warned = True
                log.warning(
                    "old entries of the trace log %s cannot be dropped (%s: %s); entries are still written",
                    self.path,
                    type(exc).__name__,
                    exc,
                )

    def prune(self, now: datetime, *, only_when_oldest_is_old: bool = False) -> int:
        """Drop the entries older than the age limit at ``now`` from both files; how many were dropped.

        ``only_when_oldest_is_old`` rewrites a file only when its first dated line has passed the limit (a
        bounded check for appends: files are written oldest first). Raises OSError when a file cannot be
        read or rewritten, or when the log path or its rotated file is a symbolic link.
        """
        if self.max_age is None:
            return 0
        return self.prune_before(now - self.max_age, only_when_oldest_is_old=only_when_oldest_is_old)

    def prune_before(self, cutoff: datetime, *, only_when_oldest_is_old: bool = False) -> int:
        """Drop the entries whose ``at`` is before ``cutoff`` (aware) from both files; the count dropped."""
        if not os.path.lexists(self.path) and not os.path.lexists(self.rotated):
            return 0  # nothing written yet (or no folder): nothing to drop, nothing created
        with self._lock:
            # the main file's lock serialises this with every append and rotation, in any process
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o600)
            except OSError:
                _refuse_link(self.path)
                raise
            with os.fdopen(fd, "ab") as handle:
                _lock(handle)
                if not _same_file(handle, self.path):
                    return 0  # rotated or pruned by another process meanwhile: the next pass looks again
                dropped = 0
                for file in (self.rotated, self.path):
                    dropped += _drop_older(file, cutoff, only_when_oldest_is_old)
                return dropped


def open_private(path: Path) -> int:
    """``path`` opened for appending, created 0600; never a pipe, a device or a link another user made.

    A symbolic link is followed only when it belongs to this server's user (or root) and leads to an existing
    regular file (nothing is created through a link).
    """
    try:
        fd = os.open(path, _APPEND | os.O_CREAT | _NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP or not os.path.islink(path):
            raise
        if os.lstat(path).st_uid not in (os.getuid(), 0):
            raise OSError(
                f"{path} is a symbolic link another user made: the trace log is not written through it"
            ) from None
        fd = os.open(path, _APPEND)  # no O_CREAT: only a file that is already there
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def _refuse_link(file: Path) -> None:
    """Raise the clear error when ``file`` is a symbolic link (an open with O_NOFOLLOW failed on it)."""
    if os.path.islink(file):
        raise OSError(f"{file} is a symbolic link: the trace log is not rewritten through it")


def _entry_time(line: bytes) -> datetime | None:
    """The ``at`` of a line holding an entry, or None (not JSON, not an object, no readable time)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return parse_instant(entry.get("at")) if isinstance(entry, dict) else None


def _first_time(source: BinaryIO) -> datetime | None:
    """The time of the first line that has one (the file's oldest, as it is written oldest first)."""
    for line in source:
        moment = _entry_time(line)
        if moment is not None:
            return moment
    return None


def _drop_older(file: Path, cutoff: datetime, only_when_oldest_is_old: bool) -> int:
    """Rewrite ``file`` without its lines dated before ``cutoff``, through a temporary file and os.replace."""
    try:
        fd = os.open(file, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return 0
    except OSError:
        _refuse_link(file)
        raise
    with os.fdopen(fd, "rb") as source:
        mode = os.fstat(source.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"{file} is not a regular file")
        if only_when_oldest_is_old:
            oldest = _first_time(source)
            if oldest is None or oldest >= cutoff:
                return 0
            source.seek(0)
        out_fd, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".prune")
        dropped = 0
        try:
            with os.fdopen(out_fd, "wb") as out:
                if hasattr(os, "fchmod"):
                    os.fchmod(out.fileno(), stat.S_IMODE(mode))
                for line in source:
                    moment = _entry_time(line)
                    if moment is not None and moment < cutoff:
                        dropped += 1
                    else:
                        out.write(line)
                out.flush()
                os.fsync(out.fileno())
            if dropped:
                os.replace(temporary, file)
                _sync_folder(file.parent)
            else:
                os.unlink(temporary)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    return dropped


def _sync_folder(folder: Path) -> None:
    """Make a rename durable where the platform allows opening a folder (POSIX); best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _lock(handle: Any) -> None:
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the handle closes


def _same_file(handle: Any, path: Path) -> bool:
    """Whether the open handle is still the file at ``path`` (another process may have rotated it meanwhile)."""
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except OSError:
        return False


def trace_log(rt: Runtime) -> TraceLog | None:
    """The runtime's trace log (one object per path and bound in this process), or None when the setting is off."""
    path = rt.settings.trace_log
    if not path:
        return None
    key = (path, rt.settings.trace_log_max_bytes, rt.settings.trace_log_max_age_days)
    with _guard:
        found = _logs.get(key)
        if found is None:
            found = _logs[key] = TraceLog(path, *key[1:])
        return found


def enabled(rt: Runtime) -> bool:
    return bool(rt.settings.trace_log)


def query_hash(query: str, secret: bytes) -> str:
    """The hash entries carry instead of the query: HMAC-SHA256 of its UTF-8 keyed by the database's secret, hex."""
    return hmac.new(secret, query.encode("utf-8"), hashlib.sha256).hexdigest()


def query_secret(rt: Runtime) -> bytes:
    """The database's secret keying query hashes (made once, kept in the database)."""
    return database_secret(rt.store, QUERY_SECRET)


def stored_query_hash(query: str, db: str | None = None) -> str:
    """The hash a logged query carries, for the database ``db`` (else CPERSONA_DB_PATH / CUEDRECALL_DB_URL as the
    server reads them); ValueError when that database has no secret yet or cannot be read."""
    from cuedrecall.config import Settings

    settings = Settings.from_env(db_path=db, db_url="") if db else Settings.from_env()
    where = settings.db_url.split("@")[-1] if settings.db_url else settings.db_path
    try:
        secret = stored_secret(settings.db_path, settings.db_url, QUERY_SECRET)
    except Exception as exc:
        raise ValueError(
            f"the database {where} cannot be read for its query secret ({type(exc).__name__}: "
            f"{exc}); --db names the database the log was written for"
        ) from None
    if secret is None:
        raise ValueError(
            f"the database {where} has no query secret yet (no trace was logged against it): "
            "--db names the database the log was written for"
        )
    return query_hash(query, secret)


def record(rt: Runtime, tool: str, scope: Scope, query: str, trace: Any, refs: Sequence[str]) -> None:
    """Append one call's entry to the runtime's trace log (nothing when it is off); never raises."""
    target = trace_log(rt)
    if target is None:
        return
    try:
        hashed: str | None = query_hash(query, query_secret(rt))
    except Exception as exc:  # no secret (a store that cannot write now): no hash rather than an unkeyed one
        hashed = None
        log.warning(
            "the trace log entry carries no query hash: the database secret cannot be had (%s)", type(exc).__name__
        )
    try:
        now = rt.clock()
        entry = {
            "v": ENTRY_VERSION,
            "id": uuid.uuid4().hex[:16],
            "at": iso(now),
            "tool": tool,
            "scope": scope.as_dict(),
            "query_sha256": hashed,
            "refs": list(refs),
            "trace": trace,
        }
    except Exception as exc:  # a broken clock, say: still never the caller's problem
        log.warning("a trace log entry could not be made (%s)", type(exc).__name__)
        return
    target.append(entry, now=now)


def read_entries(
    path: str | Path, *, rotated: bool = True, skipped: list[int] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, entry) of every readable line, oldest first: the rotated file first when ``rotated``.

    Line numbers count across both files. A line that is not a JSON object is skipped (its number appended to
    ``skipped`` when given); a blank line is not counted as skipped.
    """
    path = Path(path)
    files = [path.with_name(path.name + ROTATED_SUFFIX), path] if rotated else [path]
    number = 0
    for file in files:
        if not file.exists():
            continue
        with open(file, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                number += 1
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    entry = None
                if isinstance(entry, dict):
                    yield number, entry
                elif skipped is not None:
                    skipped.append(number)

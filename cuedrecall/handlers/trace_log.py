"""The trace log (``CUEDRECALL_TRACE_LOG``): every recall and reconstruct appends its trace, one JSON line each.

The rules:

- An entry holds ``v`` (ENTRY_VERSION), ``id`` (random, stable across rotation), ``at`` (the runtime clock),
  ``tool``, ``scope``, ``query_sha256`` (a hash of the query: a caller holding the question finds its entries;
  the query itself is never written), ``refs`` (the refs the call returned, in the response's order) and
  ``trace`` (the trace the tool returns with ``trace: true``: refs, ranks, scores and reasons, never stored
  text). Nothing else.
- The call is traced for the log even when the caller did not ask for a trace; the caller's response is
  unchanged then (the handler drops the trace it made for the log).
- Size bound: when an append would take the file past ``trace_log_max_bytes``, the file is first renamed to
  ``<path>.1`` (an older rotated file is replaced), so at most two files exist. An entry larger than the bound
  is still written, alone in a fresh file.
- Writing never fails the call: any failure (unwritable path, full disk, an unserialisable value) drops the
  entry and is logged once per path.

Each append opens, locks (``flock`` where the platform has it), writes and closes, so several processes can
share one log and a rotation by one is seen by the next append of another.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Scope

try:  # POSIX: a lock between processes sharing the log
    import fcntl
except ImportError:  # pragma: no cover - Windows: the in-process lock only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("cuedrecall")

ENTRY_VERSION = 1
ROTATED_SUFFIX = ".1"
_guard = threading.Lock()
_logs: dict[tuple[str, int], "TraceLog"] = {}


class TraceLog:
    """One JSONL trace log with its size bound; ``append`` never raises."""

    def __init__(self, path: str | Path, max_bytes: int) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._warned = False

    @property
    def rotated(self) -> Path:
        return self.path.with_name(self.path.name + ROTATED_SUFFIX)

    def append(self, entry: dict[str, Any]) -> bool:
        """Write one entry as a line, rotating first when it would pass the bound; False (logged once) on failure."""
        try:
            line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
            with self._lock:
                for _ in range(3):
                    with open(self.path, "ab") as handle:
                        _lock(handle)
                        if not _same_file(handle, self.path):
                            continue  # another process rotated it between our open and our lock
                        size = os.fstat(handle.fileno()).st_size
                        if size and size + len(line) > self.max_bytes:
                            os.replace(self.path, self.rotated)
                            with open(self.path, "ab") as fresh:
                                fresh.write(line)
                        else:
                            handle.write(line)
                        return True
                raise OSError("the file kept being rotated by another process")
        except Exception as exc:  # the log must never fail a recall
            if not self._warned:
                self._warned = True
                log.warning("the trace log %s cannot be written (%s: %s); traces are not logged until it can",
                            self.path, type(exc).__name__, exc)
            return False


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
    key = (path, rt.settings.trace_log_max_bytes)
    with _guard:
        found = _logs.get(key)
        if found is None:
            found = _logs[key] = TraceLog(path, rt.settings.trace_log_max_bytes)
        return found


def enabled(rt: Runtime) -> bool:
    return bool(rt.settings.trace_log)


def query_hash(query: str) -> str:
    """The hash entries carry instead of the query (sha256 of its UTF-8, hex)."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def record(rt: Runtime, tool: str, scope: Scope, query: str, trace: Any, refs: Sequence[str]) -> None:
    """Append one call's entry to the runtime's trace log (nothing when it is off); never raises."""
    target = trace_log(rt)
    if target is None:
        return
    try:
        entry = {"v": ENTRY_VERSION, "id": uuid.uuid4().hex[:16], "at": rt.now_iso(), "tool": tool,
                 "scope": scope.as_dict(), "query_sha256": query_hash(query), "refs": list(refs), "trace": trace}
    except Exception as exc:  # a broken clock, say: still never the caller's problem
        log.warning("a trace log entry could not be made (%s)", type(exc).__name__)
        return
    target.append(entry)


def read_entries(path: str | Path, *, rotated: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, entry) of every readable line, oldest first: the rotated file first when ``rotated``.

    Line numbers count across both files. A line that is not a JSON object is skipped.
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
                    continue
                if isinstance(entry, dict):
                    yield number, entry

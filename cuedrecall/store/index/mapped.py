"""Arrays the kernel may take back: rows held in an unlinked file mapped shared, resident only while read.

The vector index's int8 codes are the largest thing a store holds (37 MiB per
100,000 vectors of 384). In an anonymous array every page stays resident for
good; in a mapped file a page is resident while searches read it (the newest
rows of a scope, a cue's period), and under memory pressure the kernel drops it
and reads it back when it is needed again. After a bulk write (a load, a growth,
rows moved to make room) ``release`` unmaps the pages the write touched; their
contents stay in the file.

The file is derived (codes of the stored vectors) and private to the process:
created 0600 in the database's directory, its name unlinked as soon as it is
open, so nothing is left behind, even after a crash; while the array lives
its mapping holds one descriptor (Python's mmap keeps a duplicate). Its space is reserved with
``posix_fallocate``: a full disk fails the allocation with an OSError, never a
SIGBUS on a later write.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any

import numpy as np

PREFIX = ".cuedrecall-codes-"


def mapped_zeros(shape: tuple[int, ...], dtype: Any, directory: str | None) -> np.ndarray:
    """A zeroed array of ``shape`` in a fresh unlinked file under ``directory``. An anonymous array instead when
    ``directory`` is None or the file cannot be made (a read-only directory, a full disk): the index then holds the
    codes in memory, as it would without this module, and nothing fails."""
    if directory is None:
        return np.zeros(shape, dtype=dtype)
    size = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    try:
        fd, path = tempfile.mkstemp(prefix=PREFIX, dir=directory)
    except OSError:
        return np.zeros(shape, dtype=dtype)
    try:
        os.unlink(path)
        os.posix_fallocate(fd, 0, size)
        region = mmap.mmap(fd, size)  # shared: writes land in the file's pages, which the kernel may reclaim
        region.madvise(mmap.MADV_RANDOM)  # a read maps the page it needs, not its neighbours (no fault-around)
    except (OSError, AttributeError):  # AttributeError: a platform without posix_fallocate or madvise (macOS)
        return np.zeros(shape, dtype=dtype)
    finally:
        os.close(fd)  # the mapping keeps the file open
    return np.frombuffer(region, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def release(array: np.ndarray) -> None:
    """Unmap the resident pages of a mapped array (its contents stay in the file); nothing for an anonymous one."""
    base: Any = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) if isinstance(base, np.ndarray) else getattr(base, "obj", None)
    if base is not None:
        base.madvise(mmap.MADV_DONTNEED)


COPY_ROWS = 4096  # rows a chunked copy moves between releases


def copy_rows(target: np.ndarray, source: np.ndarray, count: int, keep: np.ndarray | None = None) -> int:
    """Copy the first ``count`` rows of ``source`` (those ``keep`` selects, when given) to the start of ``target``,
    COPY_ROWS at a time, releasing both arrays' pages after each chunk: growing or compacting a mapped array never
    holds both copies resident at once. Returns the rows copied."""
    done = 0
    for start in range(0, count, COPY_ROWS):
        stop = min(start + COPY_ROWS, count)
        rows = source[start:stop] if keep is None else source[start:stop][keep[start:stop]]
        target[done : done + len(rows)] = rows
        done += len(rows)
        release(source)
        release(target)
    return done

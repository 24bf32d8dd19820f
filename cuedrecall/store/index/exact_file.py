"""The float32 vectors a vector arm re-scores from, copied into a private file and read by position.

An arm ranks by int8 codes and reads the exact vectors of the rows near its cut
(vector-codes-v2). Read from the database those cost a lookup and a row decode
each; copied here when the index takes the row, they cost one ``pread`` each.
Being read with ``pread`` rather than mapped, the copy is never resident in the
process: it lives in the kernel's page cache like the database's own pages.

A row's vector is written to a fresh slot when the index takes it; a slot is
never moved (a removed or rewritten row's old slot is left as garbage), so
removing a row from the index costs nothing here. The file is derived and
private: created 0600 beside the database, unlinked as soon as it is open, so a
crash leaves nothing behind. On a platform without ``preadv`` (Windows), or when the file
cannot be made or written (a read-only directory, a full disk), the index reads
the database as it would without this module: ``open_exact_file`` answers None
and a failed write retires the file (docs/storage.md#sqlite-the-default).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

PREFIX = ".cuedrecall-vectors-"
_DTYPE = np.dtype("<f4")


class ExactFile:
    """Float32 rows of one width in an unlinked file, by slot: ``append`` gives slots, ``read`` reads them."""

    def __init__(self, fd: int, dim: int) -> None:
        self._fd = fd
        self.dim = dim
        self._row_bytes = dim * _DTYPE.itemsize
        self.slots = 0  # slots written so far; the next append starts here

    def append(self, vectors: np.ndarray) -> np.ndarray:
        """Write rows to fresh slots at the end of the file, in one write; their slots. OSError when the disk
        refuses (the caller retires the file)."""
        block = np.ascontiguousarray(vectors, dtype=_DTYPE).reshape(-1, self.dim)
        if block.size == 0:
            return np.zeros(0, dtype=np.int64)
        data = block.data.cast("B")
        offset, done = self.slots * self._row_bytes, 0
        while done < len(data):
            written = os.pwrite(self._fd, data[done:], offset + done)
            if written <= 0:
                raise OSError("the vectors file took no bytes")
            done += written
        slots = np.arange(self.slots, self.slots + block.shape[0], dtype=np.int64)
        self.slots += block.shape[0]
        return slots

    def read(self, slots: np.ndarray) -> np.ndarray:
        """The rows at these slots, in the order given, as a (len(slots), dim) float32 array.

        Slots next to each other in the file are read by one call: the slots are taken in file order, each run of
        consecutive ones read into its place in one buffer, and the rows handed back in the order asked for (a
        scope's rows, written together, are mostly such runs)."""
        wanted = np.asarray(slots, dtype=np.int64).reshape(-1)
        out = np.empty((wanted.size, self.dim), dtype=_DTYPE)
        if out.size == 0:
            return out
        if int(wanted.min()) < 0 or int(wanted.max()) >= self.slots:
            raise IndexError(f"a slot in {wanted.min()}..{wanted.max()} was never written")
        order = np.argsort(wanted, kind="stable")
        ordered = wanted[order]
        buffer = out if wanted.size == 1 or bool((order[1:] > order[:-1]).all()) else np.empty_like(out)
        view = buffer.data.cast("B")
        size = self._row_bytes
        breaks = np.flatnonzero(np.diff(ordered) != 1) + 1
        for first, stop in zip([0, *breaks.tolist()], [*breaks.tolist(), wanted.size]):
            self._read_into(view[first * size : stop * size], int(ordered[first]) * size)
        if buffer is not out:
            out[order] = buffer
        return out

    def _read_into(self, view: memoryview, offset: int) -> None:
        done = 0
        while done < len(view):
            got = os.preadv(self._fd, [view[done:]], offset + done)
            if got <= 0:
                raise OSError("the vectors file ended early")
            done += got

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


def open_exact_file(directory: str | None, dim: int) -> ExactFile | None:
    """A fresh file under ``directory`` for rows of ``dim`` float32, or None where there is none to have: no
    directory (an in-memory database), a platform without ``pwrite`` / ``preadv``, a directory that refuses it."""
    if directory is None or not (hasattr(os, "pwrite") and hasattr(os, "preadv")) or dim <= 0:
        return None
    try:
        fd, path = tempfile.mkstemp(prefix=PREFIX, dir=directory)
    except OSError:
        return None
    try:
        os.unlink(path)
    except OSError:
        os.close(fd)
        return None
    return ExactFile(fd, dim)

"""heap.trim: after a burst of background work the freed heap goes back to the system (glibc's malloc_trim)."""

from __future__ import annotations

import threading
from pathlib import Path

from cuedrecall import heap


def _resident_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_memory_a_finished_thread_freed_goes_back_after_a_trim() -> None:
    survivors: list[bytes] = []

    def churn() -> None:  # a builder's burst: many buffers on its own thread's arena, freed but for the last
        kept = [bytes(2_000) for _ in range(40_000)]  # 80 MB in blocks under the mmap threshold
        survivors.append(kept[-1])  # one live block at the top of the arena: free alone cannot shrink it
        del kept

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    before = _resident_kib()
    assert heap.trim()  # glibc here: the C library could be asked
    assert before - _resident_kib() > 40 * 1024  # most of the 80 MB is no longer resident

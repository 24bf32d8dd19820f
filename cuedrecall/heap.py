"""Giving freed heap memory back to the system once a burst of background work is over.

A background build (blocks, re-embedding, calibration) allocates and frees many
buffers on its own thread. glibc keeps what a thread freed in that thread's arena
for reuse, so a server that built the blocks of 100,000 memories would keep the
build's working memory resident for good. When the queue runs dry, ``trim``
collects garbage and asks glibc to hand free pages back (``malloc_trim``). On a C
library without it (musl, macOS) it only collects garbage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from typing import Any


def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def trim() -> bool:
    """Collect garbage and give free heap pages back; whether the C library could be asked."""
    gc.collect()
    if _TRIM is None:
        return False
    _TRIM(0)
    return True

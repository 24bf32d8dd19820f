"""Thread pools made on first use and shared by the whole process: a module whose work may never need threads
(an embedder never asked for a batch, a store too small to split its int8 pass) starts none."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class SharedPool:
    """One ``ThreadPoolExecutor`` of ``workers`` threads named ``name``, made by the first caller of ``get``."""

    def __init__(self, workers: int, name: str) -> None:
        self._workers, self._name = workers, name
        self._pool: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._guard:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix=self._name)
            return self._pool

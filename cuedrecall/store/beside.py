"""Reads beside a snapshot, the part both backends share: the helper threads, and who reads when a helper cannot.

A backend's ``beside`` gives ``Helpers.start`` its helper body (read ``work`` at the
caller's snapshot, or answer ``MISSED``). The caller's thread reads it instead when
the helper missed, or had not started by the time the result is asked for, so the
answer never depends on which thread read (docs/storage.md#arms-beside-each-other).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
HELPERS = 4  # helper threads at most: one per recall in flight; a recall whose helper has not started reads itself
MISSED = object()  # the helper could not read the caller's snapshot: the caller reads it itself


class Helpers:
    """A store's helper threads, started on first use; none on a single CPU, where a helper only adds a switch."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()
        self._stopped = False

    @property
    def available(self) -> bool:
        """Whether a helper can run at all (more than one CPU, the store open): a backend asks before it prepares
        anything for one."""
        return self._started() is not None

    def start(self, helped: Callable[[], Any], work: Callable[[], T]) -> Callable[[], T]:
        """Run ``helped`` (``work`` at the caller's snapshot, or MISSED) on a helper thread; the callable returned
        gives ``work``'s result, read by the caller's thread when the helper missed or never started."""
        pool = self._started()
        if pool is None:
            return work
        try:
            future: Future[Any] = pool.submit(helped)
        except RuntimeError:  # the store is closing: its helpers take nothing new
            return work

        def result() -> T:
            if future.cancel():  # not started: every helper is busy with other recalls
                return work()
            out = future.result()
            return work() if out is MISSED else out

        return result

    def stop(self) -> None:
        """Let the helper threads end (the store closes): what is in flight finishes, nothing new starts."""
        with self._guard:
            pool, self._pool, self._stopped = self._pool, None, True
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _started(self) -> ThreadPoolExecutor | None:
        if self._pool is None and (os.cpu_count() or 1) > 1:
            with self._guard:
                if self._pool is None and not self._stopped:
                    self._pool = ThreadPoolExecutor(HELPERS, thread_name_prefix=self._name)
        return self._pool

"""``Lru``: a dict of at most ``limit`` entries, the least recently used leaving first.

Every cache this process keeps per key a caller can vary (a scope, an agent, a query
text) is one of these or is bounded alike, so no run of distinct keys grows memory
without end: docs/caches.md lists each cache and its bound. An entry that leaves is
only read again on its next use; what it answers is the same.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


class Lru(Generic[V]):
    """At most ``limit`` entries; ``get`` and ``put`` mark an entry used, ``put`` drops the oldest beyond the
    limit. Each operation holds a lock of its own, so threads sharing one never see it torn."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"an Lru holds at least 1 entry, got {limit}")
        self.limit = limit
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key]

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def pop(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            return self._entries.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def items(self) -> Iterator[tuple[Hashable, V]]:
        """A copy's items: the caller may drop entries while it walks them."""
        with self._lock:
            return iter(list(self._entries.items()))

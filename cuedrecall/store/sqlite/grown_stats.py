"""stats-growth-v1: scope statistics that follow writes which only add records, instead of being read again.

Counting a scope's rows scans the scope (benchmarks/results/design-figures.md),
and every write used to drop every count: the recall after each
store paid the scan again, and an agent stores before nearly every recall. A
statistic kept here remembers, per record kind it depends on, the newest id of
that kind's table when it was read. Changes that touched a record at or below
that id (an update, a delete) drop it, to be read again in full; changes that
only added newer records leave it ``behind``, and its next use reads the
records above its ids alone (a range of the primary key) and folds them in.

At most ``MAX_KEPT`` statistics are kept (the least recently used leaves first): a
recall may name any scope (agent, project, channel, source), and a run of distinct
ones must not grow the process. A statistic that left is read in full on its next
use, so eviction changes cost, never an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from cuedrecall.store.bounded import Lru

Upto = dict[str, int]  # record kind -> the newest id of its table the value covers
Full = Callable[[], tuple[Any, Upto]]
Grow = Callable[[Any, Upto], tuple[Any, Upto]]  # (value, upto) -> the value with the newer records folded in


@dataclass
class _Kept:
    value: Any
    upto: Upto
    behind: bool = False


class GrownStats:
    """The kept statistics of one store, keyed like its other caches; at most ``limit`` of them."""

    # A kept value is a scope's counts (a few ints per kind, its projects and channels): at 4,096 entries
    # a few MB at most, while the scopes one process recalls in a working hour are far fewer.
    MAX_KEPT = 4096

    def __init__(self, limit: int = MAX_KEPT) -> None:
        self._kept: Lru[_Kept] = Lru(limit)

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()

    def follow(self, touched: Iterable[tuple[str, int]]) -> None:
        """Changes the change log shows: (kind, record id). Drop what a change below its ids touched."""
        lowest: dict[str, int] = {}
        for kind, row_id in touched:
            lowest[kind] = min(row_id, lowest.get(kind, row_id))
        for key, kept in self._kept.items():
            changed = [kind for kind in kept.upto if kind in lowest]
            if any(lowest[kind] <= kept.upto[kind] for kind in changed):
                self._kept.pop(key)
            elif changed:
                kept.behind = True

    def get(self, key: Hashable, full: Full, grow: Grow) -> Any:
        kept = self._kept.get(key)
        if kept is None:
            value, upto = full()
            self._kept.put(key, _Kept(value, upto))
            return value
        if kept.behind:
            kept.value, kept.upto = grow(kept.value, kept.upto)
            kept.behind = False
        return kept.value

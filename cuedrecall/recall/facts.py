"""The facts step: the records a recall reads, hydrated once after the arms.

Every later stage (exclusion, the penalty, the prior, the gate's fallback, the
messages, the coverage ledger) reads records from here, so a recall asks the store
for each record at most once and no stage after the arms touches it.
"""

from __future__ import annotations

from collections.abc import Iterable

from cuedrecall.store.base import Record, RecordStore


class Facts:
    """Records by ref, loaded in batches; a ref the store no longer holds stays absent."""

    def __init__(self, store: RecordStore) -> None:
        self._store = store
        self._records: dict[str, Record] = {}
        self._asked: set[str] = set()

    def load(self, refs: Iterable[str]) -> None:
        """Hydrate the refs not asked for yet, in one read."""
        missing = [ref for ref in dict.fromkeys(refs) if ref not in self._asked]
        if missing:
            self._asked.update(missing)
            self._records.update(self._store.records(missing))

    def get(self, ref: str) -> Record | None:
        return self._records.get(ref)

    def time(self, ref: str) -> float | None:
        """The record's time in epoch seconds; None when unknown or unreadable."""
        record = self._records.get(ref)
        return None if record is None else record.ts_epoch

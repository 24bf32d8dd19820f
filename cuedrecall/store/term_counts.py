"""Which full-text terms are common enough to leave out of a first ranking pass."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuedrecall.text.fts import fts_expression

if TYPE_CHECKING:
    from cuedrecall.store.sqlite import SqliteStore


class TermCounts:
    """Which FTS terms are common: found in more than ``ratio`` of a table's rows.

    Counts come from the fts5vocab table (a three-character term is one trigram,
    counted exactly; a longer one is bounded by its rarest trigram and counted
    only when that bound is over the line), cached until the table has grown or
    shrunk by a tenth, so a warm store pays nothing for the check.
    """

    STALE_RATIO = 0.1
    MIN_ROWS = 200  # in a smaller store a tenth of the rows is too few to call a word common

    def __init__(self, store: "SqliteStore", ratio: float) -> None:
        self._store = store
        self.ratio = ratio
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}

    def is_common(self, table: str, term: str) -> bool:
        total = self._store.row_count(table)
        if total < self.MIN_ROWS or self.ratio >= 1.0:
            return False
        limit = self.ratio * total
        if len(term) == 3:
            return self._count(table, "gram", term.lower(), total) > limit
        grams = {term[i : i + 3].lower() for i in range(len(term) - 2)}
        if min(self._count(table, "gram", gram, total) for gram in grams) <= limit:
            return False  # a phrase is no commoner than its rarest trigram
        return self._count(table, "phrase", term, total) > limit

    def _count(self, table: str, kind: str, text: str, total: int) -> int:
        key = (table, kind, text)
        cached = self._counts.get(key)
        if cached is None or abs(total - cached[1]) > self.STALE_RATIO * cached[1]:
            if kind == "gram":
                rows = self._store.read(f"SELECT doc FROM {table}_vocab WHERE term = ?", (text,))
            else:
                rows = self._store.read_fts(f"SELECT COUNT(*) FROM {table}_fts WHERE {table}_fts MATCH ?",
                                        [fts_expression([text])])
            cached = (rows[0][0] if rows else 0, total)
            self._counts[key] = cached
        return cached[0]

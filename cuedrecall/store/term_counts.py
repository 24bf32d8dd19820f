"""Which full-text terms are common enough to leave out of a first ranking pass."""

from __future__ import annotations

from typing import Protocol


class TermSource(Protocol):
    """The three counts the rule needs, from whichever backend keeps the full-text index."""

    def row_count(self, table: str) -> int: ...
    def gram_count(self, table: str, gram: str) -> int: ...
    def phrase_count(self, table: str, phrase: str) -> int: ...
    def word_count(self, table: str, word: str) -> int: ...


class TermCounts:
    """Which FTS terms are common: found in more than ``ratio`` of a table's rows.

    A three-character term is one trigram, counted exactly; a longer one is bounded
    by its rarest trigram and counted as a phrase only when that bound is over the
    line. Counts are cached until the table has grown or shrunk by a tenth, so a
    warm store pays nothing for the check.
    """

    STALE_RATIO = 0.1
    MIN_ROWS = 200  # in a smaller store a tenth of the rows is too few to call a word common

    def __init__(self, source: TermSource, ratio: float) -> None:
        self._source = source
        self.ratio = ratio
        self._counts: dict[tuple[str, str, str], tuple[int, int]] = {}

    def is_common(self, table: str, term: str) -> bool:
        total = self._source.row_count(table)
        if total < self.MIN_ROWS or self.ratio >= 1.0:
            return False
        limit = self.ratio * total
        if len(term) == 3:
            return self._count(table, "gram", term.lower(), total) > limit
        grams = {term[i : i + 3].lower() for i in range(len(term) - 2)}
        if min(self._count(table, "gram", gram, total) for gram in grams) <= limit:
            return False  # a phrase is no commoner than its rarest trigram
        return self._count(table, "phrase", term, total) > limit

    def is_common_word(self, table: str, word: str) -> bool:
        """The same rule for a word of the word index, counted as the index stems it."""
        total = self._source.row_count(table)
        if total < self.MIN_ROWS or self.ratio >= 1.0:
            return False
        return self._count(table, "word", word, total) > self.ratio * total

    def _count(self, table: str, kind: str, text: str, total: int) -> int:
        key = (table, kind, text)
        cached = self._counts.get(key)
        if cached is None or abs(total - cached[1]) > self.STALE_RATIO * cached[1]:
            count = {"gram": self._source.gram_count, "phrase": self._source.phrase_count,
                     "word": self._source.word_count}[kind]
            cached = (count(table, text), total)
            self._counts[key] = cached
        return cached[0]

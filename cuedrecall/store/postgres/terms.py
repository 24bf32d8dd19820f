"""The term counts of the PostgreSQL store (``store.term_counts.TermSource``): what the common-term rule reads.

The rule (``TermCounts``) caches each count until the table grows or shrinks by a
tenth; the table's row count it compares against is kept here for ``ROWS_TTL_S``
seconds, so a recall does not count the table (the rule is a cost heuristic: a
count some seconds old decides the same).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.postgres.arms import words_query

if TYPE_CHECKING:
    from contextlib import contextmanager

_TEXT = {"memories": "m.content", "episodes": "m.summary || E'\\n' || m.keywords"}
ROWS_TTL_S = 10.0


class PgTermCounts:
    """Row, trigram, phrase and word counts over a whole table (every agent, as FTS5's statistics)."""

    _row_counts: dict[str, tuple[float, int]]  # table -> (when read, rows), set by the store

    if TYPE_CHECKING:  # provided by PgConnection

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def _connection(self) -> Iterator[Any]: ...

    def row_count(self, table: str) -> int:
        """Rows in the table, read at most every ROWS_TTL_S seconds."""
        now = time.monotonic()
        cached = self._row_counts.get(table)
        if cached is None or now - cached[0] > ROWS_TTL_S:
            cached = (now, int(self._read(f"SELECT COUNT(*) FROM {_table(table)}")[0][0]))
            self._row_counts[table] = cached
        return cached[1]

    def gram_count(self, table: str, gram: str) -> int:
        """Rows whose text holds one trigram (lower-cased)."""
        return self._index_count(f"SELECT COUNT(*) FROM {_table(table)} WHERE grams @> ARRAY[lower({{}})]", (gram,))

    def phrase_count(self, table: str, phrase: str) -> int:
        """Rows whose text holds the phrase (lower-cased)."""
        return self._index_count(
            f"SELECT COUNT(*) FROM {_table(table)} m WHERE m.grams @> cr_trigrams({{}}) "
            f"AND strpos(lower({_TEXT[table]}), lower({{}})) > 0",
            (phrase, phrase),
        )

    def word_count(self, table: str, word: str) -> int:
        """Memories holding one word, stemmed as the word column stems it."""
        kept = "".join(ch for ch in word if ch.isalnum())
        if not kept:
            return 0
        return self._index_count(
            "SELECT COUNT(*) FROM memories WHERE words @@ to_tsquery('english', {})", (words_query([kept]),)
        )

    def _index_count(self, sql: str, params: Sequence[str]) -> int:
        """A count through the GIN index: a scan of every row would read each row's derived column out of line,
        which costs more than the index's bitmap whatever share of the rows matches. The setting, the count and
        the reset go as one message (one round trip, the terms as quoted literals): ``sql`` has a ``{}`` for
        each of ``params``."""
        from psycopg import sql as pgsql

        count = pgsql.SQL(sql).format(*(pgsql.Literal(str(param)) for param in params))
        message = pgsql.SQL("SET enable_seqscan = off; {}; RESET enable_seqscan").format(count)
        with self._connection() as conn:
            try:
                cursor = conn.execute(message)
            except Exception:
                if conn.info.transaction_status == 0:  # idle, outside a transaction: the setting may still be on
                    conn.execute("RESET enable_seqscan")
                raise
            cursor.nextset()  # past the setting's empty result, to the count's
            return int(cursor.fetchone()[0])


def _table(name: str) -> str:
    if name not in _TEXT:
        raise ValueError(f"no term counts for table {name!r}")
    return name

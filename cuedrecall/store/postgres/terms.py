"""The term counts of the PostgreSQL store (``store.term_counts.TermSource``): what the common-term rule reads.

The rule (``TermCounts``) caches each count until the table grows or shrinks by a
tenth; the table's row count it compares against is kept here until this process
writes, or for ``ROWS_TTL_S`` seconds, so a recall does not read it each time. A
process's own writes are seen at once, as SQLite's exact count sees them: the plan
changes where the table passes a budget (2,000 rows), and a count left behind there
would plan differently from SQLite. Another process's writes are seen within the TTL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.postgres.words import any_of
from cuedrecall.store.term_counts import TermKind

if TYPE_CHECKING:
    from contextlib import contextmanager

_TEXT = {"memories": "m.content", "episodes": "m.summary || E'\\n' || m.keywords"}
ROWS_TTL_S = 10.0
_KINDS = {"memories": "mem", "episodes": "ep"}  # a table's kind in scope_totals
BATCH = 64  # counts one message carries: a query of many distinct terms sends a few, never one a term


class PgTermCounts:
    """Row, trigram, phrase and word counts over a whole table (every agent, as FTS5's statistics)."""

    _row_counts: dict[str, tuple[float, int, int]]  # table -> (when read, commits then, rows), set by the store
    commits: int  # this process's committed writes (PgConnection)

    if TYPE_CHECKING:  # provided by PgConnection

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def _connection(self) -> Iterator[Any]: ...

    def row_count(self, table: str) -> int:
        """Rows in the table, read again after this process writes and at least every ROWS_TTL_S seconds: the
        sum of its scopes' counts in ``scope_totals`` (a few rows, however many the table holds)."""
        now, commits = time.monotonic(), self.commits
        cached = self._row_counts.get(table)
        if cached is None or cached[1] != commits or now - cached[0] > ROWS_TTL_S:
            kind = _KINDS[_table(table)]
            total = self._read("SELECT COALESCE(sum(rows), 0) FROM scope_totals WHERE kind = %s", (kind,))[0][0]
            cached = (now, commits, int(total))
            self._row_counts[table] = cached
        return cached[2]

    def term_counts(self, table: str, kind: TermKind, texts: Sequence[str]) -> list[int]:
        """Rows holding each text (a trigram, a phrase: lower-cased; a word: its tokens as the word column holds them),
        BATCH counts a message."""
        counts = [_count_sql(table, kind, text) for text in texts]
        out: list[int] = []
        for start in range(0, len(counts), BATCH):
            out += self._index_counts([count for count in counts[start : start + BATCH] if count is not None])
        found = iter(out)
        return [0 if count is None else next(found) for count in counts]

    def _index_counts(self, counts: list[Any]) -> list[int]:
        """Counts through the GIN index: a scan of every row would read each row's derived column out of line,
        which costs more than the index's bitmap whatever share of the rows matches. The setting, one SELECT of
        every count and the reset go as one message (one round trip, the terms as quoted literals)."""
        from psycopg import sql as pgsql

        if not counts:
            return []
        select = pgsql.SQL("SELECT {}").format(pgsql.SQL(", ").join(pgsql.SQL("({})").format(c) for c in counts))
        message = pgsql.SQL("SET enable_seqscan = off; {}; RESET enable_seqscan").format(select)
        with self._connection() as conn:
            try:
                cursor = conn.execute(message)
            except Exception:
                if conn.info.transaction_status == 0:  # idle, outside a transaction: the setting may still be on
                    conn.execute("RESET enable_seqscan")
                raise
            cursor.nextset()  # past the setting's empty result, to the counts'
            return [int(value) for value in cursor.fetchone()]


def _count_sql(table: str, kind: TermKind, text: str) -> Any:
    """One count's statement with its text as a quoted literal; None for a word with no letter or digit (no row
    holds it)."""
    from psycopg import sql as pgsql

    name = _table(table)
    if kind == "gram":
        sql, params = f"SELECT COUNT(*) FROM {name} WHERE grams @> ARRAY[lower({{}})]", [text]
    elif kind == "phrase":
        sql = (
            f"SELECT COUNT(*) FROM {name} m WHERE m.grams @> cr_trigrams({{}}) "
            f"AND strpos(lower({_TEXT[table]}), lower({{}})) > 0"
        )
        params = [text, text]
    else:
        match = any_of([text])
        if match is None:
            return None
        sql, params = "SELECT COUNT(*) FROM memories WHERE words @@ {}::tsquery", [match]
    return pgsql.SQL(sql).format(*(pgsql.Literal(str(param)) for param in params))


def _table(name: str) -> str:
    if name not in _TEXT:
        raise ValueError(f"no term counts for table {name!r}")
    return name

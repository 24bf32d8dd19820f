"""What the SQL of the backends spells differently, as hooks: the shared SQL (``store/sql/``) asks a ``Dialect``.

The base spells the common forms (ON CONFLICT, RETURNING, FOR UPDATE); a backend's folder holds its subclass
(``store/sqlite/dialect.py``, ``store/postgres/dialect.py``) with its placeholder and what it says otherwise.
A query that differs in more than these words stays in the backend, as an override of the shared method.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuedrecall.errors import StoreClosedError, StoreError
from cuedrecall.store import predicates
from cuedrecall.store.base import Period, Scope


class Dialect:
    """The spellings the shared SQL asks for."""

    mark: str  # the driver's placeholder ("?", "%s")
    chunk = 500  # the most values one ``IN (...)`` list holds
    ordered_join = "JOIN"  # a join whose left side the planner must keep outermost (SQLite: CROSS JOIN)
    folded_like = "ILIKE"  # a LIKE that folds ASCII case (SQLite's LIKE does)
    bits_cast = ""  # what follows the placeholder of a column of packed sign bits (blocks.bits)
    # a text time column newest first, an unreadable time last (the placeholder is the column)
    newest_first = "cr_epoch({}) DESC NULLS LAST"

    @property
    def driver_error(self) -> type[Exception]:
        """The base class of the driver's exceptions, which ``failure`` turns into the project's."""
        raise NotImplementedError

    def failure(self, exc: Exception, *, closed: bool) -> StoreError:
        """The project's error for one of the driver's (raise it ``from exc``): no driver's exception type leaves
        ``store/``. Its message is the driver's, so ``errors.describe_storage_error`` reads it as before."""
        return (StoreClosedError if closed else StoreError)(str(exc) or type(exc).__name__)

    def marks(self, count: int) -> str:
        """``count`` placeholders, comma-separated."""
        return ", ".join([self.mark] * count)

    def within(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """``column`` among ``values``, as (predicate, its parameters) for each query the values take: IN lists
        of at most ``chunk`` placeholders; nothing for no values."""
        values = list(values)
        for start in range(0, len(values), self.chunk):
            part = values[start : start + self.chunk]
            yield f"{column} IN ({','.join([self.mark] * len(part))})", part

    def insert_id(self, conn: Any, sql: str, params: Sequence[Any]) -> int:
        """Run one INSERT of one row inside a write; the id of the row it added."""
        return int(conn.execute(f"{sql} RETURNING id", params).fetchone()[0])

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        """An INSERT of one row that adds nothing where it would break a unique key."""
        return f"INSERT INTO {table}({', '.join(columns)}) VALUES ({self.marks(len(columns))}) ON CONFLICT DO NOTHING"

    def contains(self, column: str) -> str:
        """Whether a text parameter (this placeholder) holds the column's value."""
        return f"POSITION({column} IN {self.mark}) > 0"

    def bits(self, row: np.ndarray) -> Any:
        """One block's packed sign bits (uint8, MSB first) as that column takes them: the bytes."""
        return np.asarray(row, dtype=np.uint8).tobytes()

    def vector_param(self, vector: np.ndarray | None) -> Any:
        """A vector as its column takes it (None: NULL): float32 little-endian bytes."""
        return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()

    def vector_of(self, stored: Any) -> np.ndarray:
        """A vector column's value (not NULL) as float32 numpy."""
        return np.frombuffer(stored, dtype="<f4")

    def trim_blank(self, column: str) -> str:
        """The column's text without leading and trailing spaces, tabs and line breaks."""
        return f"trim({column}, ' ' || char(9, 10, 13))"

    def ref_names(self, ref: str, prefix: str, row_id: str) -> str:
        """Whether the ref column (``prefix`` + id, as ``make_ref`` writes it) names the row of ``row_id``."""
        return f"{ref} = '{prefix}' || {row_id}"

    def locking(self, *, skip_locked: bool = False) -> str:
        """What a write's SELECT appends to lock the rows it read (skipping those another writer holds)."""
        return " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"

    # the WHERE fragments of store/predicates.py, in this dialect's placeholder

    def scope_where(self, scope: Scope, alias: str, kind: str) -> tuple[str, list[Any]]:
        return predicates.scope_where(scope, alias, kind, mark=self.mark)

    def agent_where(self, agent_id: str, alias: str = "") -> tuple[str, list[Any]]:
        return predicates.agent_where(agent_id, alias, mark=self.mark)

    def listing_where(self, agent_id: str, project_id: str | None) -> tuple[str, list[Any]]:
        return predicates.listing_where(agent_id, project_id, mark=self.mark)

    def period_where(self, alias: str, period: Period | None) -> tuple[str, list[Any]]:
        return predicates.period_where(alias, period, mark=self.mark)

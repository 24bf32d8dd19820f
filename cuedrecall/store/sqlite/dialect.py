"""SQLite's spellings of what the shared SQL asks (``store/sql/dialect.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from cuedrecall.store.sql.dialect import Dialect


class SqliteDialect(Dialect):
    mark = "?"
    ordered_join = "CROSS JOIN"  # SQLite's planner keeps a CROSS JOIN's left table outermost
    folded_like = "LIKE"  # folds ASCII case already
    newest_first = "datetime({}) DESC"  # an unreadable time is NULL, which sorts last when descending

    @property
    def driver_error(self) -> type[Exception]:
        return sqlite3.Error

    def insert_id(self, conn: Any, sql: str, params: Sequence[Any]) -> int:
        cursor = conn.execute(sql, params)
        assert cursor.lastrowid is not None  # sqlite3 sets it on every INSERT
        return int(cursor.lastrowid)

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        return f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({self.marks(len(columns))})"

    def contains(self, column: str) -> str:
        return f"instr({self.mark}, {column}) > 0"

    def ref_names(self, ref: str, prefix: str, row_id: str) -> str:
        # the id read out of the ref, so the row is found by its primary key
        return f"{row_id} = CAST(substr({ref}, {len(prefix) + 1}) AS INTEGER)"

    def locking(self, *, skip_locked: bool = False) -> str:
        return ""  # a write holds the database's one write lock already


SQLITE = SqliteDialect()

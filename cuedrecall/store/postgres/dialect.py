"""PostgreSQL's spellings of what the shared SQL asks (``store/sql/dialect.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from cuedrecall.store.sql.dialect import Dialect


class PgDialect(Dialect):
    mark = "%s"

    def within(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """One array parameter however many values (``= ANY``); nothing for no values."""
        if values:
            yield f"{column} = ANY(%s)", [list(values)]

    def contains(self, column: str) -> str:
        return f"strpos(%s, {column}) > 0"


POSTGRES = PgDialect()

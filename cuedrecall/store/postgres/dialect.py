"""PostgreSQL's spellings of what the shared SQL asks (``store/sql/dialect.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuedrecall.store.sql.dialect import Dialect


def bit_text(row: np.ndarray) -> str:
    """Packed sign bits (uint8, MSB first) as a bit string, the form of a varbit parameter."""
    return "".join(format(int(byte), "08b") for byte in np.asarray(row, dtype=np.uint8).reshape(-1))


def stored_vector(value: Any) -> np.ndarray:
    """A vector column read where the query asked for ``embedding IS NOT NULL``, as float32 numpy."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def to_db_vector(vector: Any) -> Any:
    """A vector as the driver sends it: float32 numpy, or None; a vector of no dimensions is stored as none."""
    if vector is None:
        return None
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    return array if array.size else None


class PgDialect(Dialect):
    mark = "%s"
    bits_cast = "::varbit"  # blocks.bits is a bit string

    def bits(self, row: np.ndarray) -> Any:
        return bit_text(row)

    def within(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """One array parameter however many values (``= ANY``); nothing for no values."""
        if values:
            yield f"{column} = ANY(%s)", [list(values)]

    @property
    def driver_error(self) -> type[Exception]:
        import psycopg  # imported here: the driver is needed only once a PostgreSQL store is opened

        return psycopg.Error

    def contains(self, column: str) -> str:
        return f"strpos(%s, {column}) > 0"

    def vector_param(self, vector: np.ndarray | None) -> Any:
        return to_db_vector(vector)

    def vector_of(self, stored: Any) -> np.ndarray:
        return stored_vector(stored)

    def trim_blank(self, column: str) -> str:
        return f"btrim({column}, E' \\t\\n\\r')"


POSTGRES = PgDialect()

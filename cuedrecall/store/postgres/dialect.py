"""PostgreSQL's spellings of what the shared SQL asks (``store/sql/dialect.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuedrecall.store.sql.dialect import Dialect


def bit_text(row: np.ndarray) -> str:
    """Packed sign bits (uint8, MSB first) as a bit string, the form of a varbit parameter."""
    return "".join(format(int(byte), "08b") for byte in np.asarray(row, dtype=np.uint8).reshape(-1))


class PgDialect(Dialect):
    mark = "%s"
    bits_cast = "::varbit"  # blocks.bits is a bit string

    def bits(self, row: np.ndarray) -> Any:
        return bit_text(row)

    def within(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """One array parameter however many values (``= ANY``); nothing for no values."""
        if values:
            yield f"{column} = ANY(%s)", [list(values)]

    def contains(self, column: str) -> str:
        return f"strpos(%s, {column}) > 0"


POSTGRES = PgDialect()

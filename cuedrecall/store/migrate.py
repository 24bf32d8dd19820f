"""Moving a store from a SQLite file into an empty PostgreSQL database: every table, ids kept, counts verified.

The rule: the target must hold nothing yet (a migration never merges into a live
store); the copy is one transaction, so a failure leaves the target empty; after
it, each table's row count in the target equals the source's, or the migration
reports which differ. Vectors, blocks (sign bits and int8 codes), the graph, folders,
calibration, precision overrides, profiles and the task queue all move.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cuedrecall.errors import StoreError
from cuedrecall.store.postgres.dialect import bit_text
from cuedrecall.store.postgres.records import EPISODE_COLUMNS, MEMORY_COLUMNS
from cuedrecall.store.postgres.store import PostgresStore
from cuedrecall.store.postgres.words import WORD_COLUMNS, word_columns
from cuedrecall.store.sqlite import SqliteStore

# table -> its columns, in copy order (blocks after the records they divide)
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": MEMORY_COLUMNS,
    "episodes": EPISODE_COLUMNS,
    "profiles": ("agent_id", "user_id", "content", "updated_at"),
    "calibration": ("agent_id", "signal", "value", "embedding_model", "scoring_version"),
    "recall_precision": ("agent_id", "beta"),
    "blocks": (
        "kind",
        "record_id",
        "block",
        "start_char",
        "end_char",
        "forced",
        "text_hash",
        "model",
        "bits",
        "codes",
        "agent_id",
        "project_id",
        "channel",
        "source_id",
    ),
    "tasks": ("id", "kind", "payload", "attempts", "not_before", "claimed_until", "last_error", "created_at"),
    "entities": ("id", "agent_id", "project_id", "channel", "name", "normalized", "declared_by", "created_at"),
    "entity_aliases": ("entity_id", "alias", "normalized"),
    "entity_mentions": ("entity_id", "ref", "declared_by", "created_at"),
    "relations": (
        "id",
        "agent_id",
        "project_id",
        "channel",
        "subject_kind",
        "subject_id",
        "predicate",
        "object_kind",
        "object_id",
        "anchor_ref",
        "declared_by",
        "declared_at",
    ),
    "folders": ("id", "agent_id", "project_id", "parent_id", "name", "normalized", "declared_by", "created_at"),
    "folder_members": ("ref", "folder_id", "declared_by", "declared_at"),
}
# tables whose id sequence must move on
_IDENTITY = ("memories", "episodes", "tasks", "entities", "relations", "folders")
_BATCH = 500
Progress = Callable[[str, int], None]  # (table, rows just copied)


def source_counts(path: str) -> dict[str, int]:
    """Rows per table of the SQLite file (its schema brought up to date first)."""
    SqliteStore(path).close()
    with _sqlite(path) as conn:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLE_COLUMNS}


def migrate_sqlite(path: str, url: str, progress: Progress = lambda table, n: None) -> dict[str, Any]:
    """Copy the SQLite store at ``path`` into the empty PostgreSQL database at ``url``; the counts, verified."""
    expected = source_counts(path)
    target = PostgresStore(url)
    try:
        present = {table: _count(target, table) for table in TABLE_COLUMNS}
        if any(present.values()):
            held = ", ".join(f"{table} {n}" for table, n in present.items() if n)
            raise StoreError(f"the target database is not empty ({held}): a migration copies into an empty store")
        with _sqlite(path) as source, target.write() as conn:
            for table, columns in TABLE_COLUMNS.items():
                _copy(source, conn, table, columns, progress)
            for table in _IDENTITY:
                conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"GREATEST((SELECT MAX(id) FROM {table}), 1))"
                )
        copied = {table: _count(target, table) for table in TABLE_COLUMNS}
        with target._lock:  # the planner's statistics of the copied rows (the vector widths') now, not whenever
            target._conn.execute("ANALYZE")  # autovacuum next passes: the vector arms' plans read them
    finally:
        target.close()
    wrong = {table: (expected[table], copied[table]) for table in TABLE_COLUMNS if expected[table] != copied[table]}
    if wrong:
        raise StoreError(
            "the copy's counts differ from the source's (table: source, target): "
            + ", ".join(f"{t}: {a}, {b}" for t, (a, b) in wrong.items())
        )
    return {"ok": True, "counts": copied}


def _sqlite(path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _count(store: PostgresStore, table: str) -> int:
    return int(store._read(f"SELECT COUNT(*) FROM {table}")[0][0])


def _copy(source: sqlite3.Connection, conn: Any, table: str, columns: tuple[str, ...], progress: Progress) -> None:
    """One table, in batches, each value converted to what PostgreSQL stores."""
    made = WORD_COLUMNS if table == "memories" else ()  # the word arm's words, made from the content as it moves
    marks = ", ".join("%s::varbit" if column == "bits" else "%s" for column in (*columns, *made))
    sql = f"INSERT INTO {table} ({', '.join((*columns, *made))}) VALUES ({marks})"
    for batch in _batches(source.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid")):
        rows = [tuple(_value(table, column, value) for column, value in zip(columns, row)) for row in batch]
        if made:
            content = columns.index("content")
            rows = [(*row, *words) for row, words in zip(rows, word_columns([row[content] for row in rows]))]
        with conn.cursor() as cursor:
            cursor.executemany(sql, rows)
        progress(table, len(rows))


def _batches(cursor: sqlite3.Cursor) -> Iterator[list[tuple]]:
    while batch := cursor.fetchmany(_BATCH):
        yield batch


def _value(table: str, column: str, value: Any) -> Any:
    """A SQLite value as the PostgreSQL column takes it: vectors from float32 blobs, bits as a bit string."""
    if value is None:
        return None
    if column == "embedding":
        vector = np.frombuffer(value, dtype="<f4")
        return vector if vector.size else None
    if column == "bits":
        return bit_text(np.frombuffer(value, dtype=np.uint8))
    if column == "codes":
        return bytes(value)
    return value

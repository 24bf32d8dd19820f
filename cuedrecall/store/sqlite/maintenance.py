"""The SQLite store's own maintenance: full-text tables, the in-process vector index, the file's check.

``SqliteMaintenance`` is a mixin of ``SqliteStore``: it uses that class's
connection, lock, transactions and vector index, and holds no state of its own.
Every read takes ``agent_id`` "" to mean every agent; ids come oldest first. The
counts and repairs both backends share are ``store/sql/maintenance.py``'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import EPISODE, MEMORY, IndexGap
from cuedrecall.store.predicates import agent_where
from cuedrecall.store.sql.maintenance import SqlMaintenance

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from cuedrecall.store.index.vector_index import VectorIndex

# kind -> (table, its FTS5 table, the text column)
_TABLES = {MEMORY: ("memories", "memories_fts", "content"), EPISODE: ("episodes", "episodes_fts", "summary")}


class SqliteMaintenance(SqlMaintenance):
    """Looks that find what is out of order in the indexes derived from the rows, and their repairs."""

    if TYPE_CHECKING:  # provided by SqliteStore
        _indexes: dict[str, VectorIndex]
        vector_model: str | None

        def _rebuild_indexes(self) -> None: ...
        def _model_filter(self, where: str, params: Sequence[Any]) -> tuple[str, list[Any]]: ...
        def write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def misfit_embeddings(self, kind: str, agent_id: str, width: int, limit: int) -> tuple[int, list[int]]:
        """Rows whose vector does not have ``width`` float32 components: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids(
            _TABLES[kind][0],
            f"{where} AND embedding IS NOT NULL AND length(embedding) != ?",
            [*params, 4 * width],
            limit,
        )

    # -- the derived indexes and the file --------------------------------------------------

    def fts_gap(self, kind: str, agent_id: str) -> IndexGap:
        """How a full-text table differs from its rows.

        ``missing``: the scope's rows without an entry; ``stray``: entries whose row is
        gone (any agent's: an entry without a row has none); ``problem``: what FTS5's
        'integrity-check' against the content table says (it also sees an entry that
        holds another text than its row). The check runs in a write transaction that
        writes nothing, so no writer changes the rows while it reads.
        """
        table, fts, _ = _TABLES[kind]
        where, params = agent_where(agent_id, "t")
        with self.write() as conn:
            missing = conn.execute(
                f"SELECT t.id FROM {table} t WHERE {where} AND NOT EXISTS "
                f"(SELECT 1 FROM {fts}_docsize d WHERE d.id = t.id) ORDER BY t.id",
                params,
            ).fetchall()
            stray = conn.execute(
                f"SELECT d.id FROM {fts}_docsize d WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.id = d.id) "
                "ORDER BY d.id"
            ).fetchall()
            try:
                conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
                problem = ""
            except sqlite3.DatabaseError as exc:
                problem = f"{fts}: {exc}"
        return IndexGap([i for (i,) in missing], [i for (i,) in stray], problem)

    def rebuild_fts(self, conn: sqlite3.Connection, kind: str) -> None:
        """Rebuild one full-text table from its rows, inside an open write()."""
        fts = _TABLES[kind][1]
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")

    def index_gap(self, kind: str, agent_id: str) -> IndexGap:
        """How the in-process vector index differs from the rows: by id, in the agent's scope.

        The rows that belong in it are those with a vector of the index's width (of the
        oldest vector when the index is empty: what a rebuild takes) and, when the store
        has a vector model, of that model; a vector of another width is
        ``misfit_embeddings``' business, one of another model ``stale_embeddings``'.
        """
        table = _TABLES[kind][0]
        model, model_params = self._model_filter("1 = 1", ())  # the rows the index may hold (sqlite.py)
        where, params = agent_where(agent_id)
        where, params = f"{where} AND {model}", [*params, *model_params]
        with self.snapshot():
            index = self._indexes[kind]
            width = index.dim or self._oldest_width(table, model, model_params)
            indexed = set(index.agent_rows(agent_id)[0].tolist())
            rows = (
                []
                if width is None
                else self._read(
                    f"SELECT id FROM {table} WHERE {where} AND length(embedding) = ? ORDER BY id", [*params, 4 * width]
                )
            )
        expected = [row_id for (row_id,) in rows]
        present = set(expected)
        return IndexGap([i for i in expected if i not in indexed], sorted(indexed - present))

    def _oldest_width(self, table: str, where: str = "1 = 1", params: Sequence[Any] = ()) -> int | None:
        rows = self._read(
            f"SELECT length(embedding) FROM {table} WHERE {where} AND embedding IS NOT NULL ORDER BY id LIMIT 1", params
        )
        return rows[0][0] // 4 if rows and rows[0][0] else None

    def rebuild_index(self) -> None:
        """Build the in-process vector indexes (and the block index) again from the rows."""
        self._rebuild_indexes()

    def quick_check(self) -> list[str]:
        """What SQLite's ``PRAGMA quick_check`` finds wrong in the file; [] when it answers ok."""
        rows = self._read("PRAGMA quick_check")
        return [] if [r[0] for r in rows] == ["ok"] else [str(r[0]) for r in rows]

    # -- repairs, inside write() -----------------------------------------------------------

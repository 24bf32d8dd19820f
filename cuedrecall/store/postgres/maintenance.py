"""The PostgreSQL store's own maintenance: the derived columns, a vector's width, the server's answer.

The derived indexes here are the database's own (generated columns and their GIN
indexes, kept by PostgreSQL in the row's transaction), so ``fts_gap`` and
``index_gap`` compare the derived columns with what the text and vector give now.
The counts and repairs both backends share are ``store/sql/maintenance.py``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import EPISODE, MEMORY, IndexGap
from cuedrecall.store.postgres.dialect import POSTGRES
from cuedrecall.store.rows import TABLES
from cuedrecall.store.sql.maintenance import SqlMaintenance

_TEXT = {MEMORY: "content", EPISODE: "summary"}
_GRAMS = {MEMORY: "cr_trigrams(content)", EPISODE: "cr_trigrams(summary || E'\\n' || keywords)"}


class PgMaintenance(SqlMaintenance):
    """What check_health and deep_check read and repair of the derived columns."""

    vector_model: str | None

    if TYPE_CHECKING:  # provided by PgRecords

        def embedding_dim(self) -> int | None: ...

    def misfit_embeddings(self, kind: str, agent_id: str, width: int, limit: int) -> tuple[int, list[int]]:
        """Rows whose vector does not have ``width`` components: (count, oldest ids)."""
        where, params = POSTGRES.agent_where(agent_id)
        return self._counted_ids(
            TABLES[kind], f"{where} AND embedding IS NOT NULL AND vector_dims(embedding) != %s", [*params, width], limit
        )

    # -- the derived columns -------------------------------------------------------------------

    def fts_gap(self, kind: str, agent_id: str) -> IndexGap:
        """Rows whose stored trigram column differs from their text's (``missing``); no entry can outlive its row
        here (``stray`` is always empty)."""
        where, params = POSTGRES.agent_where(agent_id)
        rows = self._read(
            f"SELECT id FROM {TABLES[kind]} WHERE {where} AND grams IS DISTINCT FROM {_GRAMS[kind]} ORDER BY id", params
        )
        return IndexGap([row_id for (row_id,) in rows], [])

    def rebuild_fts(self, conn: Any, kind: str) -> None:
        """Recompute the derived trigram column of one kind where it is out of step, inside an open write() (an
        UPDATE recomputes a generated column; the text stays, so no trigger drops the blocks)."""
        conn.execute(
            f"UPDATE {TABLES[kind]} SET {_TEXT[kind]} = {_TEXT[kind]} WHERE grams IS DISTINCT FROM {_GRAMS[kind]}"
        )

    def index_gap(self, kind: str, agent_id: str) -> IndexGap:
        """Comparable rows (the vector width and model the arms compare) whose sign bits do not follow their
        vector; the arms read the rows themselves, so nothing else can be out of step."""
        width = self.embedding_dim()
        if width is None:
            return IndexGap([], [])
        where, params = POSTGRES.agent_where(agent_id)
        model = " AND embedding_model = %s" if self.vector_model is not None else ""
        rows = self._read(
            f"SELECT id FROM {TABLES[kind]} WHERE {where} AND embedding IS NOT NULL AND vector_dims(embedding) = %s"
            f"{model} AND sign_bits IS DISTINCT FROM cr_sign_bits(embedding) ORDER BY id",
            [*params, width, *([self.vector_model] if self.vector_model is not None else [])],
        )
        return IndexGap([row_id for (row_id,) in rows], [])

    def rebuild_index(self) -> None:
        """Nothing to rebuild: the vector arms read the rows (an optional HNSW index is PostgreSQL's own)."""

    def quick_check(self) -> list[str]:
        """What the server reports wrong: [] when it answers (PostgreSQL checks its own pages)."""
        return [] if self._read("SELECT 1") == [(1,)] else ["the server did not answer SELECT 1"]

    # -- repairs, inside write() -----------------------------------------------------------

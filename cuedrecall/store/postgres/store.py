"""``PostgresStore``: the ``Store`` protocol over one PostgreSQL database with pgvector, for many server processes.

Each concern is a mixin over one ``PgConnection``: the SQL both backends share (``store/sql/``: records, the
arms' entry points, blocks and the queue, the graph, folders, maintenance) spelled by ``dialect.py``, and what is
PostgreSQL's own: rows (records.py), the arms' scoring (arms.py), the block arm (blocks.py), browsing
(browse.py), the derived columns' checks (maintenance.py), the in-process vector index (vectors.py). Every read
sees what is committed, whoever committed it: the one state kept per process, the vector index, follows the
database's change log and is read only by a snapshot that sees the same entry.
"""

from __future__ import annotations

from cuedrecall.store.postgres.arms import PgArms
from cuedrecall.store.postgres.blocks import PgBlocks
from cuedrecall.store.postgres.browse import PgBrowse
from cuedrecall.store.postgres.connection import PgConnection, redact
from cuedrecall.store.postgres.dialect import POSTGRES
from cuedrecall.store.postgres.maintenance import PgMaintenance
from cuedrecall.store.postgres.records import PgRecords
from cuedrecall.store.postgres.schema import HNSW_SEARCH, ensure_hnsw, migrate
from cuedrecall.store.postgres.terms import PgTermCounts
from cuedrecall.store.postgres.vectors import PgVectors
from cuedrecall.store.sql.folders import SqlFolders
from cuedrecall.store.sql.graph import SqlGraph
from cuedrecall.store.term_counts import TermCounts


class PostgresStore(
    PgRecords, PgArms, PgBlocks, SqlGraph, SqlFolders, PgBrowse, PgMaintenance, PgTermCounts, PgVectors, PgConnection
):
    """All SQL of cuedrecall's PostgreSQL backend."""

    dialect = POSTGRES  # how the shared SQL (store/sql/) is spelled here

    def __init__(
        self,
        url: str,
        *,
        common_term_ratio: float = 0.1,
        vector_model: str | None = None,
        hnsw_dim: int | None = None,
        vector_index: bool = True,
    ) -> None:
        """``url``: a postgresql:// URL (its ``options=-csearch_path=...`` picks a schema). ``vector_model``: the
        only embedding model whose vectors the vector arms compare (None: any). ``hnsw_dim``: build the optional,
        approximate HNSW index over vectors of that width (CUEDRECALL_PG_HNSW). ``common_term_ratio``: the
        lexical arms' first pass leaves out terms in more than this share of the rows (as SQLite's).
        ``vector_index``: keep the vectors' int8 codes in this process (vectors.py; off: every vector arm scans
        in SQL)."""
        PgConnection.__init__(self, url)
        self._init_vectors(vector_index)
        self.vector_model = vector_model
        self._row_counts = {}
        self._vocab = TermCounts(self, common_term_ratio)
        self.hnsw_dim = hnsw_dim or None
        with self.translated(), self._lock:
            self.schema_version = migrate(self._conn)
            if self.hnsw_dim:
                ensure_hnsw(self._conn, self.hnsw_dim)
        if self.hnsw_dim:
            self.configure(HNSW_SEARCH)

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.url)!r})"

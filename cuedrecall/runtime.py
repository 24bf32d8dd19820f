"""The runtime: what every tool handler works with, built once per open store.

Handlers receive this small value (settings, store, embedder, query cache,
calibration, clock), never the ``Memory`` object that dispatches to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuedrecall.clock import Clock, iso, system_clock
from cuedrecall.config import Settings
from cuedrecall.embed import Embedder, EmbeddingError, QueryVectorCache, make_embedder
from cuedrecall.errors import StoreError
from cuedrecall.recall.calibration import Calibration
from cuedrecall.recall.scoring_version import fingerprint
from cuedrecall.sessions import Pauses
from cuedrecall.store.base import Store
from cuedrecall.store.sqlite import SqliteStore


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    store: Store
    embedder: Embedder
    queries: QueryVectorCache
    calibration: Calibration
    clock: Clock
    pauses: Pauses  # this process's session pauses

    def now_iso(self) -> str:
        return iso(self.clock())

    def embed(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Vectors for texts; None for each when embedding is off or fails (the row is still stored)."""
        if not self.embedder.available or not texts:
            return [None] * len(texts)
        try:
            return list(self.embedder.embed(list(texts)))
        except EmbeddingError:
            return [None] * len(texts)

    def query_vector(self, query: str) -> np.ndarray | None:
        """The query's vector from the cache; None for a blank query or when embedding is off or fails."""
        if not query.strip() or not self.embedder.available:
            return None
        try:
            return self.queries.embed_query(query)
        except EmbeddingError:
            return None  # the lexical arms still answer; the vector arms stay empty


def open_runtime(settings: Settings, embedder: Embedder | None = None, clock: Clock = system_clock) -> Runtime:
    """Open the configured store and embedder (the local model loads on first use, not here); the store's vector
    index holds the vectors of the embedder's model only."""
    embedder = embedder or make_embedder(
        settings.embedding_mode,
        model=settings.embedding_model,
        url=settings.embedding_url,
        timeout_s=settings.embedding_timeout_secs,
    )
    # the vector arms compare a query with the vectors of its own model only (None: no vectors to compare)
    store = open_store(settings, embedder)
    calibration = Calibration(store, embedder.model, fingerprint(settings.prior_far_weight, settings.rrf_k))
    queries = QueryVectorCache(embedder, size=max(1, settings.embedding_cache_size))
    return Runtime(settings, store, embedder, queries, calibration, clock, Pauses())


def open_store(settings: Settings, embedder: Embedder) -> Store:
    """The configured backend: the PostgreSQL database of ``db_url`` when it is set (an unreachable or unprepared
    one is a StoreError naming what is missing, never a fallback to a file), else the SQLite file ``db_path``."""
    vector_model = embedder.model if embedder.available else None
    if settings.db_url:
        if not settings.db_url.startswith(("postgresql://", "postgres://")):
            raise StoreError(
                "CUEDRECALL_DB_URL / CPERSONA_DB_URL must be a postgresql://... URL (the SQLite file "
                "is CUEDRECALL_DB_PATH); nothing was opened"
            )
        from cuedrecall.store.postgres import PostgresStore  # psycopg is needed only by this backend

        hnsw_dim = getattr(embedder, "dimensions", None) if settings.pg_hnsw else None
        return PostgresStore(
            settings.db_url,
            common_term_ratio=settings.keyword_common_ratio,
            vector_model=vector_model,
            hnsw_dim=hnsw_dim,
            vector_index=settings.pg_vector_index,
        )
    return SqliteStore(settings.db_path, common_term_ratio=settings.keyword_common_ratio, vector_model=vector_model)

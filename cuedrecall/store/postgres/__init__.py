"""The PostgreSQL + pgvector backend of the ``Store`` protocol (``CUEDRECALL_DB_URL=postgresql://...``)."""

from cuedrecall.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]

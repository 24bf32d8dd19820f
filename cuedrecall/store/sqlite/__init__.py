"""The embedded default backend of the ``Store`` protocol: one SQLite file in WAL mode plus in-process indexes."""

from cuedrecall.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]

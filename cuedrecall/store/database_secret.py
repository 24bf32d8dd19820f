"""A random secret kept with the database, made once: what keys the trace log's query hashes.

The secret lives in the database's own table ``database_secrets`` (name, value),
on SQLite and PostgreSQL alike, made by the first process that needs it, inside
one write transaction (``CREATE TABLE IF NOT EXISTS`` then an insert that keeps a
value already there), so every process on one database gets the same secret. It
travels with the database (a backup holds it) and is read by no tool; whoever can
read the database file can read it, as they can read the memories themselves.
A database copied to PostgreSQL by ``migrate`` gets a new one (older trace entries
then no longer match a ``traces --query``).
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import weakref
from typing import Any
from urllib.parse import quote

from cuedrecall.store.postgres.dialect import POSTGRES
from cuedrecall.store.sqlite.dialect import SQLITE

_CREATE = "CREATE TABLE IF NOT EXISTS database_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
_cache: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def database_secret(store: Any, name: str) -> bytes:
    """The secret ``name`` of the store's database (32 random bytes), made once in a write transaction."""
    with _guard:
        held = _cache.get(store, {}).get(name)
    if held is not None:
        return held
    fresh = secrets.token_hex(32)
    with store.write() as conn:
        mark = "?" if isinstance(conn, sqlite3.Connection) else "%s"
        conn.execute(_CREATE)
        conn.execute(
            f"INSERT INTO database_secrets(name, value) VALUES ({mark}, {mark}) ON CONFLICT (name) DO NOTHING",
            (name, fresh),
        )
        value = conn.execute(f"SELECT value FROM database_secrets WHERE name = {mark}", (name,)).fetchone()[0]
    secret = bytes.fromhex(value)
    with _guard:
        _cache.setdefault(store, {})[name] = secret
    return secret


def stored_secret(db_path: str, db_url: str, name: str) -> bytes | None:
    """The secret ``name`` as already stored, read without writing (the SQLite file opened read-only); None
    when the database has none yet. A failure of the database raises StoreError."""
    dialect = POSTGRES if db_url else SQLITE
    try:
        return _stored(db_path, db_url, name)
    except dialect.driver_error as exc:
        raise dialect.failure(exc, closed=False) from exc


def _stored(db_path: str, db_url: str, name: str) -> bytes | None:
    if db_url:
        from cuedrecall.store.postgres.connection import connect

        conn = connect(db_url)
        try:
            row = _first(conn, "SELECT value FROM database_secrets WHERE name = %s", name)
        finally:
            conn.close()
    else:
        conn = sqlite3.connect(f"file:{quote(db_path)}?mode=ro", uri=True)
        try:
            row = _first(conn, "SELECT value FROM database_secrets WHERE name = ?", name)
        finally:
            conn.close()
    return None if row is None else bytes.fromhex(row[0])


def _first(conn: Any, sql: str, name: str) -> Any:
    """The first row, or None when the table is not there yet."""
    try:
        return conn.execute(sql, (name,)).fetchone()
    except Exception as exc:  # no such table (sqlite3 or psycopg): no secret made yet
        if "database_secrets" in str(exc) or "no such table" in str(exc):
            return None
        raise

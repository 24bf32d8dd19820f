"""A private PostgreSQL 16 + pgvector server for the tests (PyPI ``pgserver``), started once per test session.

``postgres_url()`` gives a URL whose search path is a fresh schema, so each store
a test opens starts empty; the server and its temporary directory go at the end of
the session. Without pgserver installed, the Postgres tests are skipped.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import threading
from typing import Any
from urllib.parse import quote

import pytest

_lock = threading.Lock()
_server: Any = None
_names = itertools.count()


def _start() -> Any:
    """The session's server (started on first use, stopped and removed at exit)."""
    global _server
    with _lock:
        if _server is None:
            try:
                import pgserver
            except ImportError:
                pytest.skip("pgserver is not installed (pip install -c constraints.txt '.[test,postgres]')")
            folder = tempfile.mkdtemp(prefix="cuedrecall-pg-")
            _server = pgserver.get_server(folder, cleanup_mode="stop")
            _server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            atexit.register(_stop, _server, folder)
        return _server


def _stop(server: Any, folder: str) -> None:
    try:
        server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def server_url() -> str:
    """The server's URL (the default schema)."""
    return _start().get_uri()


def postgres_url() -> str:
    """A URL whose search path is a new, empty schema (then public, where the vector extension lives)."""
    server = _start()
    name = f"t{next(_names)}_{id(server) % 10_000}"
    server.psql(f"CREATE SCHEMA {name};")
    uri = server.get_uri()
    joiner = "&" if "?" in uri else "?"
    return f"{uri}{joiner}options={quote(f'-csearch_path={name},public')}"

"""A private PostgreSQL 16 + pgvector server for a benchmark run (PyPI ``pgserver``), and a fresh schema per store.

``fresh_url()`` starts the server on first use, in a temporary folder of its own (stopped and removed when the
process exits, or by ``stop()``), and answers a URL whose search path is a new, empty schema (then ``public``,
where the vector extension lives): each store a run opens starts empty, and nothing outside the temporary folder
is touched. The benchmarks' copy of tests/pg_server.py's approach (benchmarks do not import from tests/).
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

BACKENDS = ("sqlite", "postgres")

_lock = threading.Lock()
_server: Any = None
_folder = ""
_names = itertools.count()


def available() -> bool:
    """Whether pgserver is installed (``pip install -c constraints.txt '.[test,postgres]'``)."""
    try:
        import pgserver  # noqa: F401
    except ImportError:
        return False
    return True


def _start() -> Any:
    global _server, _folder
    with _lock:
        if _server is None:
            import pgserver

            _folder = tempfile.mkdtemp(prefix="cuedrecall-pg-bench-")
            _server = pgserver.get_server(_folder, cleanup_mode="stop")
            _server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            atexit.register(stop)
        return _server


def stop() -> None:
    """Stop the private server and remove its folder (nothing when none was started)."""
    global _server, _folder
    with _lock:
        server, folder, _server, _folder = _server, _folder, None, ""
    if server is not None:
        try:
            server.cleanup()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def fresh_url() -> str:
    """A URL whose search path is a new, empty schema of the private server (started on first use)."""
    server = _start()
    name = f"bench_{os.getpid()}_{next(_names)}"
    server.psql(f"CREATE SCHEMA {name};")
    uri = server.get_uri()
    return f"{uri}{'&' if '?' in uri else '?'}options={quote(f'-csearch_path={name},public')}"


def db_url(backend: str) -> str:
    """The store's URL for one run on ``backend``: "" for SQLite (the file), a fresh schema for PostgreSQL."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    return fresh_url() if backend == "postgres" else ""


# -- a results file with one section per backend ------------------------------------------------------------

BACKEND_TITLES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def with_section(old: str, backend: str, section: str, head: str, tail: str = "") -> str:
    """A results file: ``head``, then one section per backend (``section`` for ``backend``, the others kept as
    ``old`` has them, between their ``<!-- backend -->`` markers), then ``tail``."""
    sections = {}
    for name in BACKENDS:
        found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->\n", old, re.DOTALL)
        if found:
            sections[name] = found.group(1)
    sections[backend] = section.strip("\n") + "\n"
    body = "".join(f"<!-- {name} -->\n{sections[name]}<!-- /{name} -->\n\n" for name in BACKENDS if name in sections)
    return head.strip("\n") + "\n\n" + body + (tail.strip("\n") + "\n" if tail else "")


def add_options(parser: argparse.ArgumentParser, postgres: str, out: Path) -> None:
    """``--backend`` (``postgres``: what the run does there) and ``--out``, a results file of one section per
    backend (``out`` by default)."""
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite", help=f"postgres: {postgres}")
    parser.add_argument(
        "--out", type=Path, default=out, help="the results file: this backend's section is replaced, the other's kept"
    )


def write_section(path: Path, backend: str, section: str, head: str, tail: str = "") -> None:
    """``with_section`` over the results file at ``path`` (new when there is none)."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(with_section(old, backend, section, head, tail), encoding="utf-8")

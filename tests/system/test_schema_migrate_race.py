"""Migrations are applied once however many processes open a new database file at the same moment: the
process that waited for the write lock re-reads the version and skips what another process applied."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from cuedrecall.store.sqlite.schema import LATEST_VERSION
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
OPENERS = 4

_OPENER = textwrap.dedent("""
    import os, sys, time
    from cuedrecall.store.sqlite import SqliteStore
    path, go = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.001)
    store = SqliteStore(path)
    print(store.schema_version)
    store.close()
""")


def _open_at_once(path: Path, go: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(path), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(OPENERS)
    ]
    go.touch()  # every opener starts at once, each on its own idea that the file is new
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs


def test_processes_opening_one_new_file_at_once_all_reach_the_latest_version_applied_once(tmp_path: Path) -> None:
    for round_ in range(3):
        path, go = tmp_path / f"new-{round_}.db", tmp_path / f"go-{round_}"
        assert _open_at_once(path, go) == [str(LATEST_VERSION)] * OPENERS
        with sqlite3.connect(path) as conn:
            versions = [row[0] for row in conn.execute("SELECT version FROM schema_version ORDER BY version")]
            assert versions == list(range(1, LATEST_VERSION + 1))
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

"""The load benchmark's CI size (benchmarks/load.py): concurrent MCP clients over HTTP, several stdio servers over
one file with an import running beside them, threads recalling in one process. The outcomes asserted are the
integrity ones, never timings: no call fails, every recall is well-formed, every acknowledged store is in the
database exactly once under the ref it was acknowledged with."""

from __future__ import annotations

from pathlib import Path

import anyio

from benchmarks import load


def _clean(phases: list[tuple[str, load.Tally]], db: Path) -> dict[str, int]:
    """The phases' errors (none allowed) and what the database holds of their acknowledged stores."""
    for name, tally in phases:
        assert tally.errors == [], (name, tally.errors[:3])
        assert tally.latencies["recall"], name  # every phase recalled, and each recall was checked well-formed
    check = load.verify(db, [tally for _, tally in phases])
    assert (check["missing"], check["doubled"], check["wrong_ref"]) == (0, 0, 0), check
    return check


def test_concurrent_http_clients_lose_no_store_and_get_well_formed_recalls(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    load.prefill(db, 300)
    phases = anyio.run(load.run_http, db, 3, [1, 2], 1.0)
    phases += load.run_threads(db, [1, 3], 0.5)
    check = _clean(phases, db)
    assert check["acknowledged"] > 0 and check["rows"] == 300 + check["acknowledged"]
    assert [name for name, _ in phases] == [
        "http mixed, 3 clients",
        "http recall, 1 client",
        "http recall, 2 clients",
        "in-process recall, 1 thread",
        "in-process recall, 3 threads",
    ]


def test_stdio_servers_over_one_file_beside_an_import_lose_no_store(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    phases = anyio.run(load.run_stdio, db, 2, 1.0, 600)
    check = _clean(phases, db)
    assert check["acknowledged"] > 0
    assert "imported 600 rows" in phases[0][0]  # the import beside them finished whole

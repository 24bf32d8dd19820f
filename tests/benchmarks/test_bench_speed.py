"""benchmarks/speed.py keeps working without the peer, and its helpers say what they should."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import numpy as np
import pytest

from benchmarks.peer import (
    EXPORT_VERSION,
    ExportRecord,
    export_lines,
    peer_ref_map,
    sql_datetime,
    write_cpersona_export,
)
from benchmarks.speed import fate, main, month_cue, recall_arguments, returned_refs
from benchmarks.stats import jaccard, percentile


def test_a_tiny_run_without_the_peer_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "results" / "speed.md"
    argv = [
        "--sizes",
        "200",
        "--queries",
        "5",
        "--no-peer",
        "--local-sizes",
        "--ingest-count",
        "10",
        "--workdir",
        str(tmp_path / "work"),
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "Command: `python -m benchmarks.speed " + " ".join(argv) + "`"
    rows = [line for line in text.splitlines() if line.startswith("| 200 |")]
    assert len(rows) >= 4  # in process, over MCP (three conditions), peak memory
    inproc = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert len(inproc) == 9 and all(float(cell) > 0 for cell in inproc[1:])
    assert "| 200 | plain |" in text and "CPersona left out" in text
    assert "| 0 |" in text  # ingest into an empty store
    assert (out.parent / "speed.png").stat().st_size > 0
    # a second run reuses the store it built
    assert main([*argv, "--no-mcp"]) == 0
    again = out.read_text(encoding="utf-8")
    assert "reused from an earlier run" in again and "Not run (`--no-mcp`)" in again


def test_percentile_interpolates_like_numpy() -> None:
    rng = random.Random(3)
    for n in (1, 2, 7, 100):
        values = [rng.uniform(0, 100) for _ in range(n)]
        for q in (0.0, 0.5, 0.95, 1.0):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)))
    assert percentile(list(range(1, 101)), 0.5) == pytest.approx(50.5)
    assert np.isnan(percentile([], 0.5))


def test_jaccard() -> None:
    assert jaccard({"mem:1", "mem:2"}, {"mem:2", "mem:3"}) == pytest.approx(1 / 3)
    assert jaccard(["mem:1"], ["mem:1"]) == 1.0
    assert jaccard([], []) == 1.0
    assert jaccard(["mem:1"], []) == 0.0


def test_the_export_writer_gives_valid_lines_with_float32_vectors(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    records = [
        ExportRecord(
            i, f"memory number {i}", f"2025-03-0{1 + i % 9}T10:00:00+00:00", rng.standard_normal(384).astype(np.float32)
        )
        for i in range(1, 6)
    ]
    records.append(ExportRecord(6, "no vector", "2025-03-09T10:00:00+00:00", None))
    lines = [json.loads(line) for line in export_lines(records, "bench", "2026-01-01T00:00:00+00:00")]
    header, memories = lines[0], lines[1:]
    assert header["_type"] == "header" and header["version"] == EXPORT_VERSION == "cpersona-export/1.0"
    assert header["memory_count"] == len(memories) == 6 and header["episode_count"] == 0
    for record, line in zip(records, memories):
        assert line["_type"] == "memory" and line["agent_id"] == "bench" and line["id"] == record.id
        assert line["msg_id"] == "" and line["content"] == record.content
        assert line["timestamp"] == record.timestamp and line["created_at"] == sql_datetime(record.timestamp)
        assert line["project_id"] == "" and line["channel"] == "" and isinstance(line["source"], dict)
        if record.vector is None:
            assert "embedding_b64" not in line
            continue
        raw = base64.b64decode(line["embedding_b64"])
        assert len(raw) == 4 * 384
        assert np.array_equal(np.frombuffer(raw, dtype="<f4"), record.vector)
    paths = write_cpersona_export(records, tmp_path / "export", "bench", per_file=4)
    assert len(paths) == 2
    counts = [json.loads(p.read_text().splitlines()[0])["memory_count"] for p in paths]
    assert counts == [4, 2] and all(len(p.read_text().splitlines()) == 1 + c for p, c in zip(paths, counts))


def test_sql_datetime_is_utc_seconds() -> None:
    assert sql_datetime("2025-06-01T12:30:15+02:00") == "2025-06-01 10:30:15"
    assert sql_datetime("2025-06-01T12:30:15.5Z") == "2025-06-01 12:30:15"


def test_cues_stay_inside_the_synthetic_year() -> None:
    for i in range(24):
        cue = month_cue(i)
        assert "2025-01-01" <= cue["after"] < cue["before"] <= "2026-01-01" and cue["confidence"] == "likely"
    assert len({month_cue(i)["after"] for i in range(12)}) == 12
    arguments = recall_arguments("trace+cue", "what", 3)
    assert arguments["trace"] is True and arguments["time_cue"] == month_cue(3) and arguments["limit"] == 10
    assert "trace" not in recall_arguments("plain", "what", 0)


def test_returned_refs_translates_the_peer_ids() -> None:
    answer = {"messages": [{"ref": "mem:9"}, {"content": "[Profile] x"}, {"ref": "mem:5"}]}
    assert returned_refs(answer) == ["mem:9", "mem:5"]
    assert returned_refs(answer, {"mem:9": "mem:4"}) == ["mem:4", "peer:mem:5"]


def test_peer_rows_map_to_ours_by_content(tmp_path: Path) -> None:
    import sqlite3

    for name, rows in (("ours.db", [(3, "a"), (4, "b"), (5, "c")]), ("peer.db", [(1, "b"), (2, "a"), (3, "z")])):
        with sqlite3.connect(tmp_path / name) as conn:
            conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, agent_id TEXT, content TEXT)")
            conn.executemany("INSERT INTO memories VALUES (?, 'bench', ?)", rows)
        conn.close()
    assert peer_ref_map(tmp_path / "peer.db", tmp_path / "ours.db", "bench") == {"mem:1": "mem:4", "mem:2": "mem:3"}


def test_fate_reads_the_trace() -> None:
    trace = {
        "arms": {
            "vector_near": [{"ref": "mem:1"}, {"ref": "mem:2"}, {"ref": "mem:3"}],
            "memory_keyword": [{"ref": "mem:4"}],
        },
        "gate": {
            "decisions": [
                {
                    "ref": "mem:2",
                    "signal": "cosine",
                    "score": 0.1,
                    "threshold": 0.2,
                    "passed": False,
                    "reason": "below_gate",
                }
            ]
        },
        "autocut": {"fired": True, "dropped": ["mem:3"]},
        "order": {"before_cut": [{"ref": "mem:1"}, {"ref": "mem:4"}], "cut_by_count": ["mem:4"]},
    }
    assert fate(trace, "mem:9") == "not retrieved by any arm"
    assert fate(trace, "mem:2").endswith("gated out (below_gate cosine 0.100 < 0.200)")
    assert fate(trace, "mem:3") == "found by vector_near; dropped by autocut"
    assert fate(trace, "mem:4") == "found by memory_keyword; cut by the limit (place 2 of 2)"
    assert fate(None, "mem:1") == "no trace"

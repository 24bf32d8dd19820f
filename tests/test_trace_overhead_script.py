"""benchmarks/trace_overhead.py keeps working: a tiny run end to end, and its bulk loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic import AGENT, bulk_load, queries, records
from benchmarks.trace_overhead import EPISODE_EVERY, main
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from tests.conftest import NOW, make_settings


def test_a_tiny_run_writes_the_markdown_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results" / "trace_overhead.md"
    assert main(["--sizes", "120", "60", "--queries", "6", "--limit", "5", "--out", str(out),
                 "--workdir", str(tmp_path / "db")]) == 0
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# Recall trace overhead"
    assert "Command: `python -m benchmarks.trace_overhead --sizes 120 60 --queries 6 --limit 5" in text
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 2
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert cells[0] == "120" and cells[2] == "6"
    assert float(cells[5]) > 0  # the ratio
    assert cells[10] == "0"  # answers differing
    assert "ratio p50" in capsys.readouterr().out


def test_the_synthetic_store_is_seeded() -> None:
    assert list(records(20, seed=3)) == list(records(20, seed=3))
    assert list(records(20, seed=4)) != list(records(20, seed=3))
    assert len(set(queries(20, seed=5))) > 10


def test_bulk_load_writes_searchable_rows_and_an_episode_every_so_often() -> None:
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    assert bulk_load(memory, 250, seed=1, episode_every=EPISODE_EVERY) == 250 // EPISODE_EVERY
    assert memory.store_.pool_counts(memory.scope(AGENT, None, "", "")) == (250, 250 // EPISODE_EVERY)
    assert len(memory.store_.embedded_memory_ids(AGENT)[0]) == 250
    first = memory.list_memories(agent_id=AGENT, limit=1)["memories"][0]["content"]
    word = max(first.rstrip(".").split(), key=len)
    answer = memory.recall(agent_id=AGENT, query=word, limit=5, trace=True)
    assert answer["trace"]["arms"]["memory_keyword"]  # the FTS index followed the bulk writes
    assert answer["trace"]["arms"]["vector_near"]  # and so did the vector index

"""A recall reads one snapshot: one freshness check, the arms, one hydration of what it returns.

See docs/architecture.md#a-recall-reads-one-snapshot.

The counts are of top-level SQL statements a warm recall sends (sqlite3's trace
callback; statements FTS5 runs inside a MATCH are its own and start with "--").
Before the snapshot a warm recall sent 22 (16 of them freshness checks), a cued
one 39; these pins keep the path from growing back. Since vector-codes-v2 the
vector arms score the rows near their cut from the stored vectors: on a database
file from the index's own copy of them (store/index/exact_file.py, no statement),
else read from the rows, each once a snapshot. The profile is cached until
any connection changes a profile, so a warm recall reads none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from tests.conftest import open_memory

A = "agent-a"
QUERY = "what about the lighthouse keeper"
CUE = {"after": "2025-03-01", "before": "2025-03-10", "confidence": "sure"}


@pytest.fixture(params=["vectors file", "rows"])
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Memory:
    memory = open_memory(tmp_path / "statements.db")
    for i in range(30):
        memory.store(
            agent_id=A,
            message={
                "content": f"note {i} about the lighthouse keeper, topic {i % 5}",
                "timestamp": f"2025-03-{1 + i % 28:02d}T10:00:00+00:00",
            },
        )
    memory.archive_episode(agent_id=A, summary="a session at the lighthouse", keywords="lighthouse")
    memory.update_profile(agent_id=A, profile="likes lighthouses")
    for _ in range(2):  # warm: the scope's statistics and the term counts are cached
        memory.recall(agent_id=A, query=QUERY)
        memory.recall(agent_id=A, query=QUERY, time_cue=CUE)
    if request.param == "rows":  # no vectors file (an in-memory database, a disk that refused it)
        for index in memory.store_._indexes.values():  # type: ignore[attr-defined]
            index._retire_file()
    yield memory
    memory.close()


def vector_reads(memory: Memory, count: int) -> int:
    """``count`` reads of stored vectors where the vector arms read the rows, none where they read their file."""
    indexes = memory.store_._indexes.values()  # type: ignore[attr-defined]
    return 0 if all(index._file is not None for index in indexes if index.dim) else count


def statements(memory: Memory, **arguments: Any) -> tuple[list[str], dict[str, Any]]:
    """The statements a recall sends, with the lexical arms read in its own thread (their helper thread's reads,
    its own transaction at the same change-log entry: tests/unit/store/test_beside.py)."""
    sent: list[str] = []
    store = memory.store_  # type: ignore[attr-defined]
    conn = store._reader()  # the connection this thread's snapshots read through
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else sent.append(sql.split()[0].upper()))
    store.beside = lambda work: work  # the helper's own BEGIN, check and COMMIT left out of the count
    try:
        response = memory.recall(agent_id=A, query=QUERY, **arguments)
    finally:
        conn.set_trace_callback(None)
        del store.beside
    return sent, response


def test_a_warm_recall_sends_its_fixed_statements_inside_one_read_transaction(memory: Memory) -> None:
    sent, response = statements(memory)
    assert len(response["messages"]) == 10
    # BEGIN, the change-log check, two full-text arms, memories and episodes hydrated once, COMMIT, and without the
    # vectors file three reads of stored vectors (vector-codes-v2 scores the rows near the cut exactly): the near
    # arm's memories and episodes, then the rest of the pool the gate's outlier bar scores; each read once
    assert len(sent) == 7 + vector_reads(memory, 3), sent
    assert sent[0] == "BEGIN" and sent[-1] == "COMMIT"
    assert "PRAGMA" not in sent  # no per-read freshness check inside the snapshot


def test_a_cued_recall_adds_only_the_cue_arm_and_its_new_records(memory: Memory) -> None:
    sent, response = statements(memory, time_cue=CUE)
    assert response["time_cue"]["seated"] + 10 == len(response["messages"])
    # the recall's above, the cue arm's two full-text lists, one hydration of the records only it found; the cue's
    # vector arm scores rows the snapshot has already read
    assert len(sent) == 10 + vector_reads(memory, 3), sent
    assert sent.count("BEGIN") == 1 and "PRAGMA" not in sent


def test_excluding_contents_reads_no_record_twice(memory: Memory) -> None:
    sent, response = statements(memory, exclude_contents=["note 1 about the lighthouse keeper"])
    assert all("note 1 about" not in m["content"] for m in response["messages"])
    assert len(sent) == 7 + vector_reads(memory, 3), sent  # exclusion reads the records the facts step hydrated

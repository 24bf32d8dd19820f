"""PostgreSQL's in-process vector index (docs/storage.md#postgresql-with-pgvector): the rows, scores and order of
the SQL scan; it follows the change log, whoever wrote; a snapshot reads it only at the entry the snapshot sees,
and scans in SQL otherwise."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import load_sample
from cuedrecall.store.base import MEMORY, Scope
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres

AGENT = "demo"
QUERIES = ["bike shop brake pads", "what did mara say about her sister", "tomato seedlings in the garden", "東京"]


def open_pg(url: str, **overrides: Any) -> Memory:
    settings = make_settings(db_url=url, db_path=":memory:", recall_depth_floor=10, **overrides)
    return Memory(settings=settings, clock=fixed_clock(NOW), background=False)


@pytest.fixture
def url() -> str:
    return postgres_url()


@pytest.fixture
def sample(url: str) -> Iterator[Memory]:
    memory = open_pg(url)
    load_sample(memory)
    yield memory
    memory.close()


class SqlScans:
    """Counts the vector arms' SQL scans (pgvector's inner product in a statement) of one store."""

    def __init__(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count, read = 0, store._read

        def counted(sql: str, params: Any = ()) -> list[tuple]:
            self.count += "<#>" in sql
            return read(sql, params)

        monkeypatch.setattr(store, "_read", counted)


def vector_arms(memory: Memory, query: str) -> dict[str, list[tuple[str, int, float]]]:
    trace = memory.recall(agent_id=AGENT, query=query, trace=True)["trace"]
    return {
        name: [(hit["ref"], hit["rank"], hit["raw"]) for hit in trace["arms"].get(name, [])]
        for name in ("vector_near", "vector_far")
    }


def same_rows(left: dict[str, list[tuple]], right: dict[str, list[tuple]]) -> bool:
    """Equal refs and ranks, cosines equal to float32 rounding (pgvector sums a product its own way)."""
    return all(
        [(ref, rank) for ref, rank, _ in left[name]] == [(ref, rank) for ref, rank, _ in right[name]]
        and all(abs(a[2] - b[2]) < 1e-5 for a, b in zip(left[name], right[name]))
        for name in left
    )


def test_the_index_answers_the_vector_arms_as_the_sql_scan_and_as_sqlite_do(
    sample: Memory, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans = SqlScans(sample.store_, monkeypatch)  # type: ignore[attr-defined]
    sqlite = Memory(
        tmp_path / "m.db", settings=make_settings(recall_depth_floor=10), clock=fixed_clock(NOW), background=False
    )
    load_sample(sqlite)
    found = []
    with open_pg(url, pg_vector_index=False) as scanned, sqlite:
        for query in QUERIES:
            indexed = vector_arms(sample, query)
            found += indexed["vector_near"]
            assert same_rows(indexed, vector_arms(scanned, query)), query
            assert indexed == vector_arms(sqlite, query), query  # the same index code: bit for bit
    assert found  # the rule had rows to agree on
    assert scans.count == 0  # every vector arm of the indexed store was answered in the process
    assert len(sample.store_._vector_indexes[MEMORY]._ids) >= 1  # type: ignore[attr-defined]


def test_the_index_follows_writes_made_by_another_process(sample: Memory, url: str) -> None:
    query = "the lighthouse keeper's brass telescope"
    before = vector_arms(sample, query)["vector_near"]
    with open_pg(url) as other:  # another server process over the same database
        stored = other.store(agent_id=AGENT, content="the lighthouse keeper polished his brass telescope")
        assert stored["ok"], stored
        added = vector_arms(sample, query)["vector_near"]
        assert added[0][0] == stored["ref"] and len(added) == len(before) + 1
        assert other.delete_memory(agent_id=AGENT, memory_id=stored["id"])["ok"]
    assert vector_arms(sample, query)["vector_near"] == before


def test_a_snapshot_older_than_the_index_scans_in_sql_and_keeps_its_view(
    sample: Memory, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sample.store_  # type: ignore[attr-defined]
    scope, query = Scope(AGENT), sample.queries.embed_query("a telescope on the lighthouse gallery")
    vector_arms(sample, "warm the index")
    with store.snapshot():
        old = store.vector_near(scope, query, floor=-2.0, depth=50, window=1000)  # decided here: the index
    with store.snapshot():
        store._read("SELECT 1")  # the snapshot's view is fixed by its first statement
        with open_pg(url) as other:
            stored = other.store(agent_id=AGENT, content="a brass telescope on the lighthouse gallery")
        moved = threading.Thread(target=lambda: vector_arms(sample, "move the index on"))
        moved.start()
        moved.join(30)
        assert not moved.is_alive()
        scans = SqlScans(store, monkeypatch)
        inside = store.vector_near(scope, query, floor=-2.0, depth=50, window=1000)
        assert scans.count == 1  # the index is past this snapshot: the arm scanned in SQL
    # the row written after the snapshot began is not in it: the old rows, cosines to float32 rounding
    assert [(hit.ref, hit.rank) for hit in inside] == [(hit.ref, hit.rank) for hit in old]
    assert all(abs(a.raw - b.raw) < 1e-5 for a, b in zip(inside, old)) and stored["ref"] not in {h.ref for h in inside}
    with store.snapshot():
        assert store.vector_near(scope, query, floor=-2.0, depth=51, window=1000)[0].ref == stored["ref"]


def test_the_index_is_built_from_the_rows_a_database_already_holds(url: str) -> None:
    with open_pg(url, pg_vector_index=False) as writer:
        load_sample(writer)
    with open_pg(url) as reader, open_pg(url, pg_vector_index=False) as scanned:
        for query in QUERIES:
            assert same_rows(vector_arms(reader, query), vector_arms(scanned, query)), query


def test_a_change_log_that_went_back_has_the_index_read_again(
    sample: Memory, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database restored or made anew under a running server: its log is below the index's entry."""
    vector_arms(sample, "warm the index")
    with open_pg(url) as other:
        with other.store_.write() as conn:  # type: ignore[attr-defined]
            conn.execute("TRUNCATE change_log RESTART IDENTITY")
        stored = other.store(agent_id=AGENT, content="a brass telescope on the lighthouse gallery")
    scans = SqlScans(sample.store_, monkeypatch)  # type: ignore[attr-defined]
    vector_arms(sample, "the first recall finds the index ahead of its snapshot")
    assert scans.count >= 1 and sample.store_._vector_seq == -1  # type: ignore[attr-defined]
    scans.count = 0
    assert vector_arms(sample, "a telescope on the lighthouse gallery")["vector_near"][0][0] == stored["ref"]
    assert scans.count == 0  # read again whole, then searched in the process


def test_an_index_that_failed_to_follow_part_way_is_read_again_whole(
    sample: Memory, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sample.store_  # type: ignore[attr-defined]
    vector_arms(sample, "warm the index")
    with open_pg(url) as other:
        stored = other.store(agent_id=AGENT, content="a brass telescope on the lighthouse gallery")
    rows = store._vector_rows

    def broken(kind: str, ids: Any) -> Any:
        raise ConnectionError("the database went away mid-read")

    monkeypatch.setattr(store, "_vector_rows", broken)
    with pytest.raises(ConnectionError), store.snapshot():
        store._indexed()
    assert store._vector_seq == -1  # not the entry it had reached: the next snapshot reads the index again
    monkeypatch.setattr(store, "_vector_rows", rows)
    assert vector_arms(sample, "a telescope on the lighthouse gallery")["vector_near"][0][0] == stored["ref"]


@given(st.lists(st.integers(1, 6), min_size=1, max_size=8))
def test_vectors_read_in_one_row_are_the_rows_vectors_bit_for_bit(widths: list[int]) -> None:
    """The re-scored vectors come back as one row of pgvector's send forms end to end; unpacked, each is the
    vector pgvector's own binary loader reads, whatever the mix of widths."""
    from pgvector import Vector

    from cuedrecall.store.postgres.vectors import unpack_vectors

    rng = np.random.default_rng(len(widths) * 31 + sum(widths))
    vectors = [rng.standard_normal(width).astype(np.float32) for width in widths]
    forms = [Vector(vector).to_binary() for vector in vectors]
    unpacked = unpack_vectors(list(range(10, 10 + len(widths))), widths, b"".join(forms))
    assert list(unpacked) == list(range(10, 10 + len(widths)))
    for form, row in zip(forms, unpacked.values()):
        expected = Vector.from_binary(form).to_numpy().astype(np.float32)
        assert row.dtype == np.float32 and row.tobytes() == expected.tobytes()

"""The PostgreSQL backend through ``Memory``: store -> recall -> trace -> cue -> isolation -> tools, against SQLite.

Where answers must be equal (the vector arms, their cue-period form, the gate's
pool, the trace's shape), the same sample is loaded into both backends and the
answers are compared. Where lexical ranking differs by design (BM25 over the
scope's matching rows here, FTS5's bm25 there: store/postgres/arms.py), the tests
assert the documented rule: every hit holds one of the query's terms, ranks run
0..n-1, the same rows are found.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.demo import load_sample
from cuedrecall.errors import StoreError
from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.store.base import Scope
from cuedrecall.text.fts import fts_terms
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url, server_url

pytestmark = pytest.mark.postgres  # runs on the PostgreSQL test server (make test-fast leaves it out)

AGENT = "demo"
QUERIES = [
    "bike shop brake pads",
    "what did mara say about her sister",
    "tomato seedlings in the garden",
    "moving to a new apartment",
    "東京",
]
CUES = [
    {"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"},
    {"after": "2025-01-01", "before": "2025-12-31", "confidence": "sure"},
]
VECTOR_ARMS = ARMS.vector_names


def open_backend(kind: str, tmp_path: Path, **overrides: Any) -> Memory:
    """A Memory over SQLite (a file) or over a fresh PostgreSQL schema, same settings otherwise."""
    if kind == "postgres":
        settings = make_settings(db_url=postgres_url(), db_path=":memory:", recall_depth_floor=10, **overrides)
        return Memory(settings=settings, clock=fixed_clock(NOW), background=False)
    settings = make_settings(recall_depth_floor=10, **overrides)
    return Memory(tmp_path / "m.db", settings=settings, clock=fixed_clock(NOW), background=False)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Memory]]:
    """The sample conversation in both backends."""
    folder = tmp_path_factory.mktemp("pair")
    memories = {kind: open_backend(kind, folder) for kind in ("sqlite", "postgres")}
    for memory in memories.values():
        load_sample(memory)
    yield memories
    for memory in memories.values():
        memory.close()


def traced(memory: Memory, **arguments: Any) -> dict[str, Any]:
    response = memory.recall(agent_id=AGENT, trace=True, **arguments)
    assert response.get("ok") is not False, response
    json.dumps(response["trace"])
    return response


def arm(trace: dict[str, Any], name: str) -> list[tuple[str, int, float | None]]:
    return [(hit["ref"], hit["rank"], hit["raw"]) for hit in trace["arms"].get(name, [])]


def same_vector_rows(left: list[tuple], right: list[tuple]) -> None:
    """Equal refs and ranks; raw cosines equal to float32 rounding."""
    assert [(ref, rank) for ref, rank, _ in left] == [(ref, rank) for ref, rank, _ in right]
    assert all(abs(a[2] - b[2]) < 1e-5 for a, b in zip(left, right))


@pytest.mark.parametrize("query", QUERIES)
def test_the_vector_arms_return_the_same_rows_on_both_backends(pair: dict[str, Memory], query: str) -> None:
    traces = {kind: traced(memory, query=query, limit=5)["trace"] for kind, memory in pair.items()}
    for name in VECTOR_ARMS:
        same_vector_rows(arm(traces["sqlite"], name), arm(traces["postgres"], name))


@pytest.mark.parametrize("cue", CUES)
def test_a_time_cue_restricts_both_backends_to_the_same_rows(pair: dict[str, Memory], cue: dict[str, str]) -> None:
    traces = {
        kind: traced(memory, query="bike shop brake pads", limit=5, time_cue=cue)["trace"]
        for kind, memory in pair.items()
    }
    names = {name for name in traces["sqlite"]["arms"] if name.startswith(("vector", "cue", "period"))}
    assert names == {name for name in traces["postgres"]["arms"] if name.startswith(("vector", "cue", "period"))}
    for name in names:
        same_vector_rows(arm(traces["sqlite"], name), arm(traces["postgres"], name))


@pytest.mark.parametrize("query", QUERIES)
def test_the_trace_has_the_same_shape_and_gate_pool_on_both_backends(pair: dict[str, Memory], query: str) -> None:
    traces = {kind: traced(memory, query=query, limit=5)["trace"] for kind, memory in pair.items()}
    assert set(traces["sqlite"]) == set(traces["postgres"])
    assert set(traces["sqlite"]["arms"]) == set(traces["postgres"]["arms"])
    assert traces["sqlite"]["scope"] == traces["postgres"]["scope"]
    assert traces["sqlite"]["gate"].get("pool") == traces["postgres"]["gate"].get("pool")


@pytest.mark.parametrize("query", QUERIES)
def test_a_lexical_hit_holds_a_term_of_the_query_and_both_backends_find_the_same_rows(
    pair: dict[str, Memory], query: str
) -> None:
    """The documented rule of the trigram arms: a row matches when its text holds a term (case folded); deep
    enough, both backends find the same rows (in their own order)."""
    terms = fts_terms(query)
    found = {}
    for kind, memory in pair.items():
        store = memory.runtime.store
        hits = store.memory_keyword(memory.scope(AGENT, None, "", ""), terms, query, depth=1000)
        assert [hit.rank for hit in hits] == list(range(len(hits)))
        records = store.records([hit.ref for hit in hits])
        if terms:
            assert all(any(term.lower() in records[hit.ref].text.lower() for term in terms) for hit in hits)
        found[kind] = {hit.ref for hit in hits}
    assert found["sqlite"] == found["postgres"]


def test_recall_answers_the_same_rows_on_both_backends_for_a_clear_question(pair: dict[str, Memory]) -> None:
    """A question whose best rows the vector arms decide: the answered refs agree (fusion, gate, order above)."""
    answers = {
        kind: [
            row.get("ref") for row in memory.recall(agent_id=AGENT, query="bike shop brake pads", limit=3)["messages"]
        ]
        for kind, memory in pair.items()
    }
    assert answers["sqlite"] and set(answers["sqlite"]) == set(answers["postgres"])


def test_isolation_holds_on_postgres(tmp_path: Path) -> None:
    """Agent exact; a project sees itself and the global pool; a channel itself and the shared channel."""
    with open_backend("postgres", tmp_path) as memory:
        memory.store(agent_id="a", content="the harbour lantern glows at dusk", project_id="p1", channel="c1")
        memory.store(agent_id="a", content="the harbour lantern is in the global pool")
        memory.store(agent_id="a", content="the harbour lantern of project two", project_id="p2")
        memory.store(agent_id="b", content="the harbour lantern of another agent")

        def texts(**scope: Any) -> set[str]:
            answer = memory.recall(query="harbour lantern", limit=10, **scope)
            return {row["content"] for row in answer["messages"]}

        assert texts(agent_id="b") == {"the harbour lantern of another agent"}
        assert texts(agent_id="nobody") == set()
        seen = texts(agent_id="a", project_id="p1")
        assert "the harbour lantern of project two" not in seen and "the harbour lantern of another agent" not in seen
        assert {"the harbour lantern glows at dusk", "the harbour lantern is in the global pool"} <= seen


def test_the_write_tools_work_on_postgres(tmp_path: Path) -> None:
    """store (and its duplicate check), update, delete, profile, episode and list, as on SQLite."""
    with open_backend("postgres", tmp_path) as memory:
        first = memory.store(agent_id="a", content="violin lesson on tuesday", id="m1")
        assert first["ok"] and first["result"] == "stored"
        again = memory.store(agent_id="a", content="violin lesson on tuesday")
        assert again["result"] == "skipped" and again["id"] == first["id"]
        assert memory.store(agent_id="a", content="other text", id="m1")["reason"] == "duplicate msg_id"
        assert memory.update_profile(agent_id="a", profile="plays the violin")["ok"]
        assert memory.archive_episode(agent_id="a", summary="music week", keywords="violin")["ok"]
        listed = memory.call("list_memories", {"agent_id": "a"})
        assert listed.get("ok") is not False, listed
        assert memory.call("delete_memory", {"agent_id": "a", "memory_id": first["id"]})["ok"]
        answer = memory.recall(agent_id="a", query="violin lesson", limit=5)
        assert all(row.get("ref") != first["ref"] for row in answer["messages"])


def test_a_bad_argument_is_a_clear_error_on_postgres_and_writes_nothing(tmp_path: Path) -> None:
    with open_backend("postgres", tmp_path) as memory:
        answer = memory.store(agent_id="a", content="")
        assert answer["ok"] is False and answer["error"]
        assert memory.runtime.store.pool_counts(memory.scope("a", None, "", "")) == (0, 0)


def test_an_unreachable_database_is_a_startup_error_never_a_sqlite_file(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    settings = make_settings(db_url=url, db_path=str(tmp_path / "never.db"))
    with pytest.raises(StoreError, match="cannot reach the PostgreSQL database"):
        Memory(settings=settings, background=False)
    assert not (tmp_path / "never.db").exists()


def test_a_database_without_pgvector_is_a_startup_error_naming_the_extension(tmp_path: Path) -> None:
    """A role that may not create the extension, in a database that lacks it: the message names CREATE EXTENSION."""
    import psycopg

    admin = server_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS novector")
        conn.execute("CREATE DATABASE novector")
        conn.execute("DROP ROLE IF EXISTS plain")
        conn.execute("CREATE ROLE plain LOGIN")
        conn.execute("GRANT ALL ON DATABASE novector TO plain")
    url = admin.replace("postgres:@", "plain:@", 1).replace("/postgres?", "/novector?", 1)
    with pytest.raises(StoreError, match="CREATE EXTENSION vector"):
        Memory(settings=make_settings(db_url=url, db_path=str(tmp_path / "never.db")), background=False)
    assert not (tmp_path / "never.db").exists()


def test_a_db_url_that_is_not_postgresql_is_a_startup_error_never_a_sqlite_file(tmp_path: Path) -> None:
    settings = make_settings(db_url="sqlite:///" + str(tmp_path / "x.db"), db_path=str(tmp_path / "never.db"))
    with pytest.raises(StoreError, match="CUEDRECALL_DB_URL"):
        Memory(settings=settings, background=False)
    assert not (tmp_path / "never.db").exists() and not (tmp_path / "x.db").exists()
    assert Settings.from_env({"CPERSONA_DB_URL": "postgresql://h/db"}).db_url == "postgresql://h/db"


def test_the_optional_hnsw_index_answers_inside_the_scope_and_window_and_mostly_as_the_exact_scan(
    pair: dict[str, Memory],
) -> None:
    """CUEDRECALL_PG_HNSW is approximate: every hit lies in the scope and passes the floor, ranks run 0..n-1,
    and on a small store the index walk finds what the exact scan finds."""
    from cuedrecall.store.postgres import PostgresStore

    exact = pair["postgres"].runtime.store
    approximate = PostgresStore(exact.url, vector_model=exact.vector_model, hnsw_dim=384)
    try:
        scope = Scope(AGENT)
        for query in QUERIES:
            vector = pair["postgres"].embedder.embed([query])[0]
            want = exact.vector_near(scope, vector, floor=0.05, depth=10, window=10_000)
            got = approximate.vector_near(scope, vector, floor=0.05, depth=10, window=10_000)
            assert [hit.rank for hit in got] == list(range(len(got)))
            assert all(hit.raw >= 0.05 for hit in got)
            assert set(approximate.records([hit.ref for hit in got])) == {hit.ref for hit in got}
            assert {hit.ref for hit in got} == {hit.ref for hit in want}
            assert not approximate.vector_near(Scope("nobody"), vector, floor=-1.0, depth=10, window=10_000)
    finally:
        approximate.close()


def test_a_postgres_store_never_reads_a_sidecar_beside_the_sqlite_path(tmp_path: Path) -> None:
    """A server pointed at PostgreSQL touches no file of the SQLite side: a calibration sidecar left beside the
    (unused) db_path is neither imported nor renamed."""
    db_path = tmp_path / "old.db"
    sidecar = Path(str(db_path) + ".calibration.json")
    sidecar.write_text(
        json.dumps(
            {
                "embedding_model": "hash-384",
                "scoring_version": "any",
                "agents": {AGENT: {"cosine": 0.31}},
                "betas": {AGENT: 2.0},
            }
        )
    )
    settings = make_settings(db_url=postgres_url(), db_path=str(db_path))
    with Memory(settings=settings, clock=fixed_clock(NOW), background=False) as memory:
        assert memory.store_.thresholds() == [] and memory.store_.betas() == {}
    assert sidecar.is_file() and not db_path.exists()


def test_the_planner_knows_how_many_rows_a_vector_arm_compares(tmp_path: Path) -> None:
    """Migration 2's statistics on the vector width: after ANALYZE the planner's estimate of a scope's comparable
    rows is the real count, not PostgreSQL's 0.5% default for an expression, which planned a scope's scan window
    as a sort of every row's vector."""
    import psycopg

    url = postgres_url()
    settings = make_settings(db_url=url, db_path=":memory:", embedding_mode="hash")
    with Memory(settings=settings, clock=fixed_clock(NOW), background=False) as memory:
        for i in range(400):
            assert memory.store(agent_id="a", content=f"note {i} about the harbour crane number {i * 7}")["ok"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memories")
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) SELECT id FROM memories t WHERE t.agent_id = 'a' AND "
            "t.embedding IS NOT NULL AND vector_dims(t.embedding) = 384"
        ).fetchone()[0]
    assert plan[0]["Plan"]["Plan Rows"] >= 200


def test_a_snapshot_on_one_thread_does_not_hold_back_another_threads_recall(tmp_path: Path) -> None:
    """Each snapshot reads on a reader connection of its own: a recall answers while another thread's snapshot
    stays open (on one shared connection it would wait for that snapshot to end)."""
    with open_backend("postgres", tmp_path) as memory:
        assert memory.store(agent_id="a", content="the harbour crane lifts containers")["ok"]
        store, entered, release = memory.runtime.store, threading.Event(), threading.Event()

        def hold() -> None:
            with store.snapshot():
                store.pool_counts(memory.scope("a", None, "", ""))
                entered.set()
                release.wait(60)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert entered.wait(30)
            answered: dict[str, Any] = {}
            asker = threading.Thread(
                target=lambda: answered.update(memory.recall(agent_id="a", query="harbour crane")), daemon=True
            )
            asker.start()
            asker.join(30)
            assert not asker.is_alive(), "the recall waited for another thread's open snapshot"
            assert answered["messages"]
        finally:
            release.set()
            holder.join()


def test_a_snapshot_keeps_its_view_while_another_thread_writes(tmp_path: Path) -> None:
    """REPEATABLE READ on the reader connection: rows committed by another thread after the snapshot began are
    not seen inside it, and are seen by the next snapshot."""
    with open_backend("postgres", tmp_path) as memory:
        assert memory.store(agent_id="a", content="first note about the lighthouse")["ok"]
        store = memory.runtime.store
        count = "SELECT count(*) FROM memories WHERE agent_id = 'a'"
        with store.snapshot():
            assert store._read(count)[0][0] == 1
            writer = threading.Thread(target=lambda: memory.store(agent_id="a", content="second note, the ferry"))
            writer.start()
            writer.join()
            assert store._read(count)[0][0] == 1
        with store.snapshot():
            assert store._read(count)[0][0] == 2


def test_term_counts_are_one_round_trip_that_leaves_the_planner_as_it_was(tmp_path: Path) -> None:
    """The common-term rule's counts go through the GIN index with sequential scans off for that one statement,
    every count asked at once sent with the setting and its reset as one message; each count is the rows holding
    its term."""
    import psycopg

    with open_backend("postgres", tmp_path) as memory:
        for text in ("the harbour crane", "a harbour at dawn", "the ferry's horn", "O'Brien's harbour"):
            assert memory.store(agent_id="a", content=text)["ok"]
        store, sent = memory.runtime.store, []
        with store.snapshot():  # the pool's reader is opened (and set up) before counting
            store.pool_counts(memory.scope("a", None, "", ""))
        execute = psycopg.Cursor.execute
        try:
            psycopg.Cursor.execute = lambda self, *a, **k: sent.append(1) or execute(self, *a, **k)  # type: ignore[method-assign]
            grams = store.term_counts("memories", "gram", ["har", "fer", "zzz", "'s "])
            phrases = store.term_counts("memories", "phrase", ["n's h"])
            with store.snapshot():
                inside = store.term_counts("memories", "word", ["harbours", "horn", "!!"])
        finally:
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        assert grams == [3, 1, 0, 2] and phrases == [1] and inside == [3, 1, 0]
        assert len(sent) == 3 + 2  # one message a request, and the snapshot's BEGIN and COMMIT
        assert store._read("SHOW enable_seqscan")[0][0] == "on"

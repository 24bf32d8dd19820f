"""The Store contract: what every backend behind ``cuedrecall.store.base.Store`` must do, one suite for all.

Every test talks to the store through the ``Store`` protocol only (no private attributes, no SQL), so
the same tests run against every backend listed in ``BACKENDS``.

Adding a backend (e.g. PostgreSQL) is one parameter:

    def make_postgres(tmp_path: Path) -> Store:
        '''A fresh, empty store per test: a new database or schema; pytest.skip(...) when no server is set up.'''
        ...

    BACKENDS.append(pytest.param(make_postgres, id="postgres"))

A factory takes pytest's ``tmp_path`` and returns an open, empty Store; the ``store`` fixture closes it
after the test (``close()`` is where a backend drops what the test created, if it must).

Read semantics checked on the arms: agent_id exact; project_id None = every project, "" = the global pool
only, "X" = X and the global pool; channel "" = every channel, "C" = C and channel ""; source_id
(memories) names one source and matches exactly when it ends in a letter or a digit, and is otherwise a
case-sensitive prefix of the stored source's id; episodes are hidden when source_id is set
unless channel is set too. Hits of every arm are ranked 0..n-1.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.clock import to_epoch
from cuedrecall.embed.hashing import DIMENSIONS, hash_vector
from cuedrecall.errors import StoreClosedError, StoreError
from cuedrecall.handlers.rows import embedding, episode_row, memory_row
from cuedrecall.store.base import (
    ENTITY,
    EPISODE,
    MEMORY,
    AgentSummary,
    BlockSet,
    Hit,
    Mentions,
    NewRelation,
    Record,
    Scope,
    Store,
    Task,
    Threshold,
    make_ref,
    memory_vectors,
)
from cuedrecall.store.sqlite import SqliteStore
from cuedrecall.text.blocks import divide
from cuedrecall.text.fts import fts_terms

BACKENDS: list[Any] = [
    pytest.param(lambda tmp_path: SqliteStore(tmp_path / "contract.db"), id="sqlite-file"),
    pytest.param(lambda tmp_path: SqliteStore(":memory:"), id="sqlite-memory"),
]


def make_postgres(tmp_path: Path) -> Store:
    """A fresh, empty PostgresStore in a new schema of the session's private server (tests/pg_server.py)."""
    from cuedrecall.store.postgres import PostgresStore
    from tests.pg_server import postgres_url

    return PostgresStore(postgres_url())


BACKENDS.append(pytest.param(make_postgres, id="postgres", marks=pytest.mark.postgres))

A, B = "agent-a", "agent-b"
NOBODY = "agent-nobody"
NOW = "2025-11-01T12:00:00+00:00"
MODEL = "hash-384"
EVERYTHING = (0.0, 1e11)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    factory: Callable[[Path], Store] = request.param
    backend = factory(tmp_path)
    try:
        yield backend
    finally:
        backend.close()


# -- writing rows through the protocol ------------------------------------------------------------


def add_memory(
    store: Store,
    content: str,
    *,
    agent: str = A,
    project: str = "",
    channel: str = "",
    source: dict | None = None,
    msg_id: str = "",
    timestamp: str = "2025-01-01T00:00:00+00:00",
    embedded: bool = True,
    locked: bool = False,
) -> str:
    row = memory_row(
        agent_id=agent,
        project_id=project,
        channel=channel,
        msg_id=msg_id,
        content=content,
        source=source or {},
        timestamp=timestamp,
        metadata={},
        created_at=NOW,
        vector=hash_vector(content) if embedded else None,
        model=MODEL,
        locked=locked,
    )
    if to_epoch(timestamp) is None:
        # a row whose time is unknown (a store before odd timestamps took their store time): the store's rules
        # for undated rows are what these tests check
        row["ts_epoch"] = None
    with store.write() as conn:
        return make_ref(MEMORY, store.insert_memory(conn, row))


def add_episode(
    store: Store,
    summary: str,
    *,
    agent: str = A,
    project: str = "",
    channel: str = "",
    keywords: str = "",
    start_time: str | None = None,
    end_time: str | None = None,
    created_at: str = NOW,
    resolved: bool = False,
) -> str:
    row = episode_row(
        agent_id=agent,
        project_id=project,
        channel=channel,
        summary=summary,
        keywords=keywords,
        start_time=start_time,
        end_time=end_time,
        resolved=resolved,
        created_at=created_at,
        vector=hash_vector(summary),
        model=MODEL,
    )
    with store.write() as conn:
        return make_ref(EPISODE, store.insert_episode(conn, row))


def number(ref: str) -> int:
    return int(ref.split(":")[1])


def ranked(hits: list[Hit]) -> list[str]:
    """The refs of an arm's hits, after checking the ranks run 0..n-1 with no ref twice."""
    assert [h.rank for h in hits] == list(range(len(hits)))
    refs = [h.ref for h in hits]
    assert len(refs) == len(set(refs))
    return refs


def scored(hits: list[Hit]) -> list[str]:
    """As ``ranked``, for a vector arm: the raw scores never rise down the ranking."""
    raws = [h.raw for h in hits]
    assert all(isinstance(r, float) for r in raws)
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(raws))
    return ranked(hits)


@pytest.fixture
def world(store: Store) -> dict[str, str]:
    """A small store: agent A's memories and episodes across projects and channels, agent B's look-alikes.

    Memories are inserted in id order harbour, violin, glacier, late (late has the oldest time);
    episodes ep_harbour, ep_glacier, ep_old (ep_old is inserted last but recorded first).
    """
    refs = {
        "harbour": add_memory(
            store,
            "the harbour lantern glows at dusk",
            source={"type": "User", "id": "discord:1"},
            timestamp="2025-01-10T10:00:00+00:00",
        ),
        "violin": add_memory(
            store,
            "a violin lesson in the orchard",
            project="p1",
            channel="c1",
            source={"id": "slack:2"},
            timestamp="2025-02-10T10:00:00+00:00",
        ),
        "glacier": add_memory(
            store,
            "the glacier trip was cold",
            project="p2",
            channel="c2",
            source={"id": "discord:3"},
            timestamp="2025-03-10T10:00:00+00:00",
        ),
        "late": add_memory(store, "a comet sighting over the quarry", timestamp="2024-06-01T10:00:00+00:00"),
        "other": add_memory(
            store,
            "the harbour lantern glows at dusk",
            agent=B,
            source={"id": "discord:1"},
            timestamp="2025-01-10T10:00:00+00:00",
        ),
        "ep_harbour": add_episode(
            store,
            "talk about the harbour lantern",
            keywords="harbour",
            start_time="2025-01-15T09:00:00+00:00",
            created_at="2025-01-16T09:00:00+00:00",
        ),
        "ep_glacier": add_episode(
            store,
            "planning the glacier trip",
            keywords="glacier",
            project="p2",
            channel="c2",
            start_time="2025-03-15T09:00:00+00:00",
            created_at="2025-03-16T09:00:00+00:00",
        ),
        "ep_other": add_episode(
            store,
            "talk about the harbour lantern",
            keywords="harbour",
            agent=B,
            start_time="2025-01-15T09:00:00+00:00",
            created_at="2025-01-16T09:00:00+00:00",
        ),
        "ep_old": add_episode(
            store, "an old chat about kites", project="p1", channel="c1", created_at="2024-05-01T09:00:00+00:00"
        ),
    }
    return refs


# -- records ----------------------------------------------------------------------------------------


def test_schema_version_is_a_positive_int(store: Store) -> None:
    assert isinstance(store.schema_version, int) and store.schema_version >= 1


def test_an_inserted_memory_reads_back_as_a_record_with_every_field(store: Store) -> None:
    source = {"type": "User", "id": "discord:1", "name": "Al"}
    ref = add_memory(
        store,
        "the kettle is in the left cupboard",
        agent=A,
        project="p1",
        channel="c1",
        source=source,
        msg_id="m-1",
        timestamp="2025-03-04T05:06:07.123+09:00",
        locked=True,
    )
    assert store.records([ref]) == {
        ref: Record(
            ref=ref,
            kind=MEMORY,
            id=number(ref),
            agent_id=A,
            project_id="p1",
            channel="c1",
            text="the kettle is in the left cupboard",
            timestamp="2025-03-04T05:06:07.123+09:00",
            created_at=NOW,
            msg_id="m-1",
            source=source,
            keywords="",
            resolved=False,
            locked=True,
            start_time=None,
            end_time=None,
            ts_epoch=to_epoch("2025-03-04T05:06:07.123+09:00"),
        )
    }
    assert store.records([ref])[ref].display_content == "the kettle is in the left cupboard"


def test_an_inserted_episode_reads_back_with_its_start_as_its_time_and_a_labelled_display(store: Store) -> None:
    ref = add_episode(
        store,
        "planning the trip to Porto",
        agent=A,
        project="p2",
        channel="c2",
        keywords="porto trip",
        start_time="2025-05-01T08:00:00Z",
        end_time="2025-05-01T09:30:00Z",
        created_at="2025-05-02T10:00:00+00:00",
        resolved=True,
    )
    record = store.records([ref])[ref]
    assert record == Record(
        ref=ref,
        kind=EPISODE,
        id=number(ref),
        agent_id=A,
        project_id="p2",
        channel="c2",
        text="planning the trip to Porto",
        timestamp="2025-05-01T08:00:00Z",
        created_at="2025-05-02T10:00:00+00:00",
        msg_id="",
        source={"System": "episode"},
        keywords="porto trip",
        resolved=True,
        locked=False,
        start_time="2025-05-01T08:00:00Z",
        end_time="2025-05-01T09:30:00Z",
        ts_epoch=to_epoch("2025-05-01T08:00:00Z"),
    )
    assert record.display_content == "[Episode] planning the trip to Porto"


def test_an_episode_without_a_start_takes_its_recording_time(store: Store) -> None:
    ref = add_episode(store, "a chat with no start", created_at="2025-06-01T10:00:00+00:00")
    record = store.records([ref])[ref]
    assert (record.timestamp, record.start_time, record.end_time) == ("2025-06-01T10:00:00+00:00", None, None)
    assert record.ts_epoch == to_epoch("2025-06-01T10:00:00+00:00")


def test_a_memory_with_an_unreadable_time_has_no_epoch(store: Store) -> None:
    ref = add_memory(store, "some time or other", timestamp="sometime last spring")
    record = store.records([ref])[ref]
    assert record.timestamp == "sometime last spring" and record.ts_epoch is None


def test_unknown_refs_are_absent_from_records(store: Store) -> None:
    memory, episode = add_memory(store, "a known memory"), add_episode(store, "a known episode")
    found = store.records([memory, "mem:9999", episode, "ep:9999", make_ref(EPISODE, number(memory) + 100)])
    assert set(found) == {memory, episode}
    assert store.records([]) == {}


def test_agents_lists_every_agent_with_a_row_or_a_profile_with_counts_and_axes(
    store: Store, world: dict[str, str]
) -> None:
    with store.write() as conn:
        store.set_profile(conn, NOBODY, "profile only", NOW)
    assert store.agents() == [
        AgentSummary(A, 4, 3, ("", "p1", "p2"), ("", "c1", "c2"), False),
        AgentSummary(B, 1, 1, ("",), ("",), False),
        AgentSummary(NOBODY, 0, 0, (), (), True),
    ]
    add_memory(store, "a newcomer's first memory", agent="agent-new", channel="c9")  # a change is seen at once
    assert AgentSummary("agent-new", 1, 0, ("",), ("c9",), False) in store.agents()


def test_page_records_pages_a_scope_newest_id_first_by_before_id_offset_and_period(
    store: Store, world: dict[str, str]
) -> None:
    def refs(records: list[Record]) -> list[str]:
        return [r.ref for r in records]

    harbour, violin, glacier, late = (world[k] for k in ("harbour", "violin", "glacier", "late"))
    assert refs(store.page_records(MEMORY, Scope(A), limit=10)) == [late, glacier, violin, harbour]
    first = store.page_records(MEMORY, Scope(A), limit=2)
    assert refs(first) == [late, glacier]
    assert refs(store.page_records(MEMORY, Scope(A), limit=2, before_id=first[-1].id)) == [violin, harbour]
    assert refs(store.page_records(MEMORY, Scope(A), limit=2, offset=3)) == [harbour]
    assert store.page_records(MEMORY, Scope(A), limit=0) == []
    # isolation as everywhere: project X with the global pool, channel C with the shared channel
    assert refs(store.page_records(MEMORY, Scope(A, "p1", "c1"), limit=10)) == [late, violin, harbour]
    assert refs(store.page_records(MEMORY, Scope(B), limit=10)) == [world["other"]]
    # the period is the record time, [start, end)
    february = (to_epoch("2025-02-01T00:00:00+00:00"), to_epoch("2025-03-10T10:00:00+00:00"))
    assert refs(store.page_records(MEMORY, Scope(A), limit=10, period=february)) == [violin]
    assert refs(store.page_records(EPISODE, Scope(A), limit=10)) == [
        world["ep_old"],
        world["ep_glacier"],
        world["ep_harbour"],
    ]
    old = (to_epoch("2024-01-01T00:00:00+00:00"), to_epoch("2024-12-31T00:00:00+00:00"))
    assert refs(store.page_records(EPISODE, Scope(A), limit=10, period=old)) == [world["ep_old"]]
    # a source filter hides episodes unless a channel scopes the read
    assert store.page_records(EPISODE, Scope(A, source_id="discord:1"), limit=10) == []
    # a new bucket (project, channel) and a new row are paged at once, in id order across buckets
    fresh = add_memory(store, "a fresh note", project="p3", channel="c3")
    assert refs(store.page_records(MEMORY, Scope(A), limit=2)) == [fresh, late]
    assert refs(store.page_records(MEMORY, Scope(A, "p3"), limit=10)) == [fresh, late, harbour]


def test_memory_row_holds_every_column_with_the_vector(store: Store) -> None:
    ref = add_memory(store, "row level detail", source={"id": "discord:7"}, msg_id="x-7")
    row = store.memory_row(number(ref))
    assert row is not None
    assert (row["id"], row["agent_id"], row["content"], row["msg_id"], row["source_id"]) == (
        number(ref),
        A,
        "row level detail",
        "x-7",
        "discord:7",
    )
    assert np.allclose(row["embedding"], hash_vector("row level detail"))
    assert store.memory_row(9999) is None


def test_export_rows_yields_one_agents_rows_oldest_first_or_every_agents_for_empty(store: Store) -> None:
    first, second = add_memory(store, "first of a"), add_memory(store, "second of a")
    of_b = add_memory(store, "one of b", agent=B)
    assert [r["id"] for r in store.export_rows(MEMORY, A)] == [number(first), number(second)]
    rows = list(store.export_rows(MEMORY, ""))
    assert [r["id"] for r in rows] == [number(first), number(second), number(of_b)]
    assert np.allclose(rows[0]["embedding"], hash_vector("first of a"))
    episode = add_episode(store, "an episode of b", agent=B)
    assert [r["id"] for r in store.export_rows(EPISODE, B)] == [number(episode)]
    assert list(store.export_rows(EPISODE, A)) == []


# -- transactions -------------------------------------------------------------------------------------


def test_a_write_block_that_raises_leaves_nothing_behind_the_index_and_calibration_included(store: Store) -> None:
    kept = add_memory(store, "kept memory of agent b", agent=B)
    lost_text = "the lost harbour memo"
    with pytest.raises(RuntimeError, match="abort"), store.write() as conn:
        lost = make_ref(
            MEMORY,
            store.insert_memory(
                conn,
                memory_row(
                    agent_id=A,
                    project_id="",
                    channel="",
                    msg_id="lost-1",
                    content=lost_text,
                    source={},
                    timestamp=NOW,
                    metadata={},
                    created_at=NOW,
                    vector=hash_vector(lost_text),
                    model=MODEL,
                ),
            ),
        )
        lost_episode = make_ref(
            EPISODE,
            store.insert_episode(
                conn,
                episode_row(
                    agent_id=A,
                    project_id="",
                    channel="",
                    summary="a lost episode",
                    keywords="",
                    start_time=None,
                    end_time=None,
                    resolved=False,
                    created_at=NOW,
                    vector=hash_vector("a lost episode"),
                    model=MODEL,
                ),
            ),
        )
        assert store.delete(conn, kept) is True
        store.set_profile(conn, A, "a lost profile", NOW)
        store.set_thresholds(conn, [Threshold(A, "near", 0.4, MODEL, "v1")])
        store.set_beta(conn, A, 2.0)
        raise RuntimeError("abort")
    assert set(store.records([kept, lost, lost_episode])) == {kept}
    assert store.vector_near(Scope(A), hash_vector(lost_text), floor=-2.0, depth=100, window=100) == []
    assert store.vectors([lost, lost_episode]) == {}
    assert store.newest(Scope(A), MEMORY, 10) == [] and store.newest(Scope(A), EPISODE, 10) == []
    assert store.memory_keyword(Scope(A), fts_terms("harbour"), "harbour", depth=10) == []
    assert store.pool_counts(Scope(A)) == (0, 0) and store.pool_counts(Scope(B)) == (1, 0)
    assert store.find_duplicate(A, [""], [""], "lost-1", lost_text) is None
    assert store.profile(A) is None
    assert store.thresholds() == [] and store.betas() == {}


def test_the_store_writes_normally_after_a_rolled_back_block_and_the_new_row_gets_its_own_vector(store: Store) -> None:
    with pytest.raises(ValueError), store.write() as conn:
        store.insert_memory(
            conn,
            memory_row(
                agent_id=A,
                project_id="",
                channel="",
                msg_id="",
                content="rolled back",
                source={},
                timestamp=NOW,
                metadata={},
                created_at=NOW,
                vector=hash_vector("rolled back"),
                model=MODEL,
            ),
        )
        raise ValueError
    ref = add_memory(store, "committed afterwards")
    assert [r.text for r in store.records([ref]).values()] == ["committed afterwards"]
    assert np.allclose(store.vectors([ref])[ref], hash_vector("committed afterwards"))
    hits = store.vector_near(Scope(A), hash_vector("rolled back"), floor=-2.0, depth=100, window=100)
    assert ranked(hits) == [ref]


def test_reads_inside_a_snapshot_see_one_state_while_another_thread_writes(store: Store) -> None:
    first = add_memory(store, "written before the snapshot")
    scope = Scope(A)
    query = hash_vector("written during the snapshot")
    written: list[str] = []

    def state() -> tuple[Any, ...]:
        return (
            store.pool_counts(scope),
            ranked(store.newest(scope, MEMORY, 10)),
            sorted(ranked(store.vector_near(scope, query, floor=-2.0, depth=10, window=10))),
            sorted(store.records([first, make_ref(MEMORY, number(first) + 1)])),
            store.embedded_memory_ids(A)[0].tolist(),
        )

    with store.snapshot():
        before = state()
        assert before[0] == (1, 0)
        writer = threading.Thread(target=lambda: written.append(add_memory(store, "written during the snapshot")))
        writer.start()
        writer.join(timeout=0.3)  # a backend may hold the writer until the snapshot ends, or let it commit
        assert state() == before
    writer.join(timeout=10)
    assert not writer.is_alive() and len(written) == 1
    assert store.pool_counts(scope) == (2, 0)
    assert ranked(store.newest(scope, MEMORY, 10)) == [written[0], first]
    assert written[0] in ranked(store.vector_near(scope, query, floor=-2.0, depth=10, window=10))


def test_snapshots_nest_and_the_store_is_writable_after_the_outer_one(store: Store) -> None:
    first = add_memory(store, "seen in every snapshot")
    with store.snapshot():
        with store.snapshot():
            assert set(store.records([first])) == {first}
        assert store.pool_counts(Scope(A)) == (1, 0)  # the outer snapshot still reads after the inner one ends
        with store.snapshot():
            assert ranked(store.newest(Scope(A), MEMORY, 10)) == [first]
    second = add_memory(store, "written after the snapshots")
    assert ranked(store.newest(Scope(A), MEMORY, 10)) == [second, first]


def test_a_snapshot_left_by_an_exception_leaves_the_store_usable(store: Store) -> None:
    with pytest.raises(KeyError), store.snapshot():
        store.pool_counts(Scope(A))
        raise KeyError("reader failed")
    ref = add_memory(store, "written after a failed read")
    assert set(store.records([ref])) == {ref}


# -- writes ---------------------------------------------------------------------------------------------


def test_delete_removes_the_row_from_records_every_arm_and_vectors(store: Store) -> None:
    keep = add_memory(store, "keep the red umbrella by the door")
    gone = add_memory(store, "the old alarm code was 1234")
    episode = add_episode(store, "a talk about the alarm code", keywords="alarm")
    with store.write() as conn:
        assert store.delete(conn, gone) is True
        assert store.delete(conn, episode) is True
    with store.write() as conn:
        assert store.delete(conn, gone) is False
        assert store.delete(conn, "mem:9999") is False
        assert store.delete(conn, "ep:9999") is False
    assert set(store.records([keep, gone, episode])) == {keep}
    assert store.vectors([keep, gone, episode]).keys() == {keep}
    query = hash_vector("the old alarm code was 1234")
    assert ranked(store.vector_near(Scope(A), query, floor=-2.0, depth=100, window=100)) == [keep]
    assert ranked(store.vector_in_period(Scope(A), MEMORY, query, floor=-2.0, depth=100, period=EVERYTHING)) == [keep]
    assert store.vector_in_period(Scope(A), EPISODE, query, floor=-2.0, depth=100, period=EVERYTHING) == []
    assert store.memory_keyword(Scope(A), fts_terms("alarm"), "alarm", depth=10) == []
    assert store.episode_fts(Scope(A), fts_terms("alarm"), depth=10) == []
    assert ranked(store.newest(Scope(A), MEMORY, 10)) == [keep]
    assert store.newest(Scope(A), EPISODE, 10) == []
    assert store.pool_counts(Scope(A)) == (1, 0)
    assert store.embedded_memory_ids(A)[0].tolist() == [number(keep)]


def test_update_memory_changes_content_and_vector_and_the_full_text_follows(store: Store) -> None:
    ref = add_memory(store, "dinner with Ana on friday")
    other = add_memory(store, "a note about the garden")
    new = "lunch with Bruno moved to sunday"
    with store.write() as conn:
        store.update_memory(conn, number(ref), {"content": new, **embedding(hash_vector(new), MODEL)})
    assert store.records([ref])[ref].text == new
    assert ranked(store.memory_keyword(Scope(A), fts_terms("Bruno"), "Bruno", depth=10)) == [ref]
    assert store.memory_keyword(Scope(A), fts_terms("friday"), "friday", depth=10) == []
    assert np.allclose(store.vectors([ref])[ref], hash_vector(new))
    hits = store.vector_near(Scope(A), hash_vector(new), floor=-2.0, depth=10, window=10)
    assert scored(hits)[0] == ref and hits[0].raw == pytest.approx(1.0, abs=1e-5)
    assert set(scored(hits)) == {ref, other}
    row = store.memory_row(number(ref))
    assert row is not None and row["content"] == new


def test_update_memory_moves_a_memory_between_scopes_on_every_arm(store: Store) -> None:
    ref = add_memory(store, "a movable note", project="p1", channel="c1", source={"id": "discord:1"})
    with store.write() as conn:
        store.update_memory(conn, number(ref), {"project_id": "p2", "channel": "c2", "source_id": "slack:9"})
    query = hash_vector("a movable note")
    cases = (
        (Scope(A, "p1"), False),
        (Scope(A, "p2", "c2"), True),
        (Scope(A, source_id="discord:"), False),
        (Scope(A, source_id="slack:"), True),
    )
    for scope, visible in cases:
        expected = [ref] if visible else []
        assert ranked(store.vector_near(scope, query, floor=-2.0, depth=10, window=10)) == expected, scope
        assert ranked(store.newest(scope, MEMORY, 10)) == expected, scope
        assert store.pool_counts(scope) == (len(expected), 0), scope


def test_find_duplicate_by_msg_id_in_the_write_projects_on_any_channel(store: Store) -> None:
    ref = add_memory(store, "first version", project="p1", channel="c1", msg_id="msg-1")
    assert store.find_duplicate(A, ["p1", ""], ["c2", ""], "msg-1", "other words") == ("duplicate msg_id", number(ref))
    assert store.find_duplicate(A, ["p2", ""], ["c1", ""], "msg-1", "other words") is None
    assert store.find_duplicate(B, ["p1", ""], ["c1", ""], "msg-1", "other words") is None
    assert store.find_duplicate(A, ["p1", ""], ["c1", ""], "msg-2", "other words") is None


def test_find_duplicate_by_content_in_the_write_projects_and_channels(store: Store) -> None:
    ref = add_memory(store, "the door code is 4711", project="p1", channel="c1")
    shared = add_memory(store, "a shared fact")  # global pool, shared channel
    assert store.find_duplicate(A, ["p1", ""], ["c1", ""], "", "the door code is 4711") == (
        "duplicate content",
        number(ref),
    )
    assert store.find_duplicate(A, ["p1", ""], ["c2", ""], "", "the door code is 4711") is None
    assert store.find_duplicate(A, ["p2", ""], ["c1", ""], "", "the door code is 4711") is None
    assert store.find_duplicate(A, [""], [""], "", "the door code is 4711") is None
    assert store.find_duplicate(B, ["p1", ""], ["c1", ""], "", "the door code is 4711") is None
    assert store.find_duplicate(A, ["p9", ""], ["c9", ""], "", "a shared fact") == ("duplicate content", number(shared))
    assert store.find_duplicate(A, ["p1", ""], ["c1", ""], "", "the door code") is None  # exact, not a prefix


def test_an_empty_msg_id_never_matches_by_msg_id(store: Store) -> None:
    add_memory(store, "no message id here")
    assert store.find_duplicate(A, [""], [""], "", "different words") is None


def test_find_episode_matches_agent_project_channel_and_summary_exactly(store: Store) -> None:
    ref = add_episode(store, "a talk about kites", project="p1", channel="c1")
    assert store.find_episode(A, "p1", "c1", "a talk about kites") == number(ref)
    assert store.find_episode(A, "p1", "", "a talk about kites") is None
    assert store.find_episode(A, "", "c1", "a talk about kites") is None
    assert store.find_episode(B, "p1", "c1", "a talk about kites") is None
    assert store.find_episode(A, "p1", "c1", "a talk about kite") is None


@pytest.mark.parametrize("kind", [MEMORY, EPISODE])
def test_list_records_is_newest_first_with_the_project_rule_and_the_limit(store: Store, kind: str) -> None:
    def add(text: str, **kw: Any) -> str:
        return add_memory(store, text, **kw) if kind == MEMORY else add_episode(store, text, **kw)

    glob, p1, p2 = add("global one"), add("in p1", project="p1"), add("in p2", project="p2")
    of_b = add("b in p1", agent=B, project="p1")

    def listed(agent: str, project: str | None, limit: int = 100) -> list[str]:
        records = store.list_records(kind, agent, project, limit)
        assert all(r.kind == kind for r in records)
        return [r.ref for r in records]

    assert listed(A, None) == [p2, p1, glob]
    assert listed(A, "") == [glob]
    assert listed(A, "p1") == [p1, glob]
    assert listed(A, "p9") == [glob]
    assert listed("", None) == [of_b, p2, p1, glob]
    assert listed("", "p1") == [of_b, p1, glob]
    assert listed(A, None, limit=2) == [p2, p1]
    assert listed(NOBODY, None) == []


def test_profiles_are_set_overwritten_and_read_per_agent(store: Store) -> None:
    assert store.profile(A) is None and list(store.profiles("")) == []
    with store.write() as conn:
        store.set_profile(conn, A, "likes tea", "2025-01-01T00:00:00+00:00")
        store.set_profile(conn, B, "likes rain", "2025-01-02T00:00:00+00:00")
    assert tuple(store.profile(A)) == ("likes tea", "2025-01-01T00:00:00+00:00")
    with store.write() as conn:
        store.set_profile(conn, A, "likes coffee now", "2025-02-01T00:00:00+00:00")
    assert tuple(store.profile(A)) == ("likes coffee now", "2025-02-01T00:00:00+00:00")
    assert [tuple(p) for p in store.profiles(A)] == [(A, "likes coffee now", "2025-02-01T00:00:00+00:00")]
    assert [tuple(p) for p in store.profiles("")] == [
        (A, "likes coffee now", "2025-02-01T00:00:00+00:00"),
        (B, "likes rain", "2025-01-02T00:00:00+00:00"),
    ]
    assert store.profile(NOBODY) is None and list(store.profiles(NOBODY)) == []


def test_set_thresholds_upserts_per_agent_and_signal_and_drop_thresholds_removes_agents(store: Store) -> None:
    assert store.thresholds() == []
    with store.write() as conn:
        store.set_thresholds(
            conn,
            [
                Threshold(A, "near", 0.3, MODEL, "v1"),
                Threshold(A, "far", 0.5, MODEL, "v1"),
                Threshold(B, "near", 0.2, MODEL, "v1"),
            ],
        )
    with store.write() as conn:
        store.set_thresholds(conn, [Threshold(A, "near", 0.35, "other-model", "v2")])
    assert sorted(store.thresholds(), key=lambda t: (t.agent_id, t.signal)) == [
        Threshold(A, "far", 0.5, MODEL, "v1"),
        Threshold(A, "near", 0.35, "other-model", "v2"),
        Threshold(B, "near", 0.2, MODEL, "v1"),
    ]
    with store.write() as conn:
        store.drop_thresholds(conn, [A, NOBODY])
    assert store.thresholds() == [Threshold(B, "near", 0.2, MODEL, "v1")]
    with store.write() as conn:
        store.drop_thresholds(conn, [])
    assert store.thresholds() == [Threshold(B, "near", 0.2, MODEL, "v1")]


def test_set_beta_sets_overwrites_and_none_removes(store: Store) -> None:
    assert store.betas() == {}
    with store.write() as conn:
        store.set_beta(conn, A, 2.0)
        store.set_beta(conn, B, 0.5)
    assert store.betas() == {A: 2.0, B: 0.5}
    with store.write() as conn:
        store.set_beta(conn, A, 3.0)
    assert store.betas() == {A: 3.0, B: 0.5}
    with store.write() as conn:
        store.set_beta(conn, A, None)
        store.set_beta(conn, NOBODY, None)  # removing what is not there is no error
    assert store.betas() == {B: 0.5}


# -- recall arms ---------------------------------------------------------------------------------------------


def test_vector_near_ranks_the_scope_best_first(store: Store, world: dict[str, str]) -> None:
    scope = Scope(A, "p1", "c1")
    hits = store.vector_near(scope, hash_vector("the harbour lantern glows at dusk"), floor=-2.0, depth=100, window=100)
    refs = scored(hits)
    assert set(refs) == {world["harbour"], world["violin"], world["late"], world["ep_harbour"], world["ep_old"]}
    assert refs[0] == world["harbour"] and hits[0].raw == pytest.approx(1.0, abs=1e-5)
    assert len(store.vector_near(scope, hash_vector("harbour"), floor=-2.0, depth=2, window=100)) == 2
    above = scored(
        store.vector_near(scope, hash_vector("the harbour lantern glows at dusk"), floor=0.99, depth=100, window=100)
    )
    assert above == [world["harbour"]]  # B's identical memory is another agent's


def test_vector_near_sees_only_the_newest_window_of_each_kind(store: Store, world: dict[str, str]) -> None:
    scope = Scope(A, "p1", "c1")
    hits = store.vector_near(scope, hash_vector("harbour"), floor=-2.0, depth=100, window=1)
    assert set(scored(hits)) == {world["late"], world["ep_old"]}


def test_vector_near_leaves_episodes_out_of_a_source_read_without_a_channel(
    store: Store, world: dict[str, str]
) -> None:
    query = hash_vector("harbour lantern")
    hidden = scored(store.vector_near(Scope(A, source_id="discord:"), query, floor=-2.0, depth=100, window=100))
    assert set(hidden) == {world["harbour"], world["glacier"]}
    shown = scored(store.vector_near(Scope(A, None, "c2", "discord:"), query, floor=-2.0, depth=100, window=100))
    assert set(shown) == {world["harbour"], world["glacier"], world["ep_harbour"], world["ep_glacier"]}


def test_vector_far_covers_the_scope_beyond_the_window_up_to_the_reach(store: Store, world: dict[str, str]) -> None:
    scope = Scope(A, "p1", "c1")
    query = hash_vector("harbour")
    far = scored(store.vector_far(scope, query, floor=-2.0, limit=100, window=1, reach=100))
    assert set(far) == {world["violin"], world["harbour"], world["ep_harbour"]}
    near = scored(store.vector_near(scope, query, floor=-2.0, depth=100, window=1))
    assert not set(far) & set(near)
    # scan position 1 only (newest first per kind): the second-newest memory and episode
    assert set(scored(store.vector_far(scope, query, floor=-2.0, limit=100, window=1, reach=2))) == {
        world["violin"],
        world["ep_harbour"],
    }
    assert len(store.vector_far(scope, query, floor=-2.0, limit=1, window=1, reach=100)) == 1
    assert store.vector_far(scope, query, floor=-2.0, limit=100, window=100, reach=200) == []


def test_far_candidates_rank_the_scopes_memories_beyond_the_start_by_sign_bits(
    store: Store, world: dict[str, str]
) -> None:
    query = hash_vector("harbour lantern")
    found = store.far_candidates(Scope(A), query, start=0, count=100)
    # memories only, of agent A, each once; best first by (Hamming distance, scan position)
    assert {hit.ref for hit in found} == {world["harbour"], world["violin"], world["glacier"], world["late"]}
    assert [(hit.distance, hit.position) for hit in found] == sorted((hit.distance, hit.position) for hit in found)
    assert sorted(hit.position for hit in found) == [0, 1, 2, 3]
    vectors = store.vectors([hit.ref for hit in found])
    for hit in found:
        bits = np.count_nonzero((vectors[hit.ref] > 0) != (query > 0))
        assert hit.distance == bits and hit.cosine == pytest.approx(float(vectors[hit.ref] @ query), abs=1e-6)
    assert found[0].ref == world["harbour"]
    # scan positions newest first: from 2 on, the two oldest inserted; the count cuts the list
    assert {hit.ref for hit in store.far_candidates(Scope(A), query, start=2, count=100)} == {
        world["harbour"],
        world["violin"],
    }
    assert len(store.far_candidates(Scope(A), query, start=0, count=1)) == 1
    assert [hit.ref for hit in store.far_candidates(Scope(A, "p1", "c1"), query, start=0, count=100)] != []
    assert store.far_candidates(Scope(A, source_id="discord:3"), query, start=0, count=100)[0].ref == world["glacier"]
    assert store.far_candidates(Scope(A), query, start=4, count=100) == []


def test_vector_in_period_keeps_one_kind_inside_the_scope_and_the_period(store: Store, world: dict[str, str]) -> None:
    period = (to_epoch("2025-01-01T00:00:00Z"), to_epoch("2025-02-28T00:00:00Z"))
    query = hash_vector("harbour")
    memories = scored(store.vector_in_period(Scope(A), MEMORY, query, floor=-2.0, depth=100, period=period))
    assert set(memories) == {world["harbour"], world["violin"]}
    episodes = scored(store.vector_in_period(Scope(A), EPISODE, query, floor=-2.0, depth=100, period=period))
    assert episodes == [world["ep_harbour"]]
    assert scored(store.vector_in_period(Scope(A, ""), MEMORY, query, floor=-2.0, depth=100, period=period)) == [
        world["harbour"]
    ]
    # the period is half-open: [start, end)
    start = to_epoch("2025-01-10T10:00:00+00:00")
    assert scored(
        store.vector_in_period(Scope(A), MEMORY, query, floor=-2.0, depth=100, period=(start, start + 1))
    ) == [world["harbour"]]
    assert store.vector_in_period(Scope(A), MEMORY, query, floor=-2.0, depth=100, period=(start - 1, start)) == []


def test_episode_fts_finds_the_scopes_episodes_by_term(store: Store, world: dict[str, str]) -> None:
    assert ranked(store.episode_fts(Scope(A), fts_terms("harbour"), depth=10)) == [world["ep_harbour"]]
    assert ranked(store.episode_fts(Scope(A, "p2", "c2"), fts_terms("glacier trip"), depth=10)) == [world["ep_glacier"]]
    assert store.episode_fts(Scope(A, ""), fts_terms("glacier"), depth=10) == []
    assert store.episode_fts(Scope(A, None, "c1"), fts_terms("glacier"), depth=10) == []
    assert store.episode_fts(Scope(A, source_id="discord:"), fts_terms("harbour"), depth=10) == []
    assert ranked(store.episode_fts(Scope(A, None, "c1", "discord:"), fts_terms("harbour"), depth=10)) == [
        world["ep_harbour"]
    ]
    assert store.episode_fts(Scope(A), [], depth=10) == []
    assert store.episode_fts(Scope(A), fts_terms("harbour"), depth=0) == []
    assert len(store.episode_fts(Scope(A), fts_terms("the harbour glacier kites"), depth=2)) == 2
    assert set(ranked(store.episode_fts(Scope(A), fts_terms("the harbour glacier kites"), depth=10))) == {
        world["ep_harbour"],
        world["ep_glacier"],
        world["ep_old"],
    }


def test_episode_fts_keeps_the_period(store: Store, world: dict[str, str]) -> None:
    march = (to_epoch("2025-03-01T00:00:00Z"), to_epoch("2025-04-01T00:00:00Z"))
    terms = fts_terms("harbour glacier")
    assert ranked(store.episode_fts(Scope(A), terms, depth=10, period=march)) == [world["ep_glacier"]]


def test_memory_keyword_finds_the_scopes_memories_by_term(store: Store, world: dict[str, str]) -> None:
    assert ranked(store.memory_keyword(Scope(A), fts_terms("lantern"), "lantern", depth=10)) == [world["harbour"]]
    assert ranked(store.memory_keyword(Scope(B), fts_terms("lantern"), "lantern", depth=10)) == [world["other"]]
    assert store.memory_keyword(Scope(A, "p1", "c1"), fts_terms("glacier"), "glacier", depth=10) == []
    assert set(ranked(store.memory_keyword(Scope(A, source_id="discord:"), fts_terms("the"), "the", depth=10))) == {
        world["glacier"],
        world["harbour"],
    }
    assert store.memory_keyword(Scope(A), fts_terms("lantern"), "lantern", depth=0) == []
    found = ranked(store.memory_keyword(Scope(A), fts_terms("violin glacier comet"), "violin glacier comet", depth=2))
    assert len(found) == 2 and set(found) <= {world["violin"], world["glacier"], world["late"]}


def test_memory_keyword_keeps_the_period(store: Store, world: dict[str, str]) -> None:
    january = (to_epoch("2025-01-01T00:00:00Z"), to_epoch("2025-02-01T00:00:00Z"))
    terms = fts_terms("harbour violin")
    assert ranked(store.memory_keyword(Scope(A), terms, "harbour violin", depth=10, period=january)) == [
        world["harbour"]
    ]


def test_memory_keyword_falls_back_to_a_substring_scan_when_no_term_is_searchable(
    store: Store, world: dict[str, str]
) -> None:
    assert fts_terms("sk") == []  # shorter than a trigram: full text cannot search it
    assert ranked(store.memory_keyword(Scope(A), [], "sk", depth=10)) == [world["harbour"]]  # "dusk", agent A only
    assert store.memory_keyword(Scope(A, "p1", "c1", "slack:"), [], "sk", depth=10) == []
    assert store.memory_keyword(Scope(A), [], "", depth=10) == []
    assert store.memory_keyword(Scope(A), [], "   ", depth=10) == []
    assert store.memory_keyword(Scope(A), [], "%", depth=10) == []  # LIKE wildcards are literal


def test_memory_keyword_adds_memories_holding_a_short_phrase_after_the_term_hits_newest_first(
    store: Store, world: dict[str, str]
) -> None:
    """A phrase too short for trigrams (a two-character name) is matched as a substring, in the scope only."""
    found = ranked(store.memory_keyword(Scope(A), fts_terms("glacier"), "glacier", depth=10, phrases=["sk"]))
    assert found == [world["glacier"], world["harbour"]]
    assert ranked(store.memory_keyword(Scope(A), [], "nothing here", depth=10, phrases=["sk", "vi"])) == [
        world["violin"],
        world["harbour"],
    ]
    assert store.memory_keyword(Scope(A, "p1", "c1", "slack:"), [], "nothing here", depth=10, phrases=["sk"]) == []
    assert store.memory_keyword(Scope(B), [], "nothing here", depth=10, phrases=["vi"]) == []
    assert len(store.memory_keyword(Scope(A), fts_terms("glacier"), "glacier", depth=1, phrases=["sk"])) == 1


def test_newest_lists_by_insertion_or_by_record_time_inside_a_period(store: Store, world: dict[str, str]) -> None:
    assert ranked(store.newest(Scope(A), MEMORY, 10)) == [
        world["late"],
        world["glacier"],
        world["violin"],
        world["harbour"],
    ]
    assert ranked(store.newest(Scope(A), MEMORY, 10, period=EVERYTHING)) == [
        world["glacier"],
        world["violin"],
        world["harbour"],
        world["late"],
    ]
    assert ranked(store.newest(Scope(A), MEMORY, 2)) == [world["late"], world["glacier"]]
    assert ranked(store.newest(Scope(A), EPISODE, 10)) == [world["ep_old"], world["ep_glacier"], world["ep_harbour"]]
    assert ranked(store.newest(Scope(A), EPISODE, 10, period=EVERYTHING)) == [
        world["ep_glacier"],
        world["ep_harbour"],
        world["ep_old"],
    ]
    before_2025 = (0.0, to_epoch("2025-01-01T00:00:00Z"))
    assert ranked(store.newest(Scope(A), MEMORY, 10, period=before_2025)) == [world["late"]]
    assert store.newest(Scope(A), MEMORY, 0) == []


def test_newest_applies_the_scope(store: Store, world: dict[str, str]) -> None:
    assert ranked(store.newest(Scope(A, "p1", "c1"), MEMORY, 10)) == [world["late"], world["violin"], world["harbour"]]
    assert ranked(store.newest(Scope(A, source_id="discord:"), MEMORY, 10)) == [world["glacier"], world["harbour"]]
    assert ranked(store.newest(Scope(A, source_id="Discord:"), MEMORY, 10)) == []  # case-sensitive prefix
    assert store.newest(Scope(A, source_id="discord:"), EPISODE, 10) == []
    assert ranked(store.newest(Scope(A, "", "c2", "discord:"), EPISODE, 10)) == [world["ep_harbour"]]
    assert ranked(store.newest(Scope(B), MEMORY, 10)) == [world["other"]]
    assert store.newest(Scope(NOBODY), MEMORY, 10) == [] and store.newest(Scope(NOBODY), EPISODE, 10) == []


# -- scope statistics and vectors -------------------------------------------------------------------------------


def test_pool_counts_counts_the_scopes_memories_and_visible_episodes(store: Store, world: dict[str, str]) -> None:
    assert store.pool_counts(Scope(A)) == (4, 3)
    assert store.pool_counts(Scope(A, "p1", "c1")) == (3, 2)
    assert store.pool_counts(Scope(A, "")) == (2, 1)
    assert store.pool_counts(Scope(A, source_id="discord:")) == (2, 0)
    assert store.pool_counts(Scope(A, None, "c2", "discord:")) == (2, 2)
    assert store.pool_counts(Scope(B)) == (1, 1)
    assert store.pool_counts(Scope(NOBODY)) == (0, 0)
    add_memory(store, "one more in p1", project="p1")
    assert store.pool_counts(Scope(A, "p1", "c1")) == (4, 2)  # the count follows a write


def test_span_is_the_oldest_and_newest_memory_time_in_the_scope(store: Store, world: dict[str, str]) -> None:
    assert store.span(Scope(A)) == (to_epoch("2024-06-01T10:00:00+00:00"), to_epoch("2025-03-10T10:00:00+00:00"))
    assert store.span(Scope(A, "p1", "c1")) == (
        to_epoch("2024-06-01T10:00:00+00:00"),
        to_epoch("2025-02-10T10:00:00+00:00"),
    )
    assert store.span(Scope(A, source_id="slack:")) == (to_epoch("2025-02-10T10:00:00+00:00"),) * 2
    assert store.span(Scope(NOBODY)) is None


def test_span_ignores_undated_memories(store: Store) -> None:
    add_memory(store, "undated", timestamp="not a time")
    assert store.span(Scope(A)) is None
    add_memory(store, "dated", timestamp="2025-01-01T00:00:00Z")
    assert store.span(Scope(A)) == (to_epoch("2025-01-01T00:00:00Z"),) * 2


def test_newest_episode_time_is_the_latest_recording_time_not_the_highest_id(
    store: Store, world: dict[str, str]
) -> None:
    assert store.newest_episode_time(Scope(A)) == "2025-03-16T09:00:00+00:00"
    assert store.newest_episode_time(Scope(A, "p1", "c1")) == "2025-01-16T09:00:00+00:00"  # not ep_old's, inserted last
    assert store.newest_episode_time(Scope(A, "p1", "c1", "discord:")) == "2025-01-16T09:00:00+00:00"
    assert store.newest_episode_time(Scope(A, source_id="discord:")) is None  # episodes hidden
    assert store.newest_episode_time(Scope(NOBODY)) is None


def test_embedded_memory_ids_are_one_agents_or_everyones_oldest_first_unembedded_left_out(store: Store) -> None:
    assert store.embedding_dim() is None
    one = add_memory(store, "one", timestamp="2025-01-01T00:00:00Z")
    add_memory(store, "two without a vector", embedded=False)
    three = add_memory(store, "three of b", agent=B, timestamp="2025-01-03T00:00:00Z")
    four = add_memory(store, "four", timestamp="not a time")
    ids, times = store.embedded_memory_ids(A)
    assert ids.tolist() == [number(one), number(four)]
    assert times[0] == to_epoch("2025-01-01T00:00:00Z") and np.isnan(times[1])
    assert store.embedded_memory_ids("")[0].tolist() == [number(one), number(three), number(four)]
    assert store.embedded_memory_ids(NOBODY)[0].tolist() == []
    assert store.embedding_dim() == DIMENSIONS


def test_memory_vectors_reads_the_sampled_ids_vectors_in_order_and_leaves_out_a_row_gone(store: Store) -> None:
    one, two = add_memory(store, "one"), add_memory(store, "two")
    unembedded = add_memory(store, "no vector", embedded=False)
    read, vectors = memory_vectors(store, [number(two), number(unembedded), number(one)])
    assert read.tolist() == [number(two), number(one)]
    assert vectors.shape == (2, DIMENSIONS)
    assert np.allclose(vectors[0], hash_vector("two")) and np.allclose(vectors[1], hash_vector("one"))
    assert memory_vectors(store, [])[0].tolist() == [] and memory_vectors(store, [])[1].shape == (0, DIMENSIONS)


def test_vectors_returns_the_stored_vectors_of_embedded_refs_only(store: Store) -> None:
    memory = add_memory(store, "a memory with a vector")
    bare = add_memory(store, "a memory without one", embedded=False)
    episode = add_episode(store, "an episode with a vector")
    found = store.vectors([memory, bare, episode, "mem:9999", "ep:9999"])
    assert found.keys() == {memory, episode}
    assert np.allclose(found[memory], hash_vector("a memory with a vector"))
    assert np.allclose(found[episode], hash_vector("an episode with a vector"))
    assert store.vectors([]) == {}


def test_an_unembedded_memory_is_in_the_pool_but_on_no_vector_arm(store: Store) -> None:
    bare = add_memory(store, "plain text only", embedded=False)
    assert store.pool_counts(Scope(A)) == (1, 0)
    assert ranked(store.newest(Scope(A), MEMORY, 10)) == [bare]
    assert ranked(store.memory_keyword(Scope(A), fts_terms("plain"), "plain", depth=10)) == [bare]
    assert store.vector_near(Scope(A), hash_vector("plain text only"), floor=-2.0, depth=10, window=10) == []


def test_a_vector_of_another_width_leaves_the_vector_arms_at_once(store: Store) -> None:
    """An update that gives the newest memory a vector the index cannot compare drops its old one everywhere."""
    first = add_memory(store, "the harbour lantern glows")
    newest = add_memory(store, "the violin lesson in the orchard")
    with store.write() as conn:
        store.update_memory(conn, number(newest), embedding(np.ones(8, dtype=np.float32) / np.sqrt(8), MODEL))
    assert set(store.vectors([first, newest])) == {first}
    near = store.vector_near(
        Scope(A), hash_vector("the violin lesson in the orchard"), floor=0.99, depth=10, window=100
    )
    assert ranked(near) == []


def test_the_embedding_width_is_forgotten_when_the_last_vector_goes(store: Store) -> None:
    ref = add_memory(store, "a lone note")
    assert store.embedding_dim() == DIMENSIONS
    with store.write() as conn:
        store.delete(conn, ref)
    assert store.embedding_dim() is None


# -- blocks and the task queue ----------------------------------------------------------------------------


def block_set(store: Store, ref: str, *, model: str = MODEL, codes: bool = True, text: str | None = None) -> BlockSet:
    """The block set of a record's current text (or of ``text``, with the hash of the current text), made
    here without the builder: the divider's spans, hash vectors, sign bits and int8 codes."""
    found = store.record_text(ref)
    assert found is not None
    current, digest = found
    text = current if text is None else text
    spans = divide(text)
    vectors = np.stack([hash_vector(span.text(text)) for span in spans])
    code = np.round(vectors * (127 / np.abs(vectors).max(axis=1, keepdims=True))).astype(np.int8)
    return BlockSet(
        ref,
        digest,
        model,
        tuple((s.start, s.end, s.forced) for s in spans),
        np.packbits(vectors > 0, axis=1),
        code if codes else np.zeros((len(spans), 0), np.int8),
    )


def marker(store: Store, ref: str, model: str = MODEL) -> BlockSet:
    """The set that marks a record of fewer than two blocks as done."""
    found = store.record_text(ref)
    assert found is not None
    return BlockSet(
        ref, found[1], model, ((0, len(found[0]), False),), np.zeros((0, 0), np.uint8), np.zeros((0, 0), np.int8)
    )


def write_set(store: Store, block_set_: BlockSet) -> bool:
    with store.write() as conn:
        return store.write_blocks(conn, block_set_)


LONG = (
    " ".join(f"Line {i} of the diary says the weather was mild and the garden quiet." for i in range(12))
    + " At the very end it says the brass key hides under the mossy stone."
)
KEY = hash_vector("the brass key hides under the mossy stone")


def block_refs(store: Store, scope: Scope, query: np.ndarray = KEY, **limits: int) -> list[str]:
    hits, order = store.block_arm(scope, query, MODEL, **limits)
    assert order == "vector"
    return [hit.ref for hit in hits]


def test_a_task_is_claimed_once_oldest_first_and_finished_with_the_write_that_did_its_work(store: Store) -> None:
    with store.write() as conn:
        first = store.enqueue(conn, "build_blocks", {"ref": "mem:1"})
        second = store.enqueue(conn, "backfill_blocks", {"after": None})
    assert store.pending_tasks() == 2 and store.pending_tasks("backfill_blocks") == 1
    task = store.claim_task(1000.0, 60.0)
    assert task == Task(first, "build_blocks", {"ref": "mem:1"}, 0)
    again = store.claim_task(1000.0, 60.0)
    assert again is not None and again.id == second and again.payload == {"after": None}
    assert store.claim_task(1000.0, 60.0) is None  # both held
    with store.write() as conn:
        store.finish_task(conn, first)
    assert store.pending_tasks() == 1 and store.pending_tasks("build_blocks") == 0


def test_a_claim_that_runs_out_lets_another_claim_the_task_and_not_before_is_kept(store: Store) -> None:
    with store.write() as conn:
        later = store.enqueue(conn, "build_blocks", {"ref": "mem:2"}, not_before=2000.0)
        task_id = store.enqueue(conn, "build_blocks", {"ref": "mem:1"})
    held = store.claim_task(1000.0, 30.0)
    assert held is not None and held.id == task_id
    assert store.claim_task(1029.0, 30.0) is None  # the claim holds; the other is not due
    resumed = store.claim_task(1031.0, 30.0)  # the claimant died: its claim ran out
    assert resumed is not None and resumed.id == task_id
    due = store.claim_task(2000.0, 30.0)
    assert due is not None and due.id == later


def test_a_failed_task_is_retried_later_and_dropped_after_three_failures(store: Store) -> None:
    with store.write() as conn:
        task_id = store.enqueue(conn, "build_blocks", {"ref": "mem:1"})
    for attempt in range(1, 3):
        task = store.claim_task(100.0 * attempt, 10.0)
        assert task is not None and task.attempts == attempt - 1
        assert store.retry_task(task_id, "embedder down", 100.0 * attempt + 50) is True
        assert store.claim_task(100.0 * attempt + 49, 10.0) is None  # not due before not_before
    task = store.claim_task(300.0, 10.0)
    assert task is not None and task.attempts == 2
    assert store.retry_task(task_id, "embedder down", 350.0) is False  # the third failure drops it
    assert store.pending_tasks() == 0 and store.claim_task(1e9, 10.0) is None
    assert store.retry_task(task_id, "gone", 0.0) is False


def test_a_task_queued_in_a_write_that_rolls_back_is_not_queued(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as conn:
        store.enqueue(conn, "build_blocks", {"ref": "mem:1"})
        raise RuntimeError("the write failed")
    assert store.pending_tasks() == 0


def test_a_block_set_is_written_for_the_current_text_only(store: Store) -> None:
    ref = add_memory(store, LONG)
    text, digest = store.record_text(ref) or ("", "")
    assert text == LONG and digest == store.record_text(ref)[1]  # type: ignore[index]
    stale = block_set(store, ref)
    new = LONG.replace("brass key", "silver key")
    with store.write() as conn:
        store.update_memory(conn, number(ref), {"content": new})
    assert write_set(store, stale) is False  # divides a text the record no longer has
    assert not store.has_block_set(ref, MODEL) and store.block_spans([ref]) == {}
    assert write_set(store, block_set(store, ref)) is True
    assert store.has_block_set(ref, MODEL) and not store.has_block_set(ref, "other-model")
    spans = store.block_spans([ref])[ref]
    assert spans[0][0] == 0 and spans[-1][1] == len(new) and len(spans) == len(divide(new))
    assert write_set(store, block_set(store, ref)) is True  # written again: replaced, not added to
    assert store.block_counts(A)["block_rows"] == len(spans)
    assert store.block_counts(A)["records_divided"] == store.block_counts(A)["records_with_blocks"] == 1
    with store.write() as conn:
        store.delete(conn, ref)
    assert store.record_text(ref) is None and write_set(store, stale) is False


def test_a_memorys_new_text_takes_its_old_blocks_away_and_a_deleted_records_blocks_go(store: Store) -> None:
    ref = add_memory(store, LONG)
    episode = add_episode(store, LONG)
    assert write_set(store, block_set(store, ref)) and write_set(store, block_set(store, episode))
    assert set(block_refs(store, Scope(A))) == {ref, episode}
    with store.write() as conn:
        store.update_memory(conn, number(ref), {"content": LONG + " And a postscript."})
    assert block_refs(store, Scope(A)) == [episode]
    assert store.records_lacking_blocks(None, 10, MODEL) == [
        (ref, LONG + " And a postscript.", store.record_text(ref)[1])
    ]  # type: ignore[index]
    with store.write() as conn:
        store.delete(conn, episode)
    assert block_refs(store, Scope(A)) == [] and store.block_spans([episode]) == {}
    assert store.block_counts(A) == {
        "records_with_blocks": 0,
        "records_divided": 0,
        "records_lacking_blocks": 1,
        "block_rows": 0,
    }


def test_the_block_arm_finds_a_record_by_the_block_that_holds_the_answer(store: Store) -> None:
    ref = add_memory(store, LONG)
    other = add_memory(store, " ".join(f"Note {i}: the meeting moved to the small room." for i in range(12)))
    for record in (ref, other):
        assert write_set(store, block_set(store, record))
    hits, order = store.block_arm(Scope(A), KEY, MODEL)
    assert order == "vector" and hits[0].ref == ref
    assert hits[0].block == len(divide(LONG)) - 1  # the last block, where the answer is
    assert hits[0].cosine is not None and hits[0].cosine > 0.5 and isinstance(hits[0].distance, int)
    assert [h.cosine for h in hits] == sorted((h.cosine for h in hits), reverse=True)
    assert len({h.ref for h in hits}) == len(hits)  # one hit a record
    assert store.block_arm(Scope(A), KEY, "other-model") == ([], "vector")
    assert store.block_arm(Scope(A), np.ones(8, np.float32), MODEL) == ([], "vector")  # another width


def test_a_record_of_one_block_is_marked_done_and_never_searched(store: Store) -> None:
    short = add_memory(store, "a single short sentence about the brass key")
    long = add_memory(store, LONG)
    assert store.records_lacking_blocks(None, 10, MODEL)[0][0] == short
    assert write_set(store, marker(store, short)) is True
    assert store.has_block_set(short, MODEL)
    assert [r for r, _, _ in store.records_lacking_blocks(None, 10, MODEL)] == [long]
    assert store.block_spans([short]) == {short: [(0, len("a single short sentence about the brass key"), False)]}
    assert block_refs(store, Scope(A)) == []
    assert store.block_counts(A) == {
        "records_with_blocks": 1,
        "records_divided": 0,
        "records_lacking_blocks": 1,
        "block_rows": 0,
    }


def test_records_lacking_blocks_walk_memories_then_episodes_by_id_after_the_cursor(store: Store) -> None:
    memories = [add_memory(store, f"memory number {i} " + LONG) for i in range(3)]
    episodes = [add_episode(store, f"episode number {i} " + LONG) for i in range(2)]
    theirs = add_memory(store, "agent b's note " + LONG, agent=B)
    assert write_set(store, block_set(store, memories[1]))
    walk = [ref for ref, _, _ in store.records_lacking_blocks(None, 10, MODEL)]
    assert walk == [memories[0], memories[2], theirs, *episodes]
    assert [r for r, _, _ in store.records_lacking_blocks(None, 2, MODEL)] == [memories[0], memories[2]]
    assert [r for r, _, _ in store.records_lacking_blocks(memories[2], 2, MODEL)] == [theirs, episodes[0]]
    assert [r for r, _, _ in store.records_lacking_blocks(episodes[0], 5, MODEL)] == [episodes[1]]
    assert [r for r, _, _ in store.records_lacking_blocks(None, 10, MODEL, agent_id=B)] == [theirs]
    assert len(store.records_lacking_blocks(None, 10, "another-model")) == 6  # another model's sets do not count
    ref, text, digest = store.records_lacking_blocks(None, 1, MODEL)[0]
    assert (text, digest) == store.record_text(ref)
    assert store.block_counts("")["records_lacking_blocks"] == 5
    assert store.block_counts("", "another-model")["records_lacking_blocks"] == 6


def test_the_block_arm_keeps_the_scope(store: Store, world: dict[str, str]) -> None:
    """Agent, project, channel, the source rule on memories, episodes hidden by a source filter without a channel."""
    memories = [ref for ref in world.values() if ref.startswith(MEMORY)]
    with store.write() as conn:  # each memory long enough to divide
        for ref in memories:
            store.update_memory(conn, number(ref), {"content": store.records([ref])[ref].text + " " + LONG})
    for ref in memories:
        assert write_set(store, block_set(store, ref))
    w = world
    cases = [
        (Scope(A), {w["harbour"], w["violin"], w["glacier"], w["late"]}),
        (Scope(B), {w["other"]}),
        (Scope(NOBODY), set()),
        (Scope(A, "p1"), {w["harbour"], w["violin"], w["late"]}),
        (Scope(A, ""), {w["harbour"], w["late"]}),
        (Scope(A, None, "c2"), {w["harbour"], w["glacier"], w["late"]}),
        (Scope(A, source_id="discord:1"), {w["harbour"]}),
        (Scope(A, source_id="discord:"), {w["harbour"], w["glacier"]}),
        (Scope(A, source_id="slack:2"), {w["violin"]}),
    ]
    for scope, expected in cases:
        assert set(block_refs(store, scope)) == expected, scope


def test_episodes_are_searched_only_where_the_scope_shows_them(store: Store) -> None:
    memory = add_memory(store, LONG, source={"id": "discord:1"}, channel="c1")
    episode = add_episode(store, LONG, channel="c1")
    for ref in (memory, episode):
        assert write_set(store, block_set(store, ref))
    assert set(block_refs(store, Scope(A))) == {memory, episode}
    assert block_refs(store, Scope(A, source_id="discord:1")) == [memory]  # a source filter hides episodes
    assert set(block_refs(store, Scope(A, channel="c1", source_id="discord:1"))) == {memory, episode}
    assert block_refs(store, Scope(A, source_id="slack:")) == []


def test_blocks_follow_their_record_to_another_scope(store: Store) -> None:
    ref = add_memory(store, LONG, project="p1", channel="c1", source={"id": "discord:1"})
    assert write_set(store, block_set(store, ref))
    with store.write() as conn:
        store.update_memory(conn, number(ref), {"project_id": "p2", "channel": "c2", "source_id": "slack:9"})
    for scope, visible in (
        (Scope(A, "p1"), False),
        (Scope(A, "p2", "c2"), True),
        (Scope(A, source_id="discord:"), False),
        (Scope(A, source_id="slack:"), True),
    ):
        assert block_refs(store, scope) == ([ref] if visible else []), scope
    assert store.has_block_set(ref, MODEL)  # moved, not rebuilt


def test_without_int8_codes_the_arm_ranks_by_hamming_distance(store: Store) -> None:
    ref = add_memory(store, LONG)
    other = add_memory(store, " ".join(f"Note {i}: the meeting moved to the small room." for i in range(12)))
    assert write_set(store, block_set(store, ref, codes=False))
    assert write_set(store, block_set(store, other))
    hits, order = store.block_arm(Scope(A), KEY, MODEL)
    assert order == "hamming" and {h.ref for h in hits} == {ref, other}
    assert all(h.cosine is None for h in hits)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    assert len({h.ref for h in hits}) == len(hits)


def test_the_block_arm_examines_at_most_per_record_blocks_and_examine_rows(store: Store) -> None:
    ref = add_memory(store, LONG)
    assert write_set(store, block_set(store, ref))
    last = len(divide(LONG)) - 1
    assert store.block_arm(Scope(A), KEY, MODEL)[0][0].block == last
    hits, _ = store.block_arm(Scope(A), KEY, MODEL, per_record=last)  # the answer's block is past the cap
    assert hits and hits[0].block < last
    later = add_memory(store, LONG.replace("Line", "Row"))
    assert write_set(store, block_set(store, later))
    hits, _ = store.block_arm(Scope(A), KEY, MODEL, examine=last + 1)  # key order: only the first record's rows
    assert [h.ref for h in hits] == [ref]
    assert store.block_arm(Scope(A), KEY, MODEL, rerank=1)[0][0].ref in (ref, later)
    assert len(store.block_arm(Scope(A), KEY, MODEL, rerank=1)[0]) == 1


def test_a_read_inside_a_write_sees_the_writes_own_rows_and_is_not_kept_after_a_rollback(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as conn:
        assert store.profile(A) is None
        store.set_profile(conn, A, "written inside", NOW)
        assert store.profile(A) == ("written inside", NOW)  # the write sees its own row
        raise RuntimeError("roll back")
    assert store.profile(A) is None  # nothing read inside the rolled-back write outlives it


# -- the associative graph ------------------------------------------------------------------------------


def add_entity(
    store: Store,
    name: str,
    *,
    agent: str = A,
    project: str = "",
    channel: str = "",
    aliases: tuple[str, ...] = (),
    mentioned_by: tuple[str, ...] = (),
) -> int:
    """An entity (normalised here by lower-casing: the store compares what it is given), its aliases and mentions."""
    with store.write() as conn:
        entity_id = store.insert_entity(conn, agent, project, channel, name, name.lower(), NOW)
        for alias in aliases:
            assert store.add_alias(conn, entity_id, alias, alias.lower())
        for ref in mentioned_by:
            assert store.add_mention(conn, entity_id, ref, NOW)
    return entity_id


def relate(
    store: Store,
    subject: tuple[str, int],
    predicate: str,
    object_: tuple[str, int],
    *,
    agent: str = A,
    project: str = "",
    channel: str = "",
    anchor: str = "",
    at: str = NOW,
) -> int:
    with store.write() as conn:
        return store.add_relation(conn, NewRelation(agent, project, channel, *subject, predicate, *object_, anchor, at))


def test_has_graph_follows_the_agents_entities_and_relations(store: Store) -> None:
    assert store.has_graph(A) is False
    entity = add_entity(store, "Ana")
    assert store.has_graph(A) is True and store.has_graph(B) is False
    relate(store, (MEMORY, 1), "cites", (MEMORY, 2), agent=B)  # a relation alone is a graph too
    assert store.has_graph(B) is True
    with store.write() as conn:
        store.delete_agent(conn, A)
    assert store.has_graph(A) is False and store.entities([entity]) == {}


def test_find_entity_looks_in_one_exact_bucket_by_name_or_alias_lowest_id_first(store: Store) -> None:
    ana = add_entity(store, "Ana", aliases=("ana k.",))
    add_entity(store, "Ana", project="p1")
    assert store.find_entity(A, "", "", "ana").id == ana  # type: ignore[union-attr]
    assert store.find_entity(A, "", "", "ana k.").id == ana  # type: ignore[union-attr]
    assert store.find_entity(A, "p1", "", "ana k.") is None  # an alias is its entity's bucket only
    assert store.find_entity(A, "p1", "", "ana").project_id == "p1"  # type: ignore[union-attr]
    assert store.find_entity(B, "", "", "ana") is None


def test_graph_writes_are_insert_or_ignore_and_a_relation_keeps_its_id(store: Store) -> None:
    ana = add_entity(store, "Ana", aliases=("a.",), mentioned_by=("mem:1",))
    with store.write() as conn:
        assert store.add_alias(conn, ana, "A.", "a.") is False
        assert store.add_mention(conn, ana, "mem:1", NOW) is False
    first = relate(store, (ENTITY, ana), "knows", (ENTITY, ana))
    assert relate(store, (ENTITY, ana), "knows", (ENTITY, ana), at="2026-01-01T00:00:00+00:00") == first
    assert relate(store, (ENTITY, ana), "knows", (ENTITY, ana), anchor="mem:1") != first


def test_entities_named_and_names_within_read_the_scope(store: Store) -> None:
    ana = add_entity(store, "Ana", aliases=("anita",))
    bo = add_entity(store, "Bo", project="p1", channel="c1")
    add_entity(store, "Ana", agent=B)
    assert [e.id for e in store.entities_named(Scope(A), "anita")] == [ana]
    assert store.entities_named(Scope(A, "p2"), "bo") == [] and store.entities_named(Scope(A, "p1", "c2"), "bo") == []
    assert [e.id for e in store.entities_named(Scope(A, "p1", "c1"), "bo")] == [bo]
    hits = store.names_within(Scope(A, "p1"), "ana, anita and bo")
    assert {(h.entity_id, h.written) for h in hits} == {(ana, "Ana"), (ana, "anita"), (bo, "Bo")}


def test_mentioning_lists_readable_records_by_id_with_the_count(store: Store, world: dict[str, str]) -> None:
    refs = [world[name] for name in ("harbour", "violin", "glacier", "ep_harbour", "ep_glacier")]
    topic = add_entity(store, "topic", mentioned_by=tuple(refs))
    assert store.mentioning(Scope(A), [topic], 10)[topic] == Mentions(
        [world["harbour"], world["ep_harbour"], world["violin"], world["ep_glacier"], world["glacier"]], 5
    )
    assert store.mentioning(Scope(A), [topic], 2)[topic] == Mentions([world["harbour"], world["ep_harbour"]], 5)
    assert store.mentioning(Scope(A, "p2"), [topic], 10)[topic].refs == [
        world["harbour"],
        world["ep_harbour"],
        world["ep_glacier"],
        world["glacier"],
    ]
    # a source filter without a channel hides episodes, as on every arm
    assert store.mentioning(Scope(A, None, "", "discord:3"), [topic], 10)[topic] == Mentions([world["glacier"]], 1)
    assert store.mentioned_entities(Scope(A), [world["violin"], world["late"]]) == {world["violin"]: [topic]}
    assert store.mentioned_entities(Scope(B), [world["violin"]]) == {}


def test_entity_relations_need_the_relation_and_both_ends_readable(store: Store) -> None:
    ana, bo = add_entity(store, "Ana"), add_entity(store, "Bo")
    secret = add_entity(store, "Secret", project="p1")
    plain = relate(store, (ENTITY, ana), "knows", (ENTITY, bo))
    hidden_end = relate(store, (ENTITY, ana), "knows", (ENTITY, secret))
    hidden = relate(store, (ENTITY, bo), "met", (ENTITY, ana), project="p2")
    relate(store, (ENTITY, ana), "wrote", (MEMORY, 1))  # a record end: not between entities
    assert [r.id for r in store.entity_relations(Scope(A, ""), [ana])] == [plain]
    assert [r.id for r in store.entity_relations(Scope(A, "p1"), [ana])] == [plain, hidden_end]
    assert [r.id for r in store.entity_relations(Scope(A), [bo])] == [plain, hidden]
    assert store.entity_relations(Scope(B), [ana, bo]) == []


def test_relations_between_records_need_both_ends_among_the_refs(store: Store, world: dict[str, str]) -> None:
    harbour, violin, late = (split(world[name]) for name in ("harbour", "violin", "late"))
    joined = relate(store, harbour, "supports", violin)
    relate(store, harbour, "supports", late)
    found = store.relations_between(Scope(A), [world["harbour"], world["violin"], "profile"])
    assert [(r.id, r.predicate) for r in found] == [(joined, "supports")]
    assert store.relations_between(Scope(B), [world["harbour"], world["violin"]]) == []


def test_anchored_relations_are_entity_relations_declared_from_the_refs(store: Store, world: dict[str, str]) -> None:
    harbour, violin = world["harbour"], world["violin"]
    ana, berlin, paris = add_entity(store, "Ana"), add_entity(store, "Berlin"), add_entity(store, "Paris")
    secret = add_entity(store, "Secret", project="p1")
    first = relate(store, (ENTITY, ana), "lives in", (ENTITY, berlin), anchor=harbour)
    second = relate(store, (ENTITY, ana), "lives in", (ENTITY, paris), anchor=violin)
    relate(store, (ENTITY, ana), "lives in", (ENTITY, paris))  # no anchor
    relate(store, (ENTITY, ana), "wrote", split(violin), anchor=violin)  # a record end: not an attribute
    hidden = relate(store, (ENTITY, ana), "knows", (ENTITY, secret), anchor=harbour)  # an end only p1 reads
    found = store.anchored_relations(Scope(A, ""), [violin, harbour, "profile"])
    assert [r.id for r in found] == [first, second]
    assert [r.id for r in store.anchored_relations(Scope(A, "p1"), [harbour])] == [first, hidden]
    assert store.anchored_relations(Scope(A), []) == []
    assert store.anchored_relations(Scope(B), [harbour, violin]) == []


def test_deleting_a_record_or_an_entity_takes_what_names_it_and_a_text_change_takes_nothing(store: Store) -> None:
    keep, gone = add_memory(store, "kept"), add_memory(store, "deleted")
    ana = add_entity(store, "Ana", aliases=("a.",), mentioned_by=(keep, gone))
    bo = add_entity(store, "Bo", mentioned_by=(keep,))
    stays = relate(store, (ENTITY, ana), "knows", (ENTITY, bo))
    for relation in (
        (split(gone), "supports", split(keep)),
        (split(keep), "cites", split(gone)),
        ((ENTITY, ana), "knows", (ENTITY, bo)),
    ):
        relate(store, *relation, anchor=gone if relation[1] == "knows" else "")
    with store.write() as conn:
        store.update_memory(conn, number(keep), {"content": "kept, reworded"})
        store.delete(conn, gone)
    assert store.mentioning(Scope(A), [ana], 10)[ana] == Mentions([keep], 1)
    assert [r.id for r in store.entity_relations(Scope(A), [ana])] == [stays]
    assert store.relations_between(Scope(A), [keep, gone]) == []
    with store.write() as conn:
        counts = store.delete_agent(conn, "nobody")
        assert (counts["entities"], counts["relations"]) == (0, 0)
    with store.write() as conn:
        conn_counts = store.delete_agent(conn, A)
    assert (conn_counts["entities"], conn_counts["relations"]) == (2, 1)
    assert store.names_within(Scope(A), "ana a. bo") == [] and store.mentioned_entities(Scope(A), [keep]) == {}


def split(ref: str) -> tuple[str, int]:
    kind, _, number_ = ref.partition(":")
    return kind, int(number_)


# -- the seam's shape -----------------------------------------------------------------------------


def _members(protocol: type) -> set[str]:
    """What one protocol declares itself: its methods and attributes (not those of the protocols it extends)."""
    return {name for name in vars(protocol) if not name.startswith("_")} | set(
        vars(protocol).get("__annotations__", {})
    )


def test_each_role_reads_at_once_and_store_is_their_union_implemented_by_every_backend() -> None:
    from cuedrecall.store.base import ROLES, Transactions
    from cuedrecall.store.postgres import PostgresStore

    roles = (Transactions, *ROLES)
    assert all(len(_members(role)) <= 25 for role in roles), {role.__name__: len(_members(role)) for role in roles}
    assert set(Store.__mro__) >= set(roles) and not _members(Store)
    methods = {name for role in roles for name in vars(role) if callable(vars(role)[name]) and name[0] != "_"}
    for backend in (SqliteStore, PostgresStore):  # (the attributes are set per store, by __init__)
        assert not {name for name in methods if not callable(getattr(backend, name, None))}, backend.__name__


# -- failures arrive as the project's errors -------------------------------------------------------------


def test_a_refusal_of_the_database_arrives_as_store_error_with_the_drivers_error_as_its_cause(store: Store) -> None:
    with store.write() as conn:
        store.insert_entity(conn, A, "", "", "Ada", "ada", NOW)
    with pytest.raises(StoreError) as caught, store.write() as conn:
        store.insert_entity(conn, A, "", "", "Ada", "ada", NOW)  # the same entity again: its unique key refuses
    driver = type(caught.value.__cause__).__module__.split(".")[0]
    assert driver in {"sqlite3", "psycopg"} and not isinstance(caught.value, StoreClosedError)
    found = store.find_entity(A, "", "", "ada")
    assert found is not None and store.entities([found.id + 1]) == {}  # the refused write left nothing


def test_a_closed_store_raises_store_closed_error(store: Store) -> None:
    store.close()
    with pytest.raises(StoreClosedError):
        store.pending_tasks()
    with pytest.raises(StoreClosedError), store.write() as conn:
        store.enqueue(conn, "build_blocks", {})

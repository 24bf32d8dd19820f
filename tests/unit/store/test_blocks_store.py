"""The SQLite side of blocks: migration 4, the change log that carries block writes to every connection's
index, the in-process block index (rebuilt at open, caught up after writes, compacted), and the block arm's
scope against the scope rule written out in plain Python.

The backend-agnostic behaviour (the queue, write_blocks, the arm's ranking and scope) is in
``test_store_contract.py``; this file reaches into the SQLite store on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.embed.hashing import hash_vector
from cuedrecall.handlers.rows import episode_row, memory_row
from cuedrecall.store.base import EPISODE, MEMORY, BlockSet, Scope, make_ref
from cuedrecall.store.rows import text_hash
from cuedrecall.store.sqlite import SqliteStore, schema
from cuedrecall.text.blocks import divide
from tests.conftest import database_at, visible

NOW = "2025-11-01T12:00:00+00:00"
MODEL = "hash-384"
A, B = "agent-a", "agent-b"
SCOPE_A = Scope(A)  # the default scope of the helpers below
LONG = (
    " ".join(f"Line {i} of the diary says the weather was mild and the garden quiet." for i in range(12))
    + " At the very end it says the brass key hides under the mossy stone."
)
KEY = hash_vector("the brass key hides under the mossy stone")


def add_memory(
    store: SqliteStore,
    content: str = LONG,
    *,
    agent: str = A,
    project: str = "",
    channel: str = "",
    source_id: str = "",
) -> str:
    row = memory_row(
        agent_id=agent,
        project_id=project,
        channel=channel,
        msg_id="",
        content=content,
        source={"id": source_id} if source_id else {},
        timestamp=NOW,
        metadata={},
        created_at=NOW,
        vector=hash_vector(content),
        model=MODEL,
    )
    with store.write() as conn:
        return make_ref(MEMORY, store.insert_memory(conn, row))


def add_episode(
    store: SqliteStore, summary: str = LONG, *, agent: str = A, project: str = "", channel: str = ""
) -> str:
    row = episode_row(
        agent_id=agent,
        project_id=project,
        channel=channel,
        summary=summary,
        keywords="",
        start_time=None,
        end_time=None,
        resolved=False,
        created_at=NOW,
        vector=hash_vector(summary),
        model=MODEL,
    )
    with store.write() as conn:
        return make_ref(EPISODE, store.insert_episode(conn, row))


def build(store: SqliteStore, ref: str) -> int:
    """Write the record's block set (hash vectors); the number of blocks."""
    found = store.record_text(ref)
    assert found is not None
    text, digest = found
    spans = divide(text)
    vectors = np.stack([hash_vector(span.text(text)) for span in spans])
    codes = np.round(vectors * (127 / np.abs(vectors).max(axis=1, keepdims=True))).astype(np.int8)
    block_set = BlockSet(
        ref, digest, MODEL, tuple((s.start, s.end, s.forced) for s in spans), np.packbits(vectors > 0, axis=1), codes
    )
    with store.write() as conn:
        assert store.write_blocks(conn, block_set)
    return len(spans)


def arm(store: SqliteStore, scope: Scope = SCOPE_A, query: np.ndarray = KEY) -> list[tuple[str, int]]:
    hits, _ = store.block_arm(scope, query, MODEL, rerank=10_000)
    return [(hit.ref, hit.block) for hit in hits]


def test_migration_4_adds_blocks_and_tasks_and_a_database_from_before_lists_its_records_for_the_backfill(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v3.db"
    database_at(path, 3, LONG, NOW)
    store = SqliteStore(path)
    try:
        assert store.schema_version == schema.LATEST_VERSION  # migrated forward from version 3
        assert store.records_lacking_blocks(None, 10, MODEL) == [("mem:1", LONG, text_hash(LONG))]
        assert store.pending_tasks() == 0
    finally:
        store.close()


def test_a_block_write_is_one_change_log_entry_a_record_not_one_a_block(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    try:
        ref = add_memory(store)
        before = store._read("SELECT COALESCE(MAX(seq), 0) FROM change_log")[0][0]
        blocks = build(store, ref)
        assert blocks > 5
        logged = store._read("SELECT kind, row_id FROM change_log WHERE seq > ?", (before,))
        assert logged == [("blk:mem", 1)]
        build(store, ref)  # replaced: the old set's block 0 goes, the new one's comes
        assert store._read("SELECT kind, row_id FROM change_log WHERE seq > ?", (before,))[1:] == [
            ("blk:mem", 1),
            ("blk:mem", 1),
        ]
    finally:
        store.close()


def test_text_hash_is_sha256_of_the_utf8_text_sixteen_hex_digits() -> None:
    import hashlib

    assert text_hash("日本語 text") == hashlib.sha256("日本語 text".encode()).hexdigest()[:16]
    assert text_hash("a") != text_hash("a ")


def test_every_connection_s_block_index_follows_the_writes_of_another(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    writer, reader = SqliteStore(path), SqliteStore(path)
    try:
        ref = add_memory(writer, project="p1")
        assert arm(reader) == []
        blocks = build(writer, ref)
        assert arm(reader)[0] == (ref, blocks - 1)
        with writer.write() as conn:  # moved: the copied axes follow, and the reader's index with them
            writer.update_memory(conn, 1, {"project_id": "p2"})
        assert arm(reader, Scope(A, "p1")) == [] and arm(reader, Scope(A, "p2"))[0][0] == ref
        episode = add_episode(writer)
        build(writer, episode)
        assert {r for r, _ in arm(reader)} == {ref, episode}
        with writer.write() as conn:
            writer.delete(conn, ref)
        assert [r for r, _ in arm(reader)] == [episode]
        with writer.write() as conn:  # a new text: its old blocks go at once, everywhere
            conn.execute("UPDATE episodes SET summary = 'a short new summary' WHERE id = 1")
        assert arm(reader) == [] and len(reader._blocks) == 0
    finally:
        writer.close()
        reader.close()


def test_the_index_built_at_open_answers_as_the_index_that_followed_the_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SqliteStore(path)
    refs = [
        add_memory(store, f"record {i}. " + LONG, project=("p1", "")[i % 2], source_id=f"discord:{i}") for i in range(6)
    ]
    refs.append(add_episode(store))
    for ref in refs:
        build(store, ref)
    with store.write() as conn:
        store.delete(conn, refs[2])
    followed = {scope: arm(store, scope) for scope in (Scope(A), Scope(A, "p1"), Scope(A, source_id="discord:"))}
    store.close()
    reopened = SqliteStore(path)
    try:
        assert {scope: arm(reopened, scope) for scope in followed} == followed
        assert len(reopened._blocks) == reopened.block_counts(A)["block_rows"]
    finally:
        reopened.close()


def test_the_index_stays_right_through_many_replaced_sets_and_compacts(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    try:
        refs = [add_memory(store, f"record {i}. " + LONG) for i in range(4)]
        for _ in range(40):  # well past the dead rows that trigger a compaction
            for ref in refs:
                build(store, ref)
        rows = store._blocks._models[MODEL]
        assert rows.dead <= max(1024, rows.live) and rows.live == store.block_counts(A)["block_rows"]
        assert {r for r, _ in arm(store)} == set(refs)
    finally:
        store.close()


@dataclass(frozen=True)
class Row:
    kind: str
    agent_id: str
    project_id: str
    channel: str
    source_id: str


rows = st.builds(
    Row,
    st.sampled_from((MEMORY, MEMORY, EPISODE)),
    st.sampled_from((A, B, "c1")),
    st.sampled_from(("", "p1", "p2")),
    st.sampled_from(("", "c1", "c2")),
    st.sampled_from(("", "discord:1", "discord:12", "slack:al_", "slack:alice", "zoë", "zoë2")),
)
scopes = st.builds(
    Scope,
    agent_id=st.sampled_from((A, B, "c1", "nobody")),
    project_id=st.sampled_from((None, "", "p1", "p3")),
    channel=st.sampled_from(("", "c1", "c3")),
    source_id=st.sampled_from(("", "discord:", "discord:1", "slack:al_", "slack:al", "zoë", "zo", "c1")),
)


@settings(max_examples=40, deadline=None)
@given(records=st.lists(rows, min_size=1, max_size=16), reads=st.lists(scopes, min_size=1, max_size=6))
def test_the_block_arm_returns_exactly_the_records_the_scope_rule_admits(
    records: list[Row], reads: list[Scope]
) -> None:
    store = SqliteStore(":memory:")
    try:
        stored = {}
        for n, row in enumerate(records):
            text = f"record {n}. " + LONG
            if row.kind == MEMORY:
                ref = add_memory(
                    store,
                    text,
                    agent=row.agent_id,
                    project=row.project_id,
                    channel=row.channel,
                    source_id=row.source_id,
                )
                stored[ref] = row
            else:
                ref = add_episode(store, text, agent=row.agent_id, project=row.project_id, channel=row.channel)
                stored[ref] = Row(EPISODE, row.agent_id, row.project_id, row.channel, "")
            build(store, ref)
        for scope in reads:
            expected = {ref for ref, row in stored.items() if visible(row, scope)}
            assert {ref for ref, _ in arm(store, scope)} == expected, scope
    finally:
        store.close()

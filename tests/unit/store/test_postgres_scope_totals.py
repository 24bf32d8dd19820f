"""PostgreSQL reads a scope's BM25 statistics and gate pool from its totals (schema step 5, kept by triggers), and
they are what an average over the scope's rows gives, after any mix of stores, updates and deletes
(docs/storage.md#postgresql-with-pgvector). A table's row count is the sum of its scopes'."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.postgres.dialect import POSTGRES
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres

AGENTS, PROJECTS, CHANNELS, SOURCES = ["a", "b"], ["", "p1", "p2"], ["", "c1"], ["", "slack:u1", "slack:u2"]
WORDS = ["harbour", "crane", "lifts", "containers", "at", "dawn", "the", "ferry", "東京", "移転"]
# the lengths of each kind, as the arms ask for them (store/postgres/records.py)
LENGTHS = {MEMORY: (("text_len",), ("word_len",)), EPISODE: (("summary_len", "keywords_len"),)}

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
stored = st.tuples(
    st.sampled_from(AGENTS), st.sampled_from(PROJECTS), st.sampled_from(CHANNELS), st.sampled_from(SOURCES), text
)
operation = st.one_of(
    st.tuples(st.just("store"), stored),
    st.tuples(st.just("episode"), stored),
    st.tuples(st.just("update"), st.integers(0, 30), text),
    st.tuples(st.just("delete"), st.integers(0, 30)),
)
scopes = [
    Scope(agent, project, channel, source)
    for agent in AGENTS
    for project in (None, *PROJECTS)
    for channel in CHANNELS
    for source in ("", "slack:", "slack:u1")
]


def averaged(store: Any, kind: str, scope: Scope, lengths: tuple[str, ...]) -> tuple[int, Any]:
    """The statistics as an average over the scope's rows (what the totals replace)."""
    table = "memories" if kind == MEMORY else "episodes"
    where, params = POSTGRES.scope_where(scope, "m", kind)
    mean = "GREATEST(avg(" + " + ".join(f"m.{c}" for c in lengths) + "), 1)"
    n, value = store._read(f"SELECT count(*), {mean} FROM {table} m WHERE {where}", params)[0]
    return int(n), value


def apply(memory: Memory, op: tuple[Any, ...], ids: list[tuple[str, int]]) -> None:
    if op[0] in ("store", "episode"):
        agent, project, channel, source, body = op[1]
        if op[0] == "store":
            done = memory.store(
                agent_id=agent,
                project_id=project,
                channel=channel,
                source={"id": source} if source else {},
                content=body,
            )
            if done.get("result") == "stored":
                ids.append((agent, done["id"]))
        else:
            assert memory.archive_episode(agent_id=agent, project_id=project, channel=channel, summary=body)["ok"]
    elif ids:
        agent, row_id = ids[op[1] % len(ids)]
        if op[0] == "update":
            memory.update_memory(agent_id=agent, memory_id=row_id, content=op[2])
        else:
            memory.delete_memory(agent_id=agent, memory_id=row_id)
            ids.remove((agent, row_id))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=4, max_size=25))
def test_a_scopes_totals_are_the_average_over_its_rows(operations: list[tuple[Any, ...]]) -> None:
    settings_ = make_settings(db_url=postgres_url(), db_path=":memory:")
    with Memory(settings=settings_, clock=fixed_clock(NOW), background=False) as memory:
        ids: list[tuple[str, int]] = []
        for op in [*operations, ("store", ("a", "p1", "c1", "slack:u1", "the harbour crane"))]:  # one row stays
            apply(memory, op, ids)
        store, checked = memory.store_, 0  # type: ignore[attr-defined]
        for scope in scopes:
            for kind, columns in LENGTHS.items():
                for lengths in columns:
                    expected = averaged(store, kind, scope, lengths)
                    assert store._scope_lengths(kind, scope, lengths) == expected, (scope, kind, lengths)
                    checked += expected[0] > 0
        assert checked  # the rule held over scopes with rows in them
        store._row_counts.clear()  # the table's count is kept some seconds: read it now
        counted = {table: store._read(f"SELECT count(*) FROM {table}")[0][0] for table in ("memories", "episodes")}
        assert counted["memories"] > 0  # the rule fires: the table holds rows
        for table, rows in counted.items():  # the common-term rule's table size: the sum of its scopes' counts
            assert store.row_count(table) == rows

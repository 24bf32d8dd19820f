"""The scope rule has two forms, and they admit the same rows: the SQL predicate and the vector index's mask.

``scope_where`` (SQL) filters the full-text, listing and statistics arms; ``VectorIndex.scope_mask`` (numpy)
filters the vector arms. Both must equal the rule stated once in plain Python here: agent_id exact;
project_id None = every project, "" = the global pool only, "X" = X and the global pool; channel "" =
every channel, "C" = C and the shared channel ""; source_id (memories only; the episode forms take no
source filter) names one source when its last character is a letter or a digit (``str.isalnum``, Unicode
included: "discord:1", "zoë") and then matches exactly, and is otherwise ("discord:", "slack:al_", "user-",
"docs/") a case-sensitive namespace prefix of the stored source's id.

This file reaches into the store (its connection and its indexes) on purpose: the point is to compare
the two forms directly, not through the arms.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.embed.hashing import hash_vector
from cuedrecall.handlers.rows import episode_row, memory_row
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.predicates import scope_where
from cuedrecall.store.sqlite import SqliteStore

NOW = "2025-11-01T12:00:00+00:00"
# "c1" is also a channel: the index interns every axis in one code table, so a value shared by two axes
# must still only match on its own axis
AGENTS = ("agent-a", "agent-b", "c1")
PROJECTS = ("", "p1", "p2")
CHANNELS = ("", "c1", "c2")
# ids that tell the exact rule from the prefix rule: "discord:1" is a prefix of "discord:12", "zoë" of
# "zoë2", "user-7" of "user-77"; namespaces end in ":" "_" "-" "/"; "%" and "_" are LIKE wildcards
SOURCES = (
    "",
    "discord:1",
    "discord:12",
    "discord:12345",
    "discord:abc",
    "Discord:1",
    "slack:al_",
    "slack:al_x",
    "slack:alice",
    "tëlegram:zoë",
    "tëlegram:zoë2",
    "zoë",
    "user-7",
    "user-77",
    "docs/",
    "docs/a.md",
    "%",
    "7",
)
WORDS = ("harbour", "ledger", "violin", "orchard", "comet", "lantern")


@dataclass(frozen=True)
class Row:
    agent_id: str
    project_id: str
    channel: str
    source_id: str = ""


def admitted(row: Row, scope: Scope, *, by_source: bool) -> bool:
    """The scope rule, written out independently of both forms."""
    if row.agent_id != scope.agent_id:
        return False
    if scope.project_id is not None:
        allowed = {"", scope.project_id} if scope.project_id else {""}
        if row.project_id not in allowed:
            return False
    if scope.channel and row.channel not in ("", scope.channel):
        return False
    if not by_source or not scope.source_id:
        return True
    if scope.source_id[-1:].isalnum():  # ends in a letter or a digit: one source, matched exactly
        return row.source_id == scope.source_id
    return row.source_id.startswith(scope.source_id)  # anything else ends a namespace prefix


rows = st.builds(
    Row, st.sampled_from(AGENTS), st.sampled_from(PROJECTS), st.sampled_from(CHANNELS), st.sampled_from(SOURCES)
)
scopes = st.builds(
    Scope,
    agent_id=st.sampled_from((*AGENTS, "agent-unknown")),
    project_id=st.sampled_from((None, "", "p1", "p3")),
    channel=st.sampled_from(("", "c1", "c3")),
    source_id=st.sampled_from(
        (
            "",
            "discord",
            "discord:",
            "discord:1",
            "discord:12",
            "Discord:",
            "slack:al_",
            "slack:al",
            "slack:alice",
            "tëlegram:",
            "tëlegram:zoë",
            "zoë",
            "zo",
            "user-",
            "user-7",
            "docs/",
            "docs",
            "7",
            "%",
            "_",
            "x",
        )
    ),
)
# after the first write: delete some memories and move some to another scope, so the index is checked
# after it followed changes, not only after it was built
edits = st.lists(st.tuples(st.integers(min_value=0, max_value=59), st.one_of(st.none(), rows)), max_size=8)


def _memory(row: Row, n: int) -> dict:
    content = f"{WORDS[n % len(WORDS)]} note {n}"
    return memory_row(
        agent_id=row.agent_id,
        project_id=row.project_id,
        channel=row.channel,
        msg_id="",
        content=content,
        source={"id": row.source_id} if row.source_id else {},
        timestamp=f"2025-01-{1 + n % 28:02d}T10:00:00+00:00",
        metadata={},
        created_at=NOW,
        vector=hash_vector(content),
        model="hash-384",
    )


def _episode(row: Row, n: int) -> dict:
    summary = f"a talk about {WORDS[n % len(WORDS)]} {n}"
    return episode_row(
        agent_id=row.agent_id,
        project_id=row.project_id,
        channel=row.channel,
        summary=summary,
        keywords="",
        start_time=None,
        end_time=None,
        resolved=False,
        created_at=NOW,
        vector=hash_vector(summary),
        model="hash-384",
    )


def sql_ids(store: SqliteStore, kind: str, scope: Scope) -> set[int]:
    table = "memories" if kind == MEMORY else "episodes"
    where, params = scope_where(scope, "t", kind)
    return {row_id for (row_id,) in store._read(f"SELECT t.id FROM {table} t WHERE {where}", params)}


def mask_ids(store: SqliteStore, kind: str, scope: Scope) -> set[int]:
    store._read("SELECT 1")  # catch the index up with every committed write
    index = store._indexes[kind]
    return {int(i) for i in np.asarray(index._ids[: len(index)])[index.scope_mask(scope)]}


@settings(max_examples=60, deadline=None)
@given(
    memories=st.lists(rows, min_size=0, max_size=40),
    episodes=st.lists(rows, max_size=12),
    changes=edits,
    reads=st.lists(scopes, min_size=1, max_size=8),
)
def test_sql_and_numpy_scope_forms_admit_the_rows_the_rule_admits(
    memories: list[Row], episodes: list[Row], changes: list[tuple[int, Row | None]], reads: list[Scope]
) -> None:
    store = SqliteStore(":memory:")
    try:
        stored: dict[int, Row] = {}
        stored_episodes: dict[int, Row] = {}
        with store.write() as conn:
            for n, row in enumerate(memories):
                stored[store.insert_memory(conn, _memory(row, n))] = row
            for n, row in enumerate(episodes):
                stored_episodes[store.insert_episode(conn, _episode(row, n))] = replace(row, source_id="")
        store._read("SELECT 1")  # the index has seen the first write before the edits
        if stored and changes:
            ids = sorted(stored)
            with store.write() as conn:
                for pick, moved in changes:
                    memory_id = ids[pick % len(ids)]
                    if memory_id not in stored:
                        continue
                    if moved is None:
                        store.delete(conn, f"mem:{memory_id}")
                        del stored[memory_id]
                    else:
                        moved_to = {
                            "agent_id": moved.agent_id,
                            "project_id": moved.project_id,
                            "channel": moved.channel,
                            "source_id": moved.source_id,
                        }
                        store.update_memory(conn, memory_id, moved_to)
                        stored[memory_id] = moved

        for scope in reads:
            expected = {i for i, row in stored.items() if admitted(row, scope, by_source=True)}
            assert sql_ids(store, MEMORY, scope) == expected, scope
            assert mask_ids(store, MEMORY, scope) == expected, scope

            # episodes: no source filter; the vector arms mask them with the scope less its source_id
            expected = {i for i, row in stored_episodes.items() if admitted(row, scope, by_source=False)}
            assert sql_ids(store, EPISODE, scope) == expected, scope
            episode_scope = Scope(scope.agent_id, scope.project_id, scope.channel)
            assert mask_ids(store, EPISODE, episode_scope) == expected, scope
    finally:
        store.close()


# (scope source_id, the stored source ids it admits) over SOURCES: the cases that tell the rules apart,
# checked on every run rather than left to the sampler
SOURCE_CASES = (
    ("discord:1", {"discord:1"}),
    ("discord:12", {"discord:12"}),
    ("discord:", {"discord:1", "discord:12", "discord:12345", "discord:abc"}),
    ("discord", set()),
    ("slack:al_", {"slack:al_", "slack:al_x"}),
    ("slack:al", set()),
    ("tëlegram:zoë", {"tëlegram:zoë"}),
    ("tëlegram:", {"tëlegram:zoë", "tëlegram:zoë2"}),
    ("zoë", {"zoë"}),
    ("user-7", {"user-7"}),
    ("user-", {"user-7", "user-77"}),
    ("docs/", {"docs/", "docs/a.md"}),
    ("7", {"7"}),
    ("%", {"%"}),
    ("_", set()),
    ("", set(SOURCES)),
)


def test_a_source_id_ending_in_a_letter_or_digit_matches_exactly_and_any_other_is_a_prefix() -> None:
    store = SqliteStore(":memory:")
    try:
        with store.write() as conn:
            by_id = {
                store.insert_memory(conn, _memory(Row("agent-a", "", "", source), n)): source
                for n, source in enumerate(SOURCES)
            }
        for source_id, wanted in SOURCE_CASES:
            scope = Scope("agent-a", source_id=source_id)
            oracle = {by_id[i] for i in by_id if admitted(Row("agent-a", "", "", by_id[i]), scope, by_source=True)}
            assert oracle == wanted, source_id
            assert {by_id[i] for i in sql_ids(store, MEMORY, scope)} == wanted, source_id
            assert {by_id[i] for i in mask_ids(store, MEMORY, scope)} == wanted, source_id
    finally:
        store.close()

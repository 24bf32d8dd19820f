"""Isolation is never widened: every ref recall or any store arm returns lies inside the read scope.

Read semantics: agent_id exact; project_id None = every project, "" = the global pool only, "X" = X and the
global pool; channel "" = every channel, "C" = C and channel ""; source_id (memories) ending in a letter or a
digit names one source and matches exactly, any other is a case-sensitive prefix of the stored source's id;
episodes are left out when source_id is set unless channel is set too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.text.fts import fts_terms
from tests.conftest import open_memory, visible

AGENTS = ("agent-1", "agent-2", "agent-3")
PROJECTS = ("", "p1", "p2")
CHANNELS = ("", "c1", "c2")
SOURCES = (
    None,
    "discord:alice",
    "discord:alice2",
    "discord:bob",
    "slack:alice",
    "slack:al_ice%",
    "Discord:carol",
    "tëlegram:zoë",
)
WORDS = ("harbour", "ledger", "violin", "orchard", "comet", "lantern", "glacier", "pepper", "saddle", "quartz")


@dataclass(frozen=True)
class Row:
    ref: str
    kind: str
    agent_id: str
    project_id: str
    channel: str
    source_id: str
    text: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Iterator[tuple[Memory, dict[str, Row]]]:
    """One store with a row in every agent x project x channel x source bucket, and episodes in every scope."""
    rng = random.Random(20251101)
    path = Path(tmp_path_factory.mktemp("isolation")) / "iso.db"
    rows: dict[str, Row] = {}
    with open_memory(path) as memory:
        n = 0
        for agent in AGENTS:
            for project in PROJECTS:
                for channel in CHANNELS:
                    for source in SOURCES:
                        n += 1
                        text = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(WORDS)} entry {n}"
                        message = {
                            "content": text,
                            "id": f"m{n}",
                            "timestamp": f"2025-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
                        }
                        if source is not None:
                            message["source"] = {"type": "User", "id": source}
                        result = memory.store(agent_id=agent, message=message, channel=channel, project_id=project)
                        assert result["result"] == "stored", result
                        rows[result["ref"]] = Row(result["ref"], MEMORY, agent, project, channel, source or "", text)
                    n += 1
                    summary = f"session about {rng.choice(WORDS)} and {rng.choice(WORDS)} number {n}"
                    episode = memory.archive_episode(
                        agent_id=agent,
                        summary=summary,
                        keywords=rng.choice(WORDS),
                        channel=channel,
                        project_id=project,
                        start_time=f"2025-{rng.randint(1, 10):02d}-15T09:00:00Z",
                    )
                    rows[episode["ref"]] = Row(episode["ref"], EPISODE, agent, project, channel, "", summary)
            memory.update_profile(agent_id=agent, profile=f"profile of {agent}")
        yield memory, rows


scopes = st.builds(
    Scope,
    agent_id=st.sampled_from((*AGENTS, "agent-unknown")),
    project_id=st.sampled_from((None, "", "p1", "p2", "p-unknown")),
    channel=st.sampled_from(("", "c1", "c2", "c-unknown")),
    source_id=st.sampled_from(
        (
            "",
            "discord:",
            "Discord:",
            "discord:alice",
            "slack",
            "slack:al_",
            "slack:al%",
            "d",
            "D",
            "x",
            "%",
            "tëlegram:",
            "tëlegram:zo",
            "tëlegram:zoë",
            "discord:alice2",
            "discord:ali",
        )
    ),
)
queries = st.one_of(
    st.just(""),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    st.sampled_from(WORDS).map(lambda w: w[:4]),  # a fragment: the trigram arm matches inside words
    st.integers(min_value=1, max_value=300).map(lambda n: f"entry {n}"),
)
cues = st.sampled_from(
    (
        None,
        {"after": "2025-03-01", "before": "2025-05-01", "confidence": "sure"},
        {"after": "2025-01-01", "before": "2025-02-01", "confidence": "vague"},
        {"ago": {"unit": "months", "value": 6}, "confidence": "likely"},
    )
)


def _inside(refs: list[str], rows: dict[str, Row], scope: Scope) -> list[str]:
    """The refs that lie outside the scope (or are unknown): must be empty."""
    return [ref for ref in refs if ref not in rows or not visible(rows[ref], scope)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scope=scopes, query=queries, cue=cues, deep=st.booleans())
def test_recall_never_returns_a_row_outside_the_read_scope(
    world: tuple[Memory, dict[str, Row]], scope: Scope, query: str, cue: dict | None, deep: bool
) -> None:
    memory, rows = world
    for text in {"", query}:
        answer = memory.recall(
            agent_id=scope.agent_id,
            query=text,
            limit=100,
            deep=deep,
            channel=scope.channel,
            project_id=scope.project_id,
            source_id=scope.source_id,
            time_cue=cue,
        )
        assert answer.get("ok") is not False, answer
        refs = [row["ref"] for row in answer["messages"] if "ref" in row]
        assert _inside(refs, rows, scope) == [], (scope, text, cue)
        assert len(refs) == len(set(refs))
        # an unref'd row is only ever the agent's own profile
        for row in answer["messages"]:
            if "ref" not in row:
                assert row["content"] == f"[Profile] profile of {scope.agent_id}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scope=scopes, query=queries)
def test_every_store_arm_stays_inside_the_read_scope(
    world: tuple[Memory, dict[str, Row]], scope: Scope, query: str
) -> None:
    memory, rows = world
    store = memory.store_
    allowed = {ref for ref, row in rows.items() if visible(row, scope)}
    allowed_memories = sorted((r for r in allowed if rows[r].kind == MEMORY), key=lambda r: -int(r.split(":")[1]))
    allowed_episodes = sorted((r for r in allowed if rows[r].kind == EPISODE), key=lambda r: -int(r.split(":")[1]))
    everything = (0.0, 1e11)

    # the listing arm is exactly the scope, newest first, with or without a period
    assert [h.ref for h in store.newest(scope, MEMORY, 10_000)] == allowed_memories
    assert [h.ref for h in store.newest(scope, EPISODE, 10_000)] == allowed_episodes
    assert {h.ref for h in store.newest(scope, MEMORY, 10_000, period=everything)} == set(allowed_memories)

    # the vector arms, with no floor and no depth limit, stay inside the scope and see all its memories
    # (every row is embedded); that they see all its episodes too is test_vector_arms_see_the_episodes_...
    vector = memory.embedder.embed([query or "anything"])[0]
    near = [h.ref for h in store.vector_near(scope, vector, floor=-2.0, depth=10_000, window=10_000)]
    assert _inside(near, rows, scope) == []
    for floor, depth, window in ((-2.0, 10_000, 10_000), (-2.0, 3, 10_000), (0.0, 10_000, 4), (-2.0, 0, 10)):
        # the outlier bar's scores: the arm's own, value for value and in its order, no hit built
        raws = [h.raw for h in store.vector_near(scope, vector, floor=floor, depth=depth, window=window)]
        cosines = store.vector_cosines(scope, vector, floor=floor, depth=depth, window=window)
        assert cosines.dtype == np.float64 and cosines.tolist() == raws
    assert sorted(r for r in near if r.startswith("mem:")) == sorted(allowed_memories)
    assert len(near) == len(set(near))
    for kind, expected in ((MEMORY, allowed_memories), (EPISODE, allowed_episodes)):
        in_period = [
            h.ref for h in store.vector_in_period(scope, kind, vector, floor=-2.0, depth=10_000, period=everything)
        ]
        assert _inside(in_period, rows, scope) == []
        assert set(in_period) <= set(expected)
        if kind == MEMORY:
            assert sorted(in_period) == sorted(expected)
    far = store.vector_far(scope, vector, floor=-2.0, limit=10_000, window=5, reach=10_000)
    assert _inside([h.ref for h in far], rows, scope) == []

    # the lexical arms return only rows of the scope, and every scoped row that holds a query term
    terms = fts_terms(query)
    keyword = [h.ref for h in store.memory_keyword(scope, terms, query, depth=10_000)]
    assert _inside(keyword, rows, scope) == []
    holding = {r for r in allowed_memories if any(t.lower() in rows[r].text.lower() for t in terms)}
    if holding:
        assert set(keyword) == holding
    episodes = [h.ref for h in store.episode_fts(scope, terms, depth=10_000)]
    assert _inside(episodes, rows, scope) == []
    assert all(rows[r].kind == EPISODE for r in episodes)
    assert all(rows[r].kind == MEMORY for r in keyword)

    # the scope statistics count the same rows
    assert store.pool_counts(scope) == (len(allowed_memories), len(allowed_episodes))


def test_the_world_covers_every_bucket(world: tuple[Memory, dict[str, Row]]) -> None:
    """The fixed store really has rows in every combination the properties rely on."""
    _, rows = world
    memories = [r for r in rows.values() if r.kind == MEMORY]
    assert len(memories) == len(AGENTS) * len(PROJECTS) * len(CHANNELS) * len(SOURCES)
    assert {(r.agent_id, r.project_id, r.channel) for r in rows.values() if r.kind == EPISODE} == {
        (a, p, c) for a in AGENTS for p in PROJECTS for c in CHANNELS
    }


@pytest.mark.parametrize(
    ("project_id", "expected"), [(None, {"", "p1", "p2"}), ("", {""}), ("p1", {"", "p1"}), ("p9", {""})]
)
def test_project_semantics_on_list_memories_and_recall(
    world: tuple[Memory, dict[str, Row]], project_id: str | None, expected: set[str]
) -> None:
    memory, rows = world
    listed = memory.list_memories(agent_id="agent-1", project_id=project_id, limit=500)["memories"]
    assert {m["project_id"] for m in listed} == expected
    assert {m["agent_id"] for m in listed} == {"agent-1"}
    episodes = memory.list_episodes(agent_id="agent-1", project_id=project_id, limit=200)["episodes"]
    assert {e["project_id"] for e in episodes} == expected
    answer = memory.recall(agent_id="agent-1", query="", limit=100, project_id=project_id)
    assert {rows[m["ref"]].project_id for m in answer["messages"] if "ref" in m} <= expected


def test_channel_c_sees_its_own_and_the_shared_channel_only(world: tuple[Memory, dict[str, Row]]) -> None:
    memory, rows = world
    scope = Scope("agent-2", None, "c1", "")
    seen = {rows[h.ref].channel for h in memory.store_.newest(scope, MEMORY, 10_000)}
    assert seen == {"", "c1"}
    assert {rows[h.ref].channel for h in memory.store_.newest(Scope("agent-2"), MEMORY, 10_000)} == {"", "c1", "c2"}


def test_a_source_filter_hides_episodes_unless_a_channel_is_set(world: tuple[Memory, dict[str, Row]]) -> None:
    memory, rows = world
    vector = np.ones(memory.embedder.dimensions, dtype=np.float32) / np.sqrt(memory.embedder.dimensions)
    hidden = Scope("agent-3", None, "", "discord:")
    assert memory.store_.newest(hidden, EPISODE, 100) == []
    assert all(
        h.ref.startswith("mem:") for h in memory.store_.vector_near(hidden, vector, floor=-2, depth=500, window=500)
    )
    shown = Scope("agent-3", None, "c2", "discord:")
    assert {rows[h.ref].channel for h in memory.store_.newest(shown, EPISODE, 100)} == {"", "c2"}
    answer = memory.recall(agent_id="agent-3", query="session about", limit=100, source_id="discord:")
    assert all(m["ref"].startswith("mem:") for m in answer["messages"] if "ref" in m)


def test_like_wildcards_in_source_id_are_literal(world: tuple[Memory, dict[str, Row]]) -> None:
    memory, rows = world
    literal = {
        rows[h.ref].source_id for h in memory.store_.newest(Scope("agent-1", source_id="slack:al_"), MEMORY, 1000)
    }
    assert literal == {"slack:al_ice%"}
    assert memory.store_.newest(Scope("agent-1", source_id="%"), MEMORY, 1000) == []


@pytest.mark.parametrize("source_id", ["discord:", "slack:alice"])
def test_vector_arms_see_the_episodes_of_a_channel_scoped_source_read(
    world: tuple[Memory, dict[str, Row]], source_id: str
) -> None:
    """source_id filters memories only; with a channel set the scope's episodes stay visible to every arm."""
    memory, rows = world
    scope = Scope("agent-1", None, "c1", source_id)
    expected = sorted(h.ref for h in memory.store_.newest(scope, EPISODE, 1000))
    assert expected and expected == sorted(r for r, row in rows.items() if row.kind == EPISODE and visible(row, scope))
    vector = memory.embedder.embed(["session about"])[0]
    near = memory.store_.vector_near(scope, vector, floor=-2.0, depth=10_000, window=10_000)
    assert sorted(h.ref for h in near if h.ref.startswith("ep:")) == expected
    in_period = memory.store_.vector_in_period(scope, EPISODE, vector, floor=-2.0, depth=10_000, period=(0.0, 1e11))
    assert sorted(h.ref for h in in_period) == expected


def test_source_id_prefix_match_is_the_same_on_every_arm(tmp_path: Path) -> None:
    """A prefix match is case-sensitive like str.startswith, on the SQL arms and the vector index alike."""
    with open_memory(tmp_path / "case.db") as memory:
        upper = memory.store(agent_id="a", message={"content": "upper case source", "source": {"id": "Discord:1"}})
        lower = memory.store(agent_id="a", message={"content": "lower case source", "source": {"id": "discord:2"}})
        scope = Scope("a", None, "", "discord:")
        vector = memory.embedder.embed(["case source"])[0]
        by_vector = {h.ref for h in memory.store_.vector_near(scope, vector, floor=-2.0, depth=100, window=100)}
        by_listing = {h.ref for h in memory.store_.newest(scope, MEMORY, 100)}
        by_keyword = {h.ref for h in memory.store_.memory_keyword(scope, fts_terms("source"), "source", depth=100)}
        assert by_vector == by_listing == by_keyword == {lower["ref"]}
        assert upper["ref"] not in {
            m["ref"] for m in memory.recall(agent_id="a", query="", source_id="discord:")["messages"] if "ref" in m
        }


def test_a_source_id_ending_in_a_letter_or_digit_names_one_source_and_a_namespace_prefix_ends_otherwise(
    tmp_path: Path,
) -> None:
    """ "discord:1" is one source (not discord:12345 too); "discord:" is the discord namespace; on every arm."""
    with open_memory(tmp_path / "rule.db") as memory:
        by_source: dict[str, set[str]] = {}
        for n, source in enumerate(("discord:1", "discord:12345", "discord:abc", "slack:1") * 2):
            stored = memory.store(
                agent_id="a", message={"content": f"harbour lantern note {n}", "source": {"type": "User", "id": source}}
            )
            assert stored["result"] == "stored", stored
            by_source.setdefault(source, set()).add(stored["ref"])
        discord = by_source["discord:1"] | by_source["discord:12345"] | by_source["discord:abc"]
        vector = memory.embedder.embed(["harbour lantern"])[0]
        for source_id, expected in (
            ("discord:1", by_source["discord:1"]),
            ("discord:", discord),
            ("discord:12345", by_source["discord:12345"]),
            ("slack:1", by_source["slack:1"]),
            ("discord", set()),
            ("discord:1234", set()),
        ):
            scope = Scope("a", None, "", source_id)
            by_vector = {h.ref for h in memory.store_.vector_near(scope, vector, floor=-2.0, depth=100, window=100)}
            by_keyword = {
                h.ref
                for h in memory.store_.memory_keyword(scope, fts_terms("harbour lantern"), "harbour lantern", depth=100)
            }
            assert by_vector == by_keyword == expected, source_id
            answer = memory.recall(agent_id="a", query="harbour lantern", limit=100, source_id=source_id, trace=True)
            returned = {m["ref"] for m in answer["messages"] if "ref" in m}
            assert returned == expected, source_id
            for arm in ("vector_near", "memory_keyword"):
                assert {hit["ref"] for hit in answer["trace"]["arms"][arm]} == expected, (source_id, arm)
            listed = memory.recall(agent_id="a", query="", limit=100, source_id=source_id)
            assert {m["ref"] for m in listed["messages"] if "ref" in m} == expected, source_id

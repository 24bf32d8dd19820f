"""Properties that hold on both backends for any store: the same rows in, the same vector-arm rows out, the same
lexical matches (ranked by each backend's documented score), the same scope statistics."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.embed.hashing import hash_vector
from cuedrecall.handlers.rows import episode_row, memory_row
from cuedrecall.store.base import EPISODE, MEMORY, Scope, Store
from cuedrecall.store.postgres import PostgresStore
from cuedrecall.store.sqlite import SqliteStore
from cuedrecall.text.fts import fts_terms
from cuedrecall.text.words import query_words
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres  # runs on the PostgreSQL test server (make test-fast leaves it out)

WORDS = ["harbour", "lantern", "violin", "glacier", "東京タワー", "bug-183", "orchard", "Lantern", "dusk", "tea"]
NOW = "2025-11-01T12:00:00+00:00"

rows = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["", "p"]),
        st.sampled_from(["", "c"]),
        st.sampled_from(["", "discord:1", "discord:2"]),
        st.integers(1, 28),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)
scopes = st.builds(
    Scope,
    st.sampled_from(["a", "b"]),
    st.sampled_from([None, "", "p"]),
    st.sampled_from(["", "c"]),
    st.sampled_from(["", "discord:1", "discord:"]),
)


def fill(store: Store, items: list[tuple[Any, ...]]) -> None:
    with store.write() as conn:
        for text, agent, project, channel, source, day, episode in items:
            stamp = f"2025-03-{day:02d}T10:00:00+00:00"
            if episode:
                store.insert_episode(
                    conn,
                    episode_row(
                        agent_id=agent,
                        project_id=project,
                        channel=channel,
                        summary=text,
                        keywords="",
                        start_time=stamp,
                        end_time=None,
                        resolved=False,
                        created_at=NOW,
                        vector=hash_vector(text),
                        model="hash-384",
                    ),
                )
            else:
                store.insert_memory(
                    conn,
                    memory_row(
                        agent_id=agent,
                        project_id=project,
                        channel=channel,
                        msg_id="",
                        content=text,
                        source={"id": source} if source else {},
                        timestamp=stamp,
                        metadata={},
                        created_at=NOW,
                        vector=hash_vector(text),
                        model="hash-384",
                    ),
                )


TIE = 2e-6  # scores closer than this are one run: float32 rounding of a cosine summed in another order


class Runs(list[tuple[float, frozenset[str]]]):
    """Runs of equal scores, best first; two are equal when their refs match run by run and their scores differ by
    float32 rounding at most (rounding to a fixed decimal would split two such scores across a boundary)."""

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, list)
            and len(self) == len(other)
            and all(a[1] == b[1] and abs(a[0] - b[0]) <= TIE for a, b in zip(self, other))
        )

    __hash__ = None  # type: ignore[assignment]


def refs_and_raws(hits: list[Any]) -> Runs:
    """The hits as runs of equal scores (to float32 rounding), best first: within a run of equal scores the
    order is decided by the last bit of two float sums, which the backends compute in different orders."""
    runs: list[tuple[float, set[str]]] = []
    for hit in hits:
        if runs and abs(runs[-1][0] - hit.raw) <= TIE:
            runs[-1][1].add(hit.ref)
        else:
            runs.append((hit.raw, {hit.ref}))
    return Runs((raw, frozenset(refs)) for raw, refs in runs)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=rows,
    scope=scopes,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    window=st.integers(1, 30),
)
def test_both_backends_answer_every_arm_alike_for_any_store(
    items: list[tuple[Any, ...]], scope: Scope, query: str, window: int
) -> None:
    sqlite, postgres = SqliteStore(":memory:"), PostgresStore(postgres_url())
    try:
        fill(sqlite, items)
        fill(postgres, items)
        vector, terms = hash_vector(query), fts_terms(query)
        period = (1741132800.0, 1742428800.0)  # 2025-03-05 .. 2025-03-20

        def same(call: Any) -> None:
            assert call(sqlite) == call(postgres)

        same(lambda s: refs_and_raws(s.vector_near(scope, vector, floor=-1.0, depth=50, window=window)))
        same(
            lambda s: refs_and_raws(s.vector_far(scope, vector, floor=-1.0, limit=50, window=window, reach=window + 10))
        )
        for kind in (MEMORY, EPISODE):
            same(
                lambda s, kind=kind: refs_and_raws(
                    s.vector_in_period(scope, kind, vector, floor=-1.0, depth=50, period=period)
                )
            )
            same(lambda s, kind=kind: [hit.ref for hit in s.newest(scope, kind, 50, period)])
        same(
            lambda s: [
                (c.ref, c.position, c.distance) for c in s.far_candidates(scope, vector, start=min(window, 3), count=10)
            ]
        )
        # lexical: the same rows match (each backend ranks them by its documented score)
        same(lambda s: {hit.ref for hit in s.memory_keyword(scope, terms, query, depth=100)})
        same(lambda s: {hit.ref for hit in s.episode_fts(scope, terms, depth=100)})
        same(lambda s: (s.pool_counts(scope), s.span(scope)))
    finally:
        sqlite.close()
        postgres.close()


JOINED_ROWS = {
    "short": "Quincy got the degree",  # the joined rows: the name and a word the first pass left out
    "long": "Quincy dug the garden bed",
}


def test_the_joined_pass_ranks_alike_on_both_backends_with_fts5_s_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    """keyword-budget-v2's joined pass ranks with each term's df over the table (FTS5's), on PostgreSQL as on SQLite
    (docs/storage.md). Counted among the joined rows alone, "degree" and "garden" would weigh the same there and the
    shorter row would lead; over the table "degree" is in most rows (another agent's among them), so the row
    holding the rarer "garden" leads on both."""
    from cuedrecall.store import term_counts

    monkeypatch.setattr(term_counts, "FIRST_PASS_ROWS", 40)  # the name's 14 rows fit the first pass, nothing else
    monkeypatch.setattr(term_counts, "FALLBACK_ROWS", 400)
    monkeypatch.setattr(term_counts, "SCOPE_SCAN_ROWS", 0)
    items: list[tuple[Any, ...]] = [(f"Quincy waved {i}", "a", "", "", "", 1, False) for i in range(12)]
    items += [(f"the garden bed {i} is dry", "a", "", "", "", 2, False) for i in range(35)]
    items += [(f"it is {i} degrees outside", "b", "", "", "", 3, False) for i in range(150)]  # another agent's
    items += [(text, "a", "", "", "", 4, False) for text in JOINED_ROWS.values()]
    sqlite, postgres = SqliteStore(":memory:"), PostgresStore(postgres_url())
    try:
        fill(sqlite, items)
        fill(postgres, items)
        scope, query = Scope("a", None, ""), "Quincy degree garden"
        refs = {}
        for name, store in (("sqlite", sqlite), ("postgres", postgres)):
            for arm, hits in (
                ("memory_keyword", store.memory_keyword(scope, fts_terms(query), query, depth=10)),
                ("memory_words", store.memory_words(scope, query_words(query), depth=10)),
            ):
                assert getattr(hits, "ranked_on", None) == "joined", (name, arm)
                refs[name, arm] = [hit.ref for hit in hits]
        records = postgres.records(sorted({ref for found in refs.values() for ref in found}))
        texts = {ref: record.text for ref, record in records.items()}
        for arm in ("memory_keyword", "memory_words"):
            assert refs["sqlite", arm] == refs["postgres", arm]
            joined = [texts[ref] for ref in refs["postgres", arm] if texts[ref] in JOINED_ROWS.values()]
            assert joined == [JOINED_ROWS["long"], JOINED_ROWS["short"]], arm
    finally:
        sqlite.close()
        postgres.close()

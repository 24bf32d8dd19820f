"""PostgreSQL's trigram arms score by the BM25 docs/storage.md and store/postgres/arms.py document: FTS5's
constants over the scope's rows, tf the term's non-overlapping occurrences in the lower-cased text (an episode's
summary and keywords together), length the row's trigram count. Checked against the formula computed here from
the rows themselves, for any set of the query's terms, with another agent's rows in the table."""

from __future__ import annotations

import math
from collections.abc import Iterator
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

K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6
TEXTS = [
    "the harbour crane lifts containers at dawn",
    "Harbour harbour HARBOUR: the crane crane",
    "a ferry leaves the harbour at noon",
    "東京オフィスの移転は十月に決まった",
    "東京の港、東京の港",
    "the crane operator's shift ended",
    "nothing about ports here at all",
    "aaaa aaa aaaaaaa",
    "ferry ferry ferry timetable",
    "noon at the dock, dawn at the harbour",
]
TERMS = ["harbour", "crane", "ferry", "東京", "の港", "aaa", "at the", "noon", "xyz"]


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    """One agent's memories and episodes, and another agent's copies (its rows must not move the scores)."""
    with Memory(
        settings=make_settings(db_url=postgres_url(), db_path=":memory:"), clock=fixed_clock(NOW), background=False
    ) as memory:
        for agent, texts in (("a", TEXTS), ("b", TEXTS[:4] * 3)):
            for i, text in enumerate(texts):
                assert memory.store(agent_id=agent, content=text)["ok"]
                if i % 3 == 0:
                    keywords = " ".join(texts[(i + 1) % len(texts)].split()[:3])
                    done = memory.archive_episode(agent_id=agent, summary=text, keywords=keywords)
                    assert done["ok"]
        yield memory


def reference(store: Any, kind: str, scope: Scope, terms: list[str]) -> list[tuple[int, float]]:
    """(id, raw) of the documented BM25 over the scope's rows, best first, computed from the rows here."""
    table, columns, lengths = {
        MEMORY: ("memories", ("content",), ("text_len",)),
        EPISODE: ("episodes", ("summary", "keywords"), ("summary_len", "keywords_len")),
    }[kind]
    where, params = POSTGRES.scope_where(scope, "m", kind)
    rows = store._read(
        f"SELECT m.id, {', '.join(f'm.{c}' for c in columns)}, {' + '.join(f'm.{c}' for c in lengths)} "
        f"FROM {table} m WHERE {where}",
        params,
    )
    n = len(rows)
    mean = max(sum(row[-1] for row in rows) / n, 1)
    tf = {row[0]: [sum(text.lower().count(term.lower()) for text in row[1:-1]) for term in terms] for row in rows}
    df = [sum(1 for counts in tf.values() if counts[i] > 0) for i in range(len(terms))]
    scored = []
    for row_id, *_, length in rows:
        if not any(tf[row_id]):
            continue
        score = 0.0
        for i, count in enumerate(tf[row_id]):
            if count:
                idf = max(math.log((n - df[i] + 0.5) / (df[i] + 0.5)), IDF_FLOOR)
                score += idf * count * (K1 + 1) / (count + K1 * (1 - B + B * length / mean))
        scored.append((row_id, -score))
    return sorted(scored, key=lambda item: (item[1], item[0]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(TERMS), min_size=1, max_size=4, unique=True), st.sampled_from([MEMORY, EPISODE]))
def test_a_trigram_arm_scores_by_the_documented_bm25_over_its_scope(
    memory: Memory, terms: list[str], kind: str
) -> None:
    store, scope = memory.store_, Scope("a")  # type: ignore[attr-defined]
    expected = reference(store, kind, scope, terms)
    hits = store._bm25_arm(kind, scope, terms, 50, None)
    assert [int(hit.ref.split(":")[1]) for hit in hits] == [row_id for row_id, _ in expected]
    assert all(math.isclose(hit.raw, raw, rel_tol=1e-9, abs_tol=1e-12) for hit, (_, raw) in zip(hits, expected))
    assert [hit.rank for hit in hits] == list(range(len(hits)))


def test_the_reference_finds_rows_for_the_terms_it_is_asked(memory: Memory) -> None:
    """The property above compares rankings that hold rows: the store holds every term but one in some row."""
    store = memory.store_  # type: ignore[attr-defined]
    found = {term: reference(store, MEMORY, Scope("a"), [term]) for term in TERMS}
    assert [term for term, rows in found.items() if not rows] == ["xyz"]
    assert len(found["harbour"]) == 4 and len(found["東京"]) == 2

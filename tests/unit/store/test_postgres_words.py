"""PostgreSQL's word arm holds and ranks SQLite's words (docs/storage.md, "The word arm on PostgreSQL"): its
``words`` column is what SQLite's word index (porter over unicode61) makes of the content, so for any memories and
any question words both backends' word arms return the same rows with the same BM25 scores. A store made before
schema step 6 (PostgreSQL's english stemming) gets the same words when it opens, and the tokens in order (step 7)
the arm counts tf in."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.store.base import Hit, Scope
from cuedrecall.store.postgres import schema
from cuedrecall.store.postgres.connection import WRITE_LOCK
from cuedrecall.store.postgres.words import TOKENIZER, tokens, word_column
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres

# Words where porter and PostgreSQL's english stemming (snowball, stop words dropped) part, and where a
# tokenizer could: short words, stop words, apostrophes, hyphens, diacritics, digits, an unspaced script.
WORDS = [
    "running",
    "runs",
    "ran",
    "runner",
    "generalization",
    "generously",
    "relational",
    "conditional",
    "agreed",
    "agree",
    "sky",
    "skies",
    "dying",
    "lying",
    "flies",
    "fly",
    "hopping",
    "hoped",
    "the",
    "it's",
    "don't",
    "as",
    "is",
    "was",
    "café",
    "cafe",
    "naïve",
    "résumé",
    "resume",
    "v1.2.3",
    "bug-123",
    "e-mail",
    "email",
    "東京オフィス",
    "移転",
    "ab",
    "abs",
    "dogs",
    "dog's",
    "cats",
    "catlike",
    "ponies",
    "pony",
    "feed",
    "feeds",
    "feeding",
    "news",
    "universal",
    "university",
    "organization",
    "organ",
    "a",
    "I",
    "x",
    "ünïcödé",
    "42",
    "1999",
    "happily",
    "happiness",
    "sensational",
    "sensation",
    "ran's",
]
AGENT = "a"
QUESTION_WORDS = sorted({found.lower() for word in WORDS for found in re.findall(r"[^\W_]+", word)})


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Memory]]:
    """The same memories in a SQLite file and a PostgreSQL schema, one agent's (FTS5 takes its statistics over the
    whole table, PostgreSQL over the scope: with one agent they are the same rows)."""
    folder: Path = tmp_path_factory.mktemp("words")
    opened = {
        "sqlite": Memory(folder / "m.db", settings=make_settings(), clock=fixed_clock(NOW), background=False),
        "postgres": Memory(
            settings=make_settings(db_url=postgres_url(), db_path=":memory:"), clock=fixed_clock(NOW), background=False
        ),
    }
    texts = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 9)) for i in range(60)]
    texts += [f"{WORDS[i]} {WORDS[i]} {WORDS[i]}, {WORDS[-1 - i]}!" for i in range(0, len(WORDS), 4)]
    for memory in opened.values():
        for text in texts:
            assert memory.store(agent_id=AGENT, content=text)["ok"]
    yield opened
    for memory in opened.values():
        memory.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(QUESTION_WORDS), min_size=1, max_size=5, unique=True))
def test_the_word_arm_returns_sqlites_rows_and_scores(stores: dict[str, Memory], words: list[str]) -> None:
    """Question words as recall gives them (runs of letters and digits, lower-cased), stop words too."""
    arms = {
        kind: memory.store_.memory_words(Scope(AGENT), words, depth=100)  # type: ignore[attr-defined]
        for kind, memory in stores.items()
    }
    lite, pg = arms["sqlite"], arms["postgres"]
    assert len(pg) == len(lite)
    assert all(math.isclose(a.raw, b.raw, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip(pg, lite))
    assert tie_groups(pg) == tie_groups(lite)


def tie_groups(hits: list[Hit]) -> list[set[str]]:
    """The rows in order, rows whose scores are equal to 1e-9 together: the two engines add a row's terms in
    their own order, so a tie may differ in the last bit and fall either way; the order is the same otherwise."""
    groups: list[tuple[float, set[str]]] = []
    for hit in hits:
        if groups and math.isclose(hit.raw, groups[-1][0], rel_tol=1e-9, abs_tol=1e-9):
            groups[-1][1].add(hit.ref)
        else:
            groups.append((hit.raw, {hit.ref}))
    return [refs for _, refs in groups]


def test_rows_tied_but_for_the_last_bit_are_one_group_and_others_keep_their_order() -> None:
    near = -3.6600065665573975
    hits = [Hit("mem:8", 0, near), Hit("mem:35", 1, near - 4e-16), Hit("mem:9", 2, near), Hit("mem:1", 3, -2.5)]
    assert tie_groups(hits) == [{"mem:8", "mem:35", "mem:9"}, {"mem:1"}]
    assert tie_groups(hits[::-1]) == [{"mem:1"}, {"mem:8", "mem:35", "mem:9"}]


def test_the_words_where_english_stemming_parts_from_porter_find_rows(stores: dict[str, Memory]) -> None:
    """The property above compares lists that hold rows, on the words where the two stemmers differ."""
    store = stores["postgres"].store_  # type: ignore[attr-defined]
    for word in ("generously", "as", "the", "dying", "universal", "naïve"):
        assert store.memory_words(Scope(AGENT), [word], depth=100), word


def test_a_memory_holds_its_tokens_at_their_positions() -> None:
    found = tokens(["The dogs' owners ran; the dogs RAN, café 東京"])[0]
    assert found == ["the", "dog", "owner", "ran", "the", "dog", "ran", "cafe", "東京"]
    assert word_column(found) == ("'the':1,5 'dog':2,6 'owner':3 'ran':4,7 'cafe':8 '東京':9", 9, found)
    assert word_column(["it's", "a\\b"]) == ("'it''s':1 'a\\\\b':2", 2, ["it's", "a\\b"])


def test_a_store_made_with_english_stemming_gets_porters_words_when_it_opens() -> None:
    url = postgres_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK,))
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for step, script in schema.MIGRATIONS[:5]:  # the schema as step 5 left it
            assert isinstance(script, str)
            conn.execute(script)
            conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (step,))
        contents = ["The studio is moving to Porto", "generously agreed, as the skies cleared", "a b c"]
        for i, content in enumerate(contents):
            conn.execute(
                "INSERT INTO memories(agent_id, source_id, content, timestamp, created_at) VALUES (%s, %s, %s, %s, %s)",
                ("a", str(i % 2), content, NOW, NOW),
            )
        english = conn.execute("SELECT words::text FROM memories ORDER BY id").fetchall()
        conn.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK,))
    assert "'generous'" in english[1][0] and "'the'" not in english[1][0]  # what step 1 made
    with Memory(settings=make_settings(db_url=url, db_path=":memory:"), clock=fixed_clock(NOW), background=False):
        pass  # opening brings the schema up to date
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT words::text, word_len, word_tokens FROM memories ORDER BY id").fetchall()
        totals = dict(conn.execute("SELECT source_id, word_len FROM scope_totals WHERE kind = 'mem'").fetchall())
        version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        # step 7 keeps the rows whole up to a page, so the words and tokens are not compressed beside a vector
        options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'memories'::regclass").fetchone()[0]
        made = [word_column(found) for found in tokens(contents)]
        expected = [(conn.execute("SELECT %s::tsvector::text", (text,)).fetchone()[0], n, f) for text, n, f in made]
    assert rows == expected
    assert totals == {"0": len(tokens(contents[:1])[0]) + 3, "1": len(tokens(contents[1:2])[0])}
    assert version == (schema.LATEST_VERSION,)
    assert "toast_tuple_target=8160" in options


def test_a_word_said_more_than_a_tsvector_keeps_counts_every_time_as_on_sqlite(tmp_path: Path) -> None:
    """A tsvector keeps 256 places of a lexeme; tf is read from ``word_tokens``, so 300 repeats rank as FTS5's."""
    texts = ["echo " * 300 + "canyon", "echo " * 256 + "canyon", "echo canyon"]
    opened = [
        Memory(tmp_path / "m.db", settings=make_settings(), clock=fixed_clock(NOW), background=False),
        Memory(
            settings=make_settings(db_url=postgres_url(), db_path=":memory:"), clock=fixed_clock(NOW), background=False
        ),
    ]
    arms = []
    for memory in opened:
        with memory:
            for text in texts:
                assert memory.store(agent_id=AGENT, content=text)["ok"]
            arms.append(memory.store_.memory_words(Scope(AGENT), ["echo"], depth=10))  # type: ignore[attr-defined]
    lite, pg = arms
    assert len(lite) == len(pg) == 3 and lite[0].raw != lite[1].raw  # the 300 and the 256 repeats part
    assert [hit.ref for hit in pg] == [hit.ref for hit in lite]
    assert all(math.isclose(a.raw, b.raw, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip(pg, lite))


def test_the_tokens_come_from_the_tokenizer_of_sqlites_word_index(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", settings=make_settings(), clock=fixed_clock(NOW), background=False) as memory:
        sql = memory.store_._read("SELECT sql FROM sqlite_master WHERE name = 'memories_words'")[0][0]  # type: ignore[attr-defined]
    assert f"tokenize='{TOKENIZER}'" in sql

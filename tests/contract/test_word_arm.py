"""The word arm: memories found by the question's content words, stemmed, beside the trigram arm."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import Scope
from cuedrecall.store.sqlite import SqliteStore, schema
from cuedrecall.text.fts import short_runs
from cuedrecall.text.words import STOP_WORDS, query_words
from tests.conftest import database_at, make_settings, open_memory

A, B = "alice", "bob"


def words_arm(memory, query: str, agent: str = A) -> list[str]:
    answer = memory.recall(agent_id=agent, query=query, trace=True)
    return [hit["ref"] for hit in answer["trace"]["arms"].get("memory_words", [])]


def test_query_words_are_the_content_words_lower_cased_once_in_order() -> None:
    assert query_words("When did Caroline MOVE to Sweden, and when did she move back?") == [
        "caroline",
        "move",
        "sweden",
        "back",
    ]
    assert query_words("what was it about?") == []
    assert query_words("東京の会議 in Osaka") == ["osaka"]  # unspaced scripts are the trigram arm's


@given(st.text(max_size=200))
def test_query_words_never_hold_a_stop_word_or_a_single_character(text: str) -> None:
    words = query_words(text)
    assert not set(words) & STOP_WORDS and all(len(word) > 1 for word in words)
    assert len(words) == len(set(words)) <= 32


def test_a_stemmed_word_finds_its_other_forms_and_a_trigram_inside_a_word_does_not(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(word_arm_enabled=True))
    moving = memory.store(agent_id=A, content="We are moving the studio to Porto in May.")["ref"]
    memory.store(agent_id=A, content="Another theme for the theatre night.")
    assert words_arm(memory, "when did they move the studio?") == [moving]
    assert words_arm(memory, "the other") == []  # only function words: nothing to search by


def test_the_word_arm_keeps_the_scope_and_follows_updates_and_deletes(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(word_arm_enabled=True))
    mine = memory.store(agent_id=A, content="The violin lesson moved to Thursday.")
    memory.store(agent_id=B, content="The violin lesson moved to Friday.")
    assert words_arm(memory, "violin lesson") == [mine["ref"]]
    memory.update_memory(agent_id=A, memory_id=mine["id"], content="The piano lesson moved to Thursday.")
    assert words_arm(memory, "violin") == []
    assert words_arm(memory, "piano") == [mine["ref"]]
    memory.delete_memory(agent_id=A, memory_id=mine["id"])
    assert words_arm(memory, "piano") == []


def test_the_trace_lists_the_word_arm_only_when_it_is_on(tmp_path: Path) -> None:
    off = open_memory(tmp_path / "off.db")
    off.store(agent_id=A, content="The violin lesson moved to Thursday.")
    assert "memory_words" not in off.recall(agent_id=A, query="violin", trace=True)["trace"]["arms"]
    on = open_memory(tmp_path / "on.db", settings=make_settings(word_arm_enabled=True))
    on.store(agent_id=A, content="The violin lesson moved to Thursday.")
    assert on.recall(agent_id=A, query="violin", trace=True)["trace"]["arms"]["memory_words"][0]["ref"] == "mem:1"


def test_a_row_found_by_words_alone_is_judged_as_a_lexical_row(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(word_arm_enabled=True, embedding_mode="none"))
    ref = memory.store(agent_id=A, content="Caroline moved back from Sweden last spring.")["ref"]
    answer = memory.recall(agent_id=A, query="when did caroline move?", trace=True)
    assert [m["ref"] for m in answer["messages"]] == [ref]
    decision = next(d for d in answer["trace"]["gate"]["decisions"] if d["ref"] == ref)
    assert decision["passed"]


def test_migration_7_indexes_the_memories_stored_before_it(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    database_at(path, 6, "Caroline moved back from Sweden.", "2025-01-01T00:00:00Z")
    store = SqliteStore(path)
    try:
        assert store.schema_version == schema.LATEST_VERSION
        assert [h.ref for h in store.memory_words(Scope("a"), ["moving", "sweden"], depth=5)] == ["mem:1"]
    finally:
        store.close()


class _Counts:
    """A term source with fixed counts: 1,000 rows, "like" in 400 of them, "sweden" in 3."""

    def row_count(self, table: str) -> int:
        return 1000

    def term_counts(self, table: str, kind: str, texts: list[str]) -> list[int]:
        return [{"like": 400, "sweden": 3}.get(text, 0) if kind == "word" else 0 for text in texts]


def test_a_word_in_more_than_the_common_share_of_rows_is_common_and_a_rare_one_is_not() -> None:
    from cuedrecall.store.term_counts import TermCounts

    counts = TermCounts(_Counts(), 0.1)
    assert counts.is_common_word("memories", "like") and not counts.is_common_word("memories", "sweden")
    assert not TermCounts(_Counts(), 1.0).is_common_word("memories", "like")  # ratio 1: never


def test_the_word_arm_ranks_on_the_uncommon_words_when_they_fill_the_depth(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(word_arm_enabled=True))
    for i in range(250):
        memory.store(agent_id=A, content=f"I really like the weather today, note {i}.")
    rare = memory.store(agent_id=A, content="I like the Sweden trip we planned.")["ref"]
    assert words_arm(memory, "do you like sweden?")[0] == rare


# -- short words: two-character CJK words the trigram index cannot hold (docs/recall-process.md#short-words) --------

FILLER = ["りんご", "みかん", "電車", "会議室", "天気", "予定", "週末", "映画", "東京", "大阪", "オフィス", "資料"]
SHORT = ["移転", "採用", "退職", "契約", "故障", "休暇"]  # never in the filler


def test_short_runs_are_the_two_character_cjk_runs_once_in_order() -> None:
    assert short_runs("東京オフィス 移転 いつ 移転") == ["移転", "いつ"]
    assert short_runs("移転はいつ") == []  # one run of five: the trigram arm's
    assert short_runs("a 東 b") == []  # one character alone finds too much
    assert len(short_runs(" ".join(f"{a}{b}" for a in "会議予定" for b in "室案日"))) == 4  # capped


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    fillers=st.integers(30, 120),
    word=st.sampled_from(SHORT),
    shared=st.sampled_from(["東京オフィス", "会議室の予定", "大阪の資料"]),
)
def test_a_two_character_word_the_query_repeats_gives_its_row_lexical_evidence(
    tmp_path_factory, seed: int, fillers: int, word: str, shared: str
) -> None:
    """Among rows that hold the query's long run, the one that also holds its short word is in the answer, ranked
    no lower than without the short-word arm: the arm gives it the vote the trigram index cannot."""
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("short") / "m.db"
    with open_memory(path, settings=make_settings(short_word_arm_enabled=True)) as memory:
        for i in range(fillers):
            body = "".join(rng.choice(FILLER) for _ in range(4))
            memory.store(agent_id=A, content=f"{shared}{body} {i}" if i % 3 == 0 else f"{body} {i}")
        target = memory.store(agent_id=A, content=f"{shared}の{word}は十月に決まった。")["ref"]
        answer = memory.recall(agent_id=A, query=f"{shared} {word}", limit=5, trace=True)
    with open_memory(path, settings=make_settings(short_word_arm_enabled=False)) as memory:
        without = memory.recall(agent_id=A, query=f"{shared} {word}", limit=5)
    assert [hit["ref"] for hit in answer["trace"]["arms"]["memory_short_words"]] == [target]
    rank = {message["ref"]: message["rank"] for message in answer["messages"] if "ref" in message}
    rank_without = {message["ref"]: message["rank"] for message in without["messages"] if "ref" in message}
    assert target in rank
    assert rank[target] <= rank_without.get(target, len(without["messages"]) + 1)

"""recall-bounds-v1: each cap inside recall applies, and the trace names it and what it left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.recall import bounds
from cuedrecall.text.exclusion import MAX_EXCLUSIONS, is_excluded, normalize_exclusions
from cuedrecall.text.fts import MAX_CJK_TRIGRAMS, MAX_TERMS, capped_terms, fts_terms
from cuedrecall.text.words import MAX_WORDS, capped_words
from tests.conftest import make_settings, open_memory

A = "agent-a"
CJK = "".join(chr(0x4E00 + (i * 37) % 20000) for i in range(400))  # 400 distinct ideographs: 398 trigrams


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(word_arm_enabled=True))
    memory.store(agent_id=A, content="Caroline went to the pottery class on Tuesday.")
    memory.store(agent_id=A, content=CJK[:30])
    yield memory
    memory.close()


def test_a_query_gives_the_trigram_arms_at_most_max_terms_distinct_terms() -> None:
    query = " ".join(f"term{i:04d}" for i in range(500))
    terms, left_out = capped_terms(query)
    assert terms == [f"term{i:04d}" for i in range(MAX_TERMS)] and left_out == 500 - MAX_TERMS


def test_a_cjk_run_gives_at_most_max_cjk_trigrams_and_leaves_room_for_other_terms() -> None:
    terms, left_out = capped_terms(CJK + " pottery")
    cjk = [t for t in terms if t != "pottery"]
    assert len(cjk) == MAX_CJK_TRIGRAMS and cjk == [CJK[i : i + 3] for i in range(MAX_CJK_TRIGRAMS)]
    assert "pottery" in terms and left_out == 398 - MAX_CJK_TRIGRAMS


def test_a_repeated_term_counts_once_against_the_cap() -> None:
    assert fts_terms("pottery " * 5_000) == ["pottery"]
    assert capped_terms("pottery " * 5_000)[1] == 0


def test_the_word_arm_takes_at_most_max_words_distinct_words() -> None:
    words, left_out = capped_words(" ".join(f"word{i}" for i in range(100)))
    assert len(words) == MAX_WORDS and left_out == 100 - MAX_WORDS


def test_at_most_max_exclusions_entries_apply_the_first_ones_given() -> None:
    entries = normalize_exclusions([f"entry {i}" for i in range(MAX_EXCLUSIONS + 250)])
    assert len(entries) == MAX_EXCLUSIONS and entries.left_out == 250
    assert is_excluded("entry 0", entries) and not is_excluded(f"entry {MAX_EXCLUSIONS}", entries)


_TEXT = st.text(alphabet="ab ", min_size=1, max_size=45)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, max_size=8), _TEXT)
def test_the_exclusion_lookups_decide_as_the_rule_written_out(entries: list[str], content: str) -> None:
    held = normalize_exclusions(entries)
    assert is_excluded(content, held) == is_excluded(content, tuple(held))  # a plain tuple takes the loop


def test_the_trace_names_the_policy_its_caps_and_what_each_left_out(memory: Memory) -> None:
    query = CJK + " " + " ".join(f"term{i}" for i in range(100))
    exclude = [f"held text {i}" for i in range(MAX_EXCLUSIONS)]
    section = memory.recall(agent_id=A, query=query, exclude_contents=exclude, trace=True)["trace"]["bounds"]
    assert section["policy"] == bounds.POLICY == "recall-bounds-v1"
    assert section["caps"]["terms"] == MAX_TERMS and section["caps"]["cjk_trigrams"] == MAX_CJK_TRIGRAMS
    assert section["caps"]["words"] == MAX_WORDS and section["caps"]["exclusions"] == MAX_EXCLUSIONS
    distinct = len(dict.fromkeys([CJK[i : i + 3] for i in range(398)] + [f"term{i}" for i in range(100)]))
    assert section["left_out"]["terms"] == distinct - MAX_TERMS
    assert section["left_out"]["words"] == 100 - MAX_WORDS and section["left_out"]["exclusions"] == 0


def test_a_recall_within_every_cap_leaves_nothing_out(memory: Memory) -> None:
    section = memory.recall(agent_id=A, query="pottery class", trace=True)["trace"]["bounds"]
    assert section["left_out"] == {"terms": 0, "words": 0, "exclusions": 0}


def test_the_keyword_arms_record_their_term_plan_and_the_pass_they_ranked_on(memory: Memory) -> None:
    trace = memory.recall(agent_id=A, query="pottery class", trace=True)["trace"]
    plan = trace["keyword_terms"]["memory_keyword"]  # terms by place in the query's terms: no text in a trace
    assert plan["rule"] == "keyword-budget-v2" and plan["terms"] == 2 and plan["fallback"] == [0, 1]
    assert plan["ranked_on"] == "fallback" and plan["left_out"] == []
    assert trace["keyword_terms"]["memory_words"]["fallback"] == [0, 1]
    assert "pottery" not in str(trace["keyword_terms"])


def test_a_long_cjk_query_is_answered_without_error(memory: Memory) -> None:
    answer = memory.recall(agent_id=A, query=CJK * 40)  # 16,000 characters: the tools' longest query
    assert answer.get("ok", True) is not False and answer["messages"]


def test_a_recall_without_trace_is_unchanged_by_the_bounds_record(memory: Memory) -> None:
    plain = memory.recall(agent_id=A, query=CJK + " pottery")
    traced = memory.recall(agent_id=A, query=CJK + " pottery", trace=True)
    traced.pop("trace")
    assert traced == plain

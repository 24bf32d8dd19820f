"""Benchmark datasets: the LoCoMo loader and the long-span generator."""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path

import pytest

from benchmarks.cues import cue_period, extract_cue
from benchmarks.datasets import (
    Conversation,
    Question,
    SessionSummary,
    Turn,
    generate_long_span,
    load_locomo,
)

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo10-dev.json"


def ts(value: str) -> datetime:
    dt = datetime.fromisoformat(value)
    assert dt.tzinfo is not None and dt.utcoffset().total_seconds() == 0, value
    return dt


# --------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def locomo() -> list[Conversation]:
    return load_locomo(LOCOMO)


def test_locomo_has_six_conversations(locomo):
    assert len(locomo) == 6
    assert [c.conv_id for c in locomo] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44"]
    for c in locomo:
        assert isinstance(c, Conversation)
        assert c.turns and c.sessions and c.questions
        assert all(isinstance(t, Turn) for t in c.turns)
        assert all(isinstance(s, SessionSummary) for s in c.sessions)
        assert all(isinstance(q, Question) for q in c.questions)


def test_locomo_limit_conversations():
    assert [c.conv_id for c in load_locomo(LOCOMO, limit_conversations=2)] == ["conv-26", "conv-30"]
    assert load_locomo(str(LOCOMO), limit_conversations=0) == []


def test_locomo_evidence_refers_to_existing_turns(locomo):
    for c in locomo:
        ids = [t.msg_id for t in c.turns]
        assert len(ids) == len(set(ids))
        known = set(ids)
        for q in c.questions:
            assert q.evidence, q.qid
            assert len(set(q.evidence)) == len(q.evidence)
            assert set(q.evidence) <= known, q.qid


def test_locomo_timestamps_increase_within_session(locomo):
    for c in locomo:
        by_session = defaultdict(list)
        for t in c.turns:
            by_session[t.session].append(ts(t.timestamp))
        for session, stamps in by_session.items():
            assert all(a < b for a, b in zip(stamps, stamps[1:])), (c.conv_id, session)


def test_locomo_asked_at_after_every_turn(locomo):
    for c in locomo:
        last = max(ts(t.timestamp) for t in c.turns)
        for q in c.questions:
            asked = ts(q.asked_at)
            assert asked > last
            assert (asked.hour, asked.minute, asked.second) == (0, 0, 0)
            assert asked.date() == last.date().fromordinal(last.date().toordinal() + 1)


def test_locomo_turns_carry_speaker_text_and_image_caption(locomo):
    c = locomo[0]
    first = c.turns[0]
    assert first.msg_id == "conv-26:D1:1"
    assert first.content == "Caroline: Hey Mel! Good to see you! How have you been?"
    assert first.speaker == "Caroline" and first.session == 1
    assert ts(first.timestamp) == datetime.fromisoformat("2023-05-08T13:56:00+00:00")
    assert ts(c.turns[1].timestamp) == datetime.fromisoformat("2023-05-08T13:56:01+00:00")
    shared = [t for conv in locomo for t in conv.turns if " [shares: " in t.content]
    assert shared and all(t.content.endswith("]") for t in shared)


def test_locomo_session_times_without_turns_are_skipped(locomo):
    c = locomo[0]  # conv-26 lists date-times for sessions 20-35 but no turns for them
    sessions = {t.session for t in c.turns}
    assert max(sessions) == 19
    assert {s.session for s in c.sessions} <= sessions


def test_locomo_session_summaries_span_their_turns(locomo):
    for c in locomo:
        by_session = defaultdict(list)
        for t in c.turns:
            by_session[t.session].append(t.timestamp)
        for s in c.sessions:
            assert s.summary and s.keywords == ""
            assert s.start_time == by_session[s.session][0]
            assert s.end_time == by_session[s.session][-1]


def test_locomo_questions_categories_and_answers(locomo):
    cats = Counter(q.category for c in locomo for q in c.questions)
    assert set(cats) == {"1", "2", "3", "4", "5"}
    assert cats["5"] > 0  # kept; metrics leave them out
    for c in locomo:
        qids = [q.qid for q in c.questions]
        assert len(qids) == len(set(qids))
        for q in c.questions:
            assert isinstance(q.answer, str) and q.text
    # integer answers are stringified; adversarial ones use adversarial_answer
    answers = {q.text: q.answer for c in locomo for q in c.questions}
    assert answers["When did Melanie paint a sunrise?"] == "2022"
    assert all(q.answer for c in locomo for q in c.questions if q.category == "5")


# --------------------------------------------------------------------------
# Long-span generator
# --------------------------------------------------------------------------


@lru_cache(maxsize=None)
def long_span(seed: int, size: str) -> Conversation:
    return generate_long_span(seed=seed, size=size)


def _topic(q: Question) -> str:
    return q.qid.split(":")[1]


def test_long_span_is_deterministic_for_a_seed():
    for size in ("small", "large"):
        assert generate_long_span(seed=7, size=size) == generate_long_span(seed=7, size=size)
    a, b = generate_long_span(seed=7), generate_long_span(seed=8)
    assert [t.content for t in a.turns] != [t.content for t in b.turns]
    assert a.turns[0].msg_id.startswith("ls7:") and b.turns[0].msg_id.startswith("ls8:")


def test_long_span_small_size_spans_nine_months():
    for seed in range(3):
        c = long_span(seed, "small")
        assert 250 <= len(c.turns) <= 350
        first, last = ts(c.turns[0].timestamp), ts(c.turns[-1].timestamp)
        assert first.date() >= date(2025, 1, 6)
        assert (last - first).days >= 240
        assert len(c.questions) >= 15


def test_long_span_large_size_is_big_and_fast():
    t0 = time.perf_counter()
    c = generate_long_span(seed=11, size="large")
    elapsed = time.perf_counter() - t0
    assert 4500 <= len(c.turns) <= 5500
    assert elapsed < 2.0
    weeks = (ts(c.turns[-1].timestamp) - ts(c.turns[0].timestamp)).days / 7
    assert len(c.sessions) / weeks >= 3  # several sessions per week


def test_long_span_invalid_size():
    with pytest.raises(ValueError):
        generate_long_span(seed=1, size="medium")


@pytest.mark.parametrize("size", ["small", "large"])
def test_long_span_turns_sessions_and_ids(size):
    c = long_span(3, size)
    ids = [t.msg_id for t in c.turns]
    assert len(ids) == len(set(ids))
    stamps = [ts(t.timestamp) for t in c.turns]
    assert all(a < b for a, b in zip(stamps, stamps[1:]))  # sessions never overlap
    per_session = Counter(t.session for t in c.turns)
    assert [s.session for s in c.sessions] == sorted(per_session)
    for t in c.turns:
        assert t.msg_id.startswith(f"ls3:{t.session}:")
        assert t.speaker in ("user", "assistant")
    for s in c.sessions:
        assert s.summary and s.keywords
        assert s.start_time <= s.end_time
    topic_sessions = {t.session for q in c.questions for t in c.turns if t.msg_id in q.evidence}
    for session in topic_sessions:
        assert 4 <= per_session[session] <= 10


@pytest.mark.parametrize("size", ["small", "large"])
def test_long_span_questions(size):
    c = long_span(2, size)
    turns = {t.msg_id: t for t in c.turns}
    assert {q.category for q in c.questions} == {"absolute", "relative"}
    assert len({q.qid for q in c.questions}) == len(c.questions)
    for q in c.questions:
        assert q.evidence and 1 <= len(q.evidence) <= 2
        ev = [turns[e] for e in q.evidence]
        assert all(t.speaker == "user" for t in ev)
        assert len({t.session for t in ev}) == 1
        assert ts(q.asked_at) > max(ts(t.timestamp) for t in ev)
        assert q.answer


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_span_cue_period_holds_the_evidence(seed, size):
    c = long_span(seed, size)
    turns = {t.msg_id: t for t in c.turns}
    oldest = c.turns[0].timestamp
    held = 0
    for q in c.questions:
        cue = extract_cue(q.text, q.asked_at)
        period = cue_period(cue, q.asked_at, oldest=oldest) if cue else None
        if period and all(period[0] <= ts(turns[e].timestamp) < period[1] for e in q.evidence):
            held += 1
    assert held >= 0.9 * len(c.questions)


@pytest.mark.parametrize("size", ["small", "large"])
def test_long_span_topics_recur_in_different_months(size):
    c = long_span(4, size)
    turns = {t.msg_id: t for t in c.turns}
    months = defaultdict(set)
    for q in c.questions:
        months[_topic(q)].add(ts(turns[q.evidence[0]].timestamp).month)
    recurring = [topic for topic, ms in months.items() if len(ms) >= 2]
    assert len(recurring) >= 8
    assert all(2 <= len(ms) <= 4 for ms in months.values())


def test_long_span_topic_alone_cannot_tell_the_evidence_apart():
    c = long_span(5, "large")
    turns = {t.msg_id: t for t in c.turns}
    sessions_of_topic = defaultdict(set)
    for q in c.questions:
        sessions_of_topic[_topic(q)].add(turns[q.evidence[0]].session)
    for q in c.questions:
        own = turns[q.evidence[0]].session
        others = sessions_of_topic[_topic(q)] - {own}
        assert others, q.qid
        # the other occurrences are in other months, with other details
        own_month = ts(turns[q.evidence[0]].timestamp).month
        assert all(
            ts(next(t for t in c.turns if t.session == s).timestamp).month != own_month for s in others
        )
        own_text = {turns[e].content for e in q.evidence}
        other_text = {t.content for t in c.turns if t.session in others}
        assert not own_text & other_text


# Words a question shares with its evidence that count as content: four letters
# or more, not a function word, and not a time word (the time is the cue's job).
_STOP = frozenset(
    "what which when where whom whose that this with from about have were your tell told said happened "
    "they them their there then than into over only also just some very been being does done did "
    "went came during like".split()
)
_TIME_WORDS = frozenset(
    "january february march april june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday "
    "ago last week weeks month months days yesterday early late couple few two three four five".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _STOP | _TIME_WORDS}


def _occurrence(q: Question) -> tuple[str, str]:
    _, topic, occurrence, _ = q.qid.split(":")
    return topic, occurrence


def _evidence_words(c: Conversation) -> dict[str, dict[str, set[str]]]:
    """topic -> occurrence -> the content words of that occurrence's evidence turns."""
    turns = {t.msg_id: t for t in c.turns}
    out: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for q in c.questions:
        topic, occurrence = _occurrence(q)
        out[topic][occurrence] = set().union(*(content_words(turns[e].content) for e in q.evidence))
    return out


@pytest.mark.parametrize("size, seed", [("small", 0), ("small", 1), ("large", 0), ("large", 1)])
def test_long_span_turns_are_distinct_texts(size, seed):
    c = long_span(seed, size)
    distinct = len({t.content for t in c.turns})
    assert distinct >= 0.95 * len(c.turns)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_span_evidence_shares_the_questions_topic_words(seed, size):
    c = long_span(seed, size)
    turns = {t.msg_id: t for t in c.turns}
    shared = sum(
        1 for q in c.questions if any(content_words(q.text) & content_words(turns[e].content) for e in q.evidence)
    )
    assert shared >= 0.9 * len(c.questions)


@pytest.mark.parametrize("size", ["small", "large"])
def test_long_span_topic_words_find_every_occurrence_and_the_question_names_none(size):
    c = long_span(6, size)
    words = _evidence_words(c)
    finds_all = names_own = 0
    for q in c.questions:
        topic, occurrence = _occurrence(q)
        own = content_words(q.text) & words[topic][occurrence]
        others = [w for o, w in words[topic].items() if o != occurrence]
        finds_all += all(own & w for w in others)  # the same words are in the other occurrences' evidence
        names_own += bool(own - set().union(*others))  # a word only its own occurrence has
    assert finds_all >= 0.9 * len(c.questions)
    assert names_own <= 0.1 * len(c.questions)


def test_long_span_small_talk_mentions_topics_in_passing():
    c = long_span(0, "large")
    turns = {t.msg_id: t for t in c.turns}
    topic_sessions = {turns[e].session for q in c.questions for e in q.evidence}
    small_talk = [t for t in c.turns if t.session not in topic_sessions]
    evidence_words = _evidence_words(c)
    topic_words: dict[str, set[str]] = defaultdict(set)  # the words questions and evidence share, per topic
    for q in c.questions:
        topic, _ = _occurrence(q)
        topic_words[topic] |= content_words(q.text) & set().union(*evidence_words[topic].values())
    mentioned = {
        topic: sum(1 for t in small_talk if content_words(t.content) & words) for topic, words in topic_words.items()
    }
    assert sum(1 for n in mentioned.values() if n >= 2) >= 0.8 * len(mentioned)
    # yet in passing only: a small share of the small talk
    assert sum(mentioned.values()) <= 0.1 * len(small_talk)

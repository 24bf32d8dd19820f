"""Benchmark datasets: the LoCoMo loader and the long-span generator."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import time
from collections import Counter, defaultdict
from datetime import UTC, date, datetime
from functools import cache

import pytest

from benchmarks import locomo_check
from benchmarks.cues import cue_period, extract_cue
from benchmarks.datasets import (
    Conversation,
    Question,
    SessionSummary,
    Turn,
    generate_long_span,
    load_locomo,
    locomo_file,
)
from benchmarks.locomo_check import problems
from tests.conftest import FIXTURES, LOCOMO_MINI


def ts(value: str) -> datetime:
    dt = datetime.fromisoformat(value)
    assert dt.tzinfo is not None and dt.utcoffset().total_seconds() == 0, value
    return dt


# --------------------------------------------------------------------------
# LoCoMo: the loader on tests/fixtures/locomo_mini.json (LoCoMo's layout, our own text; the real file's
# counts are checked by python -m benchmarks.locomo_check, never in the suite)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def locomo() -> list[Conversation]:
    return load_locomo(LOCOMO_MINI)


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    return json.loads(LOCOMO_MINI.read_text(encoding="utf-8"))


def test_the_fixture_is_what_its_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_locomo_mini", FIXTURES / "make_locomo_mini.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.render() == LOCOMO_MINI.read_text(encoding="utf-8")


def test_locomo_reads_every_conversation(locomo):
    assert [(c.conv_id, len(c.turns), len(c.questions)) for c in locomo] == [
        ("mini-1", 108, 63),
        ("mini-2", 60, 35),
        ("mini-3", 48, 27),
    ]
    for c in locomo:
        assert isinstance(c, Conversation)
        assert c.turns and c.sessions and c.questions
        assert all(isinstance(t, Turn) for t in c.turns)
        assert all(isinstance(s, SessionSummary) for s in c.sessions)
        assert all(isinstance(q, Question) for q in c.questions)


def test_locomo_limit_conversations():
    assert [c.conv_id for c in load_locomo(LOCOMO_MINI, limit_conversations=2)] == ["mini-1", "mini-2"]
    assert load_locomo(str(LOCOMO_MINI), limit_conversations=0) == []


def test_locomo_holds_to_the_loaders_rules(locomo):
    """Ids unique, evidence naming known turns, timestamps increasing within a session, summaries spanning
    their turns, questions asked at midnight after the last turn: the rules benchmarks.locomo_check checks."""
    assert {c.conv_id: problems(c) for c in locomo} == {c.conv_id: [] for c in locomo}


def test_locomo_evidence_refers_to_existing_turns(locomo):
    for c in locomo:
        ids = [t.msg_id for t in c.turns]
        assert len(ids) == len(set(ids))
        known = set(ids)
        for q in c.questions:
            assert q.evidence, q.qid
            assert len(set(q.evidence)) == len(q.evidence)
            assert set(q.evidence) <= known, q.qid


def test_locomo_evidence_ids_are_split_deduplicated_and_checked(locomo, raw):
    questions = {q.text: q for c in locomo for q in c.questions}
    assert questions["What did Ines talk about in March 2023 and in July 2023?"].evidence == (
        "mini-1:D1:3",
        "mini-1:D9:3",
    )  # "D1:3; D9:3", one string
    assert questions["What is the name of Tomas's bread starter, again?"].evidence == ("mini-1:D5:7",)
    flat = questions["Which street is Tomas's new flat on?"]
    assert flat.evidence == ("mini-1:D6:3",)  # its D30:1 names no turn
    # a question whose evidence names no turn (a session without turns, or none at all) is dropped
    assert [len(item["qa"]) for item in raw] == [63, 37, 27]
    assert "What did Priya say on 5 November?" not in questions
    assert "What is Priya's favourite colour?" not in questions
    assert [q.qid for q in locomo[1].questions][-2:] == ["mini-2:q33", "mini-2:q34"]  # the file's index


def test_locomo_timestamps_increase_within_session(locomo):
    for c in locomo:
        by_session = defaultdict(list)
        for t in c.turns:
            by_session[t.session].append(ts(t.timestamp))
        for session, stamps in by_session.items():
            assert all(a < b for a, b in itertools.pairwise(stamps)), (c.conv_id, session)


def test_locomo_session_times_are_read_in_every_written_form(locomo):
    first = {(c.conv_id, t.session): ts(t.timestamp) for c in reversed(locomo) for t in reversed(c.turns)}
    utc = UTC
    assert first[("mini-1", 1)] == datetime(2023, 3, 3, 10, 14, tzinfo=utc)  # "10:14 am on 3 March, 2023"
    assert first[("mini-1", 4)] == datetime(2023, 4, 20, 12, 30, tzinfo=utc)  # "12:30 pm": noon
    assert first[("mini-1", 7)] == datetime(2023, 6, 15, 0, 10, tzinfo=utc)  # "12:10 am": after midnight
    assert first[("mini-2", 2)] == datetime(2023, 8, 29, 17, 30, tzinfo=utc)  # "29 August 2023", no comma
    assert first[("mini-2", 3)] == datetime(2023, 9, 11, 20, 15, tzinfo=utc)  # "8:15 p.m."
    assert first[("mini-3", 4)] == datetime(2024, 2, 29, 22, 30, tzinfo=utc)  # a leap day


def test_locomo_sessions_are_ordered_by_number_not_by_key(locomo, raw):
    keys = [k for k in raw[0]["conversation"] if k.startswith("session_") and not k.endswith("date_time")]
    assert keys[:2] == ["session_1", "session_2"] and "session_10_date_time" in raw[0]["conversation"]
    sessions = [t.session for t in locomo[0].turns]
    assert sessions == sorted(sessions) and sorted(set(sessions)) == list(range(1, 10))


def test_locomo_asked_at_the_day_after_the_last_turn_at_midnight(locomo):
    assert {c.conv_id: {q.asked_at for q in c.questions} for c in locomo} == {
        "mini-1": {"2023-07-20T00:00:00+00:00"},  # session 10's date-time (6 August) has no turns
        "mini-2": {"2023-10-23T00:00:00+00:00"},  # nor has session 6's (5 November)
        "mini-3": {"2024-03-01T00:00:00+00:00"},  # the day after 29 February
    }
    for c in locomo:
        last = max(ts(t.timestamp) for t in c.turns)
        for q in c.questions:
            asked = ts(q.asked_at)
            assert asked > last and (asked.hour, asked.minute, asked.second) == (0, 0, 0)
            assert asked.date() == last.date().fromordinal(last.date().toordinal() + 1)


def test_locomo_turns_carry_speaker_text_and_image_caption(locomo):
    c = locomo[0]
    first = c.turns[0]
    assert first.msg_id == "mini-1:D1:1"
    assert first.content == "Ines: Hey Tomas, good to hear from you. I have so much to tell you."
    assert first.speaker == "Ines" and first.session == 1
    assert ts(first.timestamp) == datetime.fromisoformat("2023-03-03T10:14:00+00:00")
    assert ts(c.turns[1].timestamp) == datetime.fromisoformat("2023-03-03T10:14:01+00:00")
    assert c.turns[1].content.startswith("Tomas: ") and c.turns[1].speaker == "Tomas"
    shared = {t.msg_id: t.content for conv in locomo for t in conv.turns if " [shares: " in t.content}
    assert len(shared) == 10 and all(t.endswith("]") for t in shared.values())
    assert shared["mini-1:D1:5"] == (
        "Ines: Yes, I went with a deep teal glaze. Ruth, the teacher, said it was a brave choice for a "
        "beginner. [shares: a photo of a teal ceramic bowl on a workbench]"
    )


def test_locomo_session_times_without_turns_are_skipped(locomo, raw):
    conversations = [item["conversation"] for item in raw]
    assert "session_10_date_time" in conversations[0] and "session_10" not in conversations[0]
    assert conversations[1]["session_6"] == [] and "session_6_date_time" in conversations[1]
    assert [max(t.session for t in c.turns) for c in locomo] == [9, 5, 4]
    for c in locomo:
        assert {s.session for s in c.sessions} <= {t.session for t in c.turns}


def test_locomo_session_summaries_span_their_turns(locomo):
    summarised = [[s.session for s in c.sessions] for c in locomo]
    assert summarised == [list(range(1, 10)), [1, 2, 3, 4, 5], [1, 2, 4]]  # mini-3's session 3 has none
    assert locomo[0].sessions[0].summary.startswith("Ines and Tomas caught up on 3 March 2023.")
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
    assert cats == {"1": 6, "2": 24, "3": 12, "4": 66, "5": 17}  # category 5 kept; metrics leave it out
    for c in locomo:
        qids = [q.qid for q in c.questions]
        assert len(qids) == len(set(qids))
        for q in c.questions:
            assert isinstance(q.answer, str) and q.answer and q.text
    answers = {q.text: q.answer for c in locomo for q in c.questions}
    # integer answers are stringified
    assert answers["How many kilometres was the fun run Tomas ran in Harbourside?"] == "10"
    assert answers["In which year did Priya's grandmother move to Gdansk?"] == "1964"
    # adversarial questions answer with adversarial_answer; an answer, when there is one, comes first
    assert answers["What colour glaze did Tomas use on the first pottery bowl?"] == "teal"
    assert answers["Which snack did Tomas make for the book club?"] == "None, Marguerite made them"
    assert answers["When did Tomas adopt Pebble?"] == "1 April 2023"  # the Saturday before session 3


def test_a_missing_locomo_file_stops_with_one_line_saying_how_to_get_it(tmp_path, capsys):
    missing = tmp_path / "locomo10.json"
    with pytest.raises(SystemExit) as stopped:
        load_locomo(missing)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"LoCoMo not found at {missing}: download locomo10.json")
    assert "snap-research/locomo" in err and "--locomo PATH" in err
    with pytest.raises(SystemExit):
        locomo_file(None, "--data")
    assert capsys.readouterr().err.startswith("LoCoMo not given:") is True
    assert locomo_file(LOCOMO_MINI) == LOCOMO_MINI


def test_the_check_benchmark_reports_each_conversation(capsys):
    assert locomo_check.main(["--locomo", str(LOCOMO_MINI)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mini-1: 108 turns in 9 sessions, 9 summaries, 63 questions (1:2 2:12 3:6 4:34 5:9)"
    assert out[-1] == "3 conversations, 0 broken rules"


# --------------------------------------------------------------------------
# Long-span generator
# --------------------------------------------------------------------------


@cache
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
    assert all(a < b for a, b in itertools.pairwise(stamps))  # sessions never overlap
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
        assert all(ts(next(t for t in c.turns if t.session == s).timestamp).month != own_month for s in others)
        own_text = {turns[e].content for e in q.evidence}
        other_text = {t.content for t in c.turns if t.session in others}
        assert not own_text & other_text


# Words a question shares with its evidence that count as content: four letters
# or more, not a function word, and not a time word (the time is the cue's job).
_STOP = frozenset(
    [
        "what",
        "which",
        "when",
        "where",
        "whom",
        "whose",
        "that",
        "this",
        "with",
        "from",
        "about",
        "have",
        "were",
        "your",
        "tell",
        "told",
        "said",
        "happened",
        "they",
        "them",
        "their",
        "there",
        "then",
        "than",
        "into",
        "over",
        "only",
        "also",
        "just",
        "some",
        "very",
        "been",
        "being",
        "does",
        "done",
        "did",
        "went",
        "came",
        "during",
        "like",
    ]
)
_TIME_WORDS = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "ago",
        "last",
        "week",
        "weeks",
        "month",
        "months",
        "days",
        "yesterday",
        "early",
        "late",
        "couple",
        "few",
        "two",
        "three",
        "four",
        "five",
    ]
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

"""The rule-based time-cue extractor of benchmarks/cues.py, one test per rule."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.cues import CONFIDENCE, CUE_RULES, RULES, cue_period, explain_cue, extract_cue
from benchmarks.datasets import MONTH_NAMES
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
NOW = "2023-06-15T00:00:00+00:00"  # a Thursday


def span(after, before, confidence):
    cue = {}
    if after is not None:
        cue["after"] = after
    if before is not None:
        cue["before"] = before
    cue["confidence"] = confidence
    return cue


def ago(unit, value, confidence="likely"):
    return {"ago": {"unit": unit, "value": value}, "confidence": confidence}


def check(rule, question, asked_at, expected):
    found = explain_cue(question, asked_at)
    assert found is not None, question
    assert found == (rule, expected), question
    assert extract_cue(question, asked_at) == expected


# --------------------------------------------------------------------------
# One test per rule
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, asked_at, expected",
    [
        ("What did the dentist say in March?", NOW, span("2023-03-01", "2023-03-31", "likely")),
        ("What happened in March 2024?", NOW, span("2024-03-01", "2024-03-31", "likely")),
        ("What did I plant in September?", NOW, span("2022-09-01", "2022-09-30", "likely")),
        ("What did we eat during June?", NOW, span("2023-06-01", "2023-06-30", "likely")),
        ("Where did I go last March?", "2023-03-20", span("2022-03-01", "2022-03-31", "likely")),
        ("Where did I go last March?", NOW, span("2023-03-01", "2023-03-31", "likely")),
        ("Did Andrew have a pet dog during March 2023?", NOW, span("2023-03-01", "2023-03-31", "likely")),
        ("What did we do in March of 2021?", NOW, span("2021-03-01", "2021-03-31", "likely")),
        ("Which event took place in May?", NOW, span("2023-05-01", "2023-05-31", "likely")),
        ("Where was I in Dec. 2020?", NOW, span("2020-12-01", "2020-12-31", "likely")),
    ],
)
def test_rule_month(question, asked_at, expected):
    check("month", question, asked_at, expected)


@pytest.mark.parametrize(
    "question, asked_at, expected",
    [
        ("What happened at the car repair in early May 2025?", NOW, span("2025-05-01", "2025-05-10", "likely")),
        ("What did the dentist do in mid March?", NOW, span("2023-03-11", "2023-03-20", "likely")),
        ("What did the dentist do in mid-March?", NOW, span("2023-03-11", "2023-03-20", "likely")),
        ("What did I buy in late February 2024?", NOW, span("2024-02-21", "2024-02-29", "likely")),
        ("What did I do at the end of May?", NOW, span("2023-05-21", "2023-05-31", "likely")),
        (
            "Which tournament did Nate win in the beginning of November 2022?",
            NOW,
            span("2022-11-01", "2022-11-10", "likely"),
        ),
        ("Was the first half of September 2022 a good month?", NOW, span("2022-09-01", "2022-09-15", "likely")),
        ("What about the second half of April?", NOW, span("2023-04-16", "2023-04-30", "likely")),
    ],
)
def test_rule_month_part(question, asked_at, expected):
    check("month_part", question, asked_at, expected)


@pytest.mark.parametrize(
    "question, asked_at, expected",
    [
        ("What did I do on 8 May?", NOW, span("2023-05-08", "2023-05-08", "sure")),
        ("What did I do on 8 July?", NOW, span("2022-07-08", "2022-07-08", "sure")),
        ("What happened May 8th?", NOW, span("2023-05-08", "2023-05-08", "sure")),
        ("What did I say on 8 May, 2023?", NOW, span("2023-05-08", "2023-05-08", "sure")),
        ("What did Audrey eat for dinner on October 24, 2023?", NOW, span("2023-10-24", "2023-10-24", "sure")),
        ("What book did Tim just finish reading on 8th December, 2023?", NOW, span("2023-12-08", "2023-12-08", "sure")),
        ("What happened on the 4th of July?", NOW, span("2022-07-04", "2022-07-04", "sure")),
        ("What happened on 2023-05-08?", NOW, span("2023-05-08", "2023-05-08", "sure")),
        ("What did I do on Feb 29?", NOW, span("2020-02-29", "2020-02-29", "sure")),
        ("What did we cook on Jun 15?", NOW, span("2023-06-15", "2023-06-15", "sure")),
    ],
)
def test_rule_day(question, asked_at, expected):
    check("day", question, asked_at, expected)


def test_rule_yesterday():
    check("yesterday", "What did I eat yesterday?", NOW, span("2023-06-14", "2023-06-14", "sure"))
    check("yesterday", "yesterday", "2024-03-01", span("2024-02-29", "2024-02-29", "sure"))


def test_rule_day_before_yesterday():
    check(
        "day_before_yesterday", "What did I do the day before yesterday?", NOW, span("2023-06-13", "2023-06-13", "sure")
    )


@pytest.mark.parametrize(
    "question, expected_day",
    [
        ("What did I do last Friday?", "2023-06-09"),
        ("Who called last Thursday?", "2023-06-08"),  # asked on a Thursday: a week back
        ("What did we cook this past Monday?", "2023-06-12"),
        ("What happened last wednesday?", "2023-06-14"),
    ],
)
def test_rule_last_weekday(question, expected_day):
    check("last_weekday", question, NOW, span(expected_day, expected_day, "likely"))


@pytest.mark.parametrize(
    "question",
    ["What did I do last weekend?", "Where did we go over the weekend?", "this past weekend"],
)
def test_rule_last_weekend(question):
    check("last_weekend", question, NOW, span("2023-06-10", "2023-06-11", "likely"))


@pytest.mark.parametrize(
    "question, expected",
    [
        ("What did the interviewer ask 3 days ago?", ago("days", 3)),
        ("What did the interviewer ask three days ago?", ago("days", 3)),
        ("What did the interviewer ask two weeks ago?", ago("weeks", 2)),
        ("Where did I go a couple of weeks ago?", ago("weeks", 2)),
        ("What happened a few months ago?", ago("months", 3)),
        ("What did I buy a week ago?", ago("weeks", 1)),
        ("What happened twelve months ago?", ago("months", 12)),
        ("Who visited a month back?", ago("months", 1)),
        ("What did I do a year ago?", ago("months", 12)),
        ("What did I say 10 days ago?", ago("days", 10)),
    ],
)
def test_rule_n_ago(question, expected):
    check("n_ago", question, NOW, expected)


def test_rule_last_week():
    check("last_week", "What did the vet say last week?", NOW, ago("weeks", 1))


def test_rule_week_before_last():
    check("week_before_last", "What happened the week before last?", NOW, ago("weeks", 2))


def test_rule_last_month():
    check("last_month", "What did I tell you about the trip last month?", NOW, ago("months", 1))


def test_rule_month_before_last():
    check("month_before_last", "Where did I go the month before last?", NOW, ago("months", 2))


@pytest.mark.parametrize(
    "question, expected",
    [
        ("What did I read in the past 3 weeks?", span("2023-05-25", "2023-06-15", "likely")),
        ("What happened over the last few days?", span("2023-06-12", "2023-06-15", "likely")),
        ("What did I buy in the past month?", span("2023-05-15", "2023-06-15", "likely")),
        ("Who did I meet in the last week?", span("2023-06-08", "2023-06-15", "likely")),
    ],
)
def test_rule_past_window(question, expected):
    check("past_window", question, NOW, expected)


@pytest.mark.parametrize(
    "question, expected",
    [
        ("How many times has Melanie gone to the beach in 2023?", span("2023-01-01", "2023-12-31", "likely")),
        ("What did I do during 2019?", span("2019-01-01", "2019-12-31", "likely")),
    ],
)
def test_rule_year(question, expected):
    check("year", question, NOW, expected)


def test_rule_year_part():
    check("year_part", "Where did I live in late 2022?", NOW, span("2022-09-01", "2022-12-31", "likely"))
    check("year_part", "What happened in early 2021?", NOW, span("2021-01-01", "2021-04-30", "likely"))


def test_rule_last_year():
    check("last_year", "Where did John go on a road trip last year?", NOW, span("2022-01-01", "2022-12-31", "vague"))


@pytest.mark.parametrize("question", ["What did I start earlier this year?", "What did I read this year?"])
def test_rule_earlier_this_year(question):
    check("earlier_this_year", question, NOW, span("2023-01-01", "2023-06-15", "vague"))


@pytest.mark.parametrize(
    "question",
    [
        "What did we do long ago?",
        "What happened a long time ago?",
        "Where did I live years ago?",
        "Where did Caroline move from 4 years ago?",
        "What did Audrey find a few years back?",
        "That was ages ago, what was it?",
    ],
)
def test_rule_long_ago(question):
    check("long_ago", question, NOW, {"ago": "long_ago", "confidence": "vague"})


@pytest.mark.parametrize(
    "question, asked_at, expected",
    [
        ("What state did Joanna visit in summer 2021?", NOW, span("2021-06-01", "2021-08-31", "vague")),
        ("What did we do last summer?", NOW, span("2022-06-01", "2022-08-31", "vague")),
        ("What did we do last summer?", "2023-10-01", span("2023-06-01", "2023-08-31", "vague")),
        ("Where did we ski in the winter?", NOW, span("2022-12-01", "2023-02-28", "vague")),
        ("Where did Caroline go during the summer?", NOW, span("2023-06-01", "2023-08-31", "vague")),
    ],
)
def test_rule_season(question, asked_at, expected):
    check("season", question, asked_at, expected)


@pytest.mark.parametrize(
    "question, expected",
    [
        ("Where was John between August 11 and August 15 2023?", span("2023-08-11", "2023-08-15", "sure")),
        ("What did I do between 3 May and 9 May?", span("2023-05-03", "2023-05-09", "sure")),
        ("What happened from March to May 2022?", span("2022-03-01", "2022-05-31", "sure")),
    ],
)
def test_rule_between(question, expected):
    check("between", question, NOW, expected)


def test_rule_week_before_after():
    check(
        "week_before_after",
        "Where was Tim in the week before 16 November 2023?",
        NOW,
        span("2023-11-09", "2023-11-16", "likely"),
    )
    check(
        "week_before_after", "What happened the week after 1 May 2023?", NOW, span("2023-05-01", "2023-05-08", "likely")
    )


def test_rule_weekend_before_after():
    check(
        "weekend_before_after",
        "What did Audrey do over the weekend before 4th October, 2023?",
        NOW,
        span("2023-09-30", "2023-10-04", "likely"),
    )
    check(
        "weekend_before_after",
        "What did Maria do last weekend before April 10, 2023?",
        NOW,
        span("2023-04-08", "2023-04-10", "likely"),
    )


def test_rule_weekday_before_after():
    check(
        "weekday_before_after",
        "What did Andrew do on the Monday before July 24, 2023?",
        NOW,
        span("2023-07-17", "2023-07-24", "likely"),
    )
    check(
        "weekday_before_after",
        "What did they plan on the Saturday after October 28, 2023?",
        NOW,
        span("2023-10-28", "2023-11-04", "likely"),
    )


def test_rule_n_before_after():
    check(
        "n_before_after",
        "What puppy did Maria get two weeks before August 11, 2023?",
        NOW,
        span("2023-07-25", "2023-08-11", "likely"),
    )
    check("n_before_after", "What happened the day after 3 May 2023?", NOW, span("2023-05-03", "2023-05-04", "likely"))


def test_rule_nth_week_of_month():
    check(
        "nth_week_of_month",
        "Which country was Tim visiting in the second week of November?",
        NOW,
        span("2022-11-08", "2022-11-14", "likely"),
    )
    check(
        "nth_week_of_month",
        "Where did Andrew go during the first weekend of August 2023?",
        NOW,
        span("2023-08-05", "2023-08-06", "likely"),
    )
    check("nth_week_of_month", "What did I do the last week of May?", NOW, span("2023-05-25", "2023-05-31", "likely"))


@pytest.mark.parametrize(
    "question, expected",
    [
        ("How many pets did Andrew have, as of September 2023?", span(None, "2023-09-30", "vague")),
        ("How many tournaments has Nate won by July 10, 2022?", span(None, "2022-07-10", "vague")),
        ("What did I finish before 2021?", span(None, "2021-12-31", "vague")),
    ],
)
def test_rule_open_before(question, expected):
    check("open_before", question, NOW, expected)


@pytest.mark.parametrize(
    "question, expected",
    [
        ("What has changed since March 2022?", span("2022-03-01", None, "vague")),
        ("What did I cook after 8 May, 2023?", span("2023-05-08", None, "vague")),
    ],
)
def test_rule_open_after(question, expected):
    check("open_after", question, NOW, expected)


# --------------------------------------------------------------------------
# No time, precedence, the table
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What is Caroline's favourite book?",
        "When did Caroline go to the LGBTQ support group?",
        "May I ask what June thinks about it?",
        "Did Melanie march in the parade?",
        "What are Caroline's plans for the summer?",
        "Which city will Tim visit next month?",
        "How long ago was Caroline's 18th birthday?",
        "What did I say about May's new job?",
        "How many days ago did I start?",
        "What year did John start surfing?",
        "What did the dentist do?",
        "",
    ],
)
def test_no_time_gives_none(question):
    assert extract_cue(question, NOW) is None
    assert explain_cue(question, NOW) is None


@pytest.mark.parametrize(
    "question, rule",
    [
        ("What was Tim's writing issue last week, as mentioned on November 6, 2023?", "day"),
        ("What did Joanna just finish last Friday on 23 January, 2022?", "day"),
        ("What did I do in 2023, in May?", "month"),
        ("What did I do in May 2023, on the 8th of May?", "day"),
        ("In early March, in March, what did we do?", "month_part"),
        ("Long ago, two weeks ago, what did I say?", "n_ago"),
        ("What did I do last year, in the summer?", "season"),
    ],
)
def test_most_specific_rule_wins(question, rule):
    found = explain_cue(question, NOW)
    assert found is not None and found[0] == rule


def test_confidence_table_matches_the_brief():
    assert {conf for _, conf, _ in RULES} <= {"sure", "likely", "vague"}
    required = {
        "month": "likely",
        "month_part": "likely",
        "year": "likely",
        "day": "sure",
        "yesterday": "sure",
        "last_weekday": "likely",
        "n_ago": "likely",
        "last_week": "likely",
        "last_month": "likely",
        "last_year": "vague",
        "earlier_this_year": "vague",
        "long_ago": "vague",
    }
    for rule, conf in required.items():
        assert CONFIDENCE[rule] == conf, rule
    names = [name for name, _, _ in RULES]
    assert len(names) == len(set(names))
    for name in names:
        assert name in CUE_RULES


def test_every_rule_has_a_test_named_after_it():
    names = {name for name, _, _ in RULES}
    module = sys.modules[__name__]
    missing = [n for n in names if not callable(getattr(module, f"test_rule_{n}", None))]
    assert not missing


def test_every_cue_has_the_spec_shape():
    questions = [
        "in March",
        "on 8 May",
        "3 days ago",
        "long ago",
        "as of May 2023",
        "since 2022",
        "last week",
        "the past month",
        "in the summer",
        "yesterday",
    ]
    for q in questions:
        cue = extract_cue(q, NOW)
        assert cue is not None, q
        assert cue["confidence"] in ("sure", "likely", "vague")
        if "ago" in cue:
            assert set(cue) == {"ago", "confidence"}
            assert cue["ago"] == "long_ago" or (
                cue["ago"]["unit"] in ("days", "weeks", "months") and cue["ago"]["value"] >= 1
            )
        else:
            assert set(cue) - {"confidence"} <= {"after", "before"} and len(cue) >= 2
            for key in ("after", "before"):
                if key in cue:
                    date.fromisoformat(cue[key])
            if "after" in cue and "before" in cue:
                assert cue["after"] <= cue["before"]


# --------------------------------------------------------------------------
# The extractor reads only (question, asked_at)
# --------------------------------------------------------------------------


def test_extractor_reads_only_question_and_asked_at():
    params = list(inspect.signature(extract_cue).parameters.values())
    assert [p.name for p in params] == ["question", "asked_at"]
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
    assert all(p.default is inspect.Parameter.empty for p in params)
    with pytest.raises(TypeError):
        extract_cue("in March", NOW, "the answer")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        extract_cue("in March", NOW, answer="March 3")  # type: ignore[call-arg]


def test_asked_at_as_date_string_datetime_or_zulu():
    q = "What did I do 3 days ago, on 8 May?"
    expected = extract_cue(q, "2023-06-15")
    assert extract_cue(q, "2023-06-15T00:00:00Z") == expected
    assert extract_cue(q, datetime(2023, 6, 15, tzinfo=UTC)) == expected
    assert extract_cue(q, datetime(2023, 6, 15)) == expected


def test_extractor_is_deterministic():
    q = "What happened at the dentist in late March?"
    assert all(extract_cue(q, NOW) == extract_cue(q, NOW) for _ in range(5))


# --------------------------------------------------------------------------
# Properties and the period arithmetic
# --------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    asked=st.dates(min_value=date(2001, 1, 1), max_value=date(2035, 12, 31)),
    month=st.integers(1, 12),
    day=st.integers(1, 28),
    style=st.sampled_from(["on {d} {m}", "on {m} {d}", "{m} {d}th", "the {d}th of {m}"]),
)
def test_rule_day_resolves_to_latest_not_after_asked_at(asked, month, day, style):
    q = "What happened " + style.format(d=day, m=MONTH_NAMES[month - 1]) + "?"
    cue = extract_cue(q, asked.isoformat())
    assert cue is not None and cue["after"] == cue["before"] and cue["confidence"] == "sure"
    d = date.fromisoformat(cue["after"])
    assert (d.month, d.day) == (month, day)
    assert d <= asked and (asked - d).days < 366


@settings(max_examples=200, deadline=None)
@given(asked=st.dates(min_value=date(2001, 1, 1), max_value=date(2035, 12, 31)), month=st.integers(1, 12))
def test_rule_month_never_after_asked_at(asked, month):
    cue = extract_cue(f"What happened in {MONTH_NAMES[month - 1]}?", asked.isoformat())
    lo = date.fromisoformat(cue["after"])
    assert lo.month == month and lo.day == 1 and lo <= asked
    assert (asked - lo).days < 366


@settings(max_examples=100, deadline=None)
@given(
    now=st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2035, 1, 1)),
    n=st.integers(1, 12),
    unit=st.sampled_from(["day", "week", "month"]),
)
def test_rule_n_ago_period_centres_n_units_back(now, n, unit):
    now = now.replace(tzinfo=UTC)
    cue = extract_cue(f"What did I do {n} {unit}s ago?", now)
    assert cue == ago(unit + "s", n)
    lo, hi = cue_period(cue, now)
    length = {"day": 1, "week": 7, "month": 30}[unit]
    centre = now - timedelta(days=n * length)
    assert lo == centre - timedelta(days=length) / 2
    assert hi == min(centre + timedelta(days=length) / 2, now)


def test_cue_period_absolute_includes_the_whole_before_day():
    lo, hi = cue_period(span("2023-05-08", "2023-05-08", "sure"), NOW)
    assert lo == datetime(2023, 5, 8, tzinfo=UTC)
    assert hi == datetime(2023, 5, 9, tzinfo=UTC)


def test_cue_period_open_ends_and_long_ago():
    oldest = "2023-01-01T00:00:00+00:00"
    assert cue_period(span(None, "2023-03-31", "vague"), NOW) is None
    lo, hi = cue_period(span(None, "2023-03-31", "vague"), NOW, oldest=oldest)
    assert lo == datetime(2023, 1, 1, tzinfo=UTC) and hi == datetime(2023, 4, 1, tzinfo=UTC)
    lo, hi = cue_period(span("2023-03-01", None, "vague"), NOW)
    assert hi == datetime(2023, 6, 15, tzinfo=UTC)
    assert cue_period({"ago": "long_ago", "confidence": "vague"}, NOW) is None
    lo, hi = cue_period({"ago": "long_ago", "confidence": "vague"}, "2023-01-31T00:00:00+00:00", oldest=oldest)
    assert lo == datetime(2023, 1, 1, tzinfo=UTC) and hi == datetime(2023, 1, 11, tzinfo=UTC)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.cues", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_prints_the_cue_json():
    out = _cli("What did the dentist say in March?", "--asked-at", "2023-06-01")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == span("2023-03-01", "2023-03-31", "likely")
    out = _cli("What is your name?", "--asked-at", "2023-06-01")
    assert out.returncode == 0 and json.loads(out.stdout) is None
    out = _cli("3 days ago", "--asked-at", "2023-06-01", "--rule")
    assert json.loads(out.stdout) == {"rule": "n_ago", "time_cue": ago("days", 3)}


def test_cli_help_and_bad_date():
    out = _cli("--help")
    assert out.returncode == 0
    assert "--asked-at" in out.stdout and "long_ago" in out.stdout
    out = _cli("in March", "--asked-at", "not-a-date")
    assert out.returncode == 2

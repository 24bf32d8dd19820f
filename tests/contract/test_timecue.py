"""The time cue: parsing (docs/recall-process.md#reading-a-cue) and periods (docs/recall-process.md#periods,
docs/recall-process.md#a-cue-for-today-is-not-used)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.clock import EARLIEST, LATEST, parse_instant, to_epoch
from cuedrecall.errors import ToolArgumentError
from cuedrecall.recall.cue_policy import CONFIDENCES, DAY, MONTH, WEEK
from cuedrecall.recall.timecue import (
    Ago,
    TimeCue,
    TimeCueError,
    base_period,
    is_recent_only,
    parse_time_cue,
    period,
)

UTC = UTC
NOW = datetime(2026, 9, 10, 12, 0, tzinfo=UTC)
SPAN = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC))


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def cue(**fields: object) -> TimeCue:
    parsed = parse_time_cue({"confidence": "sure", **fields})
    assert parsed is not None
    return parsed


# --- parsing -------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, {}])
def test_none_or_empty_is_no_cue(raw):
    assert parse_time_cue(raw) is None


def test_date_after_is_midnight_utc():
    assert cue(after="2026-08-01").after == at(2026, 8, 1)


def test_date_before_includes_the_whole_day():
    parsed = cue(after="2026-08-01", before="2026-08-31")
    assert parsed.before == at(2026, 9, 1)
    assert base_period(parsed, NOW, None) == (at(2026, 8, 1), at(2026, 9, 1))


def test_same_date_on_both_ends_is_that_day():
    parsed = cue(after="2026-08-31", before="2026-08-31")
    assert (parsed.after, parsed.before) == (at(2026, 8, 31), at(2026, 9, 1))


def test_timestamp_with_z_is_utc():
    assert cue(after="2026-08-01T10:30:00Z").after == at(2026, 8, 1, 10, 30)


def test_timestamp_with_offset_is_converted_to_utc():
    assert cue(after="2026-08-01T09:00:00+09:00").after == at(2026, 8, 1)


def test_naive_timestamp_is_taken_as_utc():
    assert cue(before="2026-08-01T10:00:00").before == at(2026, 8, 1, 10)


def test_timestamp_before_is_not_moved_to_the_next_day():
    assert cue(before="2026-08-01T00:00:00").before == at(2026, 8, 1)


def test_ago_parses_unit_and_value():
    assert cue(ago={"unit": "weeks", "value": 2}).ago == Ago("weeks", 2)
    assert cue(ago="long_ago").ago == "long_ago"


def test_null_fields_count_as_left_out():
    assert cue(after="2026-08-01", ago=None).after == at(2026, 8, 1)


def test_echo_gives_confidence_bounds_and_ago():
    assert cue(after="2026-08-01", before="2026-08-31").echo() == {
        "confidence": "sure",
        "after": "2026-08-01T00:00:00+00:00",
        "before": "2026-09-01T00:00:00+00:00",
    }
    assert cue(ago={"unit": "days", "value": 3}).echo() == {
        "confidence": "sure",
        "ago": {"unit": "days", "value": 3},
    }
    assert cue(ago="long_ago").echo() == {"confidence": "sure", "ago": "long_ago"}


def _sure(**fields: object) -> dict[str, object]:
    return {"confidence": "sure", **fields}


_DATE_SHAPE = "must be a date (YYYY-MM-DD) or an ISO-8601 timestamp, not"
_AGO_SHAPE = 'time_cue.ago must be {"unit": ..., "value": ...} or "long_ago", not'
_UNIT = "time_cue.ago.unit must be one of days, weeks, months, not"
_VALUE = "time_cue.ago.value must be a whole number, 0 or more, not"
_REQUIRED = "time_cue.confidence is required: one of sure, likely, vague"
_NEITHER = "time_cue needs either after/before or ago, not both and not neither"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("2026-08-01", "time_cue must be an object, not '2026-08-01'"),
        ([1], "time_cue must be an object, not [1]"),
        (
            _sure(after="2026-08-01", zeta=1, alpha=2),
            "time_cue has unknown fields: ['alpha', 'zeta'] (it takes after, ago, before, confidence)",
        ),
        ({"after": "2026-08-01"}, _REQUIRED),
        ({"after": "2026-08-01", "confidence": None}, _REQUIRED),
        (
            {"after": "2026-08-01", "confidence": "certain"},
            "time_cue.confidence must be one of sure, likely, vague, not 'certain'",
        ),
        (
            {"after": "2025-01-01", "confidence": "maybe"},
            "time_cue.confidence must be one of sure, likely, vague, not 'maybe'",
        ),
        ({"ago": "long_ago", "confidence": 2}, "time_cue.confidence must be one of sure, likely, vague, not 2"),
        ({"after": "last tuesday"}, f"{_REQUIRED}; time_cue.after is not a date or timestamp: 'last tuesday'"),
        (
            {"confidence": "maybe"},
            f"time_cue.confidence must be one of sure, likely, vague, not 'maybe'; {_NEITHER}",
        ),
        (_sure(after="2026-08-01", ago="long_ago"), _NEITHER),
        (_sure(), _NEITHER),
        (_sure(after=20260801), f"time_cue.after {_DATE_SHAPE} 20260801"),
        (_sure(before="  "), f"time_cue.before {_DATE_SHAPE} '  '"),
        (_sure(after="x" * 200), "time_cue.after is not a date or timestamp: '" + "x" * 76 + "..."),
        (
            _sure(after="tomorrow", before="2026-02-30"),
            "time_cue.after is not a date or timestamp: 'tomorrow'; "
            "time_cue.before is not a date or timestamp: '2026-02-30'",
        ),
        (_sure(after="last tuesday"), "time_cue.after is not a date or timestamp: 'last tuesday'"),
        (_sure(before="2026-02-30"), "time_cue.before is not a date or timestamp: '2026-02-30'"),
        (
            _sure(after="2026-08-02", before="2026-08-01"),
            "time_cue.before must be later than time_cue.after",
        ),
        (
            _sure(after="2026-08-01T10:00Z", before="2026-08-01T10:00Z"),
            "time_cue.before must be later than time_cue.after",
        ),
        (_sure(ago="recently"), f"{_AGO_SHAPE} 'recently'"),
        (_sure(ago={"unit": "days"}), f'{_AGO_SHAPE} {{"unit": "days"}}'),
        (
            _sure(ago={"unit": "days", "value": 1, "extra": 0}),
            f'{_AGO_SHAPE} {{"unit": "days", "value": 1, "extra": 0}}',
        ),
        (_sure(ago=3), f"{_AGO_SHAPE} 3"),
        (_sure(ago={"unit": "years", "value": 1}), f"{_UNIT} 'years'"),
        (_sure(ago={"unit": 7, "value": 1}), f"{_UNIT} 7"),
        (_sure(ago={"unit": "days", "value": -1}), f"{_VALUE} -1"),
        (_sure(ago={"unit": "days", "value": 1.5}), f"{_VALUE} 1.5"),
        (_sure(ago={"unit": "days", "value": True}), f"{_VALUE} true"),
        (_sure(ago={"unit": "days", "value": "3"}), f"{_VALUE} '3'"),
    ],
)
def test_unreadable_cue_is_refused_with_its_message(raw, message):
    with pytest.raises(TimeCueError) as caught:
        parse_time_cue(raw)
    assert str(caught.value) == message


def test_time_cue_error_is_a_refused_tool_argument():
    assert issubclass(TimeCueError, ValueError)
    assert issubclass(TimeCueError, ToolArgumentError)


# --- periods --------------------------------------------------------------------------


def test_sure_uses_the_period_as_given():
    parsed = cue(after="2026-08-01", before="2026-08-10")
    assert period(parsed, "sure", NOW, SPAN) == base_period(parsed, NOW, SPAN)


def test_likely_widens_by_half_the_length_on_both_sides():
    parsed = cue(after="2026-08-01", before="2026-08-10")  # ten days, to the 11th
    assert period(parsed, "likely", NOW, SPAN) == (at(2026, 7, 27), at(2026, 8, 16))


def test_vague_widens_by_the_whole_length_on_both_sides():
    parsed = cue(after="2026-08-01", before="2026-08-10")
    assert period(parsed, "vague", NOW, SPAN) == (at(2026, 7, 22), at(2026, 8, 21))


def test_relative_period_is_one_unit_centred_value_units_ago():
    parsed = cue(ago={"unit": "weeks", "value": 2})
    centre = NOW - 2 * WEEK
    assert base_period(parsed, NOW, None) == (centre - WEEK / 2, centre + WEEK / 2)


def test_relative_period_ends_no_later_than_now():
    parsed = cue(ago={"unit": "days", "value": 0})
    assert base_period(parsed, NOW, None) == (NOW - DAY / 2, NOW)


def test_month_is_30_days():
    assert timedelta(days=30) == MONTH
    start, end = base_period(cue(ago={"unit": "months", "value": 3}), NOW, None)
    assert end - start == timedelta(days=30)
    assert start + (end - start) / 2 == NOW - timedelta(days=90)


def test_long_ago_is_the_oldest_third_of_the_span():
    oldest, newest = at(2026, 1, 1), at(2026, 1, 31)
    parsed = cue(ago="long_ago")
    assert base_period(parsed, NOW, (oldest, newest)) == (oldest, at(2026, 1, 11))


def test_long_ago_without_a_span_has_no_period():
    assert base_period(cue(ago="long_ago"), NOW, None) is None
    assert period(cue(ago="long_ago"), "vague", NOW, (at(2026, 1, 1), None)) is None


def test_open_after_is_closed_by_now():
    assert base_period(cue(after="2026-08-01"), NOW, SPAN) == (at(2026, 8, 1), NOW)


def test_open_before_is_closed_by_the_oldest_record():
    assert base_period(cue(before="2026-08-01"), NOW, SPAN) == (SPAN[0], at(2026, 8, 2))


def test_open_before_without_a_span_has_no_period():
    assert base_period(cue(before="2026-08-01"), NOW, None) is None


def test_empty_period_becomes_one_second():
    parsed = cue(after="2027-01-01")  # after now, closed by now
    assert base_period(parsed, NOW, None) == (at(2027, 1, 1), at(2027, 1, 1, 0, 0, 1))


def test_arithmetic_past_the_calendar_is_clipped():
    far = cue(ago={"unit": "months", "value": 10**30})
    start, end = period(far, "vague", NOW, None)
    assert start == EARLIEST and start < end
    late = cue(after="9999-12-31", before="9999-12-31")
    assert period(late, "vague", NOW, None)[1] == LATEST


def test_cue_starting_within_24_hours_is_recent_only():
    assert is_recent_only(cue(ago={"unit": "days", "value": 0}), NOW, None)
    assert is_recent_only(cue(after="2026-09-10"), NOW, None)
    assert is_recent_only(cue(after="2026-09-09T12:00:00Z"), NOW, None)


def test_cue_starting_earlier_is_used():
    assert not is_recent_only(cue(after="2026-09-09T11:59:59Z"), NOW, None)
    assert not is_recent_only(cue(ago={"unit": "days", "value": 1}), NOW, None)
    assert not is_recent_only(cue(ago="long_ago"), NOW, None)  # no period at all


# --- record instants --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "2026-08-01T10:00:00Z",
        "2026-08-01T10:00:00+00:00",
        "2026-08-01T19:00:00+09:00",
        "2026-08-01T10:00:00",
        "2026-08-01 10:00:00",
        " 2026-08-01T10:00:00.000Z ",
    ],
)
def test_instant_forms_read_as_the_same_utc_moment(text):
    assert parse_instant(text) == at(2026, 8, 1, 10)


def test_date_instant_is_midnight_utc():
    assert parse_instant("2026-08-01") == at(2026, 8, 1)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01", None, 12])
def test_unreadable_instant_is_none(text):
    assert parse_instant(text) is None
    assert to_epoch(text) is None


def test_epoch_sorts_like_time():
    assert to_epoch("1970-01-01T00:00:00Z") == 0.0
    assert to_epoch("2026-08-01T19:00:00+09:00") == to_epoch("2026-08-01 10:00:00")
    assert to_epoch("2026-08-01T10:00:00") < to_epoch("2026-08-01T10:00:01")


# --- properties ----------------------------------------------------------------------------

_moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))
_agos = st.one_of(
    st.just("long_ago"),
    st.builds(
        lambda unit, value: {"unit": unit, "value": value},
        st.sampled_from(["days", "weeks", "months"]),
        st.integers(min_value=0, max_value=10**40),
    ),
)
_absolute = st.fixed_dictionaries({}, optional={"after": _moments.map(str), "before": _moments.map(str)}).filter(bool)
_cues = st.builds(
    lambda confidence, fields: {"confidence": confidence, **fields},
    st.sampled_from(CONFIDENCES),
    st.one_of(_agos.map(lambda ago: {"ago": ago}), _absolute),
)


def _parse_or_skip(raw: dict[str, object]) -> TimeCue | None:
    try:
        return parse_time_cue(raw)
    except TimeCueError:
        return None  # before not after after: refused, nothing to check


@given(_cues, _moments, st.tuples(_moments, _moments).map(sorted))
def test_widened_period_always_contains_the_sure_period(raw, now, span):
    parsed = _parse_or_skip(raw)
    if parsed is None:
        return
    sure = period(parsed, "sure", now, tuple(span))
    for confidence in ("likely", "vague"):
        wider = period(parsed, confidence, now, tuple(span))
        assert (sure is None) == (wider is None)
        if sure is not None:
            assert wider[0] <= sure[0] < sure[1] <= wider[1]


@given(
    st.sampled_from(["days", "weeks", "months"]),
    st.integers(min_value=0, max_value=10**40),
    _moments,
)
def test_relative_period_never_ends_after_now(unit, value, now):
    parsed = cue(ago={"unit": unit, "value": value})
    start, end = base_period(parsed, now, None)
    assert start < end <= now

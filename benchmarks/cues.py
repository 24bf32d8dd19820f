"""A fixed, rule-based time-cue extractor for benchmark questions.

``extract_cue(question, asked_at)`` reads only the question's text and the
date it was asked (its "now"), never an answer or evidence, and returns a
``time_cue`` in the shape docs/recall-process.md#reading-a-cue gives, or ``None`` when the text names
no time:

* absolute: ``{"after": "YYYY-MM-DD", "before": "YYYY-MM-DD", "confidence": c}``
  (either end may be missing; a date-only ``before`` includes that whole day)
* relative: ``{"ago": {"unit": "days"|"weeks"|"months", "value": n}, "confidence": c}``
  or ``{"ago": "long_ago", "confidence": c}``

Every rule has one fixed confidence (``RULES`` below). When several rules
match, the most specific reading wins: the shortest nominal period, then the
higher confidence, then the rule listed first. A date the question names
explicitly ("on 8 May, 2023") therefore beats a relative phrase in the same
question ("last week, as mentioned on 8 May, 2023"), since the relative phrase
is then usually relative to that date and not to the question's own date.

Run ``python -m benchmarks.cues "question" --asked-at 2023-06-01`` to print a
cue as JSON.
"""

from __future__ import annotations

import argparse
import calendar
import json
import math
import re
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from benchmarks.datasets import MONTH_NAMES, WEEKDAY_NAMES

__all__ = [
    "CONFIDENCE",
    "CUE_RULES",
    "RULES",
    "cue_period",
    "explain_cue",
    "extract_cue",
    "main",
]

# --------------------------------------------------------------------------
# The rule table: (rule, confidence, what it reads). The order is the final
# tie-break between equally specific readings.
# --------------------------------------------------------------------------

RULES: tuple[tuple[str, str, str], ...] = (
    ("between", "sure", "between 11 August and 15 August 2023; from May 3 to May 9 -> that span"),
    (
        "day",
        "sure",
        "on 8 May / May 8th / 8 May, 2023 / 8th of May / 2023-05-08 -> that day (year: the latest not after asked_at)",
    ),
    ("day_before_yesterday", "sure", "the day before yesterday -> that day"),
    ("yesterday", "sure", "yesterday -> that day"),
    ("last_weekday", "likely", "last Friday / this past Friday -> the latest such day before asked_at"),
    (
        "weekday_before_after",
        "likely",
        "the Monday before 24 July -> from that Monday to 24 July (after: from the date to the day)",
    ),
    (
        "last_weekend",
        "likely",
        "last weekend / this past weekend / over the weekend -> the latest Saturday and Sunday before asked_at",
    ),
    ("weekend_before_after", "likely", "the weekend before 4 October -> from that Saturday to 4 October"),
    ("nth_week_of_month", "likely", "the second week of November / the first weekend of August 2023 -> those days"),
    ("week_before_after", "likely", "the week before 16 November -> the 7 days before it, and the day itself"),
    (
        "n_before_after",
        "likely",
        "two weeks before 11 August / the day after 3 May -> from N units (and half a unit) before the date to the "
        "date",
    ),
    (
        "month_part",
        "likely",
        "in early / mid / late March (2024); the beginning / end / first half of March -> that part of the month",
    ),
    (
        "month",
        "likely",
        "in March / in March 2024 / during March / March 2024 / last March / this March -> that month (year: the "
        "latest such month not after asked_at; 'last': before asked_at's month)",
    ),
    (
        "season",
        "vague",
        "last summer / in the summer / summer 2021 -> Jun-Aug (spring Mar-May, autumn Sep-Nov, winter Dec-Feb)",
    ),
    ("year_part", "likely", "in early / mid / late 2022 -> Jan-Apr / May-Aug / Sep-Dec"),
    ("year", "likely", "in 2022 / during 2022 -> that year"),
    (
        "n_ago",
        "likely",
        "3 days ago / two weeks ago / a couple of months ago / a few weeks back / a year ago -> ago N units (a year = "
        "12 months)",
    ),
    ("week_before_last", "likely", "the week before last -> ago 2 weeks"),
    ("last_week", "likely", "last week -> ago 1 week"),
    ("month_before_last", "likely", "the month before last -> ago 2 months"),
    ("last_month", "likely", "last month -> ago 1 month"),
    (
        "past_window",
        "likely",
        "in the past 3 weeks / over the last few days / in the past month -> from N units before asked_at to asked_at",
    ),
    ("earlier_this_year", "vague", "earlier this year / this year -> from 1 January of asked_at's year to asked_at"),
    ("last_year", "vague", "last year -> asked_at's previous calendar year"),
    ("open_before", "vague", "before / as of / by / until 8 May 2023 -> before the end of that period"),
    ("open_after", "vague", "after / since 8 May 2023 -> after the start of that period"),
    ("long_ago", "vague", "long ago / a long time ago / years ago / 4 years ago / ages ago -> ago long_ago"),
)

CONFIDENCE: dict[str, str] = {name: conf for name, conf, _ in RULES}
_RULE_RANK = {name: i for i, (name, _, _) in enumerate(RULES)}
_CONF_RANK = {"sure": 0, "likely": 1, "vague": 2}

CUE_RULES = "Time-cue rules (rule -> confidence: what it reads)\n" + "\n".join(
    f"  {name:<22} {conf:<7} {what}" for name, conf, what in RULES
)

# --------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------

_MONTHS_FULL = tuple(name.lower() for name in MONTH_NAMES)
_MONTH_OF = {name: i + 1 for i, name in enumerate(_MONTHS_FULL)}
_MONTH_OF.update(
    {
        "jan": 1,
        "feb": 2,
        "mar": 3,
        "apr": 4,
        "jun": 6,
        "jul": 7,
        "aug": 8,
        "sep": 9,
        "sept": 9,
        "oct": 10,
        "nov": 11,
        "dec": 12,
    }
)
_MON_FULL = "|".join(_MONTHS_FULL)
_MON_ANY = _MON_FULL + "|sept|sep|jan|feb|mar|apr|jun|jul|aug|oct|nov|dec"

_WEEKDAYS = tuple(name.lower() for name in WEEKDAY_NAMES)
_WD = "|".join(_WEEKDAYS)

_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
    "a few": 3,
    "few": 3,
}
_NUM = (
    r"(?:\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|an|a)"
)

_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_PART = (
    r"early|mid|middle\s+of|late|beginning\s+of|start\s+of|end\s+of|"
    r"first\s+half\s+of|second\s+half\s+of"
)
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1}

_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

_FLAGS = re.IGNORECASE


def _number(text: str) -> int:
    t = re.sub(r"\s+", " ", text.strip().lower())
    if t.isdigit():
        return int(t)
    return _NUMBER_WORDS[t]


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _add_months(d: date, months: int) -> date:
    idx = d.year * 12 + d.month - 1 + months
    year, month = divmod(idx, 12)
    month += 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


# --------------------------------------------------------------------------
# Explicit date expressions
# --------------------------------------------------------------------------


@dataclass
class _Expr:
    start: int
    end: int
    kind: str  # day | month | month_part | nth_week | season | year | year_part
    month: int | None = None
    day: int | None = None
    year: int | None = None
    part: str | None = None
    mod: str | None = None  # "last" | "this" (how a missing year is chosen)

    def period(self, today: date, year: int | None = None) -> tuple[date, date] | None:
        year = year if year is not None else self.year
        if self.kind == "day":
            if year is not None:
                d = _safe_date(year, self.month, self.day)
                return (d, d) if d else None
            for y in range(today.year, today.year - 9, -1):
                d = _safe_date(y, self.month, self.day)
                if d is not None and d <= today:
                    return d, d
            return None
        if self.kind in ("month", "month_part", "nth_week"):
            if year is None:
                if self.mod == "last":
                    year = today.year if self.month < today.month else today.year - 1
                elif self.mod == "this":
                    year = today.year
                else:
                    year = today.year if self.month <= today.month else today.year - 1
            first, last = date(year, self.month, 1), _month_end(year, self.month)
            if self.kind == "month":
                return first, last
            if self.kind == "month_part":
                return _month_part(self.part, first, last)
            return _nth_week(self.part, first, last)
        if self.kind == "season":
            return _season(self.part, today, year, self.mod)
        if self.kind == "year":
            return date(year, 1, 1), date(year, 12, 31)
        if self.kind == "year_part":
            lo, hi = {"early": (1, 4), "mid": (5, 8), "late": (9, 12)}[self.part]
            return date(year, lo, 1), _month_end(year, hi)
        raise ValueError(self.kind)


def _month_part(part: str, first: date, last: date) -> tuple[date, date]:
    p = re.sub(r"\s+", " ", part.lower())
    if p in ("early", "beginning of", "start of"):
        return first, first.replace(day=10)
    if p in ("mid", "middle of"):
        return first.replace(day=11), first.replace(day=20)
    if p in ("late", "end of"):
        return first.replace(day=21), last
    if p == "first half of":
        return first, first.replace(day=15)
    if p == "second half of":
        return first.replace(day=16), last
    raise ValueError(part)


def _nth_week(part: str, first: date, last: date) -> tuple[date, date]:
    ordinal, what = part.split(":")
    n = _ORDINALS[ordinal]
    if what == "week":
        if n == -1:
            return last - timedelta(days=6), last
        lo = first + timedelta(days=7 * (n - 1))
        return lo, min(lo + timedelta(days=6), last)
    # weekend: the n-th Saturday of the month and the Sunday after it
    saturdays = [
        first + timedelta(days=i) for i in range((last - first).days + 1) if (first + timedelta(days=i)).weekday() == 5
    ]
    sat = saturdays[-1] if n == -1 else saturdays[min(n, len(saturdays)) - 1]
    return sat, sat + timedelta(days=1)


def _season(name: str, today: date, year: int | None, mod: str | None) -> tuple[date, date]:
    start_month = _SEASON_START[name.lower()]

    def instance(start_year: int) -> tuple[date, date]:
        lo = date(start_year, start_month, 1)
        end_idx = start_year * 12 + start_month - 1 + 2
        hi = _month_end(end_idx // 12, end_idx % 12 + 1)
        return lo, hi

    if year is not None:
        # "winter 2022" is the winter that holds January 2022
        return instance(year - 1 if start_month == 12 else year)
    if mod == "this":
        sy = today.year - 1 if (start_month == 12 and today.month <= 2) else today.year
        return instance(sy)
    for sy in range(today.year, today.year - 3, -1):
        lo, hi = instance(sy)
        if mod == "last" and hi < today:
            return lo, hi
        if mod != "last" and lo <= today:
            return lo, hi
    return instance(today.year - 1)


_PREP_GATE = re.compile(
    r"\b(?:in|during|last|this|since|before|after|by|until|till|throughout|from|of|as\s+of|"
    r"prior\s+to|up\s+to|around|month\s+of)\s+(?:the\s+)?$",
    _FLAGS,
)
_NEXT_GATE = re.compile(r"\bnext\s+$", _FLAGS)

_RE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_RE_DAY_FIRST = re.compile(
    rf"(?<![\d:/.])\b(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON_ANY})\b\.?"
    rf"(?:,?\s+(\d{{4}})\b)?",
    _FLAGS,
)
_RE_MONTH_FIRST = re.compile(
    rf"\b({_MON_ANY})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?![:\d])(?:,?\s+(\d{{4}})\b)?",
    _FLAGS,
)
_RE_NTH_WEEK = re.compile(
    rf"\b(?:the\s+)?(first|second|third|fourth|last|1st|2nd|3rd|4th)\s+(week|weekend)\s+(?:of|in)\s+"
    rf"({_MON_FULL})\b(?:,?\s+(\d{{4}})\b)?",
    _FLAGS,
)
_RE_MONTH_YEAR = re.compile(
    rf"\b(?:(?:the\s+)?({_PART})[\s-]+)?({_MON_ANY})\.?,?\s+(?:of\s+)?(\d{{4}})\b",
    _FLAGS,
)
_RE_MONTH = re.compile(
    rf"\b(?:(?:the\s+)?({_PART})[\s-]+)?({_MON_FULL})\b(?!['\u2019]s)",
    _FLAGS,
)
_RE_SEASON = re.compile(
    r"\b(spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?(\d{4})\b)?"
    r"(?!\s+(?:from|off|down|over|asleep|apart|behind|into)\b)",
    _FLAGS,
)
_RE_YEAR_PART = re.compile(r"\b(early|mid|late)[\s-]+((?:19|20)\d{2})\b", _FLAGS)
_RE_YEAR = re.compile(r"\b((?:19|20)\d{2})\b(?![-/\d])", _FLAGS)


def _find_exprs(text: str) -> list[_Expr]:
    found: list[_Expr] = []

    for m in _RE_ISO.finditer(text):
        y, mo, d = (int(g) for g in m.groups())
        if _safe_date(y, mo, d):
            found.append(_Expr(m.start(), m.end(), "day", month=mo, day=d, year=y))
    for m in _RE_DAY_FIRST.finditer(text):
        d, mon, y = m.groups()
        if 1 <= int(d) <= 31:
            found.append(
                _Expr(m.start(), m.end(), "day", month=_MONTH_OF[mon.lower()], day=int(d), year=int(y) if y else None)
            )
    for m in _RE_MONTH_FIRST.finditer(text):
        mon, d, y = m.groups()
        if 1 <= int(d) <= 31:
            found.append(
                _Expr(m.start(), m.end(), "day", month=_MONTH_OF[mon.lower()], day=int(d), year=int(y) if y else None)
            )
    for m in _RE_NTH_WEEK.finditer(text):
        ordinal, what, mon, y = m.groups()
        found.append(
            _Expr(
                m.start(),
                m.end(),
                "nth_week",
                month=_MONTH_OF[mon.lower()],
                year=int(y) if y else None,
                part=f"{ordinal.lower()}:{what.lower()}",
            )
        )
    for m in _RE_MONTH_YEAR.finditer(text):
        part, mon, y = m.groups()
        found.append(
            _Expr(
                m.start(),
                m.end(),
                "month_part" if part else "month",
                month=_MONTH_OF[mon.lower()],
                year=int(y),
                part=part,
            )
        )
    for m in _RE_MONTH.finditer(text):
        part, mon = m.groups()
        left = text[: m.start()]
        if _NEXT_GATE.search(left):
            continue
        if not part and not _PREP_GATE.search(left) and not _between_second(left):
            continue
        mod = None
        if re.search(r"\blast\s+$", left, _FLAGS):
            mod = "last"
        elif re.search(r"\bthis\s+$", left, _FLAGS):
            mod = "this"
        found.append(
            _Expr(
                m.start(), m.end(), "month_part" if part else "month", month=_MONTH_OF[mon.lower()], part=part, mod=mod
            )
        )
    for m in _RE_SEASON.finditer(text):
        name, y = m.groups()
        left = text[: m.start()]
        if _NEXT_GATE.search(left) or re.search(r"\bnext\s+the\s+$", left, _FLAGS):
            continue
        if not y and not re.search(
            r"\b(?:in|during|over|last|this|since|before|after|by|until|throughout)\s+(?:the\s+)?$",
            left,
            _FLAGS,
        ):
            continue
        mod = None
        if re.search(r"\blast\s+$", left, _FLAGS):
            mod = "last"
        elif re.search(r"\bthis\s+$", left, _FLAGS):
            mod = "this"
        found.append(_Expr(m.start(), m.end(), "season", year=int(y) if y else None, part=name.lower(), mod=mod))
    for m in _RE_YEAR_PART.finditer(text):
        part, y = m.groups()
        found.append(_Expr(m.start(), m.end(), "year_part", year=int(y), part=part.lower()))
    for m in _RE_YEAR.finditer(text):
        left = text[: m.start()]
        if not re.search(
            r"\b(?:in|during|throughout|since|before|after|by|until|of|as\s+of|prior\s+to|"
            r"the\s+year)\s+$",
            left,
            _FLAGS,
        ) and not _between_second(left):
            continue
        found.append(_Expr(m.start(), m.end(), "year", year=int(m.group(1))))

    # Keep the longest of overlapping expressions.
    found.sort(key=lambda e: (-(e.end - e.start), e.start))
    kept: list[_Expr] = []
    for e in found:
        if all(e.end <= k.start or e.start >= k.end for k in kept):
            kept.append(e)
    kept.sort(key=lambda e: e.start)
    return kept


def _between_second(left: str) -> bool:
    """The second end of "between X and Y" / "from X to Y"."""
    return bool(re.search(r"\b(?:between|from)\b.{1,40}\b(?:and|to|until|till|through)\s+$", left, _FLAGS))


# --------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------


@dataclass
class _Cand:
    rule: str
    cue: dict
    length: float  # nominal period length in days (inf when open or long ago)
    start: int  # position in the text

    def key(self) -> tuple:
        return (self.length, _CONF_RANK[self.cue["confidence"]], _RULE_RANK[self.rule], self.start)


def _absolute(rule: str, lo: date | None, hi: date | None, start: int) -> _Cand:
    cue: dict = {}
    if lo is not None:
        cue["after"] = lo.isoformat()
    if hi is not None:
        cue["before"] = hi.isoformat()
    cue["confidence"] = CONFIDENCE[rule]
    length = (hi - lo).days + 1 if (lo is not None and hi is not None) else math.inf
    return _Cand(rule, cue, float(length), start)


def _ago(rule: str, unit: str, value: int, start: int) -> _Cand:
    cue = {"ago": {"unit": unit + "s", "value": value}, "confidence": CONFIDENCE[rule]}
    return _Cand(rule, cue, float(_UNIT_DAYS[unit]), start)


def _long_ago(start: int) -> _Cand:
    return _Cand("long_ago", {"ago": "long_ago", "confidence": CONFIDENCE["long_ago"]}, math.inf, start)


def _weekday_before(d: date, weekday: int) -> date:
    """The latest given weekday strictly before d."""
    back = (d.weekday() - weekday) % 7 or 7
    return d - timedelta(days=back)


def _weekday_after(d: date, weekday: int) -> date:
    ahead = (weekday - d.weekday()) % 7 or 7
    return d + timedelta(days=ahead)


_REL_WEEK = re.compile(r"\bthe\s+week\s+(before|after)\s+(?:the\s+)?$", _FLAGS)
_REL_WEEKEND = re.compile(r"\bweekend\s+(before|after)\s+(?:the\s+)?$", _FLAGS)
_REL_WEEKDAY = re.compile(rf"\b({_WD})\s+(before|after)\s+(?:the\s+)?$", _FLAGS)
_REL_N = re.compile(rf"\b({_NUM}|the)\s+(day|week|month)s?\s+(before|after)\s+(?:the\s+)?$", _FLAGS)
_REL_OPEN_BEFORE = re.compile(r"\b(?:before|prior\s+to|until|till|up\s+to|as\s+of|by)\s+(?:the\s+)?$", _FLAGS)
_REL_OPEN_AFTER = re.compile(r"\b(?:after|since)\s+(?:the\s+)?$", _FLAGS)
_REL_BETWEEN = re.compile(r"\b(?:between|from)\s+(?:the\s+)?$", _FLAGS)
_GAP_AND = re.compile(r"\s*(?:and|to|until|till|through|-|\u2013)\s*", _FLAGS)


def _explicit_candidates(text: str, today: date) -> list[_Cand]:
    exprs = _find_exprs(text)
    cands: list[_Cand] = []
    used: set[int] = set()

    # between X and Y / from X to Y
    for i in range(len(exprs) - 1):
        a, b = exprs[i], exprs[i + 1]
        if i in used:
            continue
        if not _REL_BETWEEN.search(text[: a.start]) or not _GAP_AND.fullmatch(text[a.end : b.start]):
            continue
        pb = b.period(today)
        if pb is None:
            continue
        year = a.year if a.year is not None else (b.year if b.year is not None else None)
        pa = a.period(today, year)
        if pa is None:
            continue
        if pa[0] > pb[1] and a.year is None and year is not None:
            pa = a.period(today, year - 1)
            if pa is None:
                continue
        if pa[0] > pb[1]:
            continue
        cands.append(_absolute("between", pa[0], pb[1], a.start))
        used.update((i, i + 1))

    for i, e in enumerate(exprs):
        if i in used:
            continue
        p = e.period(today)
        if p is None:
            continue
        lo, hi = p
        left = text[: e.start]
        if m := _REL_WEEK.search(left):
            if m.group(1).lower() == "before":
                cands.append(_absolute("week_before_after", lo - timedelta(days=7), lo, e.start))
            else:
                cands.append(_absolute("week_before_after", hi, hi + timedelta(days=7), e.start))
        elif m := _REL_WEEKEND.search(left):
            if m.group(1).lower() == "before":
                sunday = _weekday_before(lo, 6)
                cands.append(_absolute("weekend_before_after", sunday - timedelta(days=1), lo, e.start))
            else:
                saturday = _weekday_after(hi, 5)
                cands.append(_absolute("weekend_before_after", hi, saturday + timedelta(days=1), e.start))
        elif m := _REL_WEEKDAY.search(left):
            wd = _WEEKDAYS.index(m.group(1).lower())
            if m.group(2).lower() == "before":
                cands.append(_absolute("weekday_before_after", _weekday_before(lo, wd), lo, e.start))
            else:
                cands.append(_absolute("weekday_before_after", hi, _weekday_after(hi, wd), e.start))
        elif m := _REL_N.search(left):
            raw = m.group(1).lower()
            n = 1 if raw == "the" else _number(raw)
            unit = _UNIT_DAYS[m.group(2).lower()]
            span = timedelta(days=n * unit + unit // 2)
            if m.group(3).lower() == "before":
                cands.append(_absolute("n_before_after", lo - span, lo, e.start))
            else:
                cands.append(_absolute("n_before_after", hi, hi + span, e.start))
        elif _REL_OPEN_BEFORE.search(left):
            cands.append(_absolute("open_before", None, hi, e.start))
        elif _REL_OPEN_AFTER.search(left):
            cands.append(_absolute("open_after", lo, None, e.start))
        else:
            rule = {
                "day": "day",
                "month": "month",
                "month_part": "month_part",
                "nth_week": "nth_week_of_month",
                "season": "season",
                "year": "year",
                "year_part": "year_part",
            }[e.kind]
            cands.append(_absolute(rule, lo, hi, e.start))
    return cands


_NOT_ANCHORED = rf"(?!\s+(?:before|after|of)\b)(?!\s+in\s+(?:{_MON_FULL})\b)"

_RE_DAY_BEFORE_YESTERDAY = re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _FLAGS)
_RE_YESTERDAY = re.compile(r"\byesterday\b", _FLAGS)
_RE_LAST_WEEKDAY = re.compile(rf"\b(?:last|this\s+past|past)\s+({_WD})\b{_NOT_ANCHORED}", _FLAGS)
_RE_LAST_WEEKEND = re.compile(rf"\b(?:last|this\s+past|past|over\s+the)\s+weekend\b{_NOT_ANCHORED}", _FLAGS)
_RE_N_AGO = re.compile(rf"(?<!how )\b({_NUM})\s+(day|week|month|year)s?\s+(?:ago|back)\b", _FLAGS)
_RE_WEEK_BEFORE_LAST = re.compile(r"\bthe\s+week\s+before\s+last\b", _FLAGS)
_RE_MONTH_BEFORE_LAST = re.compile(r"\bthe\s+month\s+before\s+last\b", _FLAGS)
_RE_LAST_WEEK = re.compile(rf"(?<!the )\blast\s+week\b{_NOT_ANCHORED}", _FLAGS)
_RE_LAST_MONTH = re.compile(rf"(?<!the )\blast\s+month\b{_NOT_ANCHORED}", _FLAGS)
_RE_PAST_WINDOW = re.compile(
    rf"\bthe\s+(?:past|last)\s+(?:({_NUM})\s+)?(day|week|month|year)s?\b{_NOT_ANCHORED}", _FLAGS
)
_RE_THIS_YEAR = re.compile(r"\b(?:earlier\s+)?this\s+year\b", _FLAGS)
_RE_LAST_YEAR = re.compile(r"(?<!the )\blast\s+year\b", _FLAGS)
_RE_LONG_AGO = re.compile(
    r"(?<!how )\b(?:(?:a\s+)?long\s+(?:time\s+)?ago|ages\s+ago|"
    r"(?:many|several|some)\s+years\s+(?:ago|back)|years\s+(?:ago|back))\b",
    _FLAGS,
)


def _relative_candidates(text: str, today: date) -> list[_Cand]:
    cands: list[_Cand] = []
    for m in _RE_DAY_BEFORE_YESTERDAY.finditer(text):
        d = today - timedelta(days=2)
        cands.append(_absolute("day_before_yesterday", d, d, m.start()))
    for m in _RE_YESTERDAY.finditer(text):
        if re.search(r"\bday\s+before\s+$", text[: m.start()], _FLAGS):
            continue
        d = today - timedelta(days=1)
        cands.append(_absolute("yesterday", d, d, m.start()))
    for m in _RE_LAST_WEEKDAY.finditer(text):
        d = _weekday_before(today, _WEEKDAYS.index(m.group(1).lower()))
        cands.append(_absolute("last_weekday", d, d, m.start()))
    for m in _RE_LAST_WEEKEND.finditer(text):
        sunday = _weekday_before(today, 6)
        cands.append(_absolute("last_weekend", sunday - timedelta(days=1), sunday, m.start()))
    for m in _RE_N_AGO.finditer(text):
        n = _number(m.group(1))
        unit = m.group(2).lower()
        if n <= 0:
            continue
        if unit == "year":
            if n == 1:
                cands.append(_ago("n_ago", "month", 12, m.start()))
            else:
                cands.append(_long_ago(m.start()))
        else:
            cands.append(_ago("n_ago", unit, n, m.start()))
    for m in _RE_WEEK_BEFORE_LAST.finditer(text):
        cands.append(_ago("week_before_last", "week", 2, m.start()))
    for m in _RE_MONTH_BEFORE_LAST.finditer(text):
        cands.append(_ago("month_before_last", "month", 2, m.start()))
    for m in _RE_LAST_WEEK.finditer(text):
        cands.append(_ago("last_week", "week", 1, m.start()))
    for m in _RE_LAST_MONTH.finditer(text):
        cands.append(_ago("last_month", "month", 1, m.start()))
    for m in _RE_PAST_WINDOW.finditer(text):
        n = _number(m.group(1)) if m.group(1) else 1
        unit = m.group(2).lower()
        if unit == "month":
            lo = _add_months(today, -n)
        elif unit == "year":
            lo = _add_months(today, -12 * n)
        else:
            lo = today - timedelta(days=n * _UNIT_DAYS[unit])
        cands.append(_absolute("past_window", lo, today, m.start()))
    for m in _RE_THIS_YEAR.finditer(text):
        cands.append(_absolute("earlier_this_year", date(today.year, 1, 1), today, m.start()))
    for m in _RE_LAST_YEAR.finditer(text):
        y = today.year - 1
        cands.append(_absolute("last_year", date(y, 1, 1), date(y, 12, 31), m.start()))
    for m in _RE_LONG_AGO.finditer(text):
        cands.append(_long_ago(m.start()))
    return cands


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _as_datetime(asked_at: str | datetime | date) -> datetime:
    if isinstance(asked_at, datetime):
        dt = asked_at
    elif isinstance(asked_at, date):
        dt = datetime.combine(asked_at, time(0, 0))
    elif isinstance(asked_at, str):
        dt = datetime.fromisoformat(asked_at.strip())
    else:
        raise TypeError(f"asked_at must be an ISO string or a datetime, not {type(asked_at).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt


def explain_cue(question: str, asked_at: str | datetime) -> tuple[str, dict] | None:
    """Like :func:`extract_cue`, with the name of the rule that produced the cue."""
    today = _as_datetime(asked_at).date()
    text = question or ""
    cands = _explicit_candidates(text, today) + _relative_candidates(text, today)
    if not cands:
        return None
    best = min(cands, key=_Cand.key)
    return best.rule, best.cue


def extract_cue(question: str, asked_at: str | datetime) -> dict | None:
    """The time cue a question's text states, read against the date it was asked.

    Only ``question`` and ``asked_at`` are read. Returns a ``time_cue`` (docs/recall-process.md#reading-a-cue)
    dict, or ``None`` when no rule matches.
    """
    found = explain_cue(question, asked_at)
    return None if found is None else found[1]


def cue_period(
    cue: dict, now: str | datetime, *, oldest: str | datetime | None = None
) -> tuple[datetime, datetime] | None:
    """The nominal period a cue names, before any confidence margin, as a
    half-open UTC interval ``[start, end)``, following docs/recall-process.md#periods:

    * an absolute date names the whole day (``before`` includes it);
    * ``{"unit": u, "value": n}`` is one unit long, centred ``n`` units before
      ``now`` and ending no later than ``now`` (a month is 30 days);
    * ``long_ago`` is the oldest third of the span from ``oldest`` to ``now``;
    * an open end is closed by ``oldest`` or by ``now``.

    Returns ``None`` when the period needs ``oldest`` and it was not given.
    """
    now_dt = _as_datetime(now)
    oldest_dt = _as_datetime(oldest) if oldest is not None else None
    ago = cue.get("ago")
    if ago == "long_ago":
        if oldest_dt is None:
            return None
        return oldest_dt, oldest_dt + (now_dt - oldest_dt) / 3
    if isinstance(ago, dict):
        unit = timedelta(days=_UNIT_DAYS[str(ago["unit"]).rstrip("s")])
        centre = now_dt - int(ago["value"]) * unit
        return centre - unit / 2, min(centre + unit / 2, now_dt)
    after, before = cue.get("after"), cue.get("before")
    if after is not None:
        start = datetime.combine(date.fromisoformat(after), time(0, 0), tzinfo=UTC)
    elif oldest_dt is not None:
        start = oldest_dt
    else:
        return None
    if before is not None:
        end = datetime.combine(date.fromisoformat(before) + timedelta(days=1), time(0, 0), tzinfo=UTC)
    else:
        end = now_dt
    return start, end


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cues",
        description="Print the time cue (JSON) that the rule-based extractor reads from a question.",
        epilog=CUE_RULES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question", help="the question text")
    parser.add_argument(
        "--asked-at",
        required=True,
        help="when the question is asked (ISO date or datetime), e.g. 2023-06-01",
    )
    parser.add_argument("--rule", action="store_true", help="also print the rule that matched")
    args = parser.parse_args(argv)
    try:
        found = explain_cue(args.question, args.asked_at)
    except ValueError as exc:
        parser.error(f"--asked-at: {exc}")
    if found is None:
        out: object = None
    elif args.rule:
        out = {"rule": found[0], "time_cue": found[1]}
    else:
        out = found[1]
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

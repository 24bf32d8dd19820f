"""Benchmark datasets as plain frozen dataclasses.

Two sources:

* ``load_locomo(path)`` reads a LoCoMo file (the original JSON format). The
  data is CC BY-NC and is never shipped with the project: the caller passes
  the path of their own copy.
* ``generate_long_span(seed=..., size=...)`` builds a synthetic, seeded
  history of about nine months in which the same topics recur in different
  periods with different details, so that the topic alone cannot tell the
  evidence apart and the time can. All of its text is written for this
  project and read from ``data/long_span.json`` next to this module.

This module has no dependency on the ``cuedrecall`` package.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "LONG_SPAN_SIZES",
    "LONG_SPAN_START",
    "Conversation",
    "Question",
    "SessionSummary",
    "Turn",
    "generate_long_span",
    "load_locomo",
    "locomo_file",
]


# --------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    msg_id: str
    content: str
    timestamp: str  # ISO-8601 with offset, UTC
    speaker: str
    session: int


@dataclass(frozen=True)
class SessionSummary:
    session: int
    summary: str
    keywords: str
    start_time: str
    end_time: str


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    asked_at: str  # ISO-8601, the question's "now"
    evidence: tuple[str, ...]  # msg_ids of the evidence turns
    category: str
    answer: str


@dataclass(frozen=True)
class Conversation:
    conv_id: str
    turns: tuple[Turn, ...]
    sessions: tuple[SessionSummary, ...]
    questions: tuple[Question, ...]


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


# --------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH_NUMBER = {name.lower(): i + 1 for i, name in enumerate(MONTH_NAMES)}

_LOCOMO_TIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_SESSION_KEY = re.compile(r"session_(\d+)")


def _parse_locomo_time(text: str) -> datetime:
    """Parse "1:56 pm on 8 May, 2023" as a UTC datetime (no locale involved)."""
    m = _LOCOMO_TIME.fullmatch(text)
    if not m:
        raise ValueError(f"unreadable LoCoMo session time: {text!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTH_NUMBER.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month in LoCoMo session time: {text!r}")
    h = int(hour) % 12 + (12 if ampm.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def _evidence_refs(raw) -> list[str]:
    """Split an evidence entry; a few entries hold several ids ("D8:6; D9:17")."""
    if isinstance(raw, str):
        return [p for p in re.split(r"[;,\s]+", raw) if p]
    return []


def _answer_text(qa: dict) -> str:
    value = qa.get("answer")
    if value is None:
        value = qa.get("adversarial_answer")
    if value is None:
        return ""
    return str(value)


def _locomo_conversation(item: dict) -> Conversation:
    sample_id = str(item["sample_id"])
    conv = item["conversation"]

    sessions: list[tuple[int, datetime, list]] = []
    for key, value in conv.items():
        m = _SESSION_KEY.fullmatch(key)
        if not m or not isinstance(value, list) or not value:
            continue  # date_time keys without a session list are skipped here
        when = conv.get(f"{key}_date_time")
        if not when:
            continue
        sessions.append((int(m.group(1)), _parse_locomo_time(when), value))
    sessions.sort(key=lambda s: s[0])

    turns: list[Turn] = []
    session_bounds: dict[int, tuple[datetime, datetime]] = {}
    for number, start, raw_turns in sessions:
        last = start
        for i, raw in enumerate(raw_turns):
            ts = start + timedelta(seconds=i)
            content = f"{raw['speaker']}: {raw.get('text', '')}"
            caption = raw.get("blip_caption")
            if caption:
                content += f" [shares: {caption}]"
            turns.append(
                Turn(
                    msg_id=f"{sample_id}:{raw['dia_id']}",
                    content=content,
                    timestamp=_iso(ts),
                    speaker=str(raw["speaker"]),
                    session=number,
                )
            )
            last = ts
        session_bounds[number] = (start, last)

    summaries_raw = item.get("session_summary") or {}
    summaries: list[SessionSummary] = []
    for number, _, _ in sessions:
        text = summaries_raw.get(f"session_{number}_summary")
        if not text:
            continue
        start, end = session_bounds[number]
        summaries.append(
            SessionSummary(
                session=number,
                summary=str(text),
                keywords="",
                start_time=_iso(start),
                end_time=_iso(end),
            )
        )

    # The questions are asked the day after the last session, at 00:00 UTC.
    last_turn = max((datetime.fromisoformat(t.timestamp) for t in turns), default=None)
    if last_turn is None:
        asked = datetime(1970, 1, 1, tzinfo=UTC)
    else:
        asked = datetime.combine(last_turn.date() + timedelta(days=1), time(0, 0), tzinfo=UTC)
    asked_at = _iso(asked)

    known = {t.msg_id for t in turns}
    questions: list[Question] = []
    for index, qa in enumerate(item.get("qa") or []):
        evidence: list[str] = []
        for raw in qa.get("evidence") or []:
            for ref in _evidence_refs(raw):
                msg_id = f"{sample_id}:{ref}"
                if msg_id in known and msg_id not in evidence:
                    evidence.append(msg_id)
        if not evidence:
            continue
        questions.append(
            Question(
                qid=f"{sample_id}:q{index}",
                text=str(qa.get("question", "")),
                asked_at=asked_at,
                evidence=tuple(evidence),
                category=str(qa.get("category", "")),
                answer=_answer_text(qa),
            )
        )

    return Conversation(
        conv_id=sample_id,
        turns=tuple(turns),
        sessions=tuple(summaries),
        questions=tuple(questions),
    )


def locomo_file(path: str | Path | None, option: str = "--locomo") -> Path:
    """The LoCoMo file at ``path``. Without one (no path, or no file there) the benchmark cannot run: it stops
    with one line saying how to get the data, and exit code 2."""
    if path is None or not Path(path).is_file():
        where = f"not found at {path}" if path else "not given"
        print(
            f"LoCoMo {where}: download locomo10.json from the LoCoMo repository "
            f"(github.com/snap-research/locomo) and pass {option} PATH",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return Path(path)


def load_locomo(path, *, limit_conversations: int | None = None, option: str = "--locomo") -> list[Conversation]:
    """Load a LoCoMo JSON file (for instance ``locomo10.json``).

    Each turn becomes a :class:`Turn` with ``msg_id = "<sample_id>:<dia_id>"``
    and a timestamp equal to its session's time plus ``i`` seconds for the
    ``i``-th turn, so turns keep their order. Questions are asked the day after
    the conversation's last session; evidence ids that name no turn are
    dropped, and a question left without evidence is dropped. Category 5
    (adversarial) questions are kept; metrics usually leave them out. Without
    the file the run stops with one line naming ``option`` (:func:`locomo_file`).
    """
    with locomo_file(path, option).open(encoding="utf-8") as fh:
        data = json.load(fh)
    if limit_conversations is not None:
        data = data[: max(0, int(limit_conversations))]
    return [_locomo_conversation(item) for item in data]


# --------------------------------------------------------------------------
# Long-span generator: text material
# --------------------------------------------------------------------------
#
# Every turn is composed from parts (a sentence core with slots for names,
# places, numbers and objects, plus optional lead-in and tail sentences), and
# the generator redraws a turn whose text already occurred, so turns are
# distinct texts and the store keeps each one. Each recurring topic has an
# anchor word ("dentist", "interview", "mechanic", ...) that every one of its
# evidence turns and every one of its questions contains, the way a person
# names the topic; the occurrence's own detail is in the evidence only, never
# in the question, so the topic's words find all of its occurrences and only
# the time can tell them apart. Small-talk sessions sometimes mention a topic
# in passing ("I should book the dentist sometime"), so a lexical match alone
# is not enough either.
#
# The text itself (topics, small-talk themes, lead-ins, tails, slot values)
# lives in data/long_span.json, next to this module; this module holds the
# rules that compose it. The generator draws from the file's lists by
# position, so editing or reordering an entry changes every conversation.

LONG_SPAN_START = date(2025, 1, 6)
_LONG_SPAN_END = date(2025, 9, 30)

# size -> (target number of turns, topic keys used, occurrences per topic)
LONG_SPAN_SIZES = {
    "small": (300, 9, (2, 3)),
    "large": (5000, 14, (2, 4)),
}

# Share of small-talk sessions with one user turn that mentions a topic in passing.
_PASSING_SHARE = 0.15

# Questions are never asked after this (the absolute ones draw a date up to 100 days on).
_QUESTION_HORIZON = datetime(2025, 12, 31, 18, 0, tzinfo=UTC)

_CORPUS_FILE = Path(__file__).parent / "data" / "long_span.json"


@dataclass(frozen=True)
class _Topic:
    key: str
    label: str
    anchor: str  # the word every evidence turn and every question of the topic holds
    openers: tuple[str, ...]  # user; the first evidence turn starts with one
    follow_ups: tuple[str, ...]  # assistant, after the first evidence turn
    fillers: tuple[str, ...]  # user, later in the session; not evidence
    # each detail: (gist, sentence after the opener, second evidence sentence)
    details: tuple[tuple[str, str, str], ...]
    slots: tuple[tuple[str, tuple[str, ...]], ...]  # the topic's own slot values
    questions: tuple[str, ...]
    passing: tuple[str, ...]  # user mentions in small talk, not evidence


@dataclass(frozen=True)
class _Theme:
    """A small-talk theme: its label for session summaries and its
    (user line, assistant reply) pairs."""

    label: str
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Corpus:
    """The generator's text, as read from data/long_span.json. Slots in
    braces are filled from ``slots`` (or computed, see _computed); {weather}
    depends on the month (``weather_by_month``)."""

    topics: tuple[_Topic, ...]
    ack_leads: tuple[str, ...]
    acks: tuple[str, ...]
    topic_closers: tuple[str, ...]
    assistant_closers: tuple[str, ...]
    small_talk: dict[str, _Theme]
    small_talk_replies: tuple[str, ...]  # replies that fit any line, for a redraw or a passing mention
    user_leads: tuple[str, ...]
    user_tails: tuple[str, ...]
    assistant_leads: tuple[str, ...]
    assistant_tails: tuple[str, ...]
    slots: dict[str, tuple[str, ...]]
    weather_by_month: dict[int, tuple[str, ...]]


def _tuples(value: Any) -> Any:
    """JSON lists as (nested) tuples, the immutable form the generator keeps."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _topic(raw: dict[str, Any]) -> _Topic:
    fields = {k: _tuples(v) for k, v in raw.items()}
    # slots: a JSON object keeps its order; the topic keeps (slot, values) pairs
    fields["slots"] = tuple((k, _tuples(v)) for k, v in raw["slots"].items())
    return _Topic(**fields)


def _load_corpus(path: Path) -> _Corpus:
    """Read the generator's text from ``path`` (the layout of data/long_span.json)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    phrases = (
        "ack_leads",
        "acks",
        "topic_closers",
        "assistant_closers",
        "small_talk_replies",
        "user_leads",
        "user_tails",
        "assistant_leads",
        "assistant_tails",
    )
    return _Corpus(
        topics=tuple(_topic(t) for t in raw["topics"]),
        small_talk={k: _Theme(t["label"], _tuples(t["pairs"])) for k, t in raw["small_talk"].items()},
        slots={k: _tuples(v) for k, v in raw["slots"].items()},
        weather_by_month={int(k): _tuples(v) for k, v in raw["weather_by_month"].items()},  # JSON keys are text
        **{name: _tuples(raw[name]) for name in phrases},
    )


@cache
def _corpus() -> _Corpus:
    """The corpus, read on first use (loading LoCoMo alone never needs it) and then kept."""
    return _load_corpus(_CORPUS_FILE)


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return str(n) + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


_SLOT = re.compile(r"\{(\w+)\}")


def _computed(rng: random.Random, slot: str, month: int) -> str | None:
    """Slots drawn from a range rather than a list; None for a list slot."""
    if slot == "weather":
        return rng.choice(_corpus().weather_by_month.get(month, ("mild",)))
    if slot == "clock":
        return f"{rng.randint(7, 21)}:{rng.choice(range(0, 60, 5)):02d}"
    if slot == "n":
        return str(rng.randint(2, 9))
    if slot == "minutes":
        return str(rng.randint(5, 55))
    if slot == "price":
        return str(rng.randint(6, 95) * 10)
    if slot == "small_price":
        return str(rng.randint(8, 60))
    if slot == "big_n":
        return str(rng.randint(12, 99) * 10)
    if slot == "temp":
        return str(rng.randint(8, 31))
    if slot == "pct":
        return str(rng.randint(3, 19))
    return None


def _fill(
    rng: random.Random,
    template: str,
    month: int,
    values: dict[str, str] | None = None,
    pools: dict[str, tuple[str, ...]] | None = None,
    avoid: set[str] | frozenset[str] = frozenset(),
    capitalize: bool = True,
) -> str:
    """Fill a template's {slots}. ``values`` holds slots already chosen (and
    receives the new ones, so sentences of one occurrence agree); ``pools``
    are the topic's own slot lists; ``avoid`` holds values to skip when the
    list has others (an earlier occurrence's). A slot ending in a digit
    ("show2") draws from its list a value that differs from its sibling's."""
    values = {} if values is None else values

    def sub(m: re.Match) -> str:
        slot = m.group(1)
        if slot in values:
            return values[slot]
        base = slot.rstrip("0123456789")
        value = _computed(rng, base, month)
        if value is None:
            pool = (pools or {}).get(base) or _corpus().slots[base]
            taken = avoid | {v for k, v in values.items() if k.rstrip("0123456789") == base}
            fresh = [v for v in pool if v not in taken]
            value = rng.choice(fresh or pool)
        values[slot] = value
        return value

    text = _SLOT.sub(sub, template)
    return text[0].upper() + text[1:] if capitalize else text


class _Writer:
    """Draws turns and redraws one whose text was already used, so the
    conversation's turns are distinct texts (the store keeps every one)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.seen: set[str] = set()
        self.session_parts: set[str] = set()  # lead-ins and tails already used in this session

    def new_session(self) -> None:
        self.session_parts.clear()

    def unique(self, make: Callable[[], str], tries: int = 40) -> str:
        text = make()
        for _ in range(tries):
            if text not in self.seen:
                break
            text = make()
        self.seen.add(text)
        return text

    def join(self, *parts: str) -> str:
        return " ".join(p for p in parts if p)

    def maybe(self, share: float, choices: tuple[str, ...], month: int) -> str:
        """Often nothing; else one of ``choices`` not yet used in this session."""
        if self.rng.random() >= share:
            return ""
        fresh = [c for c in choices if c not in self.session_parts]
        if not fresh:
            return ""
        choice = self.rng.choice(fresh)
        self.session_parts.add(choice)
        return _fill(self.rng, choice, month)


# (speaker, text, is_evidence): one drafted line of a session.
_Line = tuple[str, str, bool]


def _ack(writer: _Writer) -> str:
    """An assistant acknowledgement, distinct from every earlier turn."""
    rng, corpus = writer.rng, _corpus()
    return writer.unique(lambda: writer.join(rng.choice(corpus.ack_leads), rng.choice(corpus.acks)))


def _opening_pair(
    writer: _Writer, topic: _Topic, sentence: str, month: int, values: dict[str, str], pools: dict[str, tuple[str, ...]]
) -> list[_Line]:
    """The user names the topic and tells the detail's first sentence (evidence); the assistant follows up."""
    rng = writer.rng
    first = writer.unique(
        lambda: writer.join(
            _fill(rng, rng.choice(topic.openers), month, pools=pools),
            _fill(rng, sentence, month, values, pools),
        )
    )
    follow_up = writer.unique(lambda: _fill(rng, rng.choice(topic.follow_ups), month))
    return [("user", first, True), ("assistant", follow_up, False)]


def _filler_pairs(
    writer: _Writer, topic: _Topic, month: int, pools: dict[str, tuple[str, ...]], count: int
) -> list[_Line]:
    """``count`` user remarks about the topic that are not evidence, each acknowledged."""
    rng = writer.rng
    unused = list(topic.fillers)  # each filler at most once in a session
    chosen: list[str] = []

    def filler() -> str:
        chosen[:] = [rng.choice(unused)]  # remembered, so the filler kept is the one taken out of ``unused``
        return writer.join(
            _fill(rng, chosen[0], month, pools=pools),
            writer.maybe(0.4, _corpus().user_tails, month),
        )

    lines: list[_Line] = []
    for _ in range(count):
        lines.append(("user", writer.unique(filler), False))
        unused.remove(chosen[0])
        lines.append(("assistant", _ack(writer), False))
    return lines


def _closing_pair(writer: _Writer, month: int) -> list[_Line]:
    """The user signs off and the assistant answers."""
    rng, corpus = writer.rng, _corpus()

    def closer() -> str:
        return writer.join(
            writer.maybe(0.5, corpus.user_tails, month),
            _fill(rng, rng.choice(corpus.topic_closers), month),
        )

    def assistant_closer() -> str:
        return writer.join(rng.choice(corpus.assistant_closers), _fill(rng, rng.choice(corpus.assistant_tails), month))

    return [("user", writer.unique(closer), False), ("assistant", writer.unique(assistant_closer), False)]


def _topic_lines(
    writer: _Writer,
    topic: _Topic,
    detail: tuple[str, ...],
    month: int,
    values: dict[str, str],
) -> list[_Line]:
    """A topic session: the user's first turn names the topic and tells the
    occurrence's detail (evidence), a second detail turn often follows
    (evidence), then some small talk about it (not evidence); 4 to 10 turns."""
    rng = writer.rng
    writer.new_session()
    pools = dict(topic.slots)
    _, first_sentence, second_sentence = detail
    lines = _opening_pair(writer, topic, first_sentence, month, values, pools)
    has_second = rng.random() >= 0.25  # some occurrences carry one detail turn
    if has_second:
        second = writer.unique(lambda: _fill(rng, second_sentence, month, values, pools))
        lines += [("user", second, True), ("assistant", _ack(writer), False)]
    lines += _filler_pairs(writer, topic, month, pools, rng.randint(0 if has_second else 1, 2))
    if rng.random() < 0.5 and len(lines) <= 8:
        lines += _closing_pair(writer, month)
    return lines[:10]


def _small_talk_lines(writer: _Writer, theme: str, month: int, passing: _Topic | None) -> list[_Line]:
    """A small-talk session, 4 to 10 turns; with ``passing``, one user turn
    mentions that topic in passing (a distractor for its questions)."""
    rng = writer.rng
    corpus = _corpus()
    writer.new_session()
    pairs = corpus.small_talk[theme].pairs
    n_turns = rng.randint(4, 10)
    order = rng.sample(pairs, len(pairs))
    passing_at = rng.randrange(0, n_turns, 2) if passing is not None else -1
    lines: list[_Line] = []
    for i in range(0, n_turns, 2):
        user_core, reply = order[(i // 2) % len(order)]
        pools = None
        if i == passing_at:
            assert passing is not None
            user_core, reply, pools = rng.choice(passing.passing), "", dict(passing.slots)

        def make_user(core: str = user_core, pools: dict | None = pools) -> str:
            return writer.join(
                writer.maybe(0.3, corpus.user_leads, month),
                _fill(rng, core, month, pools=pools),
                writer.maybe(0.35, corpus.user_tails, month),
            )

        lines.append(("user", writer.unique(make_user), False))
        if i + 1 == n_turns:
            break
        planned = [reply] * 12 if reply else []  # its own reply first, worded on with other leads and tails

        def make_reply(planned: list[str] = planned) -> str:
            # then one that fits any line
            core = planned.pop() if planned else rng.choice(corpus.small_talk_replies)
            return writer.join(
                writer.maybe(0.35, corpus.assistant_leads, month),
                _fill(rng, core, month),
                writer.maybe(0.3, corpus.assistant_tails, month),
            )

        lines.append(("assistant", writer.unique(make_reply), False))
    return lines


# --------------------------------------------------------------------------
# Long-span generator, step 1: plan
# --------------------------------------------------------------------------
#
# All three steps draw from one seeded stream, in a fixed order, and that
# order defines the output: the same seed gives the same conversation only
# while every draw happens where it always did. That is why the plan drafts
# each session's lines as it goes rather than leaving them to the write
# step: the draws for an occurrence's lines sit between those for the next
# occurrence's day, and the amount of small talk planned depends on how many
# turns the sessions already hold.


@dataclass
class _PlannedSession:
    day: date
    kind: str  # "topic" or "small"
    topic: _Topic | None = None
    detail: tuple[str, ...] | None = None
    theme: str | None = None
    occurrence: int = 0
    start: datetime | None = None
    number: int = 0  # set by the write step: the session's number in time order
    gist: str = ""
    lines: list[_Line] | None = None


def _span_months() -> list[int]:
    """The months the span touches, in order."""
    n_days = (_LONG_SPAN_END - LONG_SPAN_START).days + 1
    return sorted({(LONG_SPAN_START + timedelta(days=i)).month for i in range(n_days)})


def _day_in_month(rng: random.Random, month: int) -> date:
    """A day of ``month`` that lies inside the span."""
    first = date(2025, month, 1)
    last = (date(2025, month + 1, 1) if month < 12 else date(2026, 1, 1)) - timedelta(days=1)
    first = max(first, LONG_SPAN_START)
    last = min(last, _LONG_SPAN_END)
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _plan_occurrence(
    writer: _Writer, topic: _Topic, occurrence: int, month: int, detail: tuple[str, ...], used: set[str]
) -> _PlannedSession:
    """One occurrence of a topic: its day, its slot values (a company, a
    tooth, a price) that no earlier occurrence of the topic used (``used``,
    updated here), and its lines."""
    rng = writer.rng
    day = _day_in_month(rng, month)
    session = _PlannedSession(day=day, kind="topic", topic=topic, detail=detail, occurrence=occurrence)
    values: dict[str, str] = {}
    # fill every evidence sentence now, so the values are fixed before the lines quote them
    session.gist = _fill(rng, detail[0], month, values, dict(topic.slots), frozenset(used), capitalize=False)
    for sentence in detail[1:]:
        _fill(rng, sentence, month, values, dict(topic.slots), frozenset(used))
    used.update(values.values())
    session.lines = _topic_lines(writer, topic, detail, month, values)
    return session


def _plan_topics(writer: _Writer, topics: tuple[_Topic, ...], occurrences: tuple[int, int]) -> list[_PlannedSession]:
    """Topic occurrences: for each topic, distinct months, a day within each
    and a distinct detail each."""
    rng = writer.rng
    occ_lo, occ_hi = occurrences
    months = _span_months()
    planned: list[_PlannedSession] = []
    for topic in topics:
        k = rng.randint(occ_lo, min(occ_hi, len(topic.details)))
        chosen_months = sorted(rng.sample(months, k))
        details = rng.sample(topic.details, k)
        used: set[str] = set()
        for occurrence, (month, detail) in enumerate(zip(chosen_months, details)):
            planned.append(_plan_occurrence(writer, topic, occurrence, month, detail, used))
    return planned


def _plan_small_talk(
    writer: _Writer, topics: tuple[_Topic, ...], total: int, target_turns: int
) -> list[_PlannedSession]:
    """Small-talk sessions on random days until the conversation holds
    ``target_turns`` turns (``total`` so far); some mention one of the
    topics in passing."""
    rng = writer.rng
    n_days = (_LONG_SPAN_END - LONG_SPAN_START).days + 1
    themes = sorted(_corpus().small_talk)
    planned: list[_PlannedSession] = []
    while total < target_turns:
        day = LONG_SPAN_START + timedelta(days=rng.randint(0, n_days - 1))
        theme = rng.choice(themes)
        passing = rng.choice(topics) if rng.random() < _PASSING_SHARE else None
        session = _PlannedSession(day=day, kind="small", theme=theme)
        session.lines = _small_talk_lines(writer, theme, day.month, passing)
        remaining = target_turns - total
        if remaining < len(session.lines) and remaining >= 4:  # trim the last one to the target
            session.lines = session.lines[:remaining]
        planned.append(session)
        total += len(session.lines)
    return planned


def _schedule(rng: random.Random, planned: list[_PlannedSession]) -> None:
    """Times of day: distinct hours per day, so sessions never overlap."""
    by_day: dict[date, list[_PlannedSession]] = {}
    for s in planned:
        by_day.setdefault(s.day, []).append(s)
    for day in sorted(by_day):
        sessions = by_day[day]
        hours = sorted(rng.sample(range(7, 23), min(len(sessions), 16)))
        while len(hours) < len(sessions):  # more than 16 sessions on one day: half-hour slots
            hours.append(hours[-1])
        rng.shuffle(sessions)
        for i, (s, hour) in enumerate(zip(sessions, hours)):
            minute = rng.randint(0, 24) + (30 if i > 0 and hours[i - 1] == hour else 0)
            s.start = datetime.combine(day, time(hour, minute), tzinfo=UTC)


def _plan(rng: random.Random, size: str) -> list[_PlannedSession]:
    """Step 1, plan: which topic occurs in which months with which detail,
    the small talk around it, and when each session starts; in time order."""
    target_turns, n_topics, occurrences = LONG_SPAN_SIZES[size]
    writer = _Writer(rng)
    topics = _corpus().topics[:n_topics]
    planned = _plan_topics(writer, topics, occurrences)
    total = sum(len(s.lines or ()) for s in planned)
    planned += _plan_small_talk(writer, topics, total, target_turns)
    _schedule(rng, planned)
    planned.sort(key=lambda s: s.start)
    return planned


# --------------------------------------------------------------------------
# Long-span generator, step 2: write
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Written:
    turns: tuple[Turn, ...]
    sessions: tuple[SessionSummary, ...]  # sessions[n - 1] is session n
    evidence: dict[int, list[Turn]]  # session number -> its evidence turns, topic sessions only


def _session_turns(rng: random.Random, prefix: str, s: _PlannedSession) -> list[Turn]:
    """The session's lines as turns, a few dozen seconds to two minutes apart."""
    assert s.start is not None
    ts = s.start
    turns: list[Turn] = []
    for i, (speaker, text, _) in enumerate(s.lines or (), start=1):
        if i > 1:
            ts = ts + timedelta(seconds=rng.randint(20, 110))
        turns.append(
            Turn(msg_id=f"{prefix}:{s.number}:{i}", content=text, timestamp=_iso(ts), speaker=speaker, session=s.number)
        )
    return turns


def _session_summary(s: _PlannedSession, turns: list[Turn]) -> SessionSummary:
    """The session's summary, as a note-taking assistant might write it."""
    assert s.start is not None
    when = f"{s.start.day} {MONTH_NAMES[s.start.month - 1]} {s.start.year}"
    if s.kind == "topic":
        assert s.topic is not None
        summary = f"On {when} the user told the assistant about {s.topic.label}: {s.gist}."
        keywords = f"{s.topic.key}, {s.gist}"
    else:
        assert s.theme is not None
        label = _corpus().small_talk[s.theme].label
        summary = f"On {when} the user and the assistant chatted about {label}."
        keywords = f"small talk, {s.theme}"
    return SessionSummary(
        session=s.number,
        summary=summary,
        keywords=keywords,
        start_time=turns[0].timestamp,
        end_time=turns[-1].timestamp,
    )


def _write(rng: random.Random, prefix: str, planned: list[_PlannedSession]) -> _Written:
    """Step 2, write: number the planned sessions in time order (msg_ids are
    ``<prefix>:<session>:<turn>``) and make their turns and summaries."""
    turns: list[Turn] = []
    summaries: list[SessionSummary] = []
    evidence: dict[int, list[Turn]] = {}
    for number, s in enumerate(planned, start=1):
        s.number = number
        session_turns = _session_turns(rng, prefix, s)
        turns.extend(session_turns)
        for turn, (_, _, is_evidence) in zip(session_turns, s.lines or ()):
            if is_evidence:
                evidence.setdefault(number, []).append(turn)
        summaries.append(_session_summary(s, session_turns))
    return _Written(turns=tuple(turns), sessions=tuple(summaries), evidence=evidence)


# --------------------------------------------------------------------------
# Long-span generator, step 3: questions
# --------------------------------------------------------------------------


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month_index(d: date) -> int:
    return d.year * 12 + d.month - 1


def _inside_ago_window(asked: datetime, unit_days: int, n: int, first: datetime, last: datetime) -> bool:
    """Whether [first, last] lies inside the period "n units ago" (docs/recall-process.md#periods:
    one unit long, centred n units before now, ending no later than now),
    with an hour of margin on each side."""
    unit = timedelta(days=unit_days)
    centre = asked - n * unit
    lo = centre - unit / 2
    hi = min(centre + unit / 2, asked)
    margin = timedelta(hours=1)
    return lo + margin <= first and last <= hi - margin


# Relative phrasings: (phrase, kind, n). kind decides the check. They stay in
# code, not in the data file, because each kind is a rule of _relative_ok.
_RELATIVE_FORMS: tuple[tuple[str, str, int], ...] = (
    ("yesterday", "yesterday", 1),
    ("two days ago", "days", 2),
    ("3 days ago", "days", 3),
    ("four days ago", "days", 4),
    ("5 days ago", "days", 5),
    ("last {weekday}", "weekday", 0),
    ("last week", "last_week", 1),
    ("a week ago", "weeks", 1),
    ("two weeks ago", "weeks", 2),
    ("a couple of weeks ago", "weeks", 2),
    ("three weeks ago", "weeks", 3),
    ("last month", "last_month", 1),
    ("a month ago", "months", 1),
    ("two months ago", "months", 2),
    ("a couple of months ago", "months", 2),
    ("three months ago", "months", 3),
    ("a few months ago", "months", 3),
    ("four months ago", "months", 4),
)

_ABSOLUTE_FORMS = {  # form -> how a question names the session's day
    "month": "in {month}",
    "month_year": "in {month} {year}",
    "part": "in {part} {month}",
    "part_year": "in {part} {month} {year}",
    "day": "on {day} {month}",
    "day_us": "on {month} {ordinal}",
}


def _relative_ok(kind: str, n: int, asked: datetime, first: datetime, last: datetime) -> bool:
    if asked <= last:
        return False
    d, a = first.date(), asked.date()
    if kind == "yesterday":
        return (a - d).days == 1 and last.date() == d
    if kind == "days":
        return (a - d).days == n and last.date() == d and _inside_ago_window(asked, 1, n, first, last)
    if kind == "weekday":
        return 1 <= (a - d).days <= 6 and last.date() == d
    if kind == "last_week":
        return _week_start(a) - timedelta(days=7) == _week_start(d) and _inside_ago_window(asked, 7, 1, first, last)
    if kind == "weeks":
        return _inside_ago_window(asked, 7, n, first, last)
    if kind == "last_month":
        return _month_index(a) - _month_index(d) == 1 and _inside_ago_window(asked, 30, 1, first, last)
    if kind == "months":
        return _month_index(a) - _month_index(d) == n and _inside_ago_window(asked, 30, n, first, last)
    raise ValueError(kind)


def _absolute_phrase(form: str, d: date) -> str:
    part = "early" if d.day <= 10 else ("mid" if d.day <= 20 else "late")
    month = MONTH_NAMES[d.month - 1]
    return _ABSOLUTE_FORMS[form].format(month=month, year=d.year, part=part, day=d.day, ordinal=_ordinal(d.day))


def _question_text(rng: random.Random, topic: _Topic, when: str) -> str:
    return rng.choice(topic.questions).format(when=when)


def _relative_times(
    start: datetime, session_end: datetime, kind: str, n: int, first: datetime, last: datetime
) -> list[datetime]:
    """Times after the session, up to 139 days on, at which a question
    phrased with this relative form (``kind``, ``n``) names the evidence
    ``first``..``last`` and nothing wider."""
    times = []
    for k in range(1, 140):
        for minutes in (-150, -60, 0, 45, 120, 200):
            asked = start + timedelta(days=k, minutes=minutes)
            if asked > session_end and _relative_ok(kind, n, asked, first, last):
                times.append(asked)
    return times


def _relative_when(
    rng: random.Random, s: _PlannedSession, session_end: datetime, first: datetime, last: datetime
) -> tuple[str, datetime] | None:
    """A relative phrasing and a time to ask it: the first form, in a
    shuffled order, that some time fits; None when none fits."""
    assert s.start is not None
    forms = list(_RELATIVE_FORMS)
    rng.shuffle(forms)
    for phrase, kind, n in forms:
        times = _relative_times(s.start, session_end, kind, n, first, last)
        if times:
            asked = rng.choice(times)
            return phrase.format(weekday=WEEKDAY_NAMES[s.start.weekday()]), asked
    return None


def _absolute_when(rng: random.Random, s: _PlannedSession) -> tuple[str, datetime]:
    """A date phrasing of the session's day and a time to ask it, 3 to 100
    days on (no later than the horizon)."""
    assert s.start is not None
    form = rng.choice(tuple(_ABSOLUTE_FORMS))
    when = _absolute_phrase(form, s.start.date())
    asked = s.start + timedelta(days=rng.randint(3, 100), minutes=rng.randint(-120, 240))
    return when, min(asked, _QUESTION_HORIZON)


def _question_kinds(rng: random.Random, size: str) -> list[str]:
    """Both kinds for every occurrence in the large size; one or both in the small one."""
    if size == "large":
        return ["absolute", "relative"]
    return ["absolute", "relative"] if rng.random() < 0.5 else [rng.choice(["absolute", "relative"])]


def _occurrence_questions(
    rng: random.Random, size: str, prefix: str, s: _PlannedSession, written: _Written
) -> list[Question]:
    """The questions about one topic occurrence; a relative one with no
    fitting phrasing becomes an absolute one."""
    assert s.topic is not None
    ev = written.evidence[s.number]
    first = datetime.fromisoformat(ev[0].timestamp)
    last = datetime.fromisoformat(ev[-1].timestamp)
    session_end = datetime.fromisoformat(written.sessions[s.number - 1].end_time)
    questions = []
    for j, kind in enumerate(_question_kinds(rng, size)):
        made = _relative_when(rng, s, session_end, first, last) if kind == "relative" else None
        if made is None:
            kind = "absolute"
            made = _absolute_when(rng, s)
        when, asked = made
        questions.append(
            Question(
                qid=f"{prefix}:{s.topic.key}:{s.occurrence}:q{j}",
                text=_question_text(rng, s.topic, when),
                asked_at=_iso(asked),
                evidence=tuple(t.msg_id for t in ev),
                category=kind,
                answer=" ".join(t.content for t in ev),
            )
        )
    return questions


def _questions(
    rng: random.Random, size: str, prefix: str, planned: list[_PlannedSession], written: _Written
) -> list[Question]:
    """Step 3, questions: for each topic occurrence, questions that name its
    period as a date or relative to their own time, with the occurrence's
    detail turns as evidence; ordered by the time they are asked."""
    questions: list[Question] = []
    for s in planned:
        if s.kind == "topic":
            questions.extend(_occurrence_questions(rng, size, prefix, s, written))
    questions.sort(key=lambda q: (q.asked_at, q.qid))
    return questions


# --------------------------------------------------------------------------
# Long-span generator
# --------------------------------------------------------------------------


def generate_long_span(*, seed: int, size: str = "small") -> Conversation:
    """A seeded synthetic history of about nine months (from 2025-01-06).

    ``size="small"`` gives about 300 turns (fast enough for CI),
    ``size="large"`` about 5,000. Recurring topics (dentist, job interviews,
    car repairs, relatives' visits, trips, doctor, book club, vet, home
    repairs, concerts, races, birthdays, house hunting, volunteering; 9 of them
    in the small size) each occur 2 to 4 times in different months with
    different details, between sessions of small talk. Each occurrence gets
    questions that name its period the way a person would, either as a date
    (category "absolute") or relative to the question's own date, ``asked_at``
    (category "relative"). Evidence is the occurrence's detail turns, which
    name the topic as its questions do ("the dentist") and tell the
    occurrence's own detail, which the questions never name; some small talk
    mentions a topic in passing. Turns are distinct texts (a redrawn turn
    replaces one that repeats an earlier text). msg_ids are
    ``ls<seed>:<session>:<turn>``. The same seed and size always give the
    same conversation.

    Three steps, on one seeded stream: plan (sessions, their lines and
    times), write (turns and session summaries), questions.
    """
    if size not in LONG_SPAN_SIZES:
        raise ValueError(f"size must be one of {sorted(LONG_SPAN_SIZES)}, not {size!r}")
    rng = random.Random(f"long-span:{seed}:{size}")
    prefix = f"ls{seed}"
    planned = _plan(rng, size)
    written = _write(rng, prefix, planned)
    questions = _questions(rng, size, prefix, planned, written)
    return Conversation(
        conv_id=f"longspan-{seed}-{size}",
        turns=written.turns,
        sessions=written.sessions,
        questions=tuple(questions),
    )


# --------------------------------------------------------------------------
# Other conversations: what a store that grows holds besides the asked ones
# --------------------------------------------------------------------------

OTHER_SEEDS = range(1, 201)  # the long-span generator's seeds 1.. (seed 0 is the asked long-span set)


def other_conversations(turns: int, avoid: set[str] | frozenset[str] = frozenset()) -> list[Conversation]:
    """``turns`` distinct turns of other conversations, questions left out: the long-span generator's histories
    (seeds 1, 2, ...), each turn's text kept once (and never one in ``avoid``, the asked conversations' texts),
    each session's summary kept when one of its turns is. Never a copy of an asked turn."""
    out: list[Conversation] = []
    seen = set(avoid)
    left = turns
    for seed in OTHER_SEEDS:
        if left <= 0:
            break
        history = generate_long_span(seed=seed, size="large")
        kept: list[Turn] = []
        for turn in history.turns:
            if len(kept) == left:
                break
            if turn.content not in seen:
                seen.add(turn.content)
                kept.append(turn)
        sessions = {t.session for t in kept}
        out.append(
            Conversation(f"other-{seed}", tuple(kept), tuple(s for s in history.sessions if s.session in sessions), ())
        )
        left -= len(kept)
    if left > 0:
        raise ValueError(f"the generator's {len(OTHER_SEEDS)} seeds hold {turns - left} distinct turns, not {turns}")
    return out

"""Benchmark datasets as plain frozen dataclasses.

Two sources:

* ``load_locomo(path)`` reads a LoCoMo file (the original JSON format). The
  data is CC BY-NC and is never shipped with the project: the caller passes
  the path of their own copy.
* ``generate_long_span(seed=..., size=...)`` builds a synthetic, seeded
  history of about nine months in which the same topics recur in different
  periods with different details, so that the topic alone cannot tell the
  evidence apart and the time can. All of its text is written for this
  module.

This module has no dependency on the ``cuedrecall`` package.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

__all__ = [
    "Turn",
    "SessionSummary",
    "Question",
    "Conversation",
    "load_locomo",
    "generate_long_span",
    "LONG_SPAN_START",
    "LONG_SPAN_SIZES",
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
    return dt.astimezone(timezone.utc).isoformat()


# --------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------

_MONTH_NUMBER = {
    name: i + 1
    for i, name in enumerate(
        [
            "january", "february", "march", "april", "may", "june", "july",
            "august", "september", "october", "november", "december",
        ]
    )
}

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
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=timezone.utc)


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
        asked = datetime(1970, 1, 1, tzinfo=timezone.utc)
    else:
        asked = datetime.combine(
            last_turn.date() + timedelta(days=1), time(0, 0), tzinfo=timezone.utc
        )
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


def load_locomo(path, *, limit_conversations: int | None = None) -> list[Conversation]:
    """Load a LoCoMo JSON file (for instance ``locomo10.json``).

    Each turn becomes a :class:`Turn` with ``msg_id = "<sample_id>:<dia_id>"``
    and a timestamp equal to its session's time plus ``i`` seconds for the
    ``i``-th turn, so turns keep their order. Questions are asked the day after
    the conversation's last session; evidence ids that name no turn are
    dropped, and a question left without evidence is dropped. Category 5
    (adversarial) questions are kept; metrics usually leave them out.
    """
    with Path(path).open(encoding="utf-8") as fh:
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

LONG_SPAN_START = date(2025, 1, 6)
_LONG_SPAN_END = date(2025, 9, 30)

# size -> (target number of turns, topic keys used, occurrences per topic)
LONG_SPAN_SIZES = {
    "small": (300, 9, (2, 3)),
    "large": (5000, 14, (2, 4)),
}

# Share of small-talk sessions with one user turn that mentions a topic in passing.
_PASSING_SHARE = 0.15


@dataclass(frozen=True)
class _Topic:
    key: str
    label: str
    anchor: str  # the word every evidence turn and every question of the topic holds
    openers: tuple[str, ...]  # user; the first evidence turn starts with one
    follow_ups: tuple[str, ...]  # assistant, after the first evidence turn
    fillers: tuple[str, ...]  # user, later in the session; not evidence
    # each detail: (gist, sentence after the opener, optional second evidence sentence)
    details: tuple[tuple[str, str, str], ...]
    slots: tuple[tuple[str, tuple[str, ...]], ...]  # the topic's own slot values
    questions: tuple[str, ...]
    passing: tuple[str, ...]  # user mentions in small talk, not evidence


_TOPICS: tuple[_Topic, ...] = (
    _Topic(
        key="dentist",
        label="a dentist appointment",
        anchor="dentist",
        openers=(
            "I had my dentist appointment earlier.",
            "Just got back from the dentist.",
            "Finally went to the dentist, after putting it off for ages.",
            "The dentist visit is done.",
            "Dentist update:",
            "Survived the dentist.",
        ),
        follow_ups=(
            "Oh no. How do you feel now?",
            "Ouch. Is it sore?",
            "How are your teeth after that?",
            "Was it as bad as you expected?",
            "At least it's dealt with. Are you okay?",
            "That doesn't sound fun. Did it hurt?",
        ),
        fillers=(
            "I always get a bit tense in that chair.",
            "The waiting room still has the same magazines from {waiting_year}.",
            "At least the drive there was quick, only {minutes} minutes.",
            "I really should floss more often.",
            "The receptionist remembered my name, which was nice.",
            "I treated myself to {treat} afterwards, which probably defeats the point.",
        ),
        details=(
            (
                "a filling in the {tooth}",
                "She found a small cavity in my {tooth} and put in a tooth-coloured filling.",
                "The dentist said the numbness would wear off by {clock}, and the filling cost {price} dollars"
                " after insurance.",
            ),
            (
                "a cleaning by the hygienist {hygienist}",
                "It was only a cleaning; the hygienist, {hygienist}, scraped a lot of tartar off behind my front"
                " teeth.",
                "The dentist told me to switch to a soft-bristle brush because I brush too hard.",
            ),
            (
                "a temporary crown on the {tooth}",
                "They fitted a temporary crown on my {tooth}, the one I cracked on {hard_food}.",
                "The dentist says the permanent porcelain crown will cost {price} dollars.",
            ),
            (
                "an impacted wisdom tooth",
                "The X-ray showed that my lower wisdom tooth is impacted and pushing on the next molar.",
                "The dentist gave me a referral to an oral surgeon on {street}.",
            ),
            (
                "bleeding gums",
                "My gums were bleeding, and she measured pockets of {mm} millimetres around the back teeth.",
                "The dentist wants me to use interdental brushes every night and come back for a deep clean.",
            ),
        ),
        slots=(
            ("tooth", ("lower left molar", "upper right premolar", "lower right molar", "upper left canine",
                       "upper left molar", "lower front incisor")),
            ("hygienist", ("Marta", "Ines", "Kofi", "Helga", "Dev", "Lucia")),
            ("hard_food", ("a popcorn kernel", "an olive stone", "a boiled sweet", "a cherry pit", "a hazelnut")),
            ("mm", ("four", "five", "six")),
            ("waiting_year", ("2009", "2012", "2014", "2016")),
            ("treat", ("a hot chocolate", "a croissant", "an ice cream", "a cinnamon bun")),
        ),
        questions=(
            "What did the dentist say {when}?",
            "What did the dentist do {when}?",
            "What happened at my dentist appointment {when}?",
            "What did I tell you about the dentist {when}?",
        ),
        passing=(
            "I should book the dentist sometime, I'm overdue for a check-up.",
            "{name} was complaining about her dentist at lunch.",
            "I walked past the dentist on {street} and remembered I owe them a call.",
            "{relation} swears by a dentist in {city}, it seems a long way to go for teeth.",
            "My tooth twinged on something cold, I hope I don't need the dentist again.",
        ),
    ),
    _Topic(
        key="job_interview",
        label="a job interview",
        anchor="interview",
        openers=(
            "I had a job interview today.",
            "The interview I mentioned was today.",
            "Just finished an interview, my hands are still shaking.",
            "Interview day is over.",
            "Okay, the job interview happened.",
            "Back from the interview.",
        ),
        follow_ups=(
            "Tell me everything, how was it?",
            "How do you think it went?",
            "Which role was it for again?",
            "Did you feel prepared?",
            "Were they friendly?",
            "How long did it go on for?",
        ),
        fillers=(
            "I wore the grey blazer again, for luck.",
            "I think I talked too fast at the start.",
            "They said I'd hear back soon.",
            "Job hunting is exhausting.",
            "I got there {minutes} minutes early and walked around the block twice.",
            "Their office had a slide between the floors, which seemed a bit much.",
        ),
        details=(
            (
                "{company}, a pipeline design question",
                "It was with {company} for a data engineer role, in front of a panel of {panel}.",
                "In the interview they asked me to design a pipeline that removes duplicate click events in real time.",
            ),
            (
                "{company}, a question about a teammate missing deadlines",
                "This one was at {company}, for a team lead position in their {dept} group.",
                "The interview panel asked how I would handle a teammate who keeps missing deadlines.",
            ),
            (
                "{company}, a rate limiter coding task",
                "It was a video call with {company} for a backend developer job.",
                "Halfway through the interview they gave me a live coding task: write a rate limiter with a"
                " sliding window.",
            ),
            (
                "{company}, a question about a decision changed by data",
                "It was at {company}, in their office on {street}, for an analytics manager role.",
                "The interview ended with them asking me to walk through a time I changed a decision using data.",
            ),
            (
                "{company}, a question about salary expectations",
                "It was the final round at {company}, with their head of engineering, {person}.",
                "At the end of the interview {person} asked about my salary expectations and I said {salary}.",
            ),
        ),
        slots=(
            ("company", ("Northwind Analytics", "Harbor Logistics", "Bluefin Software", "Cedar Health",
                         "Quarry Labs", "Tidewater Bank", "Maple Robotics", "Orchid Media")),
            ("panel", ("three", "four", "two engineers and a manager")),
            ("dept", ("routing", "payments", "search", "warehouse", "mobile")),
            ("person", ("Dana Whitfield", "Omar Haddad", "Ingrid Lund", "Paolo Conti", "Grace Adeyemi")),
            ("salary", ("eighty-five thousand", "ninety thousand", "ninety-two thousand", "a hundred thousand")),
        ),
        questions=(
            "Which company did I have the job interview with {when}?",
            "What did they ask me at the job interview {when}?",
            "How did my job interview go {when}?",
            "What did the recruiter ask in my interview {when}?",
        ),
        passing=(
            "{name} has a job interview at {company} soon and asked me for tips.",
            "I saw a posting at {company} and wondered if I'd get an interview.",
            "{relation} bombed an interview by calling the manager by the wrong name.",
            "I keep dreaming I turn up to an interview in my pyjamas.",
        ),
    ),
    _Topic(
        key="car_repair",
        label="a car repair",
        anchor="mechanic",
        openers=(
            "The car is back from the mechanic.",
            "I had to take the car to the mechanic today.",
            "Spent the morning at the mechanic's garage.",
            "Car trouble again, so the mechanic had it all day.",
            "The mechanic finally called about the car.",
        ),
        follow_ups=(
            "What was wrong with it?",
            "Oh no, was it serious?",
            "Was it expensive?",
            "Is it running properly now?",
            "Did they get it done the same day?",
        ),
        fillers=(
            "The coffee in the waiting area was terrible.",
            "I walked to the {shop} while they worked on it.",
            "That car is getting old, it has {mileage} miles on it.",
            "I had to get a taxi home, which was another {small_price} dollars.",
            "The courtesy car smelled of pine air freshener.",
        ),
        details=(
            (
                "new brake pads and rotors",
                "The front brake pads were worn down to the metal, so they replaced the pads and both rotors.",
                "The mechanic charged {price} dollars for the brake job.",
            ),
            (
                "a failed alternator",
                "The battery kept dying, and it turned out the alternator had failed.",
                "The mechanic put in a rebuilt alternator and I got the car back by {clock}.",
            ),
            (
                "a nail in the {side} tyre",
                "I picked up a nail in the {side} tyre and it went flat on the {road}.",
                "The mechanic said it was too close to the sidewall to patch, so I paid {price} dollars for a"
                " new tyre.",
            ),
            (
                "a cracked windscreen",
                "A stone cracked the windscreen on the {road} and the crack kept spreading.",
                "The mechanic replaced the whole windscreen and recalibrated the lane camera.",
            ),
            (
                "an oil leak",
                "There was a puddle of oil under the car every morning.",
                "The mechanic found a leaking oil pan gasket and replaced it for {price} dollars.",
            ),
        ),
        slots=(
            ("side", ("rear left", "rear right", "front left", "front right")),
            ("road", ("ring road", "motorway", "bypass", "coast road")),
            ("mileage", ("ninety thousand", "a hundred and ten thousand", "a hundred and forty thousand")),
        ),
        questions=(
            "What did the mechanic fix on my car {when}?",
            "What did the mechanic say was wrong with the car {when}?",
            "Why did I take the car to the mechanic {when}?",
        ),
        passing=(
            "{name}'s car is at the mechanic again, so I'm giving her lifts.",
            "The car is making a clicking noise; I'll mention it to the mechanic if it keeps up.",
            "There's a new mechanic on {street}, {relation} says he's honest.",
            "I should get the car to the mechanic for its service at some point.",
        ),
    ),
    _Topic(
        key="family_visit",
        label="a visit from relatives",
        anchor="visit",
        openers=(
            "We had family staying for a visit.",
            "My relatives just left after their visit.",
            "The house is quiet again now the visit is over.",
            "The family visit went well.",
            "Family visit report:",
        ),
        follow_ups=(
            "That's lovely. How was it?",
            "How was having them over?",
            "Did you have a good time together?",
            "Was it a long stay?",
            "Are you exhausted now?",
        ),
        fillers=(
            "The guest room finally got some use.",
            "I cooked far too much food, there's {dish} left over.",
            "It was lovely, but I'm tired now.",
            "We stayed up late talking every night.",
            "We went through about {n} bottles of wine between us.",
        ),
        details=(
            (
                "my sister Leah and her twins",
                "My sister Leah came with her twin boys, and we spent most of the time at the aquarium.",
                "During the visit Leah told us she's expecting a third baby.",
            ),
            (
                "my parents",
                "My parents drove up from {city} and my dad fixed the squeaky back door.",
                "Mum brought her recipe box on the visit and we made her apricot tart together.",
            ),
            (
                "my cousin Ravi",
                "My cousin Ravi stayed two nights on his way to a conference in {city}.",
                "On the last evening of his visit he talked me into trying the new Ethiopian place on {street}.",
            ),
            (
                "my aunt Greta",
                "Aunt Greta came down from {city} and we took her to the botanical garden.",
                "At the end of her visit she gave me my grandfather's old pocket watch.",
            ),
            (
                "my brother Tomas and his new puppy",
                "My brother Tomas and his wife came up from {city} with their new puppy, {puppy}.",
                "{puppy} chewed through a cushion on the first night of the visit.",
            ),
        ),
        slots=(("puppy", ("Pickle", "Mango", "Otis", "Juno")),),
        questions=(
            "Who came to visit {when}?",
            "What happened during the family visit {when}?",
            "What did I tell you about the family visit {when}?",
        ),
        passing=(
            "{relation} has her in-laws coming to visit and she's dreading it.",
            "I should plan a visit to my parents soon.",
            "{name} is back from a family visit in {city} and looks shattered.",
            "We need a proper guest bed before the next family visit.",
        ),
    ),
    _Topic(
        key="trip",
        label="a trip",
        anchor="trip",
        openers=(
            "I'm back from my trip.",
            "Just got home from the trip.",
            "Unpacking after the trip now.",
            "Back home after the trip.",
            "The trip is over, sadly.",
        ),
        follow_ups=(
            "Welcome back! How was it?",
            "Did you enjoy being away?",
            "What was the best part?",
            "Was the weather kind to you?",
            "Sounds like a real break. Tell me more?",
        ),
        fillers=(
            "The flight home was delayed by {minutes} minutes, of course.",
            "I took far too many photos, something like {big_n}.",
            "My suitcase barely closed on the way back.",
            "It's always strange coming back to normal life.",
            "I brought back {souvenir} for the office.",
        ),
        details=(
            (
                "Lisbon",
                "We spent four days in Lisbon and rode the old yellow tram up to the castle.",
                "The best meal of the trip was grilled sardines in a tiny place in Alfama.",
            ),
            (
                "a cabin on Lake Wren",
                "We rented a cabin on Lake Wren and went kayaking every morning.",
                "One evening on the trip we watched a moose swim across the lake.",
            ),
            (
                "a conference in Chicago",
                "I went to Chicago for a work conference at the convention centre.",
                "On that trip I gave my first talk, about cleaning messy sensor data, to about {big_n} people.",
            ),
            (
                "Edinburgh",
                "We walked up Arthur's Seat in Edinburgh on the first morning.",
                "It rained every afternoon of the trip, so we hid in the whisky museum.",
            ),
            (
                "a hiking trip in the Dolomites",
                "We hiked between mountain huts in the Dolomites, about {km} kilometres a day.",
                "The highlight of the trip was sunrise over the Tre Cime.",
            ),
        ),
        slots=(("souvenir", ("a box of pastries", "some fudge", "fridge magnets", "a bag of sweets")),
               ("km", ("fifteen", "eighteen", "twenty"))),
        questions=(
            "Where did I go on my trip {when}?",
            "What did I do on the trip {when}?",
            "What did I tell you about my trip {when}?",
        ),
        passing=(
            "{name} is planning a trip to {city} and wants me to come.",
            "I keep looking at flights for a trip I can't afford.",
            "{relation} just got back from a trip and brought me {souvenir}.",
            "Maybe a short trip somewhere would do me good.",
        ),
    ),
    _Topic(
        key="doctor",
        label="a doctor's appointment",
        anchor="doctor",
        openers=(
            "I saw the doctor this afternoon.",
            "Had my appointment with the doctor today.",
            "Back from the doctor.",
            "The doctor's appointment was today.",
            "Went to the doctor at last.",
        ),
        follow_ups=(
            "What did they say?",
            "Is everything alright?",
            "How did the appointment go?",
            "Did they find anything?",
            "I hope it's nothing serious. How are you?",
        ),
        fillers=(
            "I waited {minutes} minutes past my slot.",
            "I hate those paper gowns.",
            "At least I finally went.",
            "I wrote my questions down beforehand this time.",
            "The pharmacy next door had a queue of {n} people.",
        ),
        details=(
            (
                "high blood pressure",
                "My blood pressure was {bp}, which is too high.",
                "The doctor wants me to cut back on salt and measure it at home twice a day.",
            ),
            (
                "tendinitis in the knee",
                "The pain in my knee is patellar tendinitis from running.",
                "The doctor referred me to a physiotherapist and told me to stop running for now.",
            ),
            (
                "allergies to birch pollen and dust mites",
                "The allergy test showed I'm allergic to birch pollen and dust mites.",
                "The doctor prescribed a nasal spray and told me to wash the bedding in hot water.",
            ),
            (
                "low vitamin D at a physical",
                "It was my annual physical, and the blood work showed low vitamin D.",
                "The doctor told me to take {vit_d} units of vitamin D a day.",
            ),
            (
                "a throat infection",
                "My sore throat turned out to be a bacterial infection.",
                "The doctor gave me a course of antibiotics and a note for work.",
            ),
        ),
        slots=(("bp", ("148 over 95", "152 over 97", "145 over 92", "150 over 96")),
               ("vit_d", ("a thousand", "two thousand"))),
        questions=(
            "What did the doctor tell me {when}?",
            "What did I learn at my doctor's appointment {when}?",
            "What did the doctor say about my health {when}?",
        ),
        passing=(
            "I should see a doctor about this cough if it doesn't clear up.",
            "{name} finally found a doctor who listens to her.",
            "The doctor's surgery on {street} is closing, which is a nuisance.",
            "{relation} is a doctor and never gets a day off.",
        ),
    ),
    _Topic(
        key="book_club",
        label="the book club",
        anchor="club",
        openers=(
            "Book club met tonight.",
            "We had book club at Priya's place this evening.",
            "Just got back from book club.",
            "Book club was lively tonight.",
            "Book club report:",
        ),
        follow_ups=(
            "Which book was it this time?",
            "How was the discussion?",
            "Did everyone finish it?",
            "Did you like it?",
            "Were there any big arguments?",
        ),
        fillers=(
            "Someone brought homemade {bake}.",
            "Half the group hadn't finished it.",
            "We spent the first hour just catching up.",
            "I always leave with a longer reading list.",
            "There were {n} of us this time, a record.",
        ),
        details=(
            (
                "The Salt Orchard",
                "We discussed The Salt Orchard, and most people hated the ending where the sister sells the farm.",
                "At book club I argued that the orchard stands for the mother.",
            ),
            (
                "Nine Winters North",
                "The book was Nine Winters North, the arctic expedition memoir.",
                "Tom said at book club that the chapter about the sled dogs made him put it down for ages.",
            ),
            (
                "The Glass Cartographer",
                "We read The Glass Cartographer, the mystery set in a map shop in Prague.",
                "I was the only one at book club who guessed the apprentice was the murderer.",
            ),
            (
                "Small Hours",
                "This time the book was Small Hours, short stories about night-shift workers.",
                "My favourite, and the club's, was the one about a toll-booth operator who writes letters to drivers.",
            ),
            (
                "The Weight of Kites",
                "We read The Weight of Kites, about a family of kite makers in Gujarat.",
                "The club voted it the best book of the year so far, {votes} votes out of {n_members}.",
            ),
        ),
        slots=(("votes", ("seven", "eight", "nine")), ("n_members", ("ten", "eleven", "twelve"))),
        questions=(
            "Which book did the book club discuss {when}?",
            "What did we talk about at book club {when}?",
            "What happened at book club {when}?",
        ),
        passing=(
            "I haven't even started the book for the book club yet.",
            "{name} wants to join our book club, I said I'd ask.",
            "The book club chat is arguing about snacks again.",
            "{relation} runs a book club that only reads poetry.",
        ),
    ),
    _Topic(
        key="vet",
        label="a vet visit with Biscuit",
        anchor="Biscuit",
        openers=(
            "Took Biscuit to the vet today.",
            "Biscuit had a vet appointment this morning.",
            "Back from the vet with a very grumpy Biscuit.",
            "Biscuit's vet visit is done.",
            "Biscuit and I spent the afternoon at the vet.",
        ),
        follow_ups=(
            "How is he doing?",
            "What did the vet say?",
            "Is he alright?",
            "Was it just a check-up?",
            "Poor thing. Is he okay now?",
        ),
        fillers=(
            "He shook the whole time on the table.",
            "He got a treat at the end, so he forgave me.",
            "The vet bill always surprises me, {price} dollars this time.",
            "He slept the entire afternoon after.",
            "There was a parrot in the waiting room that kept saying hello.",
        ),
        details=(
            (
                "his booster shots",
                "It was his yearly booster shots, and he weighs {kilos} kilos now.",
                "The vet said Biscuit is a little overweight and we should cut back on treats.",
            ),
            (
                "an ear infection",
                "He had an ear infection from swimming in the pond at {park}.",
                "We have to put drops in Biscuit's left ear twice a day.",
            ),
            (
                "a thorn in his paw",
                "He was limping, and the vet found a thorn stuck between the pads of his front paw.",
                "She pulled it out and wrapped Biscuit's paw in a blue bandage.",
            ),
            (
                "a dental cleaning",
                "He had his teeth cleaned under anaesthetic and they pulled one broken molar.",
                "Biscuit can only eat soft food until it heals.",
            ),
            (
                "an upset stomach",
                "He'd eaten half a {food} he found in the park and was sick all night.",
                "The vet gave Biscuit an injection for the nausea and a bland diet of rice and chicken.",
            ),
        ),
        slots=(("kilos", ("13", "14", "15", "16")), ("food", ("sandwich", "pork pie", "kebab", "pizza slice"))),
        questions=(
            "What did the vet say about Biscuit {when}?",
            "Why did I take Biscuit to the vet {when}?",
            "What happened with Biscuit at the vet {when}?",
        ),
        passing=(
            "Biscuit stole a {food} off the counter while I was on the phone.",
            "I walked Biscuit around {park} for an hour and he's still full of beans.",
            "Biscuit is snoring next to me as I type.",
            "Biscuit barked at the postman again, {relation} thinks it's hilarious.",
            "I should book Biscuit's next check-up at the vet.",
        ),
    ),
    _Topic(
        key="home_repair",
        label="a home repair",
        anchor="repair",
        openers=(
            "We had a repair person at the house today.",
            "The repair I was waiting for finally happened.",
            "Another house repair today.",
            "The repair work in the house is finished.",
            "Repair day at home:",
        ),
        follow_ups=(
            "What needed fixing?",
            "Did they manage to fix it?",
            "What was the problem?",
            "Was it a big job?",
            "Is everything working again?",
        ),
        fillers=(
            "There was dust everywhere afterwards.",
            "I had to work from the kitchen table all day.",
            "Owning a house is a never-ending list.",
            "I made them coffee and we chatted a bit.",
            "They left a ladder in the hall, I hope they're coming back for it.",
        ),
        details=(
            (
                "a cracked pipe under the sink",
                "The plumber found that the pipe under the kitchen sink had a cracked joint.",
                "The repair was quick: he replaced the trap and the leak stopped.",
            ),
            (
                "a new water heater",
                "Our water heater died, so we had no hot water at all.",
                "The repair turned into a replacement, a new fifty-gallon heater in the basement for {price} dollars.",
            ),
            (
                "a roof leak",
                "A roofer fixed the leak above the bedroom, where the storm blew some shingles off.",
                "As part of the repair he also cleared the gutters, which were full of pine needles.",
            ),
            (
                "new electrical wiring",
                "An electrician replaced the old fuse box with a breaker panel.",
                "He said the garage wiring was a fire risk, so the repair covered that too.",
            ),
            (
                "a rotten window frame",
                "The carpenter cut out the rotten wood in the {room} window frame and spliced in new oak.",
                "The repair still needs a coat of paint once the filler dries.",
            ),
        ),
        slots=(("room", ("bathroom", "kitchen", "spare room", "front room")),),
        questions=(
            "What did the repair person fix {when}?",
            "What was the house repair about {when}?",
            "What needed repair in my house {when}?",
        ),
        passing=(
            "The tap in the bathroom drips, another repair for the list.",
            "{relation} recommended a repair man, but he never answers his phone.",
            "{name}'s landlord still hasn't done the repair on her boiler.",
            "I watched a video on how to repair a squeaky floorboard and gave up halfway.",
        ),
    ),
    _Topic(
        key="concert",
        label="a concert",
        anchor="concert",
        openers=(
            "I went to a concert tonight.",
            "My ears are still ringing from the concert.",
            "Concert night was amazing.",
            "Finally saw some live music, a proper concert.",
            "Home from the concert.",
        ),
        follow_ups=(
            "Who did you see?",
            "How was the show?",
            "Was it a good crowd?",
            "Did they play your favourites?",
            "Sounds fun! Worth the ticket?",
        ),
        fillers=(
            "The queue for drinks was endless.",
            "I didn't get home until after one.",
            "My feet hurt from standing all night.",
            "I want to go to more live shows.",
            "The tickets were {small_price} dollars each, a bargain really.",
        ),
        details=(
            (
                "The Marigold Ferry",
                "It was The Marigold Ferry at the old theatre, and they opened with a slow acoustic set.",
                "Near the end of the concert the drummer broke a stick and threw it into the crowd.",
            ),
            (
                "the city symphony",
                "We went to the city symphony to hear the New World Symphony.",
                "The horn soloist got a standing ovation at the end of the concert.",
            ),
            (
                "Velvet Lanterns",
                "I saw Velvet Lanterns on the outdoor stage in {park}.",
                "For the encore of the concert they played a cover of an old disco song.",
            ),
            (
                "a jazz trio",
                "It was a jazz trio at the basement club on {street}.",
                "Halfway through the concert the pianist's daughter joined them on clarinet.",
            ),
            (
                "a choir in the cathedral",
                "A chamber choir sang in the cathedral, mostly Renaissance pieces.",
                "The concert ended with all the candles put out one by one.",
            ),
        ),
        slots=(),
        questions=(
            "Which concert did I go to {when}?",
            "What happened at the concert {when}?",
            "Who played at the concert I went to {when}?",
        ),
        passing=(
            "{name} has a spare ticket for a concert and I'm tempted.",
            "The neighbours were playing concert recordings at full volume.",
            "I saw a poster for a concert on {street}, it looks good.",
            "{relation} wants to go to a concert but can't pick one.",
        ),
    ),
    _Topic(
        key="race",
        label="a running race",
        anchor="race",
        openers=(
            "I ran the race this morning!",
            "Race day is done.",
            "Crossed the finish line of the race today.",
            "My legs are dead after the race.",
            "Race report:",
        ),
        follow_ups=(
            "Congratulations! How did it go?",
            "What was your time?",
            "How did you feel out there?",
            "Did you hit your goal?",
            "Well done! Are you sore?",
        ),
        fillers=(
            "The start was so crowded.",
            "I forgot to charge my watch beforehand.",
            "I ate two bananas at the finish.",
            "I'm taking a rest day tomorrow.",
            "There were about {big_n} runners, way more than I expected.",
        ),
        details=(
            (
                "the Riverside 5K and a bronze medal",
                "It was the Riverside 5K and I finished in 26 minutes {secs} seconds.",
                "I came third in my age group in the race and got a little bronze medal.",
            ),
            (
                "a hilly 10K",
                "It was a hilly 10K and I finished in {tenk} minutes.",
                "A cramp in my calf made me walk for a minute around the seventh kilometre of the race.",
            ),
            (
                "a first half marathon",
                "I finished my first half marathon in 2 hours and {halfm} minutes.",
                "My brother ran the last mile of the race with me.",
            ),
            (
                "a muddy trail run",
                "It was a 12-kilometre trail run through the forest, and it was pure mud.",
                "I slipped and scraped my knee on a root halfway through the race.",
            ),
            (
                "a relay with colleagues",
                "It was a relay with three colleagues, each of us running five kilometres.",
                "Our team finished the race {place} out of {teams} teams.",
            ),
        ),
        slots=(("secs", ("12", "25", "40", "51")), ("tenk", ("56", "58", "61", "63")),
               ("halfm", ("2", "6", "11", "14")), ("place", ("ninth", "twelfth", "fifteenth")),
               ("teams", ("forty", "fifty", "sixty"))),
        questions=(
            "How did my race go {when}?",
            "What was my race result {when}?",
            "Which race did I run {when}?",
        ),
        passing=(
            "{name} talked me into signing up for another race.",
            "I saw a charity race on {street} this morning, the road was closed.",
            "{relation} is training for a race and only talks about splits.",
            "I'm not sure I'm fit enough for a race right now.",
        ),
    ),
    _Topic(
        key="birthday",
        label="a birthday party",
        anchor="birthday",
        openers=(
            "We had a birthday party today.",
            "The birthday party is over and the house is a mess.",
            "Big birthday celebration today.",
            "We celebrated a birthday.",
            "Birthday party report:",
        ),
        follow_ups=(
            "Whose was it?",
            "How was the party?",
            "Did everyone have fun?",
            "What did you do for it?",
            "Aww, was it a surprise?",
        ),
        fillers=(
            "There's still so much cake left.",
            "The neighbours were very patient about the noise.",
            "I'm still finding confetti everywhere.",
            "It went on later than planned.",
            "We used {n} rolls of tape on the decorations.",
        ),
        details=(
            (
                "my niece Ada's seventh",
                "It was my niece Ada's seventh, with a dinosaur theme.",
                "For the birthday we hired a man with a real owl and the kids went wild.",
            ),
            (
                "my partner's fortieth",
                "It was my partner's fortieth, and we surprised him at the bowling alley.",
                "About {dozen} of his old university friends showed up for his birthday.",
            ),
            (
                "my friend Sam's thirtieth",
                "My friend Sam turned thirty and we had a picnic by the river.",
                "I baked a carrot cake for the birthday, and it collapsed in the middle.",
            ),
            (
                "Grandma's ninetieth",
                "We celebrated Grandma's ninetieth at her care home.",
                "At her birthday she sang an old folk song for everyone.",
            ),
            (
                "my neighbour Frank's sixtieth",
                "It was my neighbour Frank's sixtieth, a barbecue in his garden.",
                "His kids gave him a hot-air balloon ride for his birthday and he nearly cried.",
            ),
        ),
        slots=(("dozen", ("twelve", "fifteen", "twenty")),),
        questions=(
            "Whose birthday did we celebrate {when}?",
            "What happened at the birthday party {when}?",
            "What did I tell you about the birthday {when}?",
        ),
        passing=(
            "I forgot {name}'s birthday and sent a very late card.",
            "{relation} is planning a surprise birthday and I'm sworn to secrecy.",
            "I need a birthday present for my nephew, any ideas?",
            "The bakery on {street} does great birthday cakes, apparently.",
        ),
    ),
    _Topic(
        key="house_hunting",
        label="house hunting",
        anchor="viewing",
        openers=(
            "We went to another flat viewing today.",
            "Went to an apartment viewing this afternoon.",
            "House hunting again: one more viewing.",
            "Just came from a viewing of a place to rent.",
            "Viewing number who-knows-what is done.",
        ),
        follow_ups=(
            "How was it?",
            "Any good?",
            "Could you see yourself living there?",
            "What was the place like?",
            "Fingers crossed. Was it promising?",
        ),
        fillers=(
            "The agent was {minutes} minutes late.",
            "Rents around here are unbelievable.",
            "We're getting tired of looking.",
            "I made a list of pros and cons on the way home.",
            "There were {n} other couples looking at the same time.",
        ),
        details=(
            (
                "a flat on Elm Road",
                "The flat on Elm Road had a lovely balcony, but the bedroom had no window.",
                "At the viewing the agent said the rent is {rent} including heating.",
            ),
            (
                "a loft by the canal",
                "We saw a loft by the canal with huge windows and exposed brick.",
                "The catch, we found at the viewing, is that the only bathroom is up a spiral staircase.",
            ),
            (
                "a terraced house with roses",
                "It was a small terraced house with a garden full of rose bushes.",
                "The owner was at the viewing and wants tenants who will keep the roses alive.",
            ),
            (
                "an apartment by the station",
                "The apartment near the station was cheap, but the trains shake the windows.",
                "We put in an application after the viewing anyway, just in case.",
            ),
            (
                "a basement flat with a garden",
                "It was a basement flat with its own little garden and a wood stove.",
                "At the viewing it smelled a bit damp, and the rent is {rent}.",
            ),
        ),
        slots=(("rent", ("1,450 a month", "1,650 a month", "1,720 a month", "1,380 a month")),),
        questions=(
            "Which place did we see at the viewing {when}?",
            "What was the flat viewing like {when}?",
            "What did I say about the viewing {when}?",
        ),
        passing=(
            "{name} has a flat viewing on {street} and asked me to come along.",
            "I keep scrolling rental listings, maybe I'll book another viewing.",
            "{relation} said the viewing for her new place was a total scrum.",
            "Every viewing slot on that listing is already gone.",
        ),
    ),
    _Topic(
        key="volunteering",
        label="volunteering",
        anchor="volunteer",
        openers=(
            "I did my volunteer shift today.",
            "My volunteer morning went well.",
            "Back from the volunteer group.",
            "Spent the day on a volunteer job.",
            "Volunteer shift done.",
        ),
        follow_ups=(
            "What did you do this time?",
            "How was the shift?",
            "Were there many people helping?",
            "Was it rewarding?",
            "That's great of you. How did it go?",
        ),
        fillers=(
            "My back is sore, but it was worth it.",
            "I met a retired teacher who has done it for twenty years.",
            "They gave us free t-shirts.",
            "I want to bring {name} next time.",
            "We had {bake} in the break, someone's grandmother made it.",
        ),
        details=(
            (
                "the food bank",
                "At the food bank I sorted canned goods for three hours.",
                "The volunteer team packed {boxes} boxes for families.",
            ),
            (
                "a river park cleanup",
                "We cleaned up the river park and pulled a shopping trolley out of the water.",
                "Altogether the volunteer crew filled {bags} bags of rubbish.",
            ),
            (
                "the library reading hour",
                "I helped with the library reading hour, reading picture books to toddlers.",
                "One boy asked his volunteer reader, me, for the same dragon book four times.",
            ),
            (
                "the animal shelter",
                "At the animal shelter I walked dogs and cleaned the cat room.",
                "A shy grey cat called {cat} finally let this volunteer pet her.",
            ),
            (
                "a hospital radio show",
                "I co-hosted the hospital radio request show for two hours.",
                "The most requested song of my volunteer slot was {song}.",
            ),
        ),
        slots=(("boxes", ("180", "240", "310")), ("bags", ("28", "36", "44")),
               ("cat", ("Pebble", "Smudge", "Willow")),
               ("song", ("an old Elvis ballad", "a Beatles song", "a Dolly Parton classic"))),
        questions=(
            "Where did I volunteer {when}?",
            "What did I do at my volunteer shift {when}?",
            "What happened when I did volunteer work {when}?",
        ),
        passing=(
            "{name} asked if I'd volunteer at the school fair.",
            "I should sign up for another volunteer shift soon.",
            "{relation} wants to volunteer somewhere but doesn't know where to start.",
            "The volunteer group's group chat is very busy today.",
        ),
    ),
)

_ACK_LEADS = (
    "Oh, interesting.", "Got it.", "Noted.", "I see.", "Oh wow.", "Ah.", "Right.", "Mm.",
    "Okay.", "Huh.", "Ha.", "Hm.", "", "", "",
)
_ACKS = (
    "That's good to know.",
    "Thanks for telling me, I'll remember that.",
    "That sounds like a lot.",
    "That makes sense.",
    "Well, at least you know now.",
    "Thanks for the update.",
    "That's quite a story.",
    "I'm glad you told me.",
    "That's worth remembering.",
    "Sounds like you handled it well.",
    "What a day.",
    "I'll keep it in mind.",
)

_TOPIC_CLOSERS = (
    "Anyway, that's my news.",
    "I'll let you know if anything changes.",
    "Okay, I need to get on with the rest of my day.",
    "Thanks for listening.",
    "Right, time for {drink}.",
    "I'm off to make dinner now.",
)

_ASSISTANT_CLOSERS = (
    "Take care, and tell me how it goes.",
    "Glad you shared it. Talk soon.",
    "Sounds like you've handled it well.",
    "Let me know if you want to talk it through later.",
    "Enjoy the rest of your evening.",
    "Rest up, and talk later.",
)

# Small talk: theme -> (label, (user line, assistant reply) pairs). Slots in
# braces are filled from _SLOTS (or computed, see _computed); {weather}
# depends on the month.
_SMALL_TALK: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "weather": (
        "the weather",
        (
            ("It's {weather} here again.", "Do you still plan to get outside?"),
            ("I got caught in {weather_event} on the way to the {shop}.", "Oh no, did you get soaked?"),
            ("This {weather} weather makes me want to stay inside with {drink}.",
             "Weather like that is a good excuse for a slow day."),
            ("Is it just me, or has the weather been strange lately?",
             "It does seem to change every hour at the moment."),
            ("The forecast looks {weather} for the weekend, so much for {plan}.",
             "Maybe move {plan2} indoors if it keeps up."),
            ("My umbrella finally gave up on {street}.", "Time for a sturdier one, maybe."),
            ("It was so {weather} that I took the bus instead of cycling.",
             "Sensible. Make sure to dress for it if you head out again."),
            ("{name} sent me a photo of the sky over {city}, it looks nicer there.",
             "Hopefully it turns around where you are soon."),
            ("The thermometer on the balcony says {temp} degrees.", "Do any of your plans depend on the weather?"),
        ),
    ),
    "cooking": (
        "cooking",
        (
            ("I tried making {dish} tonight.", "That sounds delicious. Did you follow a recipe?"),
            ("Do you have tips for {dish}? Mine always turns out {fail}.",
             "Lower heat and more patience usually help."),
            ("I bought {ingredient} at the market and I'm not sure what to do with it.",
             "Roasting it with olive oil and salt is a safe start."),
            ("We had {dish} for dinner and there are leftovers for ages.",
             "Leftovers are the best part of cooking a big batch."),
            ("I'm trying to cook at home more to save money.",
             "Cooking gets easier once you have a few go-to dishes."),
            ("My {dish} came out {fail}; I think I rushed it.",
             "Maybe try it again at the weekend when there's more time."),
            ("I found an old cookbook of my mother's with a recipe for {dish}.",
             "Old cookbooks often have the most reliable recipes."),
            ("{name} came round and we made {dish} together.", "Cooking with someone else is half the fun."),
            ("I burnt my hand on the oven tray making {dish}.",
             "Run it under cold water for a good while, and keep an eye on it."),
        ),
    ),
    "tv": (
        "television",
        (
            ("I started watching {show}.", "What do you think of it so far?"),
            ("People keep recommending {show}. Have you heard of it?", "I've heard good things about it."),
            ("I watched {n} episodes of {show} instead of sleeping.", "Was it worth the lost sleep?"),
            ("The new season of {show} is a letdown so far.", "Some shows take a few episodes to get going."),
            ("I can't decide whether to start {show} or {show2}.",
             "Sometimes rewatching an old favourite is the best choice."),
            ("{show} had such a twist at the end of the episode.", "No spoilers, but I hope it pays off."),
            ("We cancelled one of our streaming services to save {small_price} dollars.",
             "There's more on than anyone could watch anyway."),
            ("{name} won't stop talking about {show}.", "If you liked {show2}, you might enjoy it too."),
        ),
    ),
    "weekend": (
        "plans for the weekend",
        (
            ("Any ideas for the weekend? I'm thinking about {plan}.", "That sounds like a good way to spend it."),
            ("We're planning {plan} with {name} at the weekend.", "You could pair it with a nice lunch out."),
            ("I might just stay home and {chore} this weekend.", "A quiet weekend can be just as good."),
            ("My weekend plans with {name} fell through, so now it's free.",
             "Sometimes an empty calendar is the best plan."),
            ("I want to do something outdoors this weekend, maybe {plan}.",
             "Maybe check the forecast before you decide."),
            ("I need a weekend with no plans at all.", "Don't forget to leave some time to rest."),
            ("{relation} invited us to {plan}, I'm not sure I have the energy.",
             "You're allowed to say no, you know."),
            ("I've promised myself I'll {chore} before the weekend is over.",
             "Is anyone helping, or is it just you?"),
        ),
    ),
    "garden": (
        "the garden",
        (
            ("The {plant} in the garden finally {garden_event}.", "That's satisfying to see."),
            ("I spent an hour weeding around the {plant}.", "Weeding is oddly relaxing once you get into it."),
            ("Should I prune the {plant} now or wait?", "Waiting until after flowering is usually the safe choice."),
            ("Something keeps eating my {plant}.", "Slugs are a common culprit."),
            ("I repotted the {plant} on the windowsill.", "Fresh soil should give it a boost."),
            ("The compost bin is getting full again.", "You could spread the compost on the beds soon."),
            ("{relation} gave me some {plant} cuttings.", "Cuttings are a lovely way to fill a garden."),
            ("I bought {n} bags of compost at the garden centre.", "The beds will thank you for it."),
        ),
    ),
    "exercise": (
        "exercise",
        (
            ("I went for a swim at lunch, {n} lengths.", "Nice, how did you feel afterwards?"),
            ("Yoga class with {name} was tough.", "Trying new things keeps it interesting."),
            ("I'm trying to walk {steps} steps a day.", "That's a good goal, and easy to track."),
            ("My gym got a new {equipment} and I tried it.", "Was it any good?"),
            ("I skipped my workout again.", "Missing one session isn't a big deal."),
            ("I did a short bike ride along {street} before work.", "A morning ride is a great way to start."),
            ("My shoulders are stiff from sitting all day.", "A few stretches every hour can help with that."),
            ("I did {n} push-ups this morning and now my arms hate me.", "Your arms will forgive you eventually."),
            ("{name} dragged me to a spin class at {clock}.", "Consistency matters more than intensity."),
        ),
    ),
    "errands": (
        "errands and shopping",
        (
            ("The supermarket was out of {item} again.", "That's annoying. Maybe try a different shop?"),
            ("I spent {price} dollars at the shops and I'm not sure on what.", "It adds up quickly, doesn't it?"),
            ("I'm trying a meal plan to cut the grocery bill.", "Meal plans help a lot once you get used to them."),
            ("I picked up {item} on the way home.", "Good to have that sorted."),
            ("The queue at the post office was out the door.", "Lunchtime is always the worst for queues."),
            ("I finally returned the jacket that didn't fit.", "It's a relief to get those small jobs done."),
            ("I keep forgetting my reusable bags.", "Leaving them by the door might help."),
            ("The {shop} on {street} is closing down, which is sad.", "Small shops closing is always a shame."),
        ),
    ),
    "work": (
        "work",
        (
            ("Work was hectic, {relation} called in sick.", "That sounds like a long day."),
            ("We had a {n}-hour meeting about the new budget.", "Meetings like that could usually be an email."),
            ("My laptop crashed right before I saved the report.", "Ouch. Did you lose much?"),
            ("{name} from accounts brought in {bake} for everyone.", "That's a nice thing to do for a team."),
            ("I finally cleared my inbox, all {big_n} emails.", "An empty inbox is a great feeling."),
            ("The printer on our floor is broken again.", "Hopefully someone fixes it soon."),
            ("I'm presenting the quarterly numbers at {clock} and I'm nervous.", "You'll do fine, you know them."),
            ("Someone microwaved fish in the office kitchen again.", "Office kitchens bring out the worst in people."),
        ),
    ),
    "commute": (
        "the commute",
        (
            ("The train was {minutes} minutes late again.", "That's frustrating."),
            ("I got stuck behind a bin lorry on {street}.", "At least you got there in the end."),
            ("I cycled in for once and it took {minutes} minutes.", "Cycling is a good way to wake up."),
            ("The bus driver sang the whole way in.", "That's one way to brighten a commute."),
            ("Someone left a bag of {item} on the seat next to me.", "Did you hand it in?"),
            ("Road works on {street} are making everything slow.", "Road works always seem to last forever."),
            ("I missed the {clock} bus by about ten seconds.", "There's always the next one, I suppose."),
        ),
    ),
    "reading": (
        "reading",
        (
            ("I'm halfway through a thriller called {novel}.", "How are you finding it?"),
            ("I finally finished {novel}; the ending was {verdict}.", "Endings are so hard to get right."),
            ("The library hold for {novel} came through.", "Good timing!"),
            ("I keep falling asleep after {n} pages.", "Reading in bed does that."),
            ("{name} lent me {novel} and I can't put it down.", "That's the best kind of book."),
            ("I'm reading on the bus now instead of scrolling.", "That's a nice habit to pick up."),
        ),
    ),
    "hobbies": (
        "hobbies",
        (
            ("I've been practising {instrument} every evening.", "Little and often is the way."),
            ("I finished knitting a {garment} for {name}.", "What a lovely present."),
            ("I started a jigsaw with {big_n} pieces.", "That's a serious jigsaw."),
            ("I'm learning {language} on an app, {n} lessons in.", "Keep going, the streak helps."),
            ("I drew {name}'s cat from a photo and it actually looks like a cat.", "I bet it's better than you think."),
            ("I tried a pottery class on {street} and made a very wonky bowl.", "Wonky bowls have character."),
        ),
    ),
    "home": (
        "things at home",
        (
            ("I finally {chore_done}.", "That must feel good."),
            ("The washing machine is making a strange noise.", "Keep an eye on it."),
            ("We rearranged the living room furniture.", "A new layout can make a room feel brand new."),
            ("I found {n} odd socks behind the radiator.", "Where do they all come from?"),
            ("The neighbours' dog barked from {clock} until midnight.", "That would drive me mad."),
            ("I bought a new lamp for the {room} and it changes everything.", "Lighting makes such a difference."),
        ),
    ),
    "todo": (
        "things to arrange",
        (
            ("My to-do list is getting out of hand.", "Maybe pick the two most urgent items first."),
            ("I need to renew my passport before it runs out.", "That's a good thing to get ahead of."),
            ("I keep forgetting to call {name} back.", "Maybe a phone reminder?"),
            ("I set {n} alarms and still overslept.", "That happens to everyone sometimes."),
            ("I should sort out the {chore_item} at some point.", "It helps to put it in the calendar right away."),
            ("I wrote everything down on a sticky note and lost the sticky note.", "Writing it down is half the work."),
        ),
    ),
}
_SMALL_TALK_REPLIES = (  # replies that fit any line, for a redraw or a passing mention
    "I see.", "Oh, interesting.", "Fair enough.", "That makes sense.", "Ha, I can imagine.",
    "Sounds like quite a day.", "Good to know.", "Oh really?", "That's life, I suppose.",
    "I'll remember that.", "Thanks for telling me.", "Funny how these things go.", "Oh, fun.",
    "That's a lot going on.", "Can't argue with that.", "Well, that's something.",
)
_USER_LEADS = (
    "Hi again.", "Morning!", "Quick one.", "Long day.", "Okay, random thought.", "Evening.",
    "Hey, it's me.", "Sorry, I've been quiet.", "Right.", "So.", "Guess what.", "Ugh.",
    "Hello hello.", "Small update.", "Before I forget.",
)
_USER_TAILS = (
    "{name} says hi.",
    "I'm meeting {name} at {clock}.",
    "I've had {n} coffees already.",
    "The {shop} on {street} has a sale on, by the way.",
    "Anyway, I should get back to it.",
    "Also, {relation} got a new bike.",
    "I'm drinking {drink} as I type this.",
    "It's {temp} degrees in here.",
    "My phone is on {pct} percent.",
    "I still haven't replied to {name}.",
    "{name} and I are getting lunch at {clock}.",
)
_ASSISTANT_LEADS = (
    "Ah.", "Ha, I know the feeling.", "Fair enough.", "Hmm.", "Okay.", "Mm.", "Sounds about right.",
    "I see.", "Right.", "Oh, I see.", "Ah, okay.", "Mm, yes.", "Well.", "Interesting.", "Right, okay.",
    "Oh?", "Huh.", "Understood.",
)
_ASSISTANT_TAILS = (
    "How's the rest of your day looking?",
    "Anything else on your mind?",
    "What's next for today?",
    "Want me to remind you later?",
    "How are you feeling about it?",
    "Tell me how it turns out.",
    "Is there anything I can help with?",
    "Keep me posted.",
    "What are you up to next?",
    "Did {name} say anything about it?",
    "Are you around later?",
    "Have you eaten yet?",
    "Anything planned for tonight?",
    "Need anything from me?",
    "How's {name} doing, by the way?",
)

_SLOTS: dict[str, tuple[str, ...]] = {
    "name": (
        "Anna", "Ben", "Chloe", "Dmitri", "Elena", "Farah", "George", "Hana", "Ivan", "Jess",
        "Kenji", "Laura", "Marcus", "Nadia", "Oscar", "Pia", "Quentin", "Rosa", "Simon", "Tara",
        "Uma", "Victor", "Wen", "Yusuf", "Zoe", "Priya", "Hugo", "Maeve", "Luis", "Ingrid",
    ),
    "relation": (
        "my neighbour", "my colleague", "my brother", "my sister", "my flatmate", "my boss",
        "an old school friend", "my cousin", "my manager", "the woman next door", "my friend from yoga",
        "my partner", "my uncle",
    ),
    "street": (
        "Pine Street", "Mill Lane", "Harbour Road", "Station Road", "Church Lane", "Baker Street",
        "Oak Avenue", "Kings Road", "Canal Street", "Market Square", "Hill Road", "Bridge Street",
        "Fifth Street", "Water Street", "Orchard Way",
    ),
    "city": (
        "Leeds", "Bristol", "Rotterdam", "Lyon", "Porto", "Denver", "Toronto", "Glasgow", "Ghent",
        "Bologna", "Cardiff", "Malmo",
    ),
    "park": ("Victoria Park", "the common", "Hollow Woods", "the river meadows", "Ash Park"),
    "shop": (
        "bakery", "hardware shop", "bookshop", "pharmacy", "corner shop", "garden centre",
        "charity shop", "fishmonger", "florist", "bike shop", "deli",
    ),
    "drink": ("a pot of tea", "a hot chocolate", "a flat white", "ginger tea", "a glass of wine", "a mint tea"),
    "weather_event": ("a sudden downpour", "a hailstorm", "a gust that took my hat", "thick fog", "a sleet shower"),
    "dish": (
        "a mushroom risotto", "lentil soup", "banana bread", "a green curry", "homemade pizza",
        "shakshuka", "chicken pot pie", "a vegetable lasagne", "pad thai", "apple crumble",
        "fish tacos", "a chickpea stew", "dumplings", "a spinach quiche",
    ),
    "fail": ("too dry", "a bit bland", "soggy", "burnt on the bottom", "too salty", "rubbery"),
    "ingredient": (
        "fennel", "a whole celeriac", "purple broccoli", "fresh figs", "quinces", "kohlrabi", "wild garlic",
        "a huge squash",
    ),
    "show": (
        "The Lighthouse Keepers", "Copper Valley", "Midnight Bakery", "The Long Audit",
        "Harbour Lights", "Quiet Frontier", "The Botanist", "Red Ledger", "Paper Moons", "Northbound",
    ),
    "plan": (
        "a hike in the hills", "the farmers' market", "a picnic", "the cinema",
        "a bike ride along the river", "a board game night", "the museum", "the flea market",
        "a swim in the lido", "a pub quiz",
    ),
    "chore": (
        "clean the garage", "sort out the wardrobe", "tackle the laundry", "repaint the hallway",
        "catch up on email", "defrost the freezer",
    ),
    "chore_done": (
        "cleaned the oven", "sorted the recycling", "fixed the wobbly shelf", "emptied the shed",
        "washed the windows", "untangled the fairy lights",
    ),
    "chore_item": ("car insurance", "tax return", "gym membership", "phone contract", "photo backups"),
    "plant": ("tomatoes", "basil", "roses", "sunflowers", "lavender", "runner beans", "hydrangea", "strawberries"),
    "garden_event": ("started flowering", "sprouted", "recovered", "shot up", "set fruit"),
    "steps": ("eight thousand", "ten thousand", "twelve thousand"),
    "equipment": ("rowing machine", "climbing wall", "spin bike", "cable machine"),
    "item": ("oat milk", "eggs", "fresh bread", "coffee beans", "bin bags", "lemons", "batteries", "apples"),
    "bake": ("lemon bars", "brownies", "a carrot cake", "flapjacks", "cinnamon rolls", "scones"),
    "novel": ("The Ninth Lantern", "Salt and Copper", "A Field of Clocks", "The Last Ferry", "Grey Harbour"),
    "verdict": ("perfect", "a bit rushed", "baffling", "heartbreaking", "too neat"),
    "instrument": ("the ukulele", "the piano", "the guitar", "the violin"),
    "garment": ("scarf", "hat", "pair of mittens", "jumper"),
    "language": ("Spanish", "Italian", "Japanese", "Portuguese", "Welsh"),
    "room": ("hallway", "bedroom", "study", "living room"),
    "company": ("Northwind Analytics", "Harbor Logistics", "Bluefin Software", "Cedar Health",
                "Quarry Labs", "Tidewater Bank", "Maple Robotics", "Orchid Media"),
    "souvenir": ("a box of pastries", "some fudge", "fridge magnets", "a bag of sweets"),
    "food": ("sandwich", "pork pie", "kebab", "pizza slice", "sausage roll"),
}

_WEATHER_BY_MONTH = {
    1: ("freezing", "snowy", "grey and icy"),
    2: ("freezing", "sleety", "bitterly cold"),
    3: ("drizzly", "windy", "cool and bright"),
    4: ("showery", "mild", "blustery"),
    5: ("warm", "sunny", "humid"),
    6: ("hot", "sunny", "stormy"),
    7: ("sweltering", "hot and humid", "thundery"),
    8: ("hot", "muggy", "breezy"),
    9: ("crisp", "foggy", "rainy"),
}

_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return str(n) + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


_SLOT = re.compile(r"\{(\w+)\}")


def _computed(rng: random.Random, slot: str, month: int) -> str | None:
    """Slots drawn from a range rather than a list; None for a list slot."""
    if slot == "weather":
        return rng.choice(_WEATHER_BY_MONTH.get(month, ("mild",)))
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
            pool = (pools or {}).get(base) or _SLOTS[base]
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

    def unique(self, make, tries: int = 40) -> str:
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


# --------------------------------------------------------------------------
# Long-span generator: planning
# --------------------------------------------------------------------------


@dataclass
class _PlannedSession:
    day: date
    kind: str  # "topic" or "small"
    topic: _Topic | None = None
    detail: tuple[str, ...] | None = None
    theme: str | None = None
    occurrence: int = 0
    start: datetime | None = None
    number: int = 0
    gist: str = ""
    # (speaker, text, is_evidence)
    lines: list[tuple[str, str, bool]] | None = None


def _topic_lines(
    writer: _Writer,
    topic: _Topic,
    detail: tuple[str, ...],
    month: int,
    values: dict[str, str],
) -> list[tuple[str, str, bool]]:
    """A topic session: the user's first turn names the topic and tells the
    occurrence's detail (evidence), a second detail turn often follows
    (evidence), then some small talk about it (not evidence); 4 to 10 turns."""
    rng = writer.rng
    writer.new_session()
    pools = dict(topic.slots)
    _, first_sentence, second_sentence = detail
    first = writer.unique(
        lambda: writer.join(
            _fill(rng, rng.choice(topic.openers), month, pools=pools),
            _fill(rng, first_sentence, month, values, pools),
        )
    )
    lines: list[tuple[str, str, bool]] = [
        ("user", first, True),
        ("assistant", writer.unique(lambda: _fill(rng, rng.choice(topic.follow_ups), month)), False),
    ]

    def ack() -> str:
        return writer.join(rng.choice(_ACK_LEADS), rng.choice(_ACKS))

    has_second = rng.random() >= 0.25  # some occurrences carry one detail turn
    if has_second:
        second = writer.unique(lambda: _fill(rng, second_sentence, month, values, pools))
        lines.append(("user", second, True))
        lines.append(("assistant", writer.unique(ack), False))
    extra_pairs = rng.randint(0 if has_second else 1, 2)
    unused = list(topic.fillers)  # each filler at most once in a session
    chosen: list[str] = []

    def filler() -> str:
        chosen[:] = [rng.choice(unused)]
        return writer.join(
            _fill(rng, chosen[0], month, pools=pools),
            writer.maybe(0.4, _USER_TAILS, month),
        )

    for _ in range(extra_pairs):
        lines.append(("user", writer.unique(filler), False))
        unused.remove(chosen[0])
        lines.append(("assistant", writer.unique(ack), False))

    def closer() -> str:
        return writer.join(
            writer.maybe(0.5, _USER_TAILS, month),
            _fill(rng, rng.choice(_TOPIC_CLOSERS), month),
        )

    if rng.random() < 0.5 and len(lines) <= 8:
        lines.append(("user", writer.unique(closer), False))
        lines.append(("assistant", writer.unique(
            lambda: writer.join(rng.choice(_ASSISTANT_CLOSERS), _fill(rng, rng.choice(_ASSISTANT_TAILS), month))
        ), False))
    return lines[:10]


def _small_talk_lines(
    writer: _Writer, theme: str, month: int, passing: _Topic | None
) -> list[tuple[str, str, bool]]:
    """A small-talk session, 4 to 10 turns; with ``passing``, one user turn
    mentions that topic in passing (a distractor for its questions)."""
    rng = writer.rng
    writer.new_session()
    _, pairs = _SMALL_TALK[theme]
    n_turns = rng.randint(4, 10)
    order = rng.sample(pairs, len(pairs))
    passing_at = rng.randrange(0, n_turns, 2) if passing is not None else -1
    lines: list[tuple[str, str, bool]] = []
    for i in range(0, n_turns, 2):
        user_core, reply = order[(i // 2) % len(order)]
        pools = None
        if i == passing_at:
            assert passing is not None
            user_core, reply, pools = rng.choice(passing.passing), "", dict(passing.slots)

        def make_user(core: str = user_core, pools: dict | None = pools) -> str:
            return writer.join(
                writer.maybe(0.3, _USER_LEADS, month),
                _fill(rng, core, month, pools=pools),
                writer.maybe(0.35, _USER_TAILS, month),
            )

        lines.append(("user", writer.unique(make_user), False))
        if i + 1 == n_turns:
            break
        planned = [reply] * 12 if reply else []  # its own reply first, worded on with other leads and tails

        def make_reply(planned: list[str] = planned) -> str:
            # then one that fits any line
            core = planned.pop() if planned else rng.choice(_SMALL_TALK_REPLIES)
            return writer.join(
                writer.maybe(0.35, _ASSISTANT_LEADS, month),
                _fill(rng, core, month),
                writer.maybe(0.3, _ASSISTANT_TAILS, month),
            )

        lines.append(("assistant", writer.unique(make_reply), False))
    return lines


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month_index(d: date) -> int:
    return d.year * 12 + d.month - 1


def _inside_ago_window(asked: datetime, unit_days: int, n: int, first: datetime, last: datetime) -> bool:
    """Whether [first, last] lies inside the period "n units ago" (spec 2.7:
    one unit long, centred n units before now, ending no later than now),
    with an hour of margin on each side."""
    unit = timedelta(days=unit_days)
    centre = asked - n * unit
    lo = centre - unit / 2
    hi = min(centre + unit / 2, asked)
    margin = timedelta(hours=1)
    return lo + margin <= first and last <= hi - margin


# Relative phrasings: (phrase, kind, n). kind decides the check.
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

_ABSOLUTE_FORMS = ("month", "month_year", "part", "part_year", "day", "day_us")


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
    month = _MONTH_NAMES[d.month - 1]
    part = "early" if d.day <= 10 else ("mid" if d.day <= 20 else "late")
    if form == "month":
        return f"in {month}"
    if form == "month_year":
        return f"in {month} {d.year}"
    if form == "part":
        return f"in {part} {month}"
    if form == "part_year":
        return f"in {part} {month} {d.year}"
    if form == "day":
        return f"on {d.day} {month}"
    if form == "day_us":
        return f"on {month} {_ordinal(d.day)}"
    raise ValueError(form)


def _question_text(rng: random.Random, topic: _Topic, when: str) -> str:
    return rng.choice(topic.questions).format(when=when)


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
    """
    if size not in LONG_SPAN_SIZES:
        raise ValueError(f"size must be one of {sorted(LONG_SPAN_SIZES)}, not {size!r}")
    target_turns, n_topics, (occ_lo, occ_hi) = LONG_SPAN_SIZES[size]
    rng = random.Random(f"long-span:{seed}:{size}")
    prefix = f"ls{seed}"

    n_days = (_LONG_SPAN_END - LONG_SPAN_START).days + 1
    months = sorted({(LONG_SPAN_START + timedelta(days=i)).month for i in range(n_days)})

    # 1. Topic occurrences: distinct months per topic, a day within each, a
    #    distinct detail each, and slot values (a company, a tooth, a price)
    #    that no earlier occurrence of the topic used.
    writer = _Writer(rng)
    topics = _TOPICS[:n_topics]
    planned: list[_PlannedSession] = []
    for topic in topics:
        k = rng.randint(occ_lo, min(occ_hi, len(topic.details)))
        chosen_months = sorted(rng.sample(months, k))
        details = rng.sample(topic.details, k)
        used: set[str] = set()
        for occ, (month, detail) in enumerate(zip(chosen_months, details)):
            first = date(2025, month, 1)
            last = (date(2025, month + 1, 1) if month < 12 else date(2026, 1, 1)) - timedelta(days=1)
            first = max(first, LONG_SPAN_START)
            last = min(last, _LONG_SPAN_END)
            day = first + timedelta(days=rng.randint(0, (last - first).days))
            session = _PlannedSession(day=day, kind="topic", topic=topic, detail=detail, occurrence=occ)
            values: dict[str, str] = {}
            session.gist = _fill(rng, detail[0], month, values, dict(topic.slots), frozenset(used), capitalize=False)
            for sentence in detail[1:]:
                _fill(rng, sentence, month, values, dict(topic.slots), frozenset(used))
            used.update(values.values())
            session.lines = _topic_lines(writer, topic, detail, month, values)
            planned.append(session)

    # 2. Small talk until the target number of turns is reached; some
    #    sessions mention one of the topics in passing.
    themes = sorted(_SMALL_TALK)
    total = sum(len(s.lines or ()) for s in planned)
    while total < target_turns:
        day = LONG_SPAN_START + timedelta(days=rng.randint(0, n_days - 1))
        theme = rng.choice(themes)
        passing = rng.choice(topics) if rng.random() < _PASSING_SHARE else None
        session = _PlannedSession(day=day, kind="small", theme=theme)
        session.lines = _small_talk_lines(writer, theme, day.month, passing)
        remaining = target_turns - total
        if remaining < len(session.lines) and remaining >= 4:
            session.lines = session.lines[:remaining]
        planned.append(session)
        total += len(session.lines)

    # 3. Times of day: distinct hours per day, so sessions never overlap.
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
            s.start = datetime.combine(day, time(hour, minute), tzinfo=timezone.utc)
    planned.sort(key=lambda s: s.start)

    # 4. Turns, numbered in time order.
    turns: list[Turn] = []
    summaries: list[SessionSummary] = []
    evidence_turns: dict[int, list[Turn]] = {}
    for number, s in enumerate(planned, start=1):
        s.number = number
        ts = s.start
        session_turns: list[Turn] = []
        for i, (speaker, text, is_evidence) in enumerate(s.lines or (), start=1):
            if i > 1:
                ts = ts + timedelta(seconds=rng.randint(20, 110))
            turn = Turn(
                msg_id=f"{prefix}:{number}:{i}",
                content=text,
                timestamp=_iso(ts),
                speaker=speaker,
                session=number,
            )
            session_turns.append(turn)
            if is_evidence:
                evidence_turns.setdefault(number, []).append(turn)
        turns.extend(session_turns)
        when = f"{s.start.day} {_MONTH_NAMES[s.start.month - 1]} {s.start.year}"
        if s.kind == "topic":
            assert s.topic is not None and s.detail is not None
            summary = f"On {when} the user told the assistant about {s.topic.label}: {s.gist}."
            keywords = f"{s.topic.key}, {s.gist}"
        else:
            label = _SMALL_TALK[s.theme][0]
            summary = f"On {when} the user and the assistant chatted about {label}."
            keywords = f"small talk, {s.theme}"
        summaries.append(
            SessionSummary(
                session=number,
                summary=summary,
                keywords=keywords,
                start_time=session_turns[0].timestamp,
                end_time=session_turns[-1].timestamp,
            )
        )

    # 5. Questions.
    questions: list[Question] = []
    horizon = datetime(2025, 12, 31, 18, 0, tzinfo=timezone.utc)
    for s in planned:
        if s.kind != "topic":
            continue
        assert s.topic is not None and s.detail is not None
        ev = evidence_turns[s.number]
        first = datetime.fromisoformat(ev[0].timestamp)
        last_ev = datetime.fromisoformat(ev[-1].timestamp)
        session_end = datetime.fromisoformat(summaries[s.number - 1].end_time)
        evidence = tuple(t.msg_id for t in ev)
        answer = " ".join(t.content for t in ev)

        if size == "large":
            kinds = ["absolute", "relative"]
        else:
            kinds = ["absolute", "relative"] if rng.random() < 0.5 else [rng.choice(["absolute", "relative"])]

        for j, kind in enumerate(kinds):
            if kind == "relative":
                forms = list(_RELATIVE_FORMS)
                rng.shuffle(forms)
                made = None
                for phrase, rel_kind, n in forms:
                    candidates = []
                    for k in range(1, 140):
                        for minutes in (-150, -60, 0, 45, 120, 200):
                            asked = s.start + timedelta(days=k, minutes=minutes)
                            if asked > session_end and _relative_ok(rel_kind, n, asked, first, last_ev):
                                candidates.append(asked)
                    if candidates:
                        asked = rng.choice(candidates)
                        when = phrase.format(weekday=_WEEKDAYS[s.start.weekday()])
                        made = (when, asked)
                        break
                if made is None:
                    kind = "absolute"
                else:
                    when, asked = made
            if kind == "absolute":
                form = rng.choice(_ABSOLUTE_FORMS)
                when = _absolute_phrase(form, s.start.date())
                asked = s.start + timedelta(days=rng.randint(3, 100), minutes=rng.randint(-120, 240))
                asked = min(asked, horizon)
            questions.append(
                Question(
                    qid=f"{prefix}:{s.topic.key}:{s.occurrence}:q{j}",
                    text=_question_text(rng, s.topic, when),
                    asked_at=_iso(asked),
                    evidence=evidence,
                    category=kind,
                    answer=answer,
                )
            )

    questions.sort(key=lambda q: (q.asked_at, q.qid))
    return Conversation(
        conv_id=f"longspan-{seed}-{size}",
        turns=tuple(turns),
        sessions=tuple(summaries),
        questions=tuple(questions),
    )

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

LONG_SPAN_START = date(2025, 1, 6)
_LONG_SPAN_END = date(2025, 9, 30)

# size -> (target number of turns, topic keys used, occurrences per topic)
LONG_SPAN_SIZES = {
    "small": (300, 9, (2, 3)),
    "large": (5000, 14, (2, 4)),
}


@dataclass(frozen=True)
class _Topic:
    key: str
    label: str
    openers: tuple[str, ...]
    follow_ups: tuple[str, ...]
    fillers: tuple[str, ...]
    # each detail: (gist, first detail sentence, optional second sentence)
    details: tuple[tuple[str, ...], ...]
    questions: tuple[str, ...]


_ACKS = (
    "That's good to know.",
    "Thanks for telling me, I'll remember that.",
    "Oh, interesting.",
    "Got it.",
    "That sounds like a lot.",
    "I see, that makes sense.",
    "Noted.",
    "Well, at least you know now.",
)

_TOPIC_CLOSERS = (
    "Anyway, that's my news.",
    "I'll let you know if anything changes.",
    "Okay, I need to get on with the rest of my day.",
    "Thanks for listening.",
)

_ASSISTANT_CLOSERS = (
    "Take care, and tell me how it goes.",
    "Glad you shared it. Talk soon.",
    "Sounds like you've handled it well.",
    "Let me know if you want to talk it through later.",
)

_TOPICS: tuple[_Topic, ...] = (
    _Topic(
        key="dentist",
        label="a dentist appointment",
        openers=(
            "I had my dentist appointment this morning.",
            "Just got back from the dentist.",
            "Finally went to the dentist, after putting it off for ages.",
            "The dentist visit is done for the day.",
        ),
        follow_ups=(
            "How did it go?",
            "Oh good, how was it?",
            "How are your teeth after that?",
            "Was it routine, or did they have to do something?",
        ),
        fillers=(
            "I always get a bit tense in that chair.",
            "The waiting room still has the same old magazines.",
            "At least the drive there was quick.",
            "I really should floss more often.",
        ),
        details=(
            (
                "a filling in a lower molar",
                "She found a small cavity in my lower left molar and put in a tooth-coloured filling.",
                "My cheek stayed numb until lunch, and it cost 140 dollars after insurance.",
            ),
            (
                "a cleaning and advice on brushing",
                "It was just a cleaning; the hygienist, Marta, scraped a lot of tartar off behind my front teeth.",
                "She told me to switch to a soft-bristle brush because I brush too hard.",
            ),
            (
                "a temporary crown",
                "They fitted a temporary crown on my upper right premolar, the one I cracked on a popcorn kernel.",
                "The permanent porcelain crown will be ready in three weeks.",
            ),
            (
                "an impacted wisdom tooth",
                "The dentist said my lower wisdom tooth is impacted and should come out.",
                "She gave me a referral to an oral surgeon on Pine Street.",
            ),
        ),
        questions=(
            "What did the dentist do {when}?",
            "What did I tell you about my dentist appointment {when}?",
            "What happened at the dentist {when}?",
        ),
    ),
    _Topic(
        key="job_interview",
        label="a job interview",
        openers=(
            "I had a job interview today.",
            "The interview I mentioned was today.",
            "Just finished an interview, my hands are still shaking.",
            "Interview day is over.",
        ),
        follow_ups=(
            "How did it go?",
            "Tell me everything, how was it?",
            "Which role was it for again?",
            "Do you think it went well?",
        ),
        fillers=(
            "I wore the grey blazer again, for luck.",
            "I think I talked too fast at the start.",
            "They said I'd hear back within two weeks.",
            "Job hunting is exhausting.",
        ),
        details=(
            (
                "Northwind Analytics, a pipeline design question",
                "It was with Northwind Analytics for a data engineer role, in front of a panel of three.",
                "The interviewer asked me to design a pipeline that removes duplicate click events in real time.",
            ),
            (
                "Harbor Logistics, a question about a teammate missing deadlines",
                "This one was at Harbor Logistics, for a team lead position in their routing group.",
                "The interviewer asked how I would handle a teammate who keeps missing deadlines.",
            ),
            (
                "Bluefin Software, a rate limiter coding task",
                "It was a video call with Bluefin Software for a backend developer job.",
                "They gave me a live coding task: write a rate limiter with a sliding window.",
            ),
            (
                "Cedar Health, a question about decisions from data",
                "The interview was at Cedar Health, in their downtown office, for an analytics manager role.",
                "The interviewer asked me to walk through a time I changed a decision using data.",
            ),
        ),
        questions=(
            "Which company did I interview with {when}?",
            "What did the interviewer ask me {when}?",
            "How did my job interview go {when}?",
        ),
    ),
    _Topic(
        key="car_repair",
        label="a car repair",
        openers=(
            "The car is back from the garage.",
            "I had to take the car to the mechanic today.",
            "Spent the morning at the auto shop.",
            "Car trouble again, I'm afraid.",
        ),
        follow_ups=(
            "What was wrong with it?",
            "Oh no, what did the mechanic say?",
            "Was it expensive?",
            "Is it running properly now?",
        ),
        fillers=(
            "The coffee in the waiting area was terrible.",
            "I walked to the bakery while they worked on it.",
            "That car is getting old.",
            "At least the mechanic was honest with me.",
        ),
        details=(
            (
                "new brake pads and rotors",
                "The front brake pads were worn down to the metal, so they replaced the pads and both rotors.",
                "The bill came to 420 dollars.",
            ),
            (
                "a failed alternator",
                "The battery kept dying, and it turned out the alternator had failed.",
                "They put in a rebuilt alternator and I got the car back the next afternoon.",
            ),
            (
                "a nail in a tyre",
                "I picked up a nail in the rear left tyre and it went flat on the highway.",
                "The shop said it was too close to the sidewall to patch, so I bought a new tyre.",
            ),
            (
                "a cracked windscreen",
                "A stone cracked the windscreen on the motorway and the crack kept spreading.",
                "They replaced the whole windscreen and recalibrated the lane camera.",
            ),
        ),
        questions=(
            "What was wrong with my car {when}?",
            "What did the mechanic fix {when}?",
            "What happened with the car repair {when}?",
        ),
    ),
    _Topic(
        key="family_visit",
        label="a visit from relatives",
        openers=(
            "We had family staying with us.",
            "My relatives just left after their visit.",
            "The house is quiet again, our visitors went home.",
            "The family visit is over.",
        ),
        follow_ups=(
            "Who came to visit?",
            "How was having them over?",
            "Did you have a good time together?",
            "Was it a long stay?",
        ),
        fillers=(
            "The guest room finally got some use.",
            "I cooked far too much food.",
            "It was lovely, but I'm tired now.",
            "We stayed up late talking every night.",
        ),
        details=(
            (
                "my sister Leah and her twins",
                "My sister Leah came with her twin boys, and we spent most of the time at the aquarium.",
                "Leah told us she's expecting a third baby in the autumn.",
            ),
            (
                "my parents",
                "My parents drove up for four days and my dad fixed the squeaky back door.",
                "Mum brought her recipe box and we made her apricot tart together.",
            ),
            (
                "my cousin Ravi",
                "My cousin Ravi stayed two nights on his way to a conference in the city.",
                "He talked me into trying the new Ethiopian place on Fifth Street.",
            ),
            (
                "my aunt Greta",
                "Aunt Greta came for her birthday and we took her to the botanical garden.",
                "She gave me my grandfather's old pocket watch.",
            ),
        ),
        questions=(
            "Who visited me {when}?",
            "What happened when my relatives visited {when}?",
            "What did I tell you about the family visit {when}?",
        ),
    ),
    _Topic(
        key="trip",
        label="a trip",
        openers=(
            "I'm back from my trip.",
            "Just got home from being away.",
            "Unpacking after the trip now.",
            "Back home after a few days away.",
        ),
        follow_ups=(
            "Welcome back! Where did you end up going?",
            "How was the trip?",
            "Did you enjoy being away?",
            "What was the best part?",
        ),
        fillers=(
            "The flight home was delayed, of course.",
            "I took far too many photos.",
            "My suitcase barely closed on the way back.",
            "It's always strange coming back to normal life.",
        ),
        details=(
            (
                "Lisbon",
                "We spent four days in Lisbon and rode the old yellow tram up to the castle.",
                "The best meal was grilled sardines in a tiny place in Alfama.",
            ),
            (
                "a cabin on Lake Wren",
                "We rented a cabin on Lake Wren and went kayaking every morning.",
                "One evening we watched a moose swim across the lake.",
            ),
            (
                "a conference in Chicago",
                "I went to Chicago for a work conference at the convention centre.",
                "I gave my first talk there, about cleaning messy sensor data.",
            ),
            (
                "Edinburgh",
                "We walked up Arthur's Seat in Edinburgh on the first day.",
                "It rained every afternoon, so we hid in the whisky museum.",
            ),
        ),
        questions=(
            "Where did I go on my trip {when}?",
            "What did I do on the trip {when}?",
            "What did I tell you about my travels {when}?",
        ),
    ),
    _Topic(
        key="doctor",
        label="a doctor's appointment",
        openers=(
            "I saw the doctor this afternoon.",
            "Had my appointment at the clinic today.",
            "Back from the GP.",
            "The doctor's appointment was today.",
        ),
        follow_ups=(
            "What did the doctor say?",
            "Is everything alright?",
            "How did the appointment go?",
            "Did they find anything?",
        ),
        fillers=(
            "I waited forty minutes past my slot.",
            "I hate those paper gowns.",
            "At least I finally went.",
            "I wrote my questions down beforehand this time.",
        ),
        details=(
            (
                "high blood pressure",
                "My blood pressure was 148 over 95, so the doctor wants me to cut back on salt.",
                "She asked me to measure it at home twice a day for two weeks.",
            ),
            (
                "tendinitis in the knee",
                "The doctor thinks my knee pain is patellar tendinitis from running.",
                "She referred me to a physiotherapist and told me to stop running for a month.",
            ),
            (
                "allergies to birch pollen and dust mites",
                "The allergy test showed I'm allergic to birch pollen and dust mites.",
                "He prescribed a nasal spray and told me to wash the bedding in hot water.",
            ),
            (
                "low vitamin D at a physical",
                "It was my annual physical, and the blood work showed low vitamin D.",
                "She told me to take a thousand units of vitamin D a day.",
            ),
        ),
        questions=(
            "What did the doctor tell me {when}?",
            "What did I learn at my doctor's appointment {when}?",
            "What came out of the medical appointment {when}?",
        ),
    ),
    _Topic(
        key="book_club",
        label="the book club",
        openers=(
            "Book club met tonight.",
            "We had book club at Priya's place this evening.",
            "Just got back from book club.",
            "Book club was lively tonight.",
        ),
        follow_ups=(
            "Which book was it this time?",
            "How was the discussion?",
            "Did everyone finish the book?",
            "Did you like the book?",
        ),
        fillers=(
            "Someone brought homemade lemon bars.",
            "Half the group hadn't finished it.",
            "We spent the first hour just catching up.",
            "I always leave with a longer reading list.",
        ),
        details=(
            (
                "The Salt Orchard",
                "We discussed The Salt Orchard, and most people hated the ending where the sister sells the farm.",
                "I argued that the orchard stands for the mother.",
            ),
            (
                "Nine Winters North",
                "The book was Nine Winters North, the arctic expedition memoir.",
                "Tom said the chapter about the sled dogs made him put it down for a week.",
            ),
            (
                "The Glass Cartographer",
                "We read The Glass Cartographer, the mystery set in a map shop in Prague.",
                "I guessed that the apprentice was the murderer, and I was right.",
            ),
            (
                "Small Hours",
                "This time the book was Small Hours, short stories about night-shift workers.",
                "My favourite was the one about a toll-booth operator who writes letters to drivers.",
            ),
        ),
        questions=(
            "Which book did the book club discuss {when}?",
            "What did we talk about at book club {when}?",
            "What happened at book club {when}?",
        ),
    ),
    _Topic(
        key="vet",
        label="a vet visit",
        openers=(
            "Took Biscuit to the vet today.",
            "We had a vet appointment this morning.",
            "Back from the vet with a very grumpy dog.",
            "The vet visit is done.",
        ),
        follow_ups=(
            "How is Biscuit doing?",
            "What did the vet say?",
            "Is he alright?",
            "Was it just a check-up?",
        ),
        fillers=(
            "He shook the whole time on the table.",
            "He got a treat at the end, so he forgave me.",
            "The vet bill always surprises me.",
            "He slept the entire afternoon after.",
        ),
        details=(
            (
                "his booster shots",
                "It was his yearly booster shots, and he weighs 14 kilos now.",
                "The vet said he's a little overweight and we should cut back on treats.",
            ),
            (
                "an ear infection",
                "He had an ear infection from swimming in the pond.",
                "We have to put drops in his left ear twice a day for ten days.",
            ),
            (
                "a thorn in his paw",
                "He was limping, and the vet found a thorn stuck between the pads of his front paw.",
                "She pulled it out and wrapped the paw in a blue bandage.",
            ),
            (
                "a dental cleaning",
                "He had his teeth cleaned under anaesthetic and they pulled one broken molar.",
                "He can only eat soft food for a week.",
            ),
        ),
        questions=(
            "What did the vet say about Biscuit {when}?",
            "Why did I take my dog to the vet {when}?",
            "What happened at the vet {when}?",
        ),
    ),
    _Topic(
        key="home_repair",
        label="a home repair",
        openers=(
            "We had a repair person at the house today.",
            "Finally got that problem in the house sorted.",
            "The tradesman came this morning.",
            "House repairs again today.",
        ),
        follow_ups=(
            "What needed fixing?",
            "Did they manage to fix it?",
            "What was the problem?",
            "Was it a big job?",
        ),
        fillers=(
            "There was dust everywhere afterwards.",
            "I had to work from the kitchen table all day.",
            "Owning a house is a never-ending list.",
            "I made them coffee and we chatted a bit.",
        ),
        details=(
            (
                "a cracked pipe under the sink",
                "The plumber found that the pipe under the kitchen sink had a cracked joint.",
                "He replaced the trap and the leak stopped.",
            ),
            (
                "a new water heater",
                "Our water heater died, so we had no hot water for two days.",
                "They installed a new fifty-gallon heater in the basement.",
            ),
            (
                "a roof leak",
                "A roofer fixed the leak above the bedroom, where the storm blew some shingles off.",
                "He also cleared the gutters, which were full of pine needles.",
            ),
            (
                "new electrical wiring",
                "An electrician replaced the old fuse box with a breaker panel.",
                "He said the wiring in the garage was a fire risk and rewired it too.",
            ),
        ),
        questions=(
            "What got repaired in my house {when}?",
            "What did the repair person fix {when}?",
            "What was the problem in the house {when}?",
        ),
    ),
    _Topic(
        key="concert",
        label="a concert",
        openers=(
            "I went to a concert.",
            "My ears are still ringing from the gig.",
            "Concert night was amazing.",
            "I finally saw some live music.",
        ),
        follow_ups=(
            "Who did you see?",
            "How was the show?",
            "Was it a good crowd?",
            "Did they play your favourites?",
        ),
        fillers=(
            "The queue for drinks was endless.",
            "I didn't get home until after one.",
            "My feet hurt from standing all night.",
            "I want to go to more live shows.",
        ),
        details=(
            (
                "The Marigold Ferry",
                "It was The Marigold Ferry at the old theatre, and they opened with a slow acoustic set.",
                "The drummer broke a stick and threw it into the crowd.",
            ),
            (
                "the city symphony",
                "We went to the city symphony to hear the New World Symphony.",
                "The horn soloist got a standing ovation.",
            ),
            (
                "Velvet Lanterns",
                "I saw Velvet Lanterns on the outdoor stage in the park.",
                "They played a cover of an old disco song for the encore.",
            ),
            (
                "a jazz trio",
                "It was a jazz trio at the basement club on Water Street.",
                "The pianist's daughter joined them on clarinet for two songs.",
            ),
        ),
        questions=(
            "Which concert did I go to {when}?",
            "What happened at the concert {when}?",
            "Who did I see play live {when}?",
        ),
    ),
    _Topic(
        key="race",
        label="a running race",
        openers=(
            "I ran the race this morning!",
            "Race day is done.",
            "Crossed the finish line today.",
            "My legs are dead after today's race.",
        ),
        follow_ups=(
            "Congratulations! How did it go?",
            "What was your time?",
            "How did you feel out there?",
            "Did you hit your goal?",
        ),
        fillers=(
            "The start was so crowded.",
            "I forgot to charge my watch beforehand.",
            "I ate two bananas at the finish.",
            "I'm taking a rest day tomorrow.",
        ),
        details=(
            (
                "a 5K with a bronze medal",
                "It was the Riverside 5K and I finished in 26 minutes 40 seconds.",
                "I came third in my age group and got a little bronze medal.",
            ),
            (
                "a hilly 10K",
                "It was a hilly 10K and I finished in 58 minutes.",
                "A cramp in my calf made me walk for a minute around the seventh kilometre.",
            ),
            (
                "a first half marathon",
                "I finished my first half marathon in 2 hours and 6 minutes.",
                "My brother ran the last mile with me.",
            ),
            (
                "a muddy trail run",
                "It was a 12-kilometre trail run through the forest, and it was pure mud.",
                "I slipped and scraped my knee on a root.",
            ),
        ),
        questions=(
            "How did my race go {when}?",
            "What was my race result {when}?",
            "Which race did I run {when}?",
        ),
    ),
    _Topic(
        key="birthday",
        label="a birthday party",
        openers=(
            "We had a birthday party.",
            "The party's over and the house is a mess.",
            "Big birthday celebration today.",
            "We celebrated a birthday.",
        ),
        follow_ups=(
            "Whose birthday was it?",
            "How was the party?",
            "Did everyone have fun?",
            "What did you do for it?",
        ),
        fillers=(
            "There's still so much cake left.",
            "The neighbours were very patient about the noise.",
            "I'm still finding confetti everywhere.",
            "It went on later than planned.",
        ),
        details=(
            (
                "my niece Ada's seventh",
                "It was my niece Ada's seventh birthday, with a dinosaur theme.",
                "We hired a man with a real owl and the kids went wild.",
            ),
            (
                "my partner's fortieth",
                "It was my partner's fortieth, and we surprised him at the bowling alley.",
                "Twelve of his old university friends showed up.",
            ),
            (
                "my friend Sam's thirtieth",
                "My friend Sam turned thirty and we had a picnic by the river.",
                "I baked a carrot cake, and it collapsed in the middle.",
            ),
            (
                "Grandma's ninetieth",
                "We celebrated Grandma's ninetieth at her care home.",
                "She sang an old folk song for everyone.",
            ),
        ),
        questions=(
            "Whose birthday did we celebrate {when}?",
            "What happened at the birthday party {when}?",
            "What did I tell you about the birthday {when}?",
        ),
    ),
    _Topic(
        key="house_hunting",
        label="house hunting",
        openers=(
            "We looked at another flat today.",
            "Went to an apartment viewing this afternoon.",
            "House hunting again.",
            "Just came from seeing a place to rent.",
        ),
        follow_ups=(
            "How was it?",
            "Any good?",
            "Could you see yourself living there?",
            "What was the place like?",
        ),
        fillers=(
            "The agent was twenty minutes late.",
            "Rents around here are unbelievable.",
            "We're getting tired of looking.",
            "I made a list of pros and cons on the way home.",
        ),
        details=(
            (
                "a flat on Elm Road",
                "The flat on Elm Road had a lovely balcony, but the bedroom had no window.",
                "The agent said the rent is 1,650 a month including heating.",
            ),
            (
                "a loft by the canal",
                "We saw a loft by the canal with huge windows and exposed brick.",
                "But the only bathroom is up a spiral staircase.",
            ),
            (
                "a terraced house with roses",
                "It was a small terraced house with a garden full of rose bushes.",
                "The owner wants tenants who will keep the roses alive.",
            ),
            (
                "an apartment by the station",
                "The apartment near the station was cheap, but the trains shake the windows.",
                "We put in an application anyway, just in case.",
            ),
        ),
        questions=(
            "Which place did we view {when}?",
            "What was the place we viewed {when} like?",
            "What did I say about house hunting {when}?",
        ),
    ),
    _Topic(
        key="volunteering",
        label="volunteering",
        openers=(
            "I did my volunteer shift today.",
            "Volunteering went well this morning.",
            "Back from volunteering.",
            "Spent the day helping out with the volunteer group.",
        ),
        follow_ups=(
            "What did you do this time?",
            "How was the shift?",
            "Were there many volunteers?",
            "Was it rewarding?",
        ),
        fillers=(
            "My back is sore, but it was worth it.",
            "I met a retired teacher who has done it for twenty years.",
            "They gave us free t-shirts.",
            "I want to bring a friend next time.",
        ),
        details=(
            (
                "the food bank",
                "At the food bank I sorted canned goods for three hours.",
                "We packed 240 boxes for families.",
            ),
            (
                "a river park cleanup",
                "We cleaned up the river park and pulled a shopping trolley out of the water.",
                "Altogether we filled 36 bags of rubbish.",
            ),
            (
                "the library reading hour",
                "I helped with the library reading hour, reading picture books to toddlers.",
                "One boy asked me to read the same dragon book four times.",
            ),
            (
                "the animal shelter",
                "At the animal shelter I walked dogs and cleaned the cat room.",
                "A shy grey cat called Pebble finally let me pet her.",
            ),
        ),
        questions=(
            "Where did I volunteer {when}?",
            "What did I do when I volunteered {when}?",
            "What happened at my volunteer shift {when}?",
        ),
    ),
)

# Small talk: theme -> (label, user lines, assistant lines). Slots in braces
# are filled from _SLOTS; {weather} depends on the month.
_SMALL_TALK: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "weather": (
        "the weather",
        (
            "It's {weather} here today.",
            "The forecast says {weather} for the rest of the week.",
            "I got caught in {weather_event} on the way home.",
            "This {weather} weather makes me want to stay inside.",
            "Is it just me, or has the weather been strange lately?",
            "I checked the forecast and it looks {weather} for the weekend.",
            "My umbrella finally gave up.",
        ),
        (
            "Do you still plan to get outside?",
            "Weather like that is a good excuse for a slow day.",
            "Make sure to dress for it if you head out.",
            "Hopefully it turns around soon.",
            "A warm drink might help.",
            "Do any of your plans depend on the weather?",
            "It does seem to change every hour at the moment.",
        ),
    ),
    "cooking": (
        "cooking",
        (
            "I tried making {dish} tonight.",
            "Do you have tips for {dish}? Mine always turns out {fail}.",
            "I bought {ingredient} at the market and I'm not sure what to do with it.",
            "We had {dish} for dinner and there are leftovers for days.",
            "I'm trying to cook at home more to save money.",
            "My {dish} came out {fail}; I think I rushed it.",
            "I found an old cookbook of my mother's in a box.",
        ),
        (
            "That sounds delicious. Did you follow a recipe?",
            "Lower heat and more patience usually help.",
            "Roasting it with olive oil and salt is a safe start.",
            "Leftovers are the best part of cooking a big batch.",
            "Cooking gets easier once you have a few go-to dishes.",
            "Maybe try it again at the weekend when there's more time.",
            "Old cookbooks often have the most reliable recipes.",
        ),
    ),
    "tv": (
        "television",
        (
            "I started watching {show}.",
            "People keep recommending {show}. Have you heard of it?",
            "I watched three episodes of {show} instead of sleeping.",
            "The new season of {show} is a letdown so far.",
            "I can't decide what to watch next.",
            "{show} had such a twist at the end of the episode.",
            "We cancelled one of our streaming services.",
        ),
        (
            "What do you think of it so far?",
            "Some shows take a few episodes to get going.",
            "Was it worth the lost sleep?",
            "If you liked that, you might enjoy other slow-burn dramas.",
            "Sometimes rewatching an old favourite is the best choice.",
            "No spoilers, but I hope it pays off.",
            "There's more on than anyone could watch anyway.",
        ),
    ),
    "weekend": (
        "plans for the weekend",
        (
            "Any ideas for the weekend? I'm thinking about {plan}.",
            "We're planning {plan} on Saturday.",
            "I might just stay home and {chore} this weekend.",
            "My weekend plans fell through, so now it's free.",
            "I want to do something outdoors this weekend.",
            "Sunday is going to be {plan}, I hope.",
            "I need a weekend with no plans at all.",
        ),
        (
            "That sounds like a good way to spend it.",
            "A quiet weekend can be just as good.",
            "Maybe check the forecast before you decide.",
            "Is anyone joining you?",
            "You could pair it with a nice lunch out.",
            "Don't forget to leave some time to rest.",
            "Sometimes an empty calendar is the best plan.",
        ),
    ),
    "garden": (
        "the garden",
        (
            "The {plant} in the garden finally {garden_event}.",
            "I spent an hour weeding this afternoon.",
            "Should I prune the {plant} now or wait?",
            "Something keeps eating my {plant}.",
            "I repotted the {plant} on the windowsill.",
            "The compost bin is getting full.",
            "A neighbour gave me some cuttings.",
        ),
        (
            "That's satisfying to see.",
            "Waiting until after flowering is usually the safe choice.",
            "Slugs are a common culprit.",
            "Fresh soil should give it a boost.",
            "Weeding is oddly relaxing once you get into it.",
            "You could spread the compost on the beds soon.",
            "Cuttings are a lovely way to fill a garden.",
        ),
    ),
    "exercise": (
        "exercise",
        (
            "I went for a swim at lunch.",
            "Yoga class was tough today.",
            "I'm trying to walk {steps} steps a day.",
            "My gym got a new {equipment} and I tried it.",
            "I skipped my workout again.",
            "I did a short bike ride before work.",
            "My shoulders are stiff from sitting all day.",
        ),
        (
            "Nice, how did you feel afterwards?",
            "Consistency matters more than intensity.",
            "That's a good goal, and easy to track.",
            "Trying new things keeps it interesting.",
            "Missing one session isn't a big deal.",
            "A morning ride is a great way to start the day.",
            "A few stretches every hour can help with that.",
        ),
    ),
    "errands": (
        "errands and shopping",
        (
            "The supermarket was out of {item} again.",
            "I spent far too much at the shops today.",
            "I'm trying a meal plan to cut the grocery bill.",
            "I picked up {item} on the way home.",
            "The queue at the post office was out the door.",
            "I finally returned the jacket that didn't fit.",
            "I keep forgetting my reusable bags.",
        ),
        (
            "That's annoying. Maybe try a different shop?",
            "It adds up quickly, doesn't it?",
            "Meal plans help a lot once you get used to them.",
            "Good to have that sorted.",
            "Lunchtime is always the worst for queues.",
            "It's a relief to get those small jobs done.",
            "Leaving them by the door might help.",
        ),
    ),
    "reminders": (
        "things to arrange",
        (
            "I should book my next {topic_noun} soon.",
            "Remind me that I need to sort out the {topic_noun} at some point.",
            "I keep meaning to look into the {topic_noun}.",
            "Someone at work was talking about their {topic_noun} today.",
            "I added the {topic_noun} to my to-do list.",
            "My to-do list is getting out of hand.",
        ),
        (
            "I'll keep that in mind. Do you want to pick a date?",
            "It helps to put it in the calendar right away.",
            "One thing at a time.",
            "That's a good thing to get ahead of.",
            "Writing it down is half the work.",
            "Maybe pick the two most urgent items for this week.",
        ),
    ),
}

_SLOTS: dict[str, tuple[str, ...]] = {
    "weather_event": ("a sudden downpour", "a hailstorm", "a gust that took my umbrella", "thick fog"),
    "dish": (
        "a mushroom risotto", "lentil soup", "banana bread", "a green curry", "homemade pizza",
        "shakshuka", "chicken pot pie", "a vegetable lasagne", "pad thai", "apple crumble",
        "fish tacos", "a chickpea stew",
    ),
    "fail": ("too dry", "a bit bland", "soggy", "burnt on the bottom", "too salty"),
    "ingredient": ("fennel", "a whole celeriac", "purple broccoli", "fresh figs", "quinces", "kohlrabi", "wild garlic"),
    "show": (
        "The Lighthouse Keepers", "Copper Valley", "Midnight Bakery", "The Long Audit",
        "Harbour Lights", "Quiet Frontier", "The Botanist", "Red Ledger", "Paper Moons", "Northbound",
    ),
    "plan": (
        "a hike in the hills", "the farmers' market", "a picnic", "the cinema",
        "a bike ride along the river", "a board game night", "the museum", "the flea market",
    ),
    "chore": ("clean the garage", "sort out the wardrobe", "tackle the laundry", "repaint the hallway", "catch up on email"),
    "plant": ("tomatoes", "basil", "roses", "sunflowers", "lavender", "runner beans", "hydrangea", "strawberries"),
    "garden_event": ("started flowering", "sprouted", "recovered", "shot up", "set fruit"),
    "steps": ("eight thousand", "ten thousand", "twelve thousand"),
    "equipment": ("rowing machine", "climbing wall", "spin bike", "cable machine"),
    "item": ("oat milk", "eggs", "fresh bread", "coffee beans", "bin bags", "lemons"),
    "topic_noun": (
        "dentist check-up", "car service", "doctor's appointment", "vet appointment",
        "book club reading", "next trip", "job applications", "volunteer shift",
        "flat search", "race training", "family visit", "boiler check",
    ),
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


def _fill(rng: random.Random, template: str, month: int) -> str:
    def sub(m: re.Match) -> str:
        slot = m.group(1)
        if slot == "weather":
            return rng.choice(_WEATHER_BY_MONTH.get(month, ("mild",)))
        return rng.choice(_SLOTS[slot])

    text = re.sub(r"\{(\w+)\}", sub, template)
    return text[0].upper() + text[1:]


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
    # (speaker, text, is_evidence)
    lines: list[tuple[str, str, bool]] | None = None


def _topic_lines(rng: random.Random, topic: _Topic, detail: tuple[str, ...]) -> list[tuple[str, str, bool]]:
    detail_sentences = list(detail[1:])
    if len(detail_sentences) > 1 and rng.random() < 0.25:
        detail_sentences = detail_sentences[:1]  # some occurrences carry one detail turn
    lines: list[tuple[str, str, bool]] = [
        ("user", rng.choice(topic.openers), False),
        ("assistant", rng.choice(topic.follow_ups), False),
    ]
    acks = rng.sample(_ACKS, len(_ACKS))
    for i, sentence in enumerate(detail_sentences):
        lines.append(("user", sentence, True))
        lines.append(("assistant", acks[i], False))
    extra_pairs = rng.randint(0, 2)
    fillers = rng.sample(topic.fillers, len(topic.fillers))
    for i in range(extra_pairs):
        lines.append(("user", fillers[i], False))
        lines.append(("assistant", acks[len(detail_sentences) + i], False))
    if rng.random() < 0.5 and len(lines) <= 8:
        lines.append(("user", rng.choice(_TOPIC_CLOSERS), False))
        lines.append(("assistant", rng.choice(_ASSISTANT_CLOSERS), False))
    return lines[:10]


def _small_talk_lines(rng: random.Random, theme: str, month: int) -> list[tuple[str, str, bool]]:
    _, user_lines, assistant_lines = _SMALL_TALK[theme]
    n_turns = rng.randint(4, 10)
    users = rng.sample(user_lines, len(user_lines))
    assistants = rng.sample(assistant_lines, len(assistant_lines))
    lines: list[tuple[str, str, bool]] = []
    for i in range(n_turns):
        if i % 2 == 0:
            lines.append(("user", _fill(rng, users[(i // 2) % len(users)], month), False))
        else:
            lines.append(("assistant", _fill(rng, assistants[(i // 2) % len(assistants)], month), False))
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
    (category "relative"). Evidence is the occurrence's detail turns; msg_ids
    are ``ls<seed>:<session>:<turn>``. The same seed and size always give the
    same conversation.
    """
    if size not in LONG_SPAN_SIZES:
        raise ValueError(f"size must be one of {sorted(LONG_SPAN_SIZES)}, not {size!r}")
    target_turns, n_topics, (occ_lo, occ_hi) = LONG_SPAN_SIZES[size]
    rng = random.Random(f"long-span:{seed}:{size}")
    prefix = f"ls{seed}"

    n_days = (_LONG_SPAN_END - LONG_SPAN_START).days + 1
    months = sorted({(LONG_SPAN_START + timedelta(days=i)).month for i in range(n_days)})

    # 1. Topic occurrences: distinct months per topic, a day within each.
    planned: list[_PlannedSession] = []
    for topic in _TOPICS[:n_topics]:
        k = rng.randint(occ_lo, min(occ_hi, len(topic.details)))
        chosen_months = sorted(rng.sample(months, k))
        details = rng.sample(topic.details, k)
        for occ, (month, detail) in enumerate(zip(chosen_months, details)):
            first = date(2025, month, 1)
            last = (date(2025, month + 1, 1) if month < 12 else date(2026, 1, 1)) - timedelta(days=1)
            first = max(first, LONG_SPAN_START)
            last = min(last, _LONG_SPAN_END)
            day = first + timedelta(days=rng.randint(0, (last - first).days))
            session = _PlannedSession(day=day, kind="topic", topic=topic, detail=detail, occurrence=occ)
            session.lines = _topic_lines(rng, topic, detail)
            planned.append(session)

    # 2. Small talk until the target number of turns is reached.
    themes = sorted(_SMALL_TALK)
    total = sum(len(s.lines or ()) for s in planned)
    while total < target_turns:
        day = LONG_SPAN_START + timedelta(days=rng.randint(0, n_days - 1))
        theme = rng.choice(themes)
        session = _PlannedSession(day=day, kind="small", theme=theme)
        session.lines = _small_talk_lines(rng, theme, day.month)
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
            summary = f"On {when} the user told the assistant about {s.topic.label}: {s.detail[0]}."
            keywords = f"{s.topic.key}, {s.detail[0]}"
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

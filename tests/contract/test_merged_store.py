"""A store that holds many conversations (docs/recall-process.md#episode-context): adding unrelated
conversations, each with its session summaries, never moves a row that matches the query on every signal
(its words and its meaning) below a row of the asked conversation that matches on none, with the arms that ship."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.config import Settings
from tests.conftest import REPLICA_ARMS, make_settings, open_memory

A = "one-agent"
SHIPPED = {name: getattr(Settings.from_env({}), name) for name in REPLICA_ARMS}
TOPICS = [
    "bike brake pads chain gears saddle",
    "garden basil tomato pot soil seeds",
    "invoice insurance dentist appointment refund",
    "flight hotel hike holiday passport beach",
    "violin lesson recital scales teacher practice",
    "kitchen oven bread flour yeast dough",
]
MATCH = "Mara adopted a grey whippet puppy called Biscuit from the shelter."
QUERY = "Mara adopted a grey whippet puppy called Biscuit"
NONE = "Rain is forecast for the weekend market."  # shares no word with the query


def _conversation(memory: Memory, rng: random.Random, day: int, sessions: int) -> None:
    """An unrelated conversation: sessions of a few turns on one topic each, every session summarised."""
    for s in range(sessions):
        topic = rng.choice(TOPICS).split()
        start = f"2025-{1 + (day + s) // 28 % 12:02d}-{1 + (day + s) % 28:02d}T09:00:00+00:00"
        for t in range(rng.randint(3, 6)):
            text = " ".join(rng.sample(topic, 4)) + f" turn {day}-{s}-{t}"
            memory.store(agent_id=A, content=text, timestamp=start.replace("09:00", f"09:{t:02d}"))
        memory.archive_episode(
            agent_id=A,
            summary=f"They talked about {' and '.join(topic[:3])}.",
            start_time=start,
            end_time=start.replace("09:00", "09:10"),
        )


def _places(memory: Memory) -> dict[str, int]:
    answer = memory.recall(agent_id=A, query=QUERY, limit=10)
    return {m["ref"]: m["rank"] for m in answer["messages"] if "ref" in m}


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), conversations=st.integers(1, 6), sessions=st.integers(2, 6))
def test_unrelated_conversations_never_move_a_full_match_below_a_row_that_matches_on_nothing(
    tmp_path_factory: Any, seed: int, conversations: int, sessions: int
) -> None:
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("merged") / "m.db"
    with open_memory(path, settings=make_settings(**SHIPPED), background=False) as memory:
        match = memory.store(agent_id=A, content=MATCH, timestamp="2025-06-01T10:00:00+00:00")["ref"]
        none = memory.store(agent_id=A, content=NONE, timestamp="2025-06-01T10:05:00+00:00")["ref"]
        memory.archive_episode(
            agent_id=A,
            summary="Mara's new dog and the weekend",
            start_time="2025-06-01T10:00:00+00:00",
            end_time="2025-06-01T10:10:00+00:00",
        )
        for signal in ("cosine", "rrf"):  # a gate that admits every row an arm reaches: the order decides
            memory.calibration.set(A, signal, 0.0)
        alone = _places(memory)
        for c in range(conversations):
            _conversation(memory, rng, 30 * c, sessions)
        grown = _places(memory)
    assert none in alone  # the comparison is real: the unmatched row is in the small store's answer
    for places in (alone, grown):
        assert places.get(match) == 1, places  # the full match is first, with or without the others
        assert places.get(none, 99) > places[match]

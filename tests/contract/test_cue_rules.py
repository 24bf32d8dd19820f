"""The rules of the time cue (docs/recall-process.md#the-time-cue-cued-v03), one example each, named after the rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.embed.hashing import HashEmbedder
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.cue_policy import BOUND, CUE_DEPTH, POLICY, SINGLE_PASS_POLICY
from cuedrecall.recall.pipeline import PassResult
from cuedrecall.recall.process import bounded_move, seats
from cuedrecall.store.base import Hit
from cuedrecall.tools import TOOLS
from tests.conftest import NOW, make_settings, open_memory

# the process these tests run: the shipped settings (gate relief off) run exactly cued-v0.3 (recall/policy.py)
CUED = POLICY
UNCUED = SINGLE_PASS_POLICY
QUERY = "bike shop repair"
JUNE = {"after": "2025-06-01", "before": "2025-06-30"}


# --- helpers ------------------------------------------------------------------------------------------


def at(day: str, hour: int = 10) -> str:
    return f"{day}T{hour:02d}:00:00+00:00"


def put(memory: Memory, text: str, day: str, agent: str = "a", **where: Any) -> str:
    out = memory.store(agent_id=agent, message={"content": text, "timestamp": at(day)}, **where)
    assert out["result"] == "stored", out
    return out["ref"]


def best_first(response: dict[str, Any]) -> list[dict[str, Any]]:
    return list(reversed(response["messages"]))


def reason(message: dict[str, Any]) -> dict[str, Any]:
    return message.get("match_reason") or {}


def answer_refs(response: dict[str, Any]) -> list[str]:
    """The rows the count returned, best first (seats left out)."""
    return [m["ref"] for m in best_first(response) if reason(m).get("admission") != "reservation"]


def seat_refs(response: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in best_first(response) if reason(m).get("admission") == "reservation"]


def cue_arm(response: dict[str, Any], name: str = "cue") -> list[str]:
    return [hit["ref"] for hit in response["trace"]["arms"][name]]


def recall(memory: Memory, query: str = QUERY, limit: int = 10, **kwargs: Any) -> dict[str, Any]:
    out = memory.recall(agent_id="a", query=query, limit=limit, trace=True, **kwargs)
    assert out.get("ok") is not False, out
    return out


def cue(confidence: str = "sure", **where: Any) -> dict[str, Any]:
    return {**where, "confidence": confidence}


def rows(*refs: str) -> list[Candidate]:
    return [Candidate(ref) for ref in refs]


def order(moved: tuple[list[Candidate], list[dict[str, Any]]]) -> list[str]:
    return [row.ref for row in moved[0]]


REFS = tuple(f"mem:{i}" for i in range(10))


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    with open_memory(tmp_path / "m.db") as m:
        yield m


@pytest.fixture
def weekly(memory: Memory) -> tuple[Memory, list[tuple[str, str]]]:
    """Ten repair notes a week apart from March, each alone on its day: (ref, day)."""
    words = ("chain", "cassette", "brake", "pads", "wheel", "spokes", "saddle", "tyres", "bracket", "cable")
    notes = []
    for week, word in enumerate(words):
        day = (datetime(2025, 3, 3) + timedelta(weeks=week)).date().isoformat()
        notes.append((put(memory, f"bike shop repair {word}", day), day))
    return memory, notes


# --- the bounded move (docs/recall-process.md#the-bounded-move) ---------------------------------------------


@pytest.mark.parametrize("confidence", ["sure", "likely", "vague"])
def test_cue_first_ranked_row_rises_exactly_L_places(weekly, confidence):
    memory, notes = weekly
    bound = BOUND[confidence]
    uncued = answer_refs(recall(memory))
    assert len(uncued) == 10
    day = dict(notes)
    for place in (9, bound + 1, bound):  # it stands L places down or more
        target = uncued[place]
        cued = recall(memory, time_cue=cue(confidence, after=day[target], before=day[target]))
        assert cue_arm(cued)[0] == target  # the cue arm ranks it first (c = 0)
        assert cued["time_cue"]["confidence"] == confidence
        assert answer_refs(cued).index(target) == place - bound
        assert reason(best_first(cued)[place - bound])["cue_rank"] == 0
        # the rows it passed each stepped down one place, in their order
        assert answer_refs(cued)[place - bound + 1 : place + 1] == uncued[place - bound : place]
    # bounded_move directly: a row at position p with cue rank 0 lands at p - L
    for p in range(bound, 10):
        assert order(bounded_move(rows(*REFS), [Hit(REFS[p], 0, None)], bound)).index(REFS[p]) == p - bound
    # closer to the top than L, it becomes first
    assert order(bounded_move(rows(*REFS), [Hit(REFS[bound - 1], 0, None)], bound))[0] == REFS[bound - 1]


def test_row_at_cue_rank_60_rises_half_of_L():
    # key = p - L * 61 / (61 + c): at c = 60 the bonus is L * 61/121, about half of L
    bound = 2
    moved = bounded_move(rows(*REFS), [Hit("mem:7", 60, None)], bound)
    assert order(moved).index("mem:7") == 7 - bound // 2
    assert moved[1][0] == {"ref": "mem:7", "from": 7, "to": 6}
    # the first-ranked row rises the full L from the same place; lower ranks rise less
    assert order(bounded_move(rows(*REFS), [Hit("mem:7", 0, None)], bound)).index("mem:7") == 5
    rises = [7 - order(bounded_move(rows(*REFS), [Hit("mem:7", c, None)], 3)).index("mem:7") for c in (0, 30, 60, 200)]
    assert rises == sorted(rises, reverse=True) and rises[0] == 3 and rises[2] == 1  # half of 3, in whole places


def test_tie_goes_to_the_row_the_cue_found():
    # L = 1, c = 0: key(mem:3) = 3 - 1 = 2 = key(mem:2); the found row goes first
    found_first = ["mem:0", "mem:1", "mem:3", "mem:2", "mem:4"]
    assert order(bounded_move(rows(*REFS[:5]), [Hit("mem:3", 0, None)], 1)) == found_first
    # L = 2, c = 61: the bonus is exactly 1, so again a tie with the row above
    assert order(bounded_move(rows(*REFS[:5]), [Hit("mem:3", 61, None)], 2)) == found_first


def test_other_ties_keep_original_order():
    # two found rows with the same key (1 - 2*61/122 = 0 = 2 - 2*61/61) keep their order
    found = [Hit("mem:2", 0, None), Hit("mem:1", 61, None)]
    assert order(bounded_move(rows(*REFS[:4]), found, 2)) == ["mem:1", "mem:2", "mem:0", "mem:3"]
    # rows the cue did not find keep their order among themselves, and nothing moves without a found row
    moved = bounded_move(rows(*REFS), [Hit("mem:9", 0, None), Hit("mem:5", 1, None)], 3)
    lifted = ("mem:9", "mem:5")
    assert [ref for ref in order(moved) if ref not in lifted] == [ref for ref in REFS if ref not in lifted]
    assert bounded_move(rows(*REFS), [Hit("mem:99", 0, None)], 3) == (rows(*REFS), [])
    assert bounded_move(rows(*REFS), [], 3) == (rows(*REFS), [])


# --- the seats (docs/recall-process.md#the-seats) -----------------------------------------------------------


def _pass(answer: list[str], admitted: set[str], reached: set[str]) -> PassResult:
    return PassResult(rows(*answer), frozenset(admitted), frozenset(reached), False, held=[])


def test_seats_hold_rows_the_answer_lacks_in_cue_order(weekly):
    found = [Hit(f"mem:{i}", rank, None) for rank, i in enumerate((5, 2, 8, 3, 6))]
    result = _pass(["mem:2", "mem:1"], admitted={"mem:2", "mem:1", "mem:3"}, reached={"mem:2", "mem:1", "mem:3"})
    held = seats(found, result.answer, result, 3)
    assert [(row.ref, row.cue_rank, row.seat) for row in held] == [
        ("mem:5", 0, "cue"),
        ("mem:8", 2, "cue"),
        ("mem:3", 3, "cue"),
    ]
    assert [row.ref for row in seats(found, result.answer, result, 1)] == ["mem:5"]
    # end to end: three June repair notes not in a one-row answer take the three seats, in cue order
    memory, _ = weekly
    june = [
        put(memory, f"bike shop repair {word} June", day)
        for word, day in (
            ("gear", "2025-06-05"),
            ("bell", "2025-06-12"),
            ("light", "2025-06-19"),
            ("lock", "2025-06-26"),
        )
    ]
    cued = recall(memory, limit=1, time_cue=cue("sure", **JUNE))
    arm = cue_arm(cued)
    assert set(arm) == set(june)
    missing = [ref for ref in arm if ref not in answer_refs(cued)]
    assert seat_refs(cued) == missing[:3]
    assert [reason(m)["cue_rank"] for m in best_first(cued)[1:]] == [arm.index(ref) for ref in missing[:3]]


def test_seat_never_holds_a_row_the_gate_refused(memory):
    # directly: a row an ordinary arm reached and the gate refused is passed over
    found = [Hit("mem:7", 0, None), Hit("mem:8", 1, None)]
    result = _pass(["mem:1"], admitted={"mem:1"}, reached={"mem:1", "mem:7"})
    assert [row.ref for row in seats(found, result.answer, result, 3)] == ["mem:8"]
    # end to end: the only June record is a weak match the gate refuses; the cue finds it but seats nothing
    for word, day in (("chain", "2025-03-04"), ("tyres", "2025-09-29"), ("cable", "2025-10-02")):
        put(memory, f"bike shop repair {word}", day)
    weak = put(memory, "the bike helmet and a coffee with the dentist after the meeting", "2025-06-12")
    memory.calibration.set("a", "rrf", 1.0)  # no lexical-only row can pass: the weak match is refused
    memory.calibration.set("a", "cosine", 0.99)
    cued = recall(memory, time_cue=cue("sure", **JUNE))
    refused = {d["ref"] for d in cued["trace"]["gate"]["decisions"] if not d["passed"]}
    assert weak in refused and cue_arm(cued) == [weak]
    assert seat_refs(cued) == [] and cued["time_cue"]["seated"] == 0
    assert weak not in {m.get("ref") for m in cued["messages"]}


def test_seat_may_hold_a_row_the_count_cut(tmp_path):
    # the arms search to a depth of 10 while the count keeps 2, so the gate admits rows the count cuts
    with open_memory(tmp_path / "m.db", settings=make_settings(recall_depth_floor=10)) as memory:
        days = [
            (put(memory, f"bike shop repair {word}", day), day)
            for word, day in (
                ("chain", "2025-03-04"),
                ("brake", "2025-06-12"),
                ("tyres", "2025-09-29"),
                ("cable", "2025-10-02"),
            )
        ]
        uncued = recall(memory, limit=2)
        cut = uncued["trace"]["order"]["cut_by_count"]
        assert len(cut) == 2 and set(cut) <= set(uncued["trace"]["order"]["before_cut"])
        target = cut[-1]  # admitted by the gate, cut by the count
        cued = recall(memory, limit=2, time_cue=cue("vague", after=dict(days)[target], before=dict(days)[target]))
    assert seat_refs(cued) == [target]
    assert answer_refs(cued) == answer_refs(uncued)


def test_seated_rows_are_marked_signal_cue_admission_reservation(weekly):
    memory, _notes = weekly
    cued = recall(memory, limit=1, time_cue=cue("sure", after="2025-03-01", before="2025-05-31"))
    seated = seat_refs(cued)
    assert len(seated) == 3
    arm = cue_arm(cued)
    for message in cued["messages"][: len(seated)]:  # the wire runs worst to best: seats come first
        assert message["match_reason"] == {
            "signal": "cue",
            "admission": "reservation",
            "cue_rank": arm.index(message["ref"]),
        }
    assert cued["trace"]["reservation"] == [{"ref": ref, "kind": "cue"} for ref in seated]
    assert cued["trace"]["cue"]["seated"] == seated
    assert reason(best_first(cued)[0])["signal"] != "cue"  # the row the count returned is not a seat


def test_cue_rank_on_rows_the_cue_arm_ranked(weekly):
    memory, _notes = weekly
    cued = recall(memory, time_cue=cue("sure", after="2025-03-20", before="2025-04-10"))
    arm = cue_arm(cued)
    assert len(arm) == 3  # 24 March, 31 March, 7 April
    for message in best_first(cued):
        if message["ref"] in arm:
            assert reason(message)["cue_rank"] == arm.index(message["ref"])
        else:
            assert "cue_rank" not in reason(message)
    assert [hit["rank"] for hit in cued["trace"]["arms"]["cue"]] == [0, 1, 2]


# --- the cue arm (docs/recall-process.md#the-cue-arm) -------------------------------------------------------


def test_cue_arm_searches_episodes_in_the_period(memory):
    put(memory, "bike shop repair chain", "2025-03-04")
    june = memory.archive_episode(
        agent_id="a",
        summary="Bike shop repair: new brake pads, trued wheel",
        keywords="bike repair",
        history=[{"timestamp": at("2025-06-12")}],
    )["ref"]
    march = memory.archive_episode(
        agent_id="a",
        summary="Bike shop repair: chain and cassette",
        keywords="bike repair",
        history=[{"timestamp": at("2025-03-04")}],
    )["ref"]
    # recorded now (1 November) but started in June: an episode's time is its start time
    started = memory.archive_episode(
        agent_id="a", summary="Bike shop repair in June, written up later", start_time=at("2025-06-20")
    )["ref"]
    # no history and no start time: its time is when it was recorded, now
    recorded = memory.archive_episode(agent_id="a", summary="Bike shop repair notes, undated")["ref"]
    cued = recall(memory, time_cue=cue("sure", **JUNE))
    arm = cue_arm(cued)
    assert june in arm and started in arm
    assert march not in arm and recorded not in arm
    latest = recall(memory, time_cue=cue("sure", after="2025-10-25", before="2025-11-01"))
    assert cue_arm(latest) == [recorded]
    # an episode the cue found is moved or seated like a memory
    assert june in answer_refs(cued) + seat_refs(cued)


def unranked(message: dict) -> dict:
    """A row less its place in the answer (``rank``), which a cue's move changes."""
    return {key: value for key, value in message.items() if key != "rank"}


def test_cue_arm_never_removes_or_rescores_rows_outside_the_period(weekly):
    memory, _notes = weekly
    uncued = recall(memory)
    cued = recall(memory, time_cue=cue("sure", after="2025-04-01", before="2025-04-30"))
    inside = set(cue_arm(cued))
    assert inside and inside < set(answer_refs(uncued))
    before = {m["ref"]: unranked(m) for m in uncued["messages"]}  # a row's place may move; nothing else may
    for message in cued["messages"]:
        if message["ref"] not in inside:
            assert unranked(message) == before[message["ref"]]  # same content, scores and reason: nothing re-scored
        else:
            stripped = {**message, "match_reason": {k: v for k, v in reason(message).items() if k != "cue_rank"}}
            assert unranked(stripped) == before[message["ref"]]
    assert sorted(answer_refs(cued)) == sorted(answer_refs(uncued))
    for part in ("arms", "fusion", "gate", "autocut", "order", "scoring"):
        expected = uncued["trace"][part]
        got = cued["trace"][part]
        if part == "arms":
            got = {name: hits for name, hits in got.items() if not name.startswith("cue")}
        assert got == expected, part


def test_cue_arm_depth_is_50_per_half_whatever_the_limit(memory, monkeypatch):
    for i in range(60):
        put(memory, f"bike shop repair number {i}", f"2025-06-{1 + i % 28:02d}")
    for i in range(55):
        memory.archive_episode(
            agent_id="a",
            summary=f"bike shop repair session {i}",
            history=[{"timestamp": at(f"2025-06-{1 + i % 28:02d}")}],
        )
    put(memory, "bike shop repair outside", "2025-09-01")
    depths: list[tuple[str, int, int]] = []
    store = memory.store_
    for name in ("vector_in_period", "memory_keyword", "episode_fts"):
        original = getattr(store, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> list[Hit]:
            hits = _original(*args, **kwargs)
            if kwargs.get("period") is not None:
                depths.append((_name, kwargs["depth"], len(hits)))
            return hits

        monkeypatch.setattr(store, name, spy)
    arms = {}
    for limit in (1, 3, 10):
        depths.clear()
        cued = recall(memory, limit=limit, time_cue=cue("sure", **JUNE))
        assert {depth for _, depth, _ in depths} == {CUE_DEPTH} == {50}
        # vector over memories and over episodes, keyword over memories and episodes: 50 each, then merged to 50
        assert sorted((name, found) for name, _, found in depths) == [
            ("episode_fts", 50),
            ("memory_keyword", 50),
            ("vector_in_period", 50),
            ("vector_in_period", 50),
        ]
        arms[limit] = cued["trace"]["arms"]["cue"]
        assert len(arms[limit]) == 50
    assert arms[1] == arms[3] == arms[10]


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[override]
        self.texts.extend(texts)
        return super().embed(texts)


def test_cue_arm_reuses_the_query_vector(tmp_path, monkeypatch):
    embedder = CountingEmbedder()
    with open_memory(tmp_path / "m.db", embedder=embedder) as memory:
        for word, day in (("chain", "2025-03-04"), ("brake", "2025-06-12"), ("tyres", "2025-09-29")):
            put(memory, f"bike shop repair {word}", day)
        seen: list[np.ndarray] = []
        original = memory.store_.vector_in_period
        monkeypatch.setattr(
            memory.store_,
            "vector_in_period",
            lambda scope, kind, query, **kw: seen.append(query) or original(scope, kind, query, **kw),
        )
        for query in ("bike shop repair brake", "brake pads", "what did the shop fix"):
            embedder.texts.clear()
            seen.clear()
            cued = recall(memory, query=query, time_cue=cue("likely", **JUNE))
            assert embedder.texts == [query]  # exactly one embedding per recall, the query's
            assert len(seen) == 2 and all(vector is memory.queries.embed_query(query) for vector in seen)
            assert "cue" in cued["trace"]["arms"]
        # a revision runs the cue arm again with the same vector: still one embedding
        embedder.texts.clear()
        cued = recall(
            memory, query="bike shop repair again", time_cue=cue("sure", after="2025-06-20", before="2025-06-24")
        )
        assert cued["time_cue"]["revised"] is True and embedder.texts == ["bike shop repair again"]


def test_empty_query_with_cue_returns_the_periods_newest_records_as_seats_or_moves(weekly):
    memory, notes = weekly
    for day in ("2025-10-20", "2025-10-22", "2025-10-24"):
        put(memory, f"newest note of {day}", day)
    uncued = recall(memory, query="", limit=3)
    assert len(answer_refs(uncued)) == 3
    march = [ref for ref, day in notes if day.startswith("2025-03")]  # 3, 10, 17, 24, 31 March
    cued = recall(memory, query="", limit=3, time_cue=cue("sure", after="2025-03-01", before="2025-03-31"))
    assert cue_arm(cued) == list(reversed(march))  # the period's newest records, newest first
    assert seat_refs(cued) == list(reversed(march))[:3]
    assert answer_refs(cued) == answer_refs(uncued)
    # when the period's records are already in the answer, they move up instead
    everything = recall(memory, query="", limit=13)
    cued = recall(memory, query="", limit=13, time_cue=cue("sure", after="2025-05-01", before="2025-05-31"))
    may = [ref for ref, day in notes if day.startswith("2025-05")]
    assert seat_refs(cued) == [] and cued["time_cue"]["moved"] > 0
    for ref in may:
        assert answer_refs(everything).index(ref) - answer_refs(cued).index(ref) == 3


# --- one revision (docs/recall-process.md#one-revision) -----------------------------------------------------


def test_empty_period_suspects_candidate_miss_and_widens_once(weekly):
    memory, notes = weekly
    # the notes of 14 and 21 April lie outside 17-19 April; the likely margin (1.5 days a side) reaches the 21st
    cued = recall(memory, time_cue=cue("sure", after="2025-04-17", before="2025-04-19"))
    trace = cued["trace"]
    assert trace["suspected"] == [
        {
            "stage": 0,
            "code": "CANDIDATE_MISS",
            "reason": "the cue period holds no candidate",
            "action": "widened to the likely margin",
        }
    ]
    stages = trace["stages"]
    assert len(stages) == 2
    assert stages[0]["found"] == 0 and stages[0]["next"] == "widen to the likely margin"
    assert stages[1]["searched"] == "the cue period only" and stages[1]["found"] == 1
    assert stages[1]["period"] == ["2025-04-15T12:00:00+00:00", "2025-04-21T12:00:00+00:00"]
    assert cued["time_cue"]["revised"] is True and cued["time_cue"]["period"] == stages[1]["period"]
    assert trace["arms"]["cue"] == []
    assert cue_arm(cued, "cue_stage_1") == [ref for ref, day in notes if day == "2025-04-21"]
    # only the cue arm ran again: the ordinary arms ran once
    assert sorted(name for name in trace["arms"] if not name.startswith("cue")) == sorted(
        recall(memory)["trace"]["arms"]
    )


def test_after_revision_L_is_that_of_the_step_searched(weekly):
    memory, notes = weekly
    april_21 = [ref for ref, day in notes if day == "2025-04-21"]
    # a sure cue on empty days widens to likely: L = 2
    cued = recall(memory, limit=1, time_cue=cue("sure", after="2025-04-17", before="2025-04-19"))
    assert cued["time_cue"]["revised"] is True and cued["time_cue"]["confidence"] == "likely"
    assert cued["trace"]["cue"]["bound"] == 2 and seat_refs(cued) == april_21
    # a likely cue on empty days (15-19 April with its margin) widens to vague (14-20 April): L = 1
    cued = recall(memory, limit=1, time_cue=cue("likely", after="2025-04-16", before="2025-04-17"))
    assert cued["time_cue"]["revised"] is True and cued["time_cue"]["confidence"] == "vague"
    assert cued["trace"]["cue"]["bound"] == 1
    assert seat_refs(cued) == [ref for ref, day in notes if day == "2025-04-14"]
    # where the widened period holds three rows the answer lacks, L of them sit: two, not the sure step's three
    for day in ("2025-08-10", "2025-08-11", "2025-08-12", "2025-08-13"):
        put(memory, f"bike shop repair August {day}", day)
    cued = recall(memory, limit=1, time_cue=cue("sure", after="2025-08-05", before="2025-08-09"))
    assert cued["time_cue"]["confidence"] == "likely" and cued["trace"]["stages"][1]["found"] == 3
    assert len(seat_refs(cued)) == 2 == cued["time_cue"]["seated"]


def test_vague_cue_whose_period_holds_nothing_stops(weekly):
    memory, _ = weekly
    uncued = recall(memory)
    cued = recall(memory, time_cue=cue("vague", after="2025-07-10", before="2025-07-20"))
    stages = cued["trace"]["stages"]
    assert len(stages) == 1 and stages[0]["found"] == 0
    assert stages[0]["next"] == "stop: no wider period (a vague cue widens to no period)"
    assert cued["trace"]["suspected"] == [
        {
            "stage": 0,
            "code": "CANDIDATE_MISS",
            "reason": "the cue period holds no candidate",
            "action": "stop: no wider period (a vague cue widens to no period)",
        }
    ]
    assert "cue_stage_1" not in cued["trace"]["arms"]
    assert cued["time_cue"] == {
        "policy": CUED,
        "period": stages[0]["period"],
        "confidence": "vague",
        "revised": False,
        "moved": 0,
        "seated": 0,
    }
    assert cued["messages"] == uncued["messages"]


def test_revision_stops_at_the_time_limit(tmp_path):
    with open_memory(tmp_path / "m.db", settings=make_settings(recall_cue_time_limit_ms=0)) as memory:
        for word, day in (("chain", "2025-03-04"), ("brake", "2025-06-12")):
            put(memory, f"bike shop repair {word}", day)
        cued = recall(memory, time_cue=cue("sure", after="2025-04-17", before="2025-04-19"))
    stages = cued["trace"]["stages"]
    assert len(stages) == 1 and stages[0]["next"] == "stop: time limit"
    assert cued["trace"]["suspected"][0]["action"] == "stop: time limit"
    assert cued["time_cue"]["revised"] is False and cued["time_cue"]["confidence"] == "sure"


# --- which cues are used (docs/recall-process.md#a-cue-for-today-is-not-used, docs/recall-process.md#periods) ---


@pytest.mark.parametrize(
    "time_cue, period",
    [
        ({"after": "2025-11-01"}, ["2025-11-01T00:00:00+00:00", "2025-11-01T12:00:00+00:00"]),
        ({"after": "2025-11-01", "before": "2025-11-30"}, ["2025-11-01T00:00:00+00:00", "2025-12-01T00:00:00+00:00"]),
        ({"after": "2025-10-31T13:00:00+00:00"}, ["2025-10-31T13:00:00+00:00", "2025-11-01T12:00:00+00:00"]),
        ({"ago": {"unit": "days", "value": 0}}, ["2025-11-01T00:00:00+00:00", "2025-11-01T12:00:00+00:00"]),
    ],
)
@pytest.mark.parametrize("confidence", ["sure", "vague"])
def test_cue_for_today_is_ignored_recent_only(weekly, time_cue, period, confidence):
    memory, _ = weekly
    put(memory, "bike shop repair this morning", "2025-11-01")
    uncued = recall(memory)
    cued = recall(memory, time_cue={**time_cue, "confidence": confidence})
    assert cued["messages"] == uncued["messages"]  # exactly the rows of a recall without the cue
    assert cued["time_cue"] == {"policy": CUED, "ignored": "recent_only", "period": period}
    assert cued["trace"]["cue_ignored"] == {"reason": "recent_only", "period": period}
    assert "cue" not in cued["trace"]["arms"] and cued["trace"]["reservation"] == []
    # a cue that starts more than 24 hours ago is used
    used = recall(memory, time_cue=cue(confidence, after="2025-10-31T11:00:00+00:00"))
    assert "ignored" not in used["time_cue"] and "cue_ignored" not in used["trace"]


def test_relative_cue_uses_the_library_clock(tmp_path):
    relative = cue("sure", ago={"unit": "months", "value": 5})
    for now, period in (
        (NOW, ["2025-05-20T12:00:00+00:00", "2025-06-19T12:00:00+00:00"]),  # 150 days before, a month long
        ("2025-08-01T00:00:00+00:00", ["2025-02-17T00:00:00+00:00", "2025-03-19T00:00:00+00:00"]),
    ):
        with open_memory(tmp_path / f"{now[:10]}.db", clock=fixed_clock(now)) as memory:
            march = put(memory, "bike shop repair chain", "2025-03-04")
            june = put(memory, "bike shop repair brake", "2025-06-12")
            cued = recall(memory, time_cue=relative)
        assert cued["time_cue"]["period"] == period
        assert cue_arm(cued) == ([june] if now == NOW else [march])
    # a week ago against the pinned clock: 25 October, half a week either side
    with open_memory(tmp_path / "weeks.db") as memory:
        put(memory, "bike shop repair tyres", "2025-10-24")
        cued = recall(memory, time_cue=cue("sure", ago={"unit": "weeks", "value": 1}))
    assert cued["time_cue"]["period"] == ["2025-10-22T00:00:00+00:00", "2025-10-29T00:00:00+00:00"]
    assert len(cue_arm(cued)) == 1


@pytest.mark.parametrize(
    "time_cue, part",
    [
        ("March", "time_cue"),
        ({"after": "2025-03-01"}, "time_cue.confidence"),
        ({"after": "2025-03-01", "confidence": "certain"}, "time_cue.confidence"),
        (
            {"after": "2025-03-01", "confidence": "maybe"},
            "time_cue.confidence must be one of sure, likely, vague, not 'maybe'",
        ),
        ({"after": "last tuesday"}, "time_cue.after is not a date or timestamp: 'last tuesday'"),
        ({"after": "March", "confidence": "sure"}, "time_cue.after"),
        ({"after": "2025-02-30", "confidence": "sure"}, "time_cue.after"),
        ({"before": "", "confidence": "sure"}, "time_cue.before"),
        ({"after": "2025-03-31", "before": "2025-03-01", "confidence": "sure"}, "time_cue.before"),
        ({"after": "2025-03-01", "ago": "long_ago", "confidence": "sure"}, "either after/before or ago"),
        ({"confidence": "sure"}, "either after/before or ago"),
        ({"ago": {"unit": "years", "value": 1}, "confidence": "sure"}, "time_cue.ago.unit"),
        ({"ago": {"unit": "days", "value": -1}, "confidence": "sure"}, "time_cue.ago.value"),
        ({"ago": {"unit": "days", "value": True}, "confidence": "sure"}, "time_cue.ago.value"),
        ({"ago": "recently", "confidence": "sure"}, "time_cue.ago"),
        ({"after": "2025-03-01", "confidence": "sure", "where": "Lisbon"}, "unknown fields: ['where']"),
    ],
)
def test_unreadable_cue_is_refused_and_nothing_runs(tmp_path, monkeypatch, time_cue, part):
    embedder = CountingEmbedder()
    with open_memory(tmp_path / "m.db", embedder=embedder) as memory:
        put(memory, "bike shop repair chain", "2025-03-04")
        embedder.texts.clear()
        monkeypatch.setattr(memory.store_, "vector_near", lambda *a, **k: pytest.fail("an arm ran"))
        out = memory.recall(agent_id="a", query="bike shop", time_cue=time_cue, trace=True)
    assert out["ok"] is False and out["messages"] == []
    assert part in out["error"]
    assert "trace" not in out and embedder.texts == []  # refused before the query was embedded


# --- the response and the trace --------------------------------------------------------------------------


def test_response_time_cue_reports_policy_period_confidence_revised_moved_seated(weekly):
    memory, notes = weekly
    uncued = recall(memory, limit=5)
    fifth = dict(notes)[answer_refs(uncued)[4]]
    cued = recall(memory, limit=5, time_cue=cue("likely", after=fifth, before=fifth))
    summary = cued["time_cue"]
    assert set(summary) == {"policy", "period", "confidence", "revised", "moved", "seated"}
    start = datetime.fromisoformat(fifth).replace(tzinfo=UTC)
    assert summary["policy"] == CUED == "cued-v0.3"
    assert summary["period"] == [(start - timedelta(hours=12)).isoformat(), (start + timedelta(hours=36)).isoformat()]
    assert summary["confidence"] == "likely" and summary["revised"] is False
    assert summary["moved"] == 3  # the fifth row rose two places and the two it passed stepped down
    assert summary["moved"] == len(cued["trace"]["cue"]["lifted"]) and summary["seated"] == 0
    assert cued["trace"]["cue"]["lifted"][0] == {"ref": answer_refs(uncued)[4], "from": 4, "to": 2}
    assert cued["trace"]["request"]["time_cue"] == {
        "confidence": "likely",
        "after": start.isoformat(),
        "before": (start + timedelta(days=1)).isoformat(),
    }
    # seats are counted too
    seated = recall(memory, limit=1, time_cue=cue("sure", after="2025-03-01", before="2025-05-31"))
    assert seated["time_cue"]["seated"] == 3 == len(seat_refs(seated))


def test_trace_policy_process_is_cued_v0_3_with_a_cue_and_single_pass_v0_without(weekly):
    memory, _ = weekly
    cued = recall(memory, time_cue=cue("sure", **JUNE))
    assert cued["trace"]["policy"]["process"] == CUED == "cued-v0.3"
    for uncued in (recall(memory), recall(memory, time_cue=None), recall(memory, time_cue={})):
        assert uncued["trace"]["policy"]["process"] == UNCUED == "single-pass-v0"
        assert "time_cue" not in uncued and "time_cue" not in uncued["trace"]["request"]
        assert uncued["trace"]["stages"] == [{"stage": 0, "searched": "all arms", "next": None}]
    ignored = recall(memory, time_cue=cue("sure", after="2025-11-01"))
    assert ignored["trace"]["policy"]["process"] == CUED  # a cue was given, though not used


def test_recall_tool_description_says_pass_a_cue_only_when_the_request_names_a_time():
    recall_tool = TOOLS["recall"]
    description = recall_tool.description
    assert "Pass time_cue only when the request itself names a time" in description
    assert "never fill it with today's date" in description
    assert "only when the request itself names a time" in recall_tool.params["time_cue"].doc
    schema = recall_tool.input_schema()["properties"]["time_cue"]
    assert "only when the request itself names a time" in schema["description"]
    # and it states the bound: a cue moves rows a few places at most, adds up to 3, never removes one
    assert "up to 3 rows" in description and "never removes one" in description


def test_cue_arm_merge_breaks_ties_by_first_appearance_memories_before_episodes(memory, monkeypatch):
    # docs/recall-process.md#the-cue-arm: the lists are memory vector, memory keyword, then episode vector and
    # episode full text; the merge sorts by total votes, ties by first appearance
    mem = put(memory, "bike shop repair chain", "2025-06-10")
    ep = memory.archive_episode(
        agent_id="a", summary="bike shop repair brake pads", history=[{"timestamp": at("2025-06-12")}]
    )["ref"]
    store = memory.store_
    canned = {
        "vector_in_period": lambda scope, kind, *a, **k: [Hit(ep, 0, 0.9)] if kind == "ep" else [],
        "memory_keyword": lambda *a, **k: [Hit(mem, 0, -1.0)],
        "episode_fts": lambda *a, **k: [],
    }
    for name, fake in canned.items():
        original = getattr(store, name)
        monkeypatch.setattr(
            store,
            name,
            lambda *a, _fake=fake, _original=original, **k: (
                _fake(*a, **k) if k.get("period") is not None else _original(*a, **k)
            ),
        )
    cued = recall(memory, limit=1, time_cue=cue("sure", **JUNE))
    # one vote at rank 0 each: a tie, which the memory keyword list, coming first, wins
    assert cue_arm(cued) == [mem, ep]

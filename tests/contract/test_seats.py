"""The held seats beyond block and cue: keyword seats, far seats and the propagation seat (all off by default).

Rules checked, each on a small store with the hash embedder: every seat is off
unless its setting turns it on; a seat never holds a row the recall already
returns or one of another agent; its limits (n keyword seats, 2 far seats, 1
propagation seat); its eligibility (keyword: lexical-only rows, not after a gate
fallback; far: memories beyond max(window, reach) above the vector floor, not a row
an ordinary arm reached unless the gate admitted it; propagation: the candidates
of a deeper search scored by fused and cosine rank); the append order block,
keyword, far, cue, propagation; each seat's match_reason and trace reservation
kind; and that the confirmation tool attributes evidence a seat arm reached but
did not seat to RANKING_MISS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_type_hints

import numpy as np
import pytest

from benchmarks.recall_trace_confirm import CANDIDATE_MISS, RANKING_MISS, confirm
from cuedrecall.api import Memory
from cuedrecall.recall import trace_schema as schema
from cuedrecall.store.base import Scope
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex
from tests.conftest import make_settings, open_memory

A, B = "agent-a", "agent-b"
QUERY = "zephyr quartz nebula"
EXACT = "zephyr quartz nebula"  # cosine 1.0 with QUERY under the hash embedder
CLOSE = [
    "zephyr quartz nebula report",
    "zephyr quartz nebula notes today",
    "zephyr quartz nebula log",
    "zephyr quartz nebula plan b",
]
UNRELATED = [
    "orange juice at breakfast",
    "the garden needs water",
    "piano lesson moved to friday",
    "camera lens cleaning kit",
    "violin strings are too tight",
    "marathon training starts monday",
]
# one shared word with the query and many others: found by the keyword arm, too far for the vector floor
LEXICAL = [
    f"we ordered printer paper toner pens folders staplers binders and zephyr item {i} for the office" for i in range(4)
]


def reopen(path: Path, **overrides: Any) -> Memory:
    return open_memory(path, settings=make_settings(**overrides))


def put(memory: Memory, content: str, agent: str = A) -> str:
    result = memory.store(agent_id=agent, content=content)
    assert result["result"] == "stored", result
    return result["ref"]


def recall(memory: Memory, query: str = QUERY, **arguments: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    response = memory.recall(agent_id=arguments.pop("agent_id", A), query=query, trace=True, **arguments)
    assert "messages" in response, response
    return response, response["trace"]


def refs(response: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in response["messages"] if "ref" in m]


def held(response: dict[str, Any], signal: str) -> list[dict[str, Any]]:
    """The rows a seat of this kind holds, in append order (the response lists them worst first)."""
    return [m for m in reversed(response["messages"]) if (m.get("match_reason") or {}).get("signal") == signal]


def kinds(trace: dict[str, Any]) -> list[str]:
    return [item["kind"] for item in trace["reservation"]]


def arm(trace: dict[str, Any], name: str) -> list[str]:
    return [hit["ref"] for hit in trace["arms"].get(name, [])]


def strict_gate(memory: Memory, cosine: float = 0.5, rrf: float = 1.0) -> None:
    """Vector rows pass on cosine >= ``cosine``; no lexical-only row passes (CPersona's calibrated-gate case)."""
    memory.calibration.set(A, "cosine", cosine)
    memory.calibration.set(A, "rrf", rrf)


def open_gate(memory: Memory, agent: str = A) -> None:
    memory.calibration.set(agent, "cosine", 0.05)
    memory.calibration.set(agent, "rrf", 0.0)


def no_duplicates(response: dict[str, Any]) -> None:
    found = refs(response)
    assert len(found) == len(set(found))


# -- keyword seats ------------------------------------------------------------------------------


@pytest.fixture
def lexical_store(db_path: Path) -> Path:
    with open_memory(db_path) as memory:
        for text in [EXACT, *CLOSE, *UNRELATED]:
            put(memory, text)
        for text in LEXICAL:
            put(memory, text)
        for text in LEXICAL[:2]:
            put(memory, text + " copy", agent=B)
    return db_path


def test_keyword_seats_are_off_by_default(lexical_store: Path) -> None:
    with reopen(lexical_store) as memory:
        strict_gate(memory)
        response, trace = recall(memory)
    assert held(response, "keyword") == [] and "keyword" not in kinds(trace)
    assert not set(refs(response)) & set(arm(trace, "memory_keyword")) - set(arm(trace, "vector_near"))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_keyword_seats_hold_n_lexical_only_rows_in_the_order_before_the_gate(lexical_store: Path, n: int) -> None:
    with reopen(lexical_store, keyword_seats=n) as memory:
        strict_gate(memory)
        response, trace = recall(memory)
    lexical_only = [row["ref"] for row in trace["fusion"] if set(row["votes"]) <= {"memory_keyword", "episode_fts"}]
    assert len(lexical_only) == 4
    seated = held(response, "keyword")
    assert [m["ref"] for m in seated] == lexical_only[:n]
    fused = {row["ref"]: row["score"] for row in trace["fusion"]}
    for place, message in enumerate(seated, 1):
        assert message["match_reason"] == {
            "signal": "keyword",
            "admission": "reservation",
            "seat": place,
            "rrf": pytest.approx(fused[message["ref"]], abs=1e-6),
        }
    assert kinds(trace) == ["keyword"] * n
    assert [item["ref"] for item in trace["reservation"]] == lexical_only[:n]
    answered = trace["order"]["before_cut"][: trace["order"]["limit"]]
    assert not set(answered) & set(lexical_only)  # the gate refused them all: only the seats hold them
    no_duplicates(response)


def test_keyword_seats_never_hold_a_row_the_answer_holds(lexical_store: Path) -> None:
    with reopen(lexical_store, keyword_seats=10) as memory:
        open_gate(memory)
        response, trace = recall(memory, limit=20)  # everything passes and fits: nothing left to seat
        assert held(response, "keyword") == []
        response, trace = recall(memory, limit=6)  # admitted, cut by the count: a seat may hold it
    cut = set(trace["order"]["cut_by_count"])
    seated = [m["ref"] for m in held(response, "keyword")]
    assert seated and set(seated) <= cut
    no_duplicates(response)


def test_keyword_seats_never_hold_another_agents_rows(lexical_store: Path) -> None:
    with reopen(lexical_store, keyword_seats=10) as memory:
        strict_gate(memory)
        response, _ = recall(memory)
        theirs = {m["ref"] for m in memory.list_memories(agent_id=B, limit=50)["memories"]}
    assert held(response, "keyword") and not {m["ref"] for m in held(response, "keyword")} & theirs


def test_keyword_seats_wait_for_an_admitted_row_and_step_aside_for_the_gate_fallback(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        put(memory, "the crash in bug-218 came from the parser")
        put(memory, "printer toner for bug triage room")
    with reopen(db_path, keyword_seats=2) as memory:
        memory.calibration.set(A, "cosine", 0.99)
        memory.calibration.set(A, "rrf", 1.0)
        response, trace = recall(memory, query="what about bug-218")
        assert trace["gate"]["gate_fallback"] is True and held(response, "keyword") == []
        response, trace = recall(memory, query="printer toner")  # nothing passed, no identifier: no seats
        assert not trace["order"]["before_cut"] and held(response, "keyword") == []


# -- far seats ----------------------------------------------------------------------------------


@pytest.fixture
def far_store(db_path: Path) -> tuple[Path, list[str]]:
    """Five memories close to the query, oldest first, then six unrelated ones: a window of 3 leaves the five
    far beyond it."""
    with open_memory(db_path) as memory:
        targets = [put(memory, text) for text in [EXACT, *CLOSE]]
        for text in UNRELATED:
            put(memory, text)
        for text in [EXACT, *CLOSE]:
            put(memory, text + " elsewhere", agent=B)
        memory.archive_episode(agent_id=A, summary=EXACT + " episode", start_time="2025-10-01T00:00:00+00:00")
    return db_path, targets


def test_far_seats_are_off_by_default(far_store: tuple[Path, list[str]]) -> None:
    path, targets = far_store
    with reopen(path, max_memories=3, fts_enabled=False) as memory:
        response, trace = recall(memory)
    assert not set(refs(response)) & set(targets) and "far" not in trace["arms"]
    assert confirm(trace, [targets[0]]) == CANDIDATE_MISS


def test_far_seats_hold_the_two_best_memories_beyond_the_window(far_store: tuple[Path, list[str]]) -> None:
    path, targets = far_store
    with reopen(path, max_memories=3, fts_enabled=False, far_seats_enabled=True) as memory:
        response, trace = recall(memory)
        vectors = memory.store_.vectors(targets)
        query = memory.embedder.embed([QUERY])[0]
    cosines = {ref: float(vectors[ref] @ query) for ref in targets}
    expected = sorted(targets, key=lambda ref: -cosines[ref])
    far = trace["arms"]["far"]
    assert [hit["ref"] for hit in far] == expected  # every close memory beyond the window, by cosine
    assert [hit["raw"] for hit in far] == pytest.approx([cosines[ref] for ref in expected], abs=1e-6)
    seated = held(response, "far")
    assert [m["ref"] for m in seated] == expected[:2]
    for message in seated:
        assert message["match_reason"] == {
            "signal": "far",
            "admission": "reservation",
            "cosine": pytest.approx(cosines[message["ref"]], abs=1e-6),
        }
    assert kinds(trace) == ["far", "far"]
    assert all(ref.startswith("mem:") for ref in arm(trace, "far"))  # memories only, never the episode
    no_duplicates(response)
    assert confirm(trace, [expected[2]]) == RANKING_MISS  # reached by the far arm, no seat left for it


def test_far_seats_start_past_the_reach_and_keep_to_the_vector_floor(far_store: tuple[Path, list[str]]) -> None:
    path, targets = far_store
    # 11 memories, newest first: the targets (ids 1..5) sit at scan positions 10..6. Window 3, reach 8: the far
    # vector list covers positions 3..7, the far seats search from 8 on
    with reopen(path, max_memories=3, vector_reach=8, fts_enabled=False, far_seats_enabled=True) as memory:
        _, trace = recall(memory)
    assert set(arm(trace, "far")) == set(targets[:3])
    assert set(arm(trace, "vector_far")) == set(targets[3:])
    with reopen(path, max_memories=3, fts_enabled=False, far_seats_enabled=True) as memory:
        memory.calibration.set(A, "cosine", 1.9)  # floor 0.95: only the exact match is close enough
        _, trace = recall(memory)
    assert arm(trace, "far") == [targets[0]]


def test_far_seats_skip_rows_the_gate_refused_rows_present_and_rows_the_caller_holds(
    far_store: tuple[Path, list[str]],
) -> None:
    path, targets = far_store
    with reopen(path, max_memories=3, far_seats_enabled=True) as memory:
        strict_gate(memory)  # the keyword arm reaches the targets; the gate refuses lexical-only rows
        response, trace = recall(memory)
        assert set(arm(trace, "far")) == set(targets) and held(response, "far") == []
        open_gate(memory)  # now the keyword arm's rows are returned: still no far seat repeats one
        response, trace = recall(memory, limit=20)
        assert set(targets) <= set(refs(response)) and held(response, "far") == []
        no_duplicates(response)
    with reopen(path, max_memories=3, fts_enabled=False, far_seats_enabled=True) as memory:
        response, _ = recall(memory, exclude_contents=[EXACT, CLOSE[0]])
    assert targets[0] not in refs(response) and targets[1] not in refs(response)
    assert len(held(response, "far")) == 2


def test_far_seats_never_hold_another_agents_memories(far_store: tuple[Path, list[str]]) -> None:
    path, targets = far_store
    with reopen(path, max_memories=3, fts_enabled=False, far_seats_enabled=True) as memory:
        _, trace = recall(memory)
        _, theirs = recall(memory, agent_id=B)
    assert set(arm(trace, "far")) <= set(targets)
    assert not set(arm(theirs, "far")) & set(targets)


def _index(vectors: np.ndarray, agents: list[str]) -> VectorIndex:
    index = VectorIndex(lambda ids: {i: vectors[i - 1] for i in ids})  # the stored vectors, row i at i - 1
    for i, (vector, agent) in enumerate(zip(vectors, agents), 1):
        index.add(IndexRow(i, vector, agent, "", "", "", float(i)))
    return index


def test_the_coarse_search_ranks_by_hamming_distance_then_scan_position_beyond_the_start() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 70)).astype(np.float32)  # 70 dims: two words, the last one padded
    vectors[::3] = np.sign(vectors[0])  # many exact ties in distance
    agents = ["a" if i % 5 else "b" for i in range(300)]
    index = _index(vectors, agents)
    index.remove(40)  # a removed row leaves the bits in step with the vectors
    query = rng.standard_normal(70).astype(np.float32)
    found = index.coarse(Scope("a"), query, start=20, count=50)
    rows = [i for i in range(300) if agents[i] == "a" and i != 39][::-1]  # newest first
    expected = []
    for position, i in enumerate(rows):
        if position >= 20:
            expected.append((int(np.count_nonzero((vectors[i] > 0) != (query > 0))), position, i + 1))
    expected.sort()
    assert [(d, p, row_id) for row_id, p, d, _ in found] == expected[:50]
    assert [c for *_, c in found] == pytest.approx([float(vectors[r - 1] @ query) for *_, r in expected[:50]], rel=1e-5)
    assert index.coarse(Scope("a"), query, start=len(rows), count=50) == []


# -- the propagation seat -----------------------------------------------------------------------


@pytest.fixture
def propagation_store(db_path: Path) -> Path:
    with open_memory(db_path) as memory:
        for i in range(12):
            put(memory, f"zephyr quartz nebula entry {i} " + " ".join(["alpha", "beta", "gamma", "delta"][: i % 4]))
        for text in UNRELATED:
            put(memory, text + " zephyr")
        put(memory, "zephyr quartz nebula entry 0 for someone else", agent=B)
    return db_path


def test_the_propagation_seat_is_off_by_default(propagation_store: Path) -> None:
    with reopen(propagation_store) as memory:
        open_gate(memory)
        response, trace = recall(memory, limit=3)
    assert held(response, "propagation") == []
    assert "propagation" not in trace and "propagation" not in trace["policy"]
    assert "propagation" not in trace["arms"]


def test_the_propagation_seat_holds_the_best_of_a_deeper_search_by_fused_and_cosine_rank(
    propagation_store: Path,
) -> None:
    with reopen(propagation_store) as memory:
        open_gate(memory)
        _, deep = recall(memory, limit=100)  # the deeper search's order, independently
    with reopen(propagation_store, recall_propagation_seat=True) as memory:
        open_gate(memory)
        response, trace = recall(memory, limit=3)
        answer = trace["order"]["before_cut"][:3]
        present = set(refs(response)) - {m["ref"] for m in held(response, "propagation")}
        candidates = [ref for ref in deep["order"]["before_cut"] if ref not in present and ref != "profile"]
        vectors = memory.store_.vectors([answer[0], *candidates])
    unit = {ref: v / np.linalg.norm(v) for ref, v in vectors.items()}
    by_cosine = sorted(candidates, key=lambda ref: (-float(unit[ref] @ unit[answer[0]]), candidates.index(ref)))
    score = {
        ref: 0.65 / (60 + candidates.index(ref) + 1) + 0.35 / (60 + by_cosine.index(ref) + 1) for ref in candidates
    }
    best = min(candidates, key=lambda ref: (-score[ref], candidates.index(ref)))
    (seat,) = held(response, "propagation")
    fused_rank, cosine_rank = candidates.index(best) + 1, by_cosine.index(best) + 1
    assert seat["ref"] == best
    assert seat["match_reason"] == {
        "signal": "propagation",
        "admission": "reservation",
        "fused_rank": fused_rank,
        "cosine_rank": cosine_rank,
    }
    assert response["messages"][0]["ref"] == best  # appended last: the response lists it first
    assert trace["propagation"] == {
        "policy": "propagation-v1",
        "depth": 100,
        "candidates": len(candidates),
        "seated": [{"ref": best, "fused_rank": fused_rank, "cosine_rank": cosine_rank}],
        "anchor": answer[0],
    }
    assert trace["policy"]["propagation"] == "propagation-v1" and kinds(trace)[-1] == "propagation"
    assert arm(trace, "propagation")[0] == best and len(arm(trace, "propagation")) == len(candidates)
    assert "propagation" in trace["timing_ms"]
    assert best not in present
    no_duplicates(response)
    runner_up = arm(trace, "propagation")[1]
    assert confirm(trace, [runner_up]) == RANKING_MISS  # the deeper search reached it, no seat held it


def test_the_propagation_seat_never_holds_another_agents_row_or_one_already_held(propagation_store: Path) -> None:
    with reopen(propagation_store, recall_propagation_seat=True, keyword_seats=2) as memory:
        open_gate(memory)
        theirs = {m["ref"] for m in memory.list_memories(agent_id=B, limit=50)["memories"]}
        for limit in (1, 3, 10, 30):
            response, trace = recall(memory, limit=limit)
            no_duplicates(response)
            assert not set(arm(trace, "propagation")) & (
                theirs | set(refs(response)) - {m["ref"] for m in held(response, "propagation")}
            )
            assert len(held(response, "propagation")) <= 1


def test_the_propagation_seat_needs_a_query_an_answer_and_no_gate_fallback(propagation_store: Path) -> None:
    with reopen(propagation_store, recall_propagation_seat=True) as memory:
        open_gate(memory)
        response, trace = recall(memory, query="")  # blank: the newest listing, nothing propagates
        assert held(response, "propagation") == [] and "propagation" not in trace
        memory.calibration.set(A, "cosine", 0.99)
        memory.calibration.set(A, "rrf", 1.0)
        response, trace = recall(memory, query="quartz")  # nothing passes: no anchor, nothing re-run
        assert held(response, "propagation") == []
        assert trace["propagation"] == {"policy": "propagation-v1", "depth": 100, "candidates": 0, "seated": []}
        with_context = memory.recall_with_context(agent_id=A, query=QUERY, external_context=[])
        assert all((m.get("match_reason") or {}).get("signal") != "propagation" for m in with_context["messages"])


def test_the_propagation_seat_needs_no_fallback(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        put(memory, "the crash in bug-218 came from the parser")
        put(memory, "bug-218 parser crash reproduced")
    with reopen(db_path, recall_propagation_seat=True) as memory:
        memory.calibration.set(A, "cosine", 0.99)
        memory.calibration.set(A, "rrf", 1.0)
        response, trace = recall(memory, query="what about bug-218", limit=1)
    assert trace["gate"]["gate_fallback"] is True
    assert held(response, "propagation") == [] and "propagation" not in trace


# -- together -----------------------------------------------------------------------------------


# Every trigram of the query's words, none of the words: close by the hash embedder's trigram features
# (cosine about 0.39), out of the keyword arm's reach.
TRIGRAMS_ONLY = [
    "zepha phyra quarx artz nebu bula",
    "zepha phyra quarx artz nebu bula one",
    "zepha phyra quarx artz nebu bula two",
    "zepha phyra quarx artz nebu bula three",
]
EVERY_SEAT = {"max_memories": 10, "far_seats_enabled": True, "keyword_seats": 2, "recall_propagation_seat": True}


@pytest.fixture
def mixed_store(db_path: Path) -> Path:
    """Old memories only the far seats can reach, then a window of 10 holding six close rows and the four
    lexical-only ones."""
    with open_memory(db_path) as memory:
        for text in TRIGRAMS_ONLY:
            memory.store(agent_id=A, message={"content": text, "timestamp": "2025-06-01T09:00:00+00:00"})
        for text in UNRELATED + [f"zephyr quartz nebula fresh {i}" for i in range(6)] + LEXICAL:
            memory.store(agent_id=A, message={"content": text, "timestamp": "2025-10-01T09:00:00+00:00"})
    return db_path


def test_seats_append_in_order_and_a_cue_neither_moves_nor_repeats_them(mixed_store: Path) -> None:
    cue = {"after": "2025-05-25", "before": "2025-06-05", "confidence": "sure"}
    with reopen(mixed_store, **EVERY_SEAT) as memory:
        strict_gate(memory, cosine=0.4)
        plain, plain_trace = recall(memory, limit=2)
        cued, trace = recall(memory, limit=2, time_cue=cue)
    order = ("block", "keyword", "far", "cue", "propagation")
    assert kinds(plain_trace) == ["keyword", "keyword", "far", "far", "propagation"]
    assert kinds(trace) == sorted(kinds(trace), key=order.index) and "cue" in kinds(trace)
    no_duplicates(plain)
    no_duplicates(cued)
    best_first = [m["ref"] for m in reversed(cued["messages"])]
    answer = trace["order"]["before_cut"][:2]
    assert sorted(best_first[:2]) == sorted(answer)  # the cue reorders the answer only
    # the seats of the uncued recall keep their rows and their order after the answer, whatever the cue does
    plain_held = [item["ref"] for item in plain_trace["reservation"] if item["kind"] in ("keyword", "far")]
    cued_held = [item["ref"] for item in trace["reservation"] if item["kind"] in ("keyword", "far")]
    assert cued_held == plain_held and best_first[2 : 2 + len(cued_held)] == cued_held
    cue_seats = [item["ref"] for item in trace["reservation"] if item["kind"] == "cue"]
    assert cue_seats and not set(cue_seats) & set(plain_held)
    assert best_first[-1] == trace["reservation"][-1]["ref"] and kinds(trace)[-1] == "propagation"


def test_a_trace_with_every_seat_writes_only_declared_shapes(mixed_store: Path) -> None:
    with reopen(mixed_store, **EVERY_SEAT) as memory:
        strict_gate(memory, cosine=0.4)
        _, trace = recall(memory, limit=2)
    assert set(trace) <= set(schema.SECTIONS)
    assert set(trace["policy"]) == set(get_type_hints(schema.Policy))
    assert (
        set(get_type_hints(schema._PropagationBase))
        <= set(trace["propagation"])
        <= set(get_type_hints(schema.PropagationSection))
    )
    assert all(set(seat) == set(get_type_hints(schema.PropagationSeat)) for seat in trace["propagation"]["seated"])
    assert all(
        set(get_type_hints(schema._ReservationBase)) <= set(item) <= set(get_type_hints(schema.Reservation))
        for item in trace["reservation"]
    )
    for name in ("far", "propagation"):
        assert trace["arms"][name] and all(
            set(hit) == set(get_type_hints(schema.ArmHit)) for hit in trace["arms"][name]
        )
    assert trace["request"]["keyword_seats"] == 2 and trace["request"]["far_seats"] is True
    assert trace["request"]["propagation_seat"] is True


def test_with_every_new_seat_off_a_recall_is_the_same_as_with_the_settings_absent(lexical_store: Path) -> None:
    with reopen(lexical_store) as memory:
        strict_gate(memory)
        before = memory.recall(agent_id=A, query=QUERY, trace=True)
    with reopen(lexical_store, keyword_seats=0, far_seats_enabled=False, recall_propagation_seat=False) as memory:
        after = memory.recall(agent_id=A, query=QUERY, trace=True)
    for response in (before, after):
        trace = response.pop("trace")
        assert "propagation" not in trace and not {"keyword_seats", "far_seats", "propagation_seat"} & set(
            trace["request"]
        )
    assert before == after

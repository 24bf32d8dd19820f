"""The single pass, one rule per test: arms, fusion, penalty, gate, autocut, prior, count cut, order, previews.

Each test builds a small store with the hash embedder and a pinned clock and
reads the stage's behaviour from the recall trace (``trace=True``): arms,
fusion votes, gate decisions, autocut, order.before_cut and cut_by_count.
Cosines quoted in comments are the hash embedder's for the texts used.
"""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.recall.fusion import fuse
from cuedrecall.recall.gate import heuristic_minimum
from cuedrecall.recall.trace import Recorder
from cuedrecall.store.base import Hit, Threshold
from tests.conftest import NOW, make_settings, open_memory

A = "agent-a"
QUERY = "zephyr quartz nebula"
EXACT = "zephyr quartz nebula"  # cosine 1.0 with QUERY
REPORT = "zephyr quartz nebula report"  # 0.866
NOTES = "zephyr quartz nebula notes today"  # 0.795
LAMP = "zephyr lamp"  # 0.436
CHAIR = "zephyr desk chair"  # 0.356
LEXICAL_ONLY = "we ordered printer paper, toner, pens, folders, staplers and one zephyr fan"  # 0.147
UNRELATED = [
    "orange juice at breakfast",
    "the garden needs water",
    "piano lesson moved to friday",
    "camera lens cleaning kit",
    "violin strings are too tight",
    "marathon training starts monday",
]


def at(hours: float) -> str:
    """An ISO timestamp ``hours`` after the pinned NOW (negative: before)."""
    return (datetime.fromisoformat(NOW) + timedelta(hours=hours)).isoformat()


def reopen(path: Path, **overrides: Any) -> Memory:
    return open_memory(path, settings=make_settings(**overrides))


def put(
    memory: Memory,
    content: str,
    *,
    agent: str = A,
    ts: str | None = None,
    project: str = "",
    channel: str = "",
    source: Any = None,
) -> str:
    message: dict[str, Any] = {"content": content}
    if ts is not None:
        message["timestamp"] = ts
    if source is not None:
        message["source"] = source
    result = memory.store(agent_id=agent, message=message, project_id=project, channel=channel)
    assert result["result"] == "stored", result
    return result["ref"]


def episode(
    memory: Memory,
    summary: str,
    *,
    keywords: str = "",
    agent: str = A,
    start: str | None = None,
    project: str = "",
    channel: str = "",
) -> str:
    result = memory.archive_episode(
        agent_id=agent, summary=summary, keywords=keywords, start_time=start, project_id=project, channel=channel
    )
    assert result["ok"], result
    return result["ref"]


def traced(memory: Memory, query: str, **arguments: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    response = memory.recall(agent_id=arguments.pop("agent_id", A), query=query, trace=True, **arguments)
    assert "messages" in response, response
    return response, response["trace"]


def refs(response: dict[str, Any]) -> list[str]:
    return [message.get("ref", "profile") for message in response["messages"]]


def decisions(trace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["ref"]: d for d in trace["gate"]["decisions"]}


def arm(trace: dict[str, Any], name: str) -> dict[str, tuple[int, float | None]]:
    return {hit["ref"]: (hit["rank"], hit["raw"]) for hit in trace["arms"][name]}


def fusion(trace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["ref"]: row for row in trace["fusion"]}


def before_cut(trace: dict[str, Any]) -> list[str]:
    return list(trace["order"]["before_cut"])


def open_gate(memory: Memory, agent: str = A) -> None:
    """Calibrated thresholds low enough that every candidate passes (floor of the vector arm: 0.025)."""
    memory.calibration.set(agent, "cosine", 0.05)
    memory.calibration.set(agent, "rrf", 0.0)
    memory.calibration.set(agent, "rsf", 0.0)


def stub_ctx(mode: str = "rrf", k: int = 60, far_weight: float = 1.0) -> Any:
    """The little of a RecallContext that fusion reads."""
    return SimpleNamespace(params=SimpleNamespace(mode=mode, rrf_k=k, far_weight=far_weight), recorder=Recorder())


# -- fusion -------------------------------------------------------------------------------


def test_rrf_vote_is_one_over_k_plus_rank_plus_one(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP, CHAIR, LEXICAL_ONLY, *UNRELATED]:
        put(memory, text)
    episode(memory, "zephyr quartz review session", keywords="zephyr nebula")
    with reopen(db_path, rrf_k=7) as m:
        _, trace = traced(m, QUERY)
    arms = {name: arm(trace, name) for name in ("vector_near", "vector_far", "episode_fts", "memory_keyword")}
    rows = trace["fusion"]
    assert len(rows) >= 5 and any(len(row["votes"]) >= 2 for row in rows)
    assert any(rank > 0 for hits in arms.values() for rank, _ in hits.values())
    for row in rows:
        assert row["votes"], row
        for name, vote in row["votes"].items():
            rank = arms[name][row["ref"]][0]
            assert vote == pytest.approx(1 / (7 + rank + 1), abs=1e-6), (row, name)
        assert row["score"] == pytest.approx(sum(row["votes"].values()), abs=1e-5)
    scores = [row["score"] for row in rows]
    assert scores == sorted(scores, reverse=True)


def test_rrf_ties_keep_first_appearance() -> None:
    arms = {
        "vector_near": [Hit("mem:1", 0, 0.9), Hit("mem:2", 1, 0.8)],
        "vector_far": [],
        "episode_fts": [Hit("ep:1", 0, -2.0)],
        "memory_keyword": [Hit("mem:3", 0, -3.0), Hit("mem:2", 1, -1.0)],
    }
    rows = fuse(stub_ctx(), arms)
    # mem:2 has two votes; mem:1, ep:1 and mem:3 tie at 1/61 and keep the order they first appeared in
    assert [row.ref for row in rows] == ["mem:2", "mem:1", "ep:1", "mem:3"]
    assert rows[1].fused == rows[2].fused == rows[3].fused == pytest.approx(1 / 61)


def test_rrf_ties_keep_first_appearance_end_to_end(memory: Memory, db_path: Path) -> None:
    """Vector arms off: an episode and a memory each first on their own lexical arm tie; the episode arm came first."""
    mem = put(memory, "zephyr")
    ep = episode(memory, "zephyr")
    with reopen(db_path, embedding_mode="none") as m:
        _, trace = traced(m, "zephyr")
    assert [row["ref"] for row in trace["fusion"]] == [ep, mem]
    assert trace["fusion"][0]["score"] == trace["fusion"][1]["score"]


def test_rsf_normalises_each_arm_min_max_and_divides_by_active_arms() -> None:
    arms = {
        "vector_near": [Hit("mem:1", 0, 0.9), Hit("mem:2", 1, 0.5), Hit("mem:3", 2, 0.1)],
        "vector_far": [],
        "episode_fts": [],
        "memory_keyword": [Hit("mem:2", 0, -3.0), Hit("mem:4", 1, -1.0)],  # bm25: more negative is better
    }
    rows = {row.ref: row for row in fuse(stub_ctx("rsf"), arms)}
    # two active arms: near normalises to 1, 0.5, 0; keyword (negated bm25 3, 1) to 1, 0
    assert rows["mem:1"].votes == pytest.approx({"vector_near": 0.5})
    assert rows["mem:2"].votes == pytest.approx({"vector_near": 0.25, "memory_keyword": 0.5})
    assert rows["mem:3"].fused == 0.0 and rows["mem:4"].fused == 0.0
    assert [row.ref for row in fuse(stub_ctx("rsf"), arms)] == ["mem:2", "mem:1", "mem:3", "mem:4"]


def test_rsf_flat_or_unscored_arm_gives_every_row_one_and_far_votes_carry_the_far_weight() -> None:
    arms = {
        "vector_near": [Hit("mem:1", 0, 0.7)],  # a single row: flat
        "vector_far": [Hit("mem:5", 0, 0.6), Hit("mem:6", 1, 0.2)],
        "episode_fts": [Hit("ep:1", 0, -1.0), Hit("ep:2", 1, -1.0)],  # all equal: flat
        "memory_keyword": [Hit("mem:7", 0, None), Hit("mem:8", 1, None)],  # LIKE rows: unscored
    }
    rows = {row.ref: row for row in fuse(stub_ctx("rsf", far_weight=0.5), arms)}
    assert rows["mem:1"].fused == pytest.approx(1 / 4)
    assert rows["mem:5"].fused == pytest.approx(0.5 / 4) and rows["mem:6"].fused == 0.0
    assert rows["ep:1"].fused == rows["ep:2"].fused == pytest.approx(1 / 4)
    assert rows["mem:7"].fused == rows["mem:8"].fused == pytest.approx(1 / 4)
    # an unscored row among scored ones gets 0.0 (a flat scored part still gives every row 1.0)
    mixed = fuse(
        stub_ctx("rsf"), {"memory_keyword": [Hit("mem:1", 0, -2.0), Hit("mem:2", 1, None), Hit("mem:3", 2, -1.0)]}
    )
    assert [(row.ref, row.fused) for row in mixed] == [("mem:1", 1.0), ("mem:2", 0.0), ("mem:3", 0.0)]
    flat = fuse(stub_ctx("rsf"), {"memory_keyword": [Hit("mem:1", 0, -2.0), Hit("mem:2", 1, None)]})
    assert [(row.ref, row.fused) for row in flat] == [("mem:1", 1.0), ("mem:2", 1.0)]


def test_rsf_votes_in_the_trace_follow_the_arms_raw_scores(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP, CHAIR, LEXICAL_ONLY, *UNRELATED]:
        put(memory, text)
    episode(memory, "zephyr quartz review session", keywords="zephyr nebula")
    with reopen(db_path, recall_mode="rsf") as m:
        _, trace = traced(m, QUERY)
    names = ("vector_near", "vector_far", "episode_fts", "memory_keyword")
    active = sum(1 for name in names if trace["arms"][name])
    assert active >= 2
    for name in names:
        hits = trace["arms"][name]
        values = {h["ref"]: (-h["raw"] if name in ("episode_fts", "memory_keyword") else h["raw"]) for h in hits}
        low, high = (min(values.values()), max(values.values())) if values else (0, 0)
        for ref, value in values.items():
            norm = 1.0 if high <= low else (value - low) / (high - low)
            assert fusion(trace)[ref]["votes"][name] == pytest.approx(norm / active, abs=1e-4), (ref, name)


# -- arms: exclusion, depth, blank query, far list, LIKE fallback ----------------------------------


def test_excluded_row_still_consumes_its_rank(memory: Memory) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP]:
        put(memory, text)
    response, trace = traced(memory, QUERY, exclude_contents=[EXACT])
    near, keyword = arm(trace, "vector_near"), arm(trace, "memory_keyword")
    assert near["mem:1"][0] == 0  # the excluded row is still on the arm as it ran ...
    assert "mem:1" not in fusion(trace) and "mem:1" not in refs(response)  # ... but never fused or returned
    for ref, row in fusion(trace).items():
        assert row["votes"]["vector_near"] == pytest.approx(1 / (60 + near[ref][0] + 1), abs=1e-6)
        assert row["votes"]["memory_keyword"] == pytest.approx(1 / (60 + keyword[ref][0] + 1), abs=1e-6)
    assert min(near[ref][0] for ref in fusion(trace)) == 1  # nobody moved up into the excluded place


def test_exclusion_prefix_rule_applies_from_32_characters(memory: Memory) -> None:
    long_text = "Zephyr quartz nebula, the quarterly_report review"
    short_text = "quartz zephyr"  # not a prefix of long_text (an entry starting with a record's text excludes it)
    assert len(long_text[:31].strip()) == 31 and len(long_text[:32].strip()) == 32
    long_ref, short_ref = put(memory, long_text), put(memory, short_text)
    open_gate(memory)

    def excluded(entry: str) -> set[str]:
        response, trace = traced(memory, QUERY, exclude_contents=[entry])
        reached = set(arm(trace, "vector_near")) | set(arm(trace, "memory_keyword"))
        assert {long_ref, short_ref} <= reached
        return {long_ref, short_ref} - set(fusion(trace)) - set(refs(response))

    assert excluded(long_text[:31]) == set()  # 31 characters: must equal the content
    assert excluded(long_text[:32]) == {long_ref}  # 32: a prefix of the content excludes it
    assert excluded(long_text + " and its appendix") == {long_ref}  # the content is a prefix of the entry
    assert excluded("  " + long_text.upper() + " ") == {long_ref}  # compared stripped and lower-cased
    assert excluded("quartz zephy") == set()  # short: a prefix is not enough
    assert excluded(" QUARTZ ZEPHYR ") == {short_ref}


def test_depth_is_max_of_limit_and_depth_floor(memory: Memory, db_path: Path) -> None:
    for i in range(12):
        put(memory, f"zephyr quartz nebula entry number {i}")
    with reopen(db_path, recall_depth_floor=8) as m:
        response, trace = traced(m, QUERY, limit=3)
        assert response["depth"] == 8 and trace["request"]["depth"] == 8
        assert len(trace["arms"]["memory_keyword"]) == 8 and len(trace["arms"]["vector_near"]) == 8
        assert len(response["messages"]) <= 3 and trace["order"]["limit"] == 3
        response, trace = traced(m, QUERY, limit=10)
        assert "depth" not in response and trace["request"]["depth"] == 10
        assert len(trace["arms"]["memory_keyword"]) == 10
        blank, trace = traced(m, "", limit=3)  # a blank query lists to the limit only
        assert "depth" not in blank and trace["request"]["depth"] == 3 and len(blank["messages"]) == 3
    response, trace = traced(memory, QUERY, limit=3)  # floor 0 (the default): depth = limit
    assert "depth" not in response and len(trace["arms"]["memory_keyword"]) == 3


def test_blank_query_lists_newest_memories_last_is_newest(memory: Memory) -> None:
    stored = [
        put(memory, f"note {word}", ts=at(-100 + i))
        for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
    ]
    episode(memory, "an episode is never part of the listing")
    for query in ("", "   "):
        response, trace = traced(memory, query, limit=4)
        assert refs(response) == stored[-4:]  # worst to best: the newest is last
        assert all("match_reason" not in message for message in response["messages"])
        assert all(d["passed"] and d["signal"] is None for d in trace["gate"]["decisions"])
        assert "advisory" not in response


def test_blank_query_newest_means_most_recently_stored(memory: Memory) -> None:
    first = put(memory, "written first, dated today", ts=at(-1))
    last = put(memory, "written last, dated long ago", ts=at(-5000))
    assert refs(memory.recall(agent_id=A, query="", limit=2)) == [first, last]


def test_vector_far_reaches_beyond_the_window(memory: Memory, db_path: Path) -> None:
    target = put(memory, EXACT)  # the oldest row: scan position 6
    for text in UNRELATED:
        put(memory, text)
    with reopen(db_path, max_memories=3, vector_reach=10, prior_far_weight=0.5) as m:
        response, trace = traced(m, QUERY)
    assert target not in arm(trace, "vector_near")
    assert arm(trace, "vector_far")[target] == (0, pytest.approx(1.0, abs=1e-6))
    assert fusion(trace)[target]["votes"]["vector_far"] == pytest.approx(0.5 / 61, abs=1e-6)
    assert decisions(trace)[target]["signal"] == "cosine"
    assert refs(response)[-1] == target
    with reopen(db_path, max_memories=3) as m:  # reach 0: the row is only a keyword match now
        _, trace = traced(m, QUERY)
    assert trace["arms"]["vector_far"] == [] and target not in arm(trace, "vector_near")
    assert decisions(trace)[target]["signal"] == "rrf"
    with reopen(db_path, max_memories=3, vector_reach=3) as m:  # a reach inside the window is off
        _, trace = traced(m, QUERY)
    assert trace["arms"]["vector_far"] == []


def test_far_weight_zero_turns_far_list_off(memory: Memory, db_path: Path) -> None:
    target = put(memory, EXACT)
    for text in UNRELATED:
        put(memory, text)
    with reopen(db_path, max_memories=3, vector_reach=10, prior_far_weight=0.0) as m:
        _, trace = traced(m, QUERY)
    assert trace["arms"]["vector_far"] == []
    assert "vector_far" not in fusion(trace)[target]["votes"]


def test_far_list_never_repeats_a_near_row_and_is_cut_at_the_far_limit(memory: Memory, db_path: Path) -> None:
    for i in range(8):
        put(memory, f"zephyr quartz nebula entry {i}")
    with reopen(db_path, max_memories=3, vector_reach=20, vector_far_limit=2) as m:
        _, trace = traced(m, QUERY)
    near, far = arm(trace, "vector_near"), arm(trace, "vector_far")
    assert len(near) == 3 and len(far) == 2 and not set(near) & set(far)


def test_memory_keyword_like_fallback_only_when_fts_finds_nothing(memory: Memory) -> None:
    qa = [put(memory, "QA sign-off done"), put(memory, "qa review pending")]
    put(memory, "zephyr report without the two letters")
    zephyr_qa = put(memory, "zephyr QA run")
    open_gate(memory)
    # "QA" is shorter than a trigram: FTS has no expression, LIKE finds the rows, newest first, unscored
    _, trace = traced(memory, "QA")
    assert trace["arms"]["memory_keyword"] == [
        {"ref": r, "rank": i, "raw": None} for i, r in enumerate([zephyr_qa, *reversed(qa)])
    ]
    # FTS finds rows for "zephyr": every keyword row is an FTS row (scored), no LIKE row is added
    _, trace = traced(memory, "zephyr")
    assert trace["arms"]["memory_keyword"] and all(h["raw"] is not None for h in trace["arms"]["memory_keyword"])
    # an FTS term that matches nothing and no literal match: no rows at all
    _, trace = traced(memory, "xylophone")
    assert trace["arms"]["memory_keyword"] == []


def test_embedding_mode_none_answers_from_lexical_arms_with_advisory(db_path: Path) -> None:
    with reopen(db_path, embedding_mode="none") as m:
        stored = m.store(agent_id=A, message={"content": REPORT})
        assert stored["embedded"] is False
        put(m, LAMP)
        m.calibration.set(A, "rrf", 0.01)
        response, trace = traced(m, QUERY)
        assert response["advisory"]["degraded"] is True
        assert trace["arms"]["vector_near"] == [] and trace["arms"]["vector_far"] == []
        assert refs(response)[-1] == stored["ref"]
        assert {message["match_reason"]["signal"] for message in response["messages"]} == {"rrf"}
        assert "advisory" not in m.recall(agent_id=A, query="")  # the listing does not need vectors
    with reopen(db_path) as m:  # rows stored without a vector stay out of the vector arm when it is back
        _, trace = traced(m, QUERY)
        assert trace["arms"]["vector_near"] == []


# -- scoring: the episode boundary penalty ----------------------------------------------------------


def test_episode_penalty_is_off_by_default(memory: Memory) -> None:
    put(memory, EXACT, ts=at(-48))
    episode(memory, EXACT)
    _, trace = traced(memory, QUERY)
    assert "episode_penalty" not in trace["scoring"]


def test_episode_rows_are_exempt_from_the_boundary_penalty(memory: Memory, db_path: Path) -> None:
    mem = put(memory, EXACT, ts=at(-48))
    ep = episode(memory, REPORT, start=at(-72))  # recorded now: the boundary is NOW
    _, plain = traced(memory, QUERY)
    with reopen(db_path, episode_penalty_enabled=True) as m:
        _, trace = traced(m, QUERY)
    factors = trace["scoring"]["episode_penalty"]
    assert ep not in factors
    assert factors[mem] == pytest.approx(math.exp(-0.01 * 48), abs=1e-6)
    assert decisions(trace)[ep]["score"] == decisions(plain)[ep]["score"]
    assert decisions(trace)[mem]["score"] == pytest.approx(decisions(plain)[mem]["score"] * factors[mem], abs=1e-5)


def test_penalty_factor_is_exp_decay_floored(memory: Memory, db_path: Path) -> None:
    recent = put(memory, EXACT, ts=at(-10))
    old = put(memory, REPORT, ts=at(-100))
    after = put(memory, NOTES, ts=at(5))  # after the boundary: untouched
    episode(memory, "an unrelated session summary")
    with reopen(db_path, episode_penalty_enabled=True) as m:
        _, trace = traced(m, QUERY)
    factors = trace["scoring"]["episode_penalty"]
    assert factors[recent] == pytest.approx(math.exp(-0.1), abs=1e-6)
    assert factors[old] == 0.5  # exp(-1) = 0.37 is below the floor 0.5
    assert factors[after] == 1.0
    with reopen(db_path, episode_penalty_enabled=True, episode_decay_rate=0.002, episode_decay_floor=0.2) as m:
        _, trace = traced(m, QUERY)
    assert trace["scoring"]["episode_penalty"][old] == pytest.approx(math.exp(-0.2), abs=1e-6)
    # the list is re-sorted by the penalised fused score
    scores = {
        ref: row["score"] * trace["scoring"]["episode_penalty"].get(ref, 1.0) for ref, row in fusion(trace).items()
    }
    order = [ref for ref in before_cut(trace) if ref in scores]
    assert [scores[ref] for ref in order] == sorted((scores[ref] for ref in order), reverse=True)


def test_penalty_boundary_is_the_newest_episode_by_record_time(memory: Memory, db_path: Path) -> None:
    recent = put(memory, EXACT, ts=at(-10))
    episode(memory, "the newest session")  # recorded at NOW: the boundary
    earlier = (datetime.fromisoformat(NOW) - timedelta(days=30)).isoformat()
    with open_memory(db_path, clock=lambda: datetime.fromisoformat(earlier)) as importer:
        episode(importer, "an older session, written later (an import)")  # a higher id, an older record time
    with reopen(db_path, episode_penalty_enabled=True) as m:
        _, trace = traced(m, QUERY)
    assert trace["scoring"]["episode_penalty"][recent] == pytest.approx(math.exp(-0.1), abs=1e-6)


def test_penalty_needs_an_episode_in_scope(memory: Memory, db_path: Path) -> None:
    put(memory, EXACT, ts=at(-48))
    episode(memory, "a session in another project", project="elsewhere")
    with reopen(db_path, episode_penalty_enabled=True) as m:
        _, trace = traced(m, QUERY, project_id="")
    assert "episode_penalty" not in trace["scoring"]


# -- the gate -------------------------------------------------------------------------------------


def test_under_gate_v0_a_vector_reached_row_is_gated_on_cosine_alone(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, LAMP, CHAIR, *UNRELATED]:
        put(memory, text)
    with reopen(db_path, recall_gate="gate-v0") as m:
        _, trace = traced(m, QUERY)
    assert trace["policy"]["gate"] == "gate-v0"
    near = arm(trace, "vector_near")
    pool = trace["gate"]["pool"]
    assert pool == 10
    both = [ref for ref in near if ref in arm(trace, "memory_keyword")]
    assert both  # rows with a lexical vote as well are still judged on their cosine
    for ref, (_, cosine) in near.items():
        d = decisions(trace)[ref]
        assert (d["signal"], d["origin"]) == ("cosine", "heuristic")
        assert d["score"] == cosine and d["threshold"] == heuristic_minimum(pool)
        assert d["passed"] == (cosine >= heuristic_minimum(pool))
        assert d.get("reason") == (None if d["passed"] else "below_gate")


def test_a_vector_reached_row_passes_on_its_cosine_or_on_its_lexical_votes(memory: Memory) -> None:
    """gate-v1 and on: a second arm's vote never makes a row fail; the lexical votes count on an uncommon query term."""
    for text in [EXACT, REPORT, LAMP, CHAIR, *UNRELATED, "the garden and the piano"]:
        put(memory, text)
    _, trace = traced(memory, QUERY + " the")
    assert trace["policy"]["gate"] == "gate-v2"
    near, keyword = arm(trace, "vector_near"), arm(trace, "memory_keyword")
    cosine_bar = {d["threshold"] for d in trace["gate"]["decisions"] if d["signal"] == "cosine"}
    assert len(cosine_bar) == 1
    (bar,) = cosine_bar
    lexical_bar = heuristic_minimum(trace["gate"]["pool"]) / 61
    on_lexical = []
    for ref, (_, cosine) in near.items():
        d = decisions(trace)[ref]
        votes = sum(v for a, v in fusion(trace)[ref]["votes"].items() if a in ("memory_keyword", "episode_fts"))
        holds_zephyr = ref in keyword and "zephyr" in _stored(trace, ref)
        assert d["passed"] == (cosine >= bar or (holds_zephyr and votes >= lexical_bar)), ref
        if d.get("lexical"):
            on_lexical.append(ref)
            assert cosine < bar and (d["signal"], d["score"]) == ("rrf", pytest.approx(votes)), ref
        else:
            assert (d["signal"], d["score"], d["threshold"]) == ("cosine", cosine, bar), ref
    assert on_lexical  # CHAIR: cosine 0.324 under the bar, "zephyr" on the keyword arm


def test_a_lexical_only_row_that_shares_only_common_words_is_refused(db_path: Path) -> None:
    with reopen(db_path, embedding_mode="none") as m:
        for text in [LAMP, "the garden and the piano", *UNRELATED]:
            put(m, text)
        response, trace = traced(m, "the zephyr")
    assert decisions(trace)["mem:1"]["passed"] is True  # "zephyr"
    garden = decisions(trace)["mem:2"]
    assert (garden["passed"], garden["reason"]) == (False, "common_words_only")  # "the" alone is no evidence
    assert garden["score"] >= garden["threshold"]  # it would have passed on its fused score
    assert refs(response) == ["mem:1"]


def _stored(trace: dict[str, Any], ref: str) -> str:
    """The stored text of a ref of this test's store (refs count up from mem:1 in the order put)."""
    texts = [EXACT, REPORT, LAMP, CHAIR, *UNRELATED, "the garden and the piano"]
    return texts[int(ref.split(":")[1]) - 1]


def test_lexical_only_row_is_gated_on_its_own_signal(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, LEXICAL_ONLY, *UNRELATED]:
        put(memory, text)
    lexical = "mem:2"
    for mode in ("rrf", "rsf"):
        with reopen(db_path, recall_mode=mode, vector_min_similarity=0.6) as m:  # vector floor 0.3
            _, trace = traced(m, QUERY)
        assert lexical in arm(trace, "memory_keyword") and lexical not in arm(trace, "vector_near")
        d, pool = decisions(trace)[lexical], trace["gate"]["pool"]
        # under rrf the heuristic's scale is first place on one lexical arm; rsf keeps 0..1
        scale = 1 / 61 if mode == "rrf" else 1.0
        assert (d["signal"], d["origin"]) == (mode, "heuristic")
        assert d["score"] == fusion(trace)[lexical]["score"]
        assert d["threshold"] == pytest.approx(heuristic_minimum(pool) * scale, abs=1e-6)
        assert decisions(trace)["mem:1"]["signal"] == "cosine"


def test_an_exact_keyword_match_passes_the_heuristic_gate_in_a_small_store(db_path: Path) -> None:
    with reopen(db_path, embedding_mode="none") as m:
        for text in [LEXICAL_ONLY, *UNRELATED]:
            put(m, text)
        for mode in ("rrf", "rsf"):
            with reopen(db_path, recall_mode=mode, embedding_mode="none") as again:
                response, trace = traced(again, QUERY)
                assert "mem:1" in [message.get("ref") for message in response["messages"]], mode
                assert decisions(trace)["mem:1"]["passed"] is True


def test_calibrated_threshold_applies_with_origin_calibrated(memory: Memory) -> None:
    for text in [EXACT, REPORT, LAMP, LEXICAL_ONLY, *UNRELATED]:
        put(memory, text)
    lexical = "mem:4"
    memory.calibration.set(A, "cosine", 0.5)  # also sets the vector floor to 0.25
    response, trace = traced(memory, QUERY)
    assert trace["gate"]["calibrated"] == {"cosine": 0.5}
    for ref in arm(trace, "vector_near"):
        if not decisions(trace)[ref].get("lexical"):
            assert decisions(trace)[ref]["threshold"] == 0.5 and decisions(trace)[ref]["origin"] == "calibrated"
    lamp = decisions(trace)["mem:3"]  # LAMP, cosine 0.436: refused by the calibrated cosine (the heuristic passes
    assert lamp["passed"] is True and lamp["lexical"] is True  # it), admitted on its keyword vote for "zephyr"
    d = decisions(trace)[lexical]
    assert (d["signal"], d["origin"]) == ("rrf", "heuristic")  # no rrf threshold calibrated: the heuristic
    memory.calibration.set(A, "rrf", 0.001)
    response, trace = traced(memory, QUERY)
    d = decisions(trace)[lexical]
    assert (d["signal"], d["threshold"], d["origin"], d["passed"]) == ("rrf", 0.001, "calibrated", True)
    assert lexical in refs(response)


def test_global_calibration_applies_to_an_agent_without_its_own(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, LAMP]:
        put(memory, text)
    memory.calibration.set("", "cosine", 0.9)
    _, trace = traced(memory, QUERY)
    assert {(d["threshold"], d["origin"]) for d in trace["gate"]["decisions"] if d["signal"] == "cosine"} == {
        (0.9, "calibrated")
    }
    memory.calibration.set(A, "cosine", 0.2)  # the agent's own thresholds win
    _, trace = traced(memory, QUERY)
    assert {d["threshold"] for d in trace["gate"]["decisions"] if d["signal"] == "cosine"} == {0.2}


def test_fused_gate_disabled_ignores_calibrated_thresholds(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT]:
        put(memory, text)
    with reopen(db_path, fused_gate_enabled=False) as m:
        m.calibration.set(A, "cosine", 0.99)
        _, trace = traced(m, QUERY)
    assert {d["origin"] for d in trace["gate"]["decisions"] if d["signal"]} == {"heuristic"}


def test_deep_halves_the_threshold(memory: Memory) -> None:
    # the last: a vector match (shared trigrams, 0.297) that no keyword arm reaches, between the two thresholds
    for text in [EXACT, REPORT, LAMP, CHAIR, LEXICAL_ONLY, *UNRELATED, "quart nebulous"]:
        put(memory, text)
    for calibrated in (False, True):
        if calibrated:
            memory.calibration.set(A, "cosine", 0.6)
            memory.calibration.set(A, "rrf", 0.02)
        _, shallow = traced(memory, QUERY)
        _response, deep = traced(memory, QUERY, deep=True)
        assert deep["gate"]["heuristic_min"] == pytest.approx(shallow["gate"]["heuristic_min"] / 2)
        for ref, d in decisions(shallow).items():
            if d["signal"] in ("cosine", "rrf") and decisions(deep)[ref]["signal"] == d["signal"]:
                assert decisions(deep)[ref]["threshold"] == pytest.approx(d["threshold"] / 2, abs=1e-6)
                assert decisions(deep)[ref]["origin"] == d["origin"]
        passed = [sum(d["passed"] for d in t["gate"]["decisions"]) for t in (shallow, deep)]
        assert passed[1] > passed[0]


def _fill(memory: Memory, count: int) -> None:
    for i in range(count):
        put(memory, f"filler note {i} about {UNRELATED[i % len(UNRELATED)]}")


def test_profile_row_refused_below_pool_of_50(memory: Memory) -> None:
    put(memory, EXACT)
    _fill(memory, 47)
    episode(memory, "one session")  # pool = 48 memories + 1 episode = 49
    memory.update_profile(agent_id=A, profile="The user likes zephyr quartz.")
    response, trace = traced(memory, QUERY)
    assert trace["gate"]["pool"] == 49
    assert decisions(trace)["profile"] == {
        "ref": "profile",
        "signal": "profile",
        "score": None,
        "threshold": 50,
        "origin": None,
        "passed": False,
        "reason": "profile_small_pool",
    }
    assert "profile" not in refs(response)


def test_profile_row_admitted_at_pool_of_50(memory: Memory) -> None:
    put(memory, EXACT)
    _fill(memory, 48)
    episode(memory, "one session")  # pool = 50
    profile = "The user likes zephyr quartz. " * 25  # longer than the preview: the profile is never cut
    memory.update_profile(agent_id=A, profile=profile)
    response, trace = traced(memory, QUERY)
    assert trace["gate"]["pool"] == 50 and decisions(trace)["profile"]["passed"] is True
    row = response["messages"][refs(response).index("profile")]
    assert row == {
        "content": "[Profile] " + profile.strip(),
        "source": {"System": "profile"},
        "timestamp": "",
        "rank": len(response["messages"]) - refs(response).index("profile"),
    }
    assert "profile" in before_cut(trace) and before_cut(trace)[-1] == "profile"
    # the pool is the read scope's: a project-scoped read holds fewer rows
    put(memory, "a project note about zephyr", project="p1")
    _, trace = traced(memory, QUERY, project_id="p1", channel="c-none")
    assert trace["gate"]["pool"] == 51 and decisions(trace)["profile"]["passed"] is True
    _, trace = traced(memory, QUERY, source_id="nobody")
    assert trace["gate"]["pool"] == 0 and decisions(trace)["profile"]["reason"] == "profile_small_pool"


def test_gate_fallback_returns_identifier_matches_when_nothing_passes(memory: Memory) -> None:
    cause = put(memory, "bug-218 is the cache eviction race in the session store")
    fix = put(memory, "The fix for bug-218 locks the session store")
    other = put(memory, "bug-219 is about what we ate")
    put(memory, "what about lunch on friday")
    for signal, value in (("cosine", 0.99), ("rrf", 0.9), ("rsf", 2.0)):
        memory.calibration.set(A, signal, value)  # nothing can pass
    response, trace = traced(memory, "what about bug-218")
    assert not any(d["passed"] for d in trace["gate"]["decisions"])
    assert response["gate_fallback"] is True and trace["gate"]["gate_fallback"] is True
    assert set(refs(response)) == {cause, fix} and other not in refs(response)
    # without an identifier in the query nothing is rescued: an empty answer
    response, trace = traced(memory, "cache eviction race")
    assert response["messages"] == [] and "gate_fallback" not in response
    assert trace["gate"]["gate_fallback"] is False


def test_gate_fallback_needs_the_whole_identifier(memory: Memory) -> None:
    bug = put(memory, "bug-218 is the cache eviction race, fixed in v2.4.1.")
    path = put(memory, "the entry point is /work/src/app.py and nothing else")
    for signal, value in (("cosine", 0.99), ("rrf", 0.9)):
        memory.calibration.set(A, signal, value)
    for query in ("what about bug-21", "anything on v2.4", "is #21 done"):
        response, trace = traced(memory, query)
        assert bug in arm(trace, "memory_keyword") or query == "is #21 done"  # the keyword arm found it ...
        assert response["messages"] == [] and "gate_fallback" not in response  # ... but not the identifier
    for query, expected in (("what about bug-218?", bug), ("fixed in v2.4.1", bug), ("where is src/app.py", path)):
        response = memory.recall(agent_id=A, query=query)
        assert response.get("gate_fallback") is True and refs(response) == [expected], query


def test_gate_fallback_keeps_a_profile_that_passed(memory: Memory) -> None:
    cause = put(memory, "bug-218 is the cache eviction race")
    _fill(memory, 50)
    memory.update_profile(agent_id=A, profile="Standing facts.")
    for signal, value in (("cosine", 0.99), ("rrf", 0.9)):
        memory.calibration.set(A, signal, value)
    response, trace = traced(memory, "what about bug-218")
    assert response["gate_fallback"] is True
    assert decisions(trace)["profile"]["passed"] is True
    assert refs(response) == ["profile", cause]


def test_gate_keeps_the_fused_order(memory: Memory) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP, CHAIR, LEXICAL_ONLY, *UNRELATED]:
        put(memory, text)
    open_gate(memory)
    _, trace = traced(memory, QUERY)
    passed = [d["ref"] for d in trace["gate"]["decisions"] if d["passed"]]
    assert [d["ref"] for d in trace["gate"]["decisions"]] == [row["ref"] for row in trace["fusion"]]
    assert before_cut(trace) == passed


# -- autocut --------------------------------------------------------------------------------------


def _cut_of(scores: list[float], ratio: float = 0.15) -> int | None:
    """Where autocut cuts a descending list: after the first largest gap, if it is big enough."""
    gaps = [scores[i] - scores[i + 1] for i in range(len(scores) - 1)]
    widest = max(range(len(gaps)), key=lambda i: (gaps[i], -i))
    return widest + 1 if scores[0] > 0 and gaps[widest] / scores[0] >= ratio else None


def test_autocut_never_fires_on_fused_scores(memory: Memory) -> None:
    for text in [EXACT, REPORT, LAMP, CHAIR]:
        put(memory, text)
    open_gate(memory)
    response, trace = traced(memory, QUERY)
    cosines = [decisions(trace)[ref]["score"] for ref in before_cut(trace)]
    assert len(cosines) == 4 and _cut_of(cosines) is not None  # a cosine list like it would be cut ...
    assert trace["autocut"]["fired"] is False  # ... but these rows carry lexical votes: the order is fused
    assert len(response["messages"]) == 4


def test_autocut_cuts_homogeneous_cosine_list_at_largest_gap(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP, CHAIR]:
        put(memory, text)
    with reopen(db_path, fts_enabled=False) as m:
        open_gate(m)
        response, trace = traced(m, QUERY)
    near = trace["arms"]["vector_near"]
    assert [h["ref"] for h in near] == [row["ref"] for row in trace["fusion"]]  # the vector arm alone ordered it
    scores = [h["raw"] for h in near]
    cut = _cut_of(scores)
    assert cut == 3  # 1.0, 0.866, 0.795 | 0.436, 0.356
    assert trace["autocut"]["fired"] is True
    assert trace["autocut"]["dropped"] == [h["ref"] for h in near[cut:]]
    assert refs(response) == [h["ref"] for h in reversed(near[:cut])]


def test_autocut_leaves_a_small_gap_or_a_short_list_alone(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, NOTES]:
        put(memory, text)
    with reopen(db_path, fts_enabled=False) as m:
        open_gate(m)
        _, trace = traced(m, QUERY)  # gaps 0.134 and 0.071: below 0.15 of the top score
        assert trace["autocut"]["fired"] is False and len(before_cut(trace)) == 3
        put(m, LAMP)
        _, trace = traced(m, QUERY)  # 1.0, 0.866, 0.795 | 0.436
        assert trace["autocut"]["fired"] is True
    with reopen(db_path, fts_enabled=False, autocut_enabled=False) as m:
        open_gate(m)
        _, trace = traced(m, QUERY)
        assert trace["autocut"]["fired"] is False and len(before_cut(trace)) == 4
    with reopen(db_path, fts_enabled=False, autocut_min_results=5) as m:
        open_gate(m)
        _, trace = traced(m, QUERY)
        assert trace["autocut"]["fired"] is False


# -- the prior, the count cut, the order ----------------------------------------------------------


def test_prior_reorders_but_never_admits_or_removes(memory: Memory, db_path: Path) -> None:
    old = put(memory, REPORT, ts=at(-24 * 60))
    new = put(memory, NOTES, ts=at(-1))
    put(memory, LAMP, ts=at(-24 * 30))
    put(memory, LEXICAL_ONLY, ts=at(-24 * 3))
    for text in UNRELATED:
        put(memory, text, ts=at(-24 * 90))
    _, plain = traced(memory, QUERY)
    with reopen(db_path, prior_age_rate=0.05) as m:
        response, prior = traced(m, QUERY)
    assert plain["gate"]["decisions"] == prior["gate"]["decisions"]
    assert set(before_cut(plain)) == set(before_cut(prior))
    assert before_cut(plain).index(old) < before_cut(plain).index(new)
    assert before_cut(prior).index(new) < before_cut(prior).index(old)  # the newer row moved up
    weights = prior["scoring"]["prior"]
    assert weights[new] == pytest.approx(1.0) and weights[old] == pytest.approx(0.3)  # 1/(1 + 1439 x 0.05), floored
    keyed = [fusion(prior)[ref]["score"] * weights[ref] for ref in before_cut(prior) if ref != "profile"]
    assert keyed == sorted(keyed, reverse=True)
    reasons = {m_["ref"]: m_["match_reason"] for m_ in response["messages"]}
    assert reasons[new]["prior"] == 1.0 and reasons[old]["prior"] == 0.3


def test_prior_is_off_by_default(memory: Memory) -> None:
    put(memory, REPORT, ts=at(-24 * 60))
    _, trace = traced(memory, QUERY)
    assert "prior" not in trace["scoring"]
    assert all("prior" not in m["match_reason"] for m in memory.recall(agent_id=A, query=QUERY)["messages"])


def test_count_cut_returns_first_limit_rows(memory: Memory, db_path: Path) -> None:
    for text in [EXACT, REPORT, NOTES, LAMP, CHAIR]:
        put(memory, text)
    with reopen(db_path, recall_depth_floor=10) as m:  # the arms reach past the limit
        open_gate(m)
        response, trace = traced(m, QUERY, limit=2)
        order = before_cut(trace)
        assert len(order) == 5
        assert refs(response) == list(reversed(order[:2]))
        assert trace["order"]["cut_by_count"] == order[2:] and trace["order"]["limit"] == 2
        response, trace = traced(m, QUERY, limit=0)
        assert response["messages"] == [] and trace["order"]["cut_by_count"] == order
    open_gate(memory)  # without a depth floor the arms stop at the limit: nothing is left for the count to cut
    _, trace = traced(memory, QUERY, limit=2)
    assert len(before_cut(trace)) == 2 and trace["order"]["cut_by_count"] == []


def test_last_row_is_the_best(memory: Memory) -> None:
    best = put(memory, EXACT)
    for text in [REPORT, NOTES, LAMP, CHAIR]:
        put(memory, text)
    open_gate(memory)
    response, trace = traced(memory, QUERY)
    assert refs(response)[-1] == best == trace["fusion"][0]["ref"] == before_cut(trace)[0]
    assert refs(response) == list(reversed(before_cut(trace)))


def test_a_recall_reads_one_snapshot_and_the_next_recall_sees_a_delete(
    memory: Memory, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete committed by another connection mid-recall does not tear the answer; the next recall has it."""
    import cuedrecall.handlers.recall as handler

    gone, kept = put(memory, EXACT), put(memory, REPORT)
    open_gate(memory)
    original = handler.recall_process

    def delete_then_answer(*args: Any, **kwargs: Any) -> Any:
        outcome = original(*args, **kwargs)
        with open_memory(db_path) as other:  # another writer, between the pass and the answer
            assert other.delete_memory(memory_id=int(gone.split(":")[1]))["ok"] is True
        return outcome

    monkeypatch.setattr(handler, "recall_process", delete_then_answer)
    assert sorted(refs(memory.recall(agent_id=A, query=QUERY))) == sorted([gone, kept])
    monkeypatch.undo()
    assert refs(memory.recall(agent_id=A, query=QUERY)) == [kept]


# -- previews and full content ----------------------------------------------------------------------


def test_preview_cuts_long_rows_with_content_len_and_get_contents_gives_the_rest(memory: Memory, db_path: Path) -> None:
    long_text = "zephyr quartz nebula " + " ".join(f"word{i}" for i in range(300))
    long_ref, short_ref = put(memory, long_text), put(memory, REPORT)
    open_gate(memory)
    response = memory.recall(agent_id=A, query=QUERY)
    rows = {message["ref"]: message for message in response["messages"]}
    assert rows[long_ref]["content"] == long_text[:500]
    assert rows[long_ref]["content_truncated"] is True and rows[long_ref]["content_len"] == len(long_text)
    assert "content_truncated" not in rows[short_ref] and "content_len" not in rows[short_ref]
    contents = memory.get_contents(agent_id=A, refs=[long_ref])
    assert contents["items"][0]["content"] == long_text
    with reopen(db_path, recall_preview_chars=0) as m:
        open_gate(m)
        rows = {message["ref"]: message for message in m.recall(agent_id=A, query=QUERY)["messages"]}
    assert rows[long_ref]["content"] == long_text and "content_truncated" not in rows[long_ref]


def test_full_content_returns_whole_rows(memory: Memory) -> None:
    long_text = "zephyr quartz nebula " + " ".join(f"word{i}" for i in range(300))
    long_ref = put(memory, long_text)
    open_gate(memory)
    response = memory.recall(agent_id=A, query=QUERY, full_content=True)
    assert response["full_content_budget_chars"] == 200_000
    row = next(message for message in response["messages"] if message["ref"] == long_ref)
    assert row["content"] == long_text and "content_truncated" not in row


def test_full_content_budget_keeps_best_rows_whole_then_previews(memory: Memory) -> None:
    for i in range(15):
        put(memory, f"{i:02d} " + "zephyr quartz nebula " * 700)  # 14,702 characters each, once stripped
    open_gate(memory)
    response = memory.recall(agent_id=A, query=QUERY, limit=15, full_content=True)
    lengths = [len(message["content"]) for message in response["messages"]]
    assert len(lengths) == 15
    # best first (from the end): 13 x 14,702 = 191,126 fit in 200,000; the 14th would not
    assert lengths[2:] == [14_702] * 13
    assert lengths[:2] == [500, 500]
    assert all(m["content_truncated"] and m["content_len"] == 14_702 for m in response["messages"][:2])


# -- calibration ------------------------------------------------------------------------------------

VOCAB = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "glade",
    "harbor",
    "iris",
    "jasper",
    "kelp",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pebble",
    "quill",
    "raven",
    "sable",
    "thistle",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zinnia",
    "acorn",
    "birch",
    "cobalt",
    "dune",
]


def _calibration_corpus(memory: Memory, agent: str = A, clusters: int = 12, seed: int = 3) -> None:
    """Clusters of four memories written minutes apart that share topic words (positives), days between clusters."""
    rng = random.Random(seed)
    for c in range(clusters):
        topic = rng.sample(VOCAB, 3)
        for j in range(4):
            words = rng.sample(topic, 2) + rng.sample(VOCAB, 3)
            ts = f"2025-09-{1 + c * 2:02d}T09:{j * 8:02d}:00+00:00"
            put(memory, " ".join(words) + f" entry {c}-{j}", agent=agent, ts=ts)


def test_calibrate_threshold_writes_a_threshold_per_signal_with_the_data(memory: Memory, db_path: Path) -> None:
    _calibration_corpus(memory)
    report = memory.calibrate_threshold(agent_id=A)
    assert report["ok"] is True and report["sidecar_persisted"] is True
    assert report["embedding_model"] == "hash-384" and report["sampled_embeddings"] == 48
    new = report["new_thresholds"]
    assert set(new) == {"cosine", "rrf"}  # this corpus has enough lexical-only rows for a fused threshold
    assert new["cosine"] >= 0.05 and new["rrf"] == report["lexical"]["threshold"]
    stored = {(t.agent_id, t.signal): t for t in memory.store_.thresholds()}
    assert {signal: stored[A, signal].value for signal in new} == new
    assert {stored[A, signal].embedding_model for signal in new} == {"hash-384"}
    assert not Path(str(db_path) + ".calibration.json").exists()  # no sidecar: the database holds it
    assert memory.get_recall_precision(agent_id=A)["thresholds"] == new
    _, trace = traced(memory, " ".join(VOCAB[:4]))
    for d in trace["gate"]["decisions"]:
        assert (d["threshold"], d["origin"]) == (new[d["signal"]], "calibrated")
    with open_memory(db_path) as again:  # read back by the next process
        assert again.calibration.thresholds(A) == new
        assert again.calibrate_threshold(agent_id=A)["new_thresholds"] == new  # seeded: the same answer


def test_two_processes_calibrating_two_agents_keep_both(db_path: Path) -> None:
    """Each write is a row of its own in a transaction: neither process's settings overwrite the other's."""
    with open_memory(db_path) as first:
        _calibration_corpus(first)
        _calibration_corpus(first, agent="bob")
        with open_memory(db_path) as second:
            strict = first.set_recall_precision(agent_id=A, precision="strict")
            lenient = second.set_recall_precision(agent_id="bob", precision="lenient")
            assert strict["ok"] is True and lenient["ok"] is True
            for memory in (first, second):  # each process sees the other's write at once
                assert memory.get_recall_precision(agent_id=A)["precision"] == "strict"
                assert memory.get_recall_precision(agent_id="bob")["precision"] == "lenient"
    with open_memory(db_path) as fresh:
        assert fresh.get_recall_precision(agent_id=A)["thresholds"] == strict["calibrate"]["new_thresholds"]
        assert fresh.get_recall_precision(agent_id="bob")["thresholds"] == lenient["calibrate"]["new_thresholds"]


@pytest.mark.sqlite_only
def test_calibration_travels_with_an_export_free_copy_of_the_file(
    memory: Memory, db_path: Path, tmp_path: Path
) -> None:
    _calibration_corpus(memory)
    new = memory.calibrate_threshold(agent_id=A)["new_thresholds"]
    memory.close()
    copy = tmp_path / "copy.db"
    import sqlite3

    with sqlite3.connect(db_path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with open_memory(copy) as moved:
        assert moved.calibration.thresholds(A) == new


def test_calibrate_threshold_refuses_without_enough_data(memory: Memory, db_path: Path) -> None:
    for i in range(5):
        put(memory, f"{VOCAB[i]} {VOCAB[i + 1]} note")
    result = memory.calibrate_threshold(agent_id=A)
    assert result["ok"] is False and result["agent_id"] == A
    assert "Need at least 10 embedded memories" in result["error"] and "found 5" in result["error"]
    assert memory.store_.thresholds() == []
    assert memory.calibration.thresholds(A) == {}
    _, trace = traced(memory, VOCAB[0])
    assert {d["origin"] for d in trace["gate"]["decisions"] if d["signal"]} <= {"heuristic"}


def test_stricter_precision_never_lowers_the_threshold(memory: Memory) -> None:
    _calibration_corpus(memory)
    thresholds = {}
    for precision, beta in (("lenient", 0.5), ("balanced", 1.0), ("strict", 2.0)):
        result = memory.set_recall_precision(agent_id=A, precision=precision)
        assert result["ok"] is True and result["beta"] == beta and result["calibrate"]["beta"] == beta
        thresholds[precision] = result["calibrate"]["new_thresholds"]
        state = memory.get_recall_precision(agent_id=A)
        assert (state["precision"], state["beta"], state["overridden"]) == (precision, beta, True)
        assert state["thresholds"] == thresholds[precision]
    for signal in ("cosine", "rrf"):
        assert thresholds["strict"][signal] >= thresholds["balanced"][signal] >= thresholds["lenient"][signal]
    assert thresholds["strict"]["cosine"] > thresholds["lenient"]["cosine"]


def test_set_recall_precision_without_enough_data_changes_nothing(memory: Memory) -> None:
    put(memory, "a single note")
    before = memory.get_recall_precision(agent_id=A)
    assert (before["precision"], before["overridden"]) == ("balanced", False)
    result = memory.set_recall_precision(agent_id=A, precision="strict")
    assert result["ok"] is False and "Need at least 10" in result["calibrate"]["error"]
    assert memory.get_recall_precision(agent_id=A) == before


def _stamp_with_another_model(db_path: Path, thresholds: dict[str, dict[str, float]]) -> None:
    """Thresholds as a server with another embedding model would have left them."""
    with open_memory(db_path) as memory, memory.store_.write() as conn:
        memory.store_.drop_thresholds(conn, [t.agent_id for t in memory.store_.thresholds()])
        memory.store_.set_thresholds(
            conn,
            [
                Threshold(agent, signal, value, "other-model", memory.calibration.scoring)
                for agent, signals in thresholds.items()
                for signal, value in signals.items()
            ],
        )


def test_thresholds_from_another_embedding_model_are_stale_and_recalibrated_at_start(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        _calibration_corpus(memory)
        _calibration_corpus(memory, agent="agent-small", clusters=1)  # 4 memories: too few to calibrate
        fresh = memory.calibrate_threshold(agent_id=A)["new_thresholds"]
    _stamp_with_another_model(db_path, {A: {"cosine": 0.97, "rrf": 0.5}, "agent-small": {"cosine": 0.9}})
    with open_memory(db_path, settings=make_settings(calibrate_on_model_change=False)) as memory:
        assert memory.calibration.stale is True
        assert memory.calibration.thresholds(A) == {}  # stale thresholds are never applied
    with open_memory(db_path) as memory:
        assert memory.calibration.stale is False
        assert memory.calibration.thresholds(A) == fresh
        assert memory.calibration.thresholds("agent-small") == {}  # dropped: the heuristic applies
        assert {(t.agent_id, t.embedding_model) for t in memory.store_.thresholds()} == {(A, "hash-384")}


def test_stale_thresholds_opened_without_an_embedder_do_not_fail_the_start(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        _calibration_corpus(memory)
        assert memory.calibrate_threshold(agent_id=A)["ok"] is True
    _stamp_with_another_model(db_path, {A: {"cosine": 0.97}})
    with reopen(db_path, embedding_mode="none") as memory:
        assert memory.recall(agent_id=A, query=VOCAB[0])["advisory"]["degraded"] is True


@pytest.mark.sqlite_only
def test_a_sidecar_from_an_earlier_version_moves_into_the_database_once(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        scoring = memory.calibration.scoring
    sidecar = Path(str(db_path) + ".calibration.json")
    sidecar.write_text(
        json.dumps(
            {
                "embedding_model": "hash-384",
                "scoring_version": scoring,
                "agents": {A: {"cosine": 0.31, "rrf": 0.02}},
                "betas": {A: 2.0},
            }
        )
    )
    with open_memory(db_path) as memory:
        assert memory.calibration.thresholds(A) == {"cosine": 0.31, "rrf": 0.02}
        assert memory.get_recall_precision(agent_id=A)["precision"] == "strict"
    assert not sidecar.exists() and Path(str(sidecar) + ".imported").exists()
    sidecar.write_text(
        json.dumps(
            {"embedding_model": "hash-384", "scoring_version": scoring, "agents": {A: {"cosine": 0.9}}, "betas": {}}
        )
    )
    with open_memory(db_path) as memory:  # the database already holds a calibration: the file is not read
        assert memory.calibration.thresholds(A) == {"cosine": 0.31, "rrf": 0.02}

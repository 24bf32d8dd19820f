"""The bounds of gate relief (policy gate-v1), checked on random stores and requests.

See docs/recall-process.md#gate-relief-relief-v1.

For every drawn store (the cue properties' stores: memories and episodes over three agents, projects and
channels), scope, query, limit, gate (the heuristic, or a calibrated cosine threshold set high so that rows sit
under it) and time cue or none, the recall with gate relief is compared with the same recall without it:

1. what relief may never do: remove or reorder a row the unrelieved recall returned (its rows are a subsequence
   of the relieved recall's, in the same order), or change a gate decision;
2. which rows may enter: only rows the gate refused below their threshold (never on common words alone) whose
   score on one of their signals is at least RELIEF_STEP of that signal's threshold, in the scope;
3. how many: at most RELIEF_ROWS after the answer and never past the limit, and only when RELIEF_SUSPECT rows
   sat just under the gate (FILTER_DROP is then suspected, and the relief is a stage of the trace); with a cue,
   at most the seats the cue left empty (its seats stay at most L).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.recall.cue_policy import SEATS
from cuedrecall.recall.gate_policy import COMMON_WORDS, RELIEF_ROWS, RELIEF_STEP, RELIEF_SUSPECT
from cuedrecall.store.base import Scope
from cuedrecall.text.fts import fts_terms
from tests.conftest import visible
from tests.contract.test_cue_properties import AGENTS, Row, build, request_spec, store_spec

LEXICAL = ARMS.lexical_names  # the trigram arms, and the word arm where it is on


def recall(memory: Memory, relief: bool, args: dict[str, Any]) -> dict[str, Any]:
    memory.runtime = replace(memory.runtime, settings=replace(memory.runtime.settings, gate_relief=relief))
    response = memory.recall(**args, trace=True)
    assert response.get("ok") is not False, response
    return response


def keys(response: dict[str, Any]) -> list[str]:
    """The returned rows, best first, by ref (the profile row by its text)."""
    return [m.get("ref") or m["content"] for m in reversed(response["messages"])]


def searchable(memory: Memory, ref: str) -> str:
    """The text the lexical arms search: a memory's content, an episode's summary and keywords."""
    record = memory.store_.records([ref])[ref]
    return record.text + " " + record.keywords


def is_subsequence(short: list[str], long: list[str]) -> bool:
    rest = iter(long)
    return all(any(item == other for other in rest) for item in short)


def closeness(trace: dict[str, Any], ref: str, text: str, query: str) -> float:
    """How near the row came to its thresholds, recomputed from the trace: the best of cosine / the cosine bar
    and lexical votes / the lexical bar (the latter only where a lexical arm matched it on a word that is not a
    common one: its text holds such a query term, or an arm of content words reached it)."""
    bar = trace["gate"]["bar"]
    mode = trace["request"]["mode"]
    fusion = {row["ref"]: row for row in trace["fusion"]}[ref]
    penalty = trace["scoring"].get("episode_penalty", {}).get(ref, 1.0)
    cosine = next(
        (
            hit["raw"]
            for arm in ("vector_near", "vector_far")
            for hit in trace["arms"].get(arm, [])
            if hit["ref"] == ref
        ),
        None,
    )
    near = []
    if cosine is not None and bar["cosine"]["threshold"] > 0:
        near.append(cosine * penalty / bar["cosine"]["threshold"])
    votes = [v for arm, v in fusion["votes"].items() if arm in LEXICAL]
    words = [t.lower() for t in fts_terms(query) if t.lower() not in COMMON_WORDS] + [query.lower().strip()]
    # an arm that matches content words only (the word arm, the short-word arm) counts its rows as the gate does
    counted = any(arm in fusion["votes"] for arm in ARMS.content_word_names) or any(
        w and w in text.lower() for w in words
    )
    if votes and counted and bar[mode]["threshold"] > 0:
        near.append(sum(votes) * penalty / bar[mode]["threshold"])
    return max(near, default=0.0)


def check(
    memory: Memory,
    rows: dict[str, Row],
    scope: Scope,
    args: dict[str, Any],
    cue: dict[str, Any] | None,
) -> bool:
    call = {**args, **({"time_cue": cue} if cue else {})}
    off, on = recall(memory, False, call), recall(memory, True, call)
    before, after = keys(off), keys(on)
    trace = on["trace"]

    # 1. nothing the unrelieved recall returned is removed or reordered; the gate decided the same
    assert is_subsequence(before, after), (before, after)
    assert trace["gate"] == off["trace"]["gate"]
    assert off["trace"]["config"]["gate_relief"] is False and trace["config"]["gate_relief"] is True
    extra = [ref for ref in after if ref not in before]
    relieved = [r["ref"] for r in trace["reservation"] if r["kind"] == "relief"]
    seated = [
        ref
        for ref in trace.get("cue", {}).get("seated", [])
        if ref not in off["trace"].get("cue", {}).get("seated", [])
    ]
    assert sorted(extra) == sorted(set(relieved) | set(seated)), (extra, relieved, seated)

    # 2. which rows: refused below their threshold by less than one step, in the scope
    decisions = {d["ref"]: d for d in trace["gate"]["decisions"]}
    for ref in extra:
        assert decisions[ref]["passed"] is False and decisions[ref]["reason"] == "below_gate", decisions[ref]
        near = closeness(trace, ref, searchable(memory, ref), args["query"])
        assert near >= RELIEF_STEP - 1e-9, (ref, near)
        assert visible(rows[ref], scope)

    # 3. how many: at most RELIEF_ROWS, never past the limit, after the answer; the cue's seats stay at most L
    answer = trace["order"]["before_cut"][: trace["order"]["limit"]]
    assert len(relieved) <= RELIEF_ROWS and len(answer) + len(relieved) <= args["limit"]
    assert after[len(answer) : len(answer) + len(relieved)] == relieved  # right after the answer (a cue moves none)
    if relieved:
        under = [
            ref
            for ref, d in decisions.items()
            if d.get("reason") == "below_gate"
            and ref in rows
            and closeness(trace, ref, searchable(memory, ref), args["query"]) >= RELIEF_STEP - 1e-9
        ]
        assert len(under) >= RELIEF_SUSPECT
        assert any(s["code"] == "FILTER_DROP" for s in trace["suspected"])
    if relieved or seated:  # the relief is the trace's last stage, with its reason
        stage = trace["stages"][-1]
        assert (stage["admitted"], stage["seated"]) == (relieved, seated) and stage["reason"]
    if cue and "cue" in trace:
        confidence = on["time_cue"]["confidence"]
        assert len(trace["cue"]["seated"]) <= SEATS[confidence]
        assert off["trace"]["cue"]["seated"] == trace["cue"]["seated"][: len(off["trace"]["cue"]["seated"])]
    else:
        assert not seated
    return bool(extra)


# None: the heuristic; else a calibrated threshold, set where rows sit just under it: a cosine, and a fused score
# for the lexical votes (a multiple of first place on one arm under rrf, a share of 0..1 under rsf)
cosine_gate = st.sampled_from((None, 0.45, 0.6, 0.8))
lexical_gate = st.sampled_from((None, 1.05, 1.15))
LEXICAL_SCALE = {"rrf": 1 / 61, "rsf": 0.55}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    store=store_spec,
    requests=st.lists(request_spec, min_size=1, max_size=4),
    cosine=cosine_gate,
    lexical=lexical_gate,
    cued=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_relief_only_adds_rows_one_step_under_the_gate_within_its_bounds(
    store: dict[str, Any], requests: list[dict[str, Any]], cosine: float | None, lexical: float | None, cued: list[bool]
) -> None:
    memory, rows, texts = build(store)
    try:
        mode = memory.settings.recall_mode
        for agent in AGENTS:
            if cosine is not None:
                memory.calibration.set(agent, "cosine", cosine)
            if lexical is not None:
                memory.calibration.set(agent, mode, lexical * LEXICAL_SCALE[mode])
        for request, with_cue in zip(requests, cued):
            scope = Scope(request["agent"], request["project"], request["channel"], request["source"])
            query = _query(request, texts)
            args: dict[str, Any] = {
                "agent_id": request["agent"],
                "query": query,
                "limit": request["limit"],
                "deep": request["deep"],
                "channel": request["channel"],
                "source_id": request["source"],
            }
            if request["project"] is not None:
                args["project_id"] = request["project"]
            check(memory, rows, scope, args, request["cue"] if with_cue else None)
    finally:
        memory.close()


def _query(request: dict[str, Any], texts: dict[str, list[Any]]) -> str:
    """Words of a stored text of the agent (most draws), or the request's own words."""
    own = texts.get(request["agent"]) or []
    if request["query"] == "text" and own:
        return " ".join(own[len(own) // 2][0].split()[:4])
    return "" if request["query"] == "" else "bike garden checkout holiday dentist the was"


# -- examples: what relief does where it applies -----------------------------------------------------------

QUERY = "zephyr quartz nebula"
TEXTS = [
    ("zephyr quartz nebula", "2025-03-02"),  # cosine 1.0 with the query (hash embedder)
    ("zephyr quartz nebula report", "2025-05-10"),  # 0.866
    ("zephyr quartz nebula notes today", "2025-06-12"),  # 0.795
    ("orange juice at breakfast", "2025-06-13"),
    ("the garden needs water", "2025-07-01"),
]
JUNE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "sure"}


def high_gate(tmp_path: Any, relief: bool) -> Memory:
    """A store whose calibrated gate (cosine 0.95, and lexical votes above any a row can have) leaves the report
    and the notes one step under it; the arms search 10 deep whatever the limit, so they reach both."""
    from tests.conftest import make_settings, open_memory

    memory = open_memory(tmp_path / "m.db", settings=make_settings(gate_relief=relief, recall_depth_floor=10))
    for text, day in TEXTS:
        memory.store(agent_id="a", content=text, timestamp=f"{day}T10:00:00+00:00")
    memory.calibration.set("a", "cosine", 0.95)
    memory.calibration.set("a", "rrf", 0.05)
    return memory


def test_relief_fills_the_empty_places_with_the_rows_just_under_the_gate(tmp_path: Any) -> None:
    with high_gate(tmp_path, relief=True) as memory:
        response = memory.recall(agent_id="a", query=QUERY, limit=5, trace=True)
    trace = response["trace"]
    assert keys(response) == ["mem:1", "mem:2", "mem:3"]  # the answer, then the relieved rows in fused order
    assert [r for r in trace["reservation"] if r["kind"] == "relief"] == [
        {"ref": "mem:2", "kind": "relief"},
        {"ref": "mem:3", "kind": "relief"},
    ]
    assert [s["code"] for s in trace["suspected"]] == ["FILTER_DROP"]
    stage = trace["stages"][-1]
    assert (stage["stage"], stage["admitted"], stage["seated"]) == (1, ["mem:2", "mem:3"], [])
    assert stage["reason"].startswith("FILTER_DROP suspected")
    assert trace["stages"][0]["next"] == "relieve the gate one step (FILTER_DROP suspected)"
    # a relieved row is marked: it does not pass for a row the gate admitted
    by_ref = {m["ref"]: m["match_reason"] for m in response["messages"]}
    assert "relieved" not in by_ref["mem:1"] and by_ref["mem:1"].get("admission") is None
    for ref in ("mem:2", "mem:3"):
        assert by_ref[ref]["admission"] == "relief" and by_ref[ref]["relieved"]["policy"] == "relief-v1"
        assert RELIEF_STEP <= by_ref[ref]["relieved"]["closeness"] < 1
    assert trace["policy"]["process"] == "single-pass-v0+relief-v1"
    (tmp_path / "off").mkdir()
    with high_gate(tmp_path / "off", relief=False) as memory:
        off = memory.recall(agent_id="a", query=QUERY, limit=5, trace=True)
    assert keys(off) == ["mem:1"] and off["trace"]["policy"]["process"] == "single-pass-v0"


def test_a_full_answer_is_not_relieved_but_a_cue_seat_may_take_a_period_row_just_under(tmp_path: Any) -> None:
    with high_gate(tmp_path, relief=True) as memory:
        full = memory.recall(agent_id="a", query=QUERY, limit=1, trace=True)
        assert keys(full) == ["mem:1"] and full["trace"]["suspected"] == []
        cued = memory.recall(agent_id="a", query=QUERY, limit=1, time_cue=JUNE, trace=True)
    assert keys(cued) == ["mem:1", "mem:3"]  # the notes of June 12, one step under the gate, in a cue seat
    assert cued["trace"]["cue"]["seated"] == ["mem:3"] and cued["trace"]["stages"][-1]["seated"] == ["mem:3"]
    # relief-v1 is named, and the seat it filled says it holds a refused row
    assert cued["trace"]["policy"]["process"] == cued["time_cue"]["policy"] == "cued-v0.3+relief-v1"
    seat = cued["messages"][0]["match_reason"]
    assert seat["signal"] == "cue" and seat["relieved"]["policy"] == "relief-v1"
    assert seat["relieved"]["closeness"] >= RELIEF_STEP
    assert {"ref": "mem:3", "kind": "cue", "relieved": True} in cued["trace"]["reservation"]
    refused = {d["ref"] for d in cued["trace"]["gate"]["decisions"] if d.get("reason") == "below_gate"}
    assert "mem:3" in refused
    (tmp_path / "off").mkdir()
    with high_gate(tmp_path / "off", relief=False) as memory:  # cued-v0.3: a seat never holds a refused row,
        exact = memory.recall(agent_id="a", query=QUERY, limit=1, time_cue=JUNE, trace=True)  # even just under
    assert keys(exact) == ["mem:1"] and exact["trace"]["policy"]["process"] == "cued-v0.3"
    assert "mem:3" in {d["ref"] for d in exact["trace"]["gate"]["decisions"] if d.get("reason") == "below_gate"}
    assert "mem:3" in {hit["ref"] for hit in exact["trace"]["arms"]["cue"]}  # the cue found it, and passed it over

"""What makes the trace ready (docs/trace.md#what-makes-the-trace-ready), checked before anything relies on it.

1. It names deliberate defects correctly: a disabled arm gives CANDIDATE_MISS, a
   gate forced high gives FILTER_DROP, the episode penalty on a store with an
   episode per session gives RANKING_MISS.
2. It reproduces a manual attribution: which stage lost which evidence, written
   here by hand, is what ``attribute``/``confirm`` read from the trace alone.
3. It changes nothing when not requested: the response minus "trace" is the
   untraced response, byte for byte.

Also: the trace never holds stored text (docs/trace.md#what-a-trace-holds), and the coverage ledger
(docs/trace.md#the-coverage-ledger).
Every store is built in the test with the hash embedder and a pinned clock.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import cuedrecall.recall.coverage as coverage_module
from benchmarks.recall_trace_confirm import (
    CANDIDATE_MISS,
    FILTER_DROP,
    RANKING_MISS,
    attribute,
    confirm,
)
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import load_sample
from cuedrecall.text import normalize
from tests.conftest import NOW, apart_settings

AGENT = "a"

FILLER = [
    "Mara rode her road bike along the coast to Cascais on a sunny morning.",
    "The bakery on Rua Augusta sells the best custard tarts in the city.",
    "We planned a weekend trip to Porto to visit the wine cellars by the river.",
    "The new laptop arrived with a cracked screen, so it went back to the store.",
    "Grandma's recipe for fish stew needs saffron, tomatoes and a lot of patience.",
    "The team meeting moved to Thursday because the projector was broken again.",
    "Mara started learning Japanese with an app and a weekly evening class.",
    "The garden tomatoes finally ripened after a long and cloudy summer.",
]


def new_memory(**settings: Any) -> Memory:
    return Memory(":memory:", settings=apart_settings(**settings), clock=fixed_clock(NOW))


def store(memory: Memory, text: str, when: str, agent: str = AGENT) -> str:
    result = memory.store(agent_id=agent, message={"content": text, "timestamp": when})
    assert result["result"] == "stored", result
    return result["ref"]


def with_filler(memory: Memory) -> None:
    for month, text in enumerate(FILLER, 1):
        store(memory, text, f"2025-{month:02d}-10T10:00:00+00:00")


def returned(response: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in response["messages"] if "ref" in m]


# -- 1. deliberate defects are named correctly --------------------------------------------

# Long enough that the hash vector of the bare identifier stays under the vector floor:
# only the keyword arm can reach this record.
TICKET = (
    "After a long afternoon of back and forth with the vendor support desk about the recurring outages of "
    "the storage cluster in the basement server room, the escalation was finally logged under the reference "
    "ZX4471QP and promised a technician visit sometime during the following week, weather and holidays "
    "permitting of course."
)


@pytest.mark.parametrize("fts_enabled", [True, False])
def test_disabling_the_keyword_arm_is_a_candidate_miss(fts_enabled: bool) -> None:
    memory = new_memory(fts_enabled=fts_enabled)
    with_filler(memory)
    gold = store(memory, TICKET, "2025-09-10T10:00:00+00:00")
    response = memory.recall(agent_id=AGENT, query="ZX4471QP", limit=5, trace=True)
    trace = response["trace"]
    assert trace["arms"]["vector_near"] == []  # the vector arm cannot see it either way
    if fts_enabled:
        assert gold in returned(response)
        assert [hit["ref"] for hit in trace["arms"]["memory_keyword"]] == [gold]
        # first place on the keyword arm clears the gate on its own signal: no rescue needed
        assert trace["gate"]["gate_fallback"] is False
        assert confirm(trace, [gold]) is None
    else:
        assert gold not in returned(response)
        assert trace["arms"]["memory_keyword"] == []
        assert confirm(trace, [gold]) == CANDIDATE_MISS
        assert attribute(trace, [gold])[gold]["stage"] == "arms"


@pytest.mark.parametrize("embedding_mode", ["hash", "none"])
def test_disabling_the_vector_arms_is_a_candidate_miss(embedding_mode: str) -> None:
    """The other direction: "brakepad" is no substring of the evidence, so only the vector arm
    (shared trigrams) reaches it; with embedding mode none the vector arms are off."""
    memory = new_memory(embedding_mode=embedding_mode)
    memory.calibration.set(AGENT, "cosine", 0.2)
    with_filler(memory)
    gold = store(memory, "New brake pad for Mara.", "2025-09-10T10:00:00+00:00")
    response = memory.recall(agent_id=AGENT, query="brakepad", limit=3, trace=True)
    trace = response["trace"]
    assert trace["arms"]["memory_keyword"] == []
    if embedding_mode == "hash":
        assert trace["arms"]["vector_near"][0]["ref"] == gold
        assert gold in returned(response)
        assert confirm(trace, [gold]) is None
    else:
        assert trace["arms"]["vector_near"] == []
        assert confirm(trace, [gold]) == CANDIDATE_MISS


def test_forcing_the_gate_high_is_a_filter_drop() -> None:
    codes = {}
    for forced in (False, True):
        memory = new_memory()
        with_filler(memory)
        gold = store(
            memory, "The bike shop replaced the worn brake pads on Mara's road bike.", "2025-09-10T10:00:00+00:00"
        )
        if forced:
            memory.calibration.set(AGENT, "cosine", 0.99)
            memory.calibration.set(AGENT, "rrf", 1.0)
        response = memory.recall(agent_id=AGENT, query="brake pads for the road bike", limit=3, trace=True)
        codes[forced] = confirm(response["trace"], [gold])
        if forced:
            assert returned(response) == []
            decision = attribute(response["trace"], [gold])[gold]["gate"]
            assert decision["passed"] is False and decision["reason"] == "below_gate"
            assert decision["origin"] == "calibrated" and decision["threshold"] == 0.99
    assert codes == {False: None, True: FILTER_DROP}


TOPICS = [
    "a coastal ride to Cascais",
    "new tyres before the Sintra climb",
    "a long ride along the Tagus river",
    "cleaning and oiling the drivetrain",
    "a group ride with the Saturday club",
    "fitting a bike light for winter",
    "a puncture on the way to work",
    "planning the Algarve bike tour",
    "choosing a new saddle",
    "a rainy commute and mudguards",
    "the brakes squealing on descents",
    "a night ride through the old town",
]
EVIDENCE = "Mara had the chain on her road bike replaced at the bike shop."
PENALTY_QUERY = "chain replaced on Mara's road bike"


def sessions_store(penalty: bool) -> tuple[Memory, str]:
    """Twelve sessions a fortnight apart (May to October), each archived as an episode; evidence in the first."""
    memory = new_memory(episode_penalty_enabled=penalty, recall_depth_floor=20)
    start = datetime(2025, 5, 1, 18, 0, tzinfo=UTC)
    evidence = ""
    for number, topic in enumerate(TOPICS):
        day = start + timedelta(days=14 * number)
        turns = [
            f"Mara talked about {topic} on her road bike.",
            f"She said the weather during {topic.split()[-1]} was fine.",
            f"We also chatted about dinner plans and film night number {number + 1}.",
        ]
        if number == 0:
            turns.append(EVIDENCE)
        history = []
        for turn, text in enumerate(turns):
            stamp = (day + timedelta(minutes=2 * turn)).isoformat()
            ref = store(memory, text, stamp)
            if text == EVIDENCE:
                evidence = ref
            history.append({"timestamp": stamp})
        result = memory.archive_episode(
            agent_id=AGENT,
            summary=f"Session {number + 1}: Mara and her road bike, {topic}.",
            keywords="road bike, Mara",
            history=history,
        )
        assert result["ok"], result
    return memory, evidence


def test_the_episode_penalty_raises_ranking_miss_for_older_evidence() -> None:
    without, gold = sessions_store(penalty=False)
    plain = without.recall(agent_id=AGENT, query=PENALTY_QUERY, limit=3, trace=True)
    assert gold in returned(plain)
    assert confirm(plain["trace"], [gold]) is None
    assert "episode_penalty" not in plain["trace"]["scoring"]

    penalised_memory, gold2 = sessions_store(penalty=True)
    assert gold2 == gold
    penalised = penalised_memory.recall(agent_id=AGENT, query=PENALTY_QUERY, limit=3, trace=True)
    assert gold not in returned(penalised)
    assert confirm(penalised["trace"], [gold]) == RANKING_MISS
    assert penalised["trace"]["request"]["episode_penalty"] is True


# -- 2. it reproduces a manual attribution ------------------------------------------------

ATTRIBUTION_STORE = {
    "A": "The bike shop fitted new brake pads on the road bike.",
    "B": "Brake pads for a road bike wear out faster in the rain.",
    "Z": "Mara asked about brake pads for her road bike.",
    "Y": "Long list from the hardware trip: screws, hinges, sandpaper, wood glue, paint brushes, masking tape, "
    "a ladder, a felt pad for the door, and a new doormat.",
    "X": "Cats sleep all day long.",
    "F1": "Dinner was grilled sardines with salad and bread.",
    "F2": "Rain is expected all week, so pack an umbrella.",
}

# Written by hand, from reading the records and the policy, before looking at any trace:
#   X shares no word or trigram term with the question: no arm reaches it.
#   Y mentions "pad" once in a long list: the keyword arm reaches it on "for" and "the" alone,
#     common words that count for nothing at the gate (gate-v1), and the vector arm reaches it,
#     but its cosine is far under the heuristic minimum: the gate refuses it (below_gate).
#   Z is as close to the question as A and B, passes the gate, and stands third: the count
#     (limit 2) cuts it.
#   A and B are returned.
MANUAL = {
    "X": {"code": CANDIDATE_MISS, "stage": "arms"},
    "Y": {"code": FILTER_DROP, "stage": "gate", "reason": "below_gate"},
    "Z": {"code": RANKING_MISS, "stage": "count", "position": 2},
    "A": {"code": None, "stage": "returned"},
    "B": {"code": None, "stage": "returned"},
}


def attribution_store() -> tuple[Memory, dict[str, str]]:
    memory = new_memory(recall_depth_floor=10)
    refs = {}
    for month, (name, text) in enumerate(ATTRIBUTION_STORE.items(), 1):
        refs[name] = store(memory, text, f"2025-{month:02d}-10T10:00:00+00:00")
    return memory, refs


def test_the_trace_reproduces_a_manual_attribution() -> None:
    memory, refs = attribution_store()
    trace = memory.recall(agent_id=AGENT, query="brake pads for the road bike", limit=2, trace=True)["trace"]
    found = attribute(trace, [refs[name] for name in MANUAL])
    for name, expected in MANUAL.items():
        got = found[refs[name]]
        assert got["code"] == expected["code"], (name, got)
        assert got["stage"] == expected["stage"], (name, got)
        assert confirm(trace, [refs[name]]) == expected["code"], name
        if "reason" in expected:
            assert got["gate"]["reason"] == expected["reason"]
            assert got["gate"]["score"] < got["gate"]["threshold"]
        if "position" in expected:
            assert got["position"] == expected["position"] and got["cut_by_count"] is True
    assert found[refs["X"]]["arms"] == {}
    assert set(found[refs["Y"]]["arms"]) == {"vector_near", "memory_keyword"}
    # a question with several pieces of evidence: the best stage any of them reached decides
    assert confirm(trace, [refs["X"], refs["Y"]]) == FILTER_DROP
    assert confirm(trace, [refs["Y"], refs["Z"]]) == RANKING_MISS
    assert confirm(trace, [refs["X"], refs["A"]]) is None


def test_the_trace_reproduces_the_manual_finding_on_the_episode_penalty() -> None:
    """By hand: the penalty halves older memories' scores while episodes are exempt, so the
    evidence still passes the gate but every row ahead of it is an episode."""
    memory, gold = sessions_store(penalty=True)
    trace = memory.recall(agent_id=AGENT, query=PENALTY_QUERY, limit=3, trace=True)["trace"]
    got = attribute(trace, [gold])[gold]
    assert (got["code"], got["stage"]) == (RANKING_MISS, "count")
    assert got["scoring"]["episode_penalty"] == 0.5  # months older than the newest episode: the floor
    assert got["gate"]["passed"] is True
    ahead = trace["order"]["before_cut"][: got["position"]]
    assert ahead and all(ref.startswith("ep:") for ref in ahead)
    assert all(ref not in trace["scoring"]["episode_penalty"] for ref in ahead)


def test_autocut_drop_is_a_filter_drop_at_the_autocut_stage() -> None:
    """A homogeneous (vector-only) list with a wide gap: autocut removes the tail after the gate."""
    memory = new_memory(fts_enabled=False, recall_depth_floor=10)
    memory.calibration.set(AGENT, "cosine", 0.1)
    close = [
        store(memory, text, f"2025-0{i}-10T10:00:00+00:00")
        for i, text in enumerate(
            ["new brake pads for the road bike", "road bike brake pads were fitted", "brake pads and a road bike"], 1
        )
    ]
    far = store(memory, "the bike went to the shop in spring for a wash", "2025-05-10T10:00:00+00:00")
    trace = memory.recall(agent_id=AGENT, query="road bike brake pads", limit=10, trace=True)["trace"]
    assert trace["autocut"]["fired"] is True, trace["autocut"]
    assert trace["autocut"]["dropped"] == [far]
    assert next(d for d in trace["gate"]["decisions"] if d["ref"] == far)["passed"] is True
    assert confirm(trace, [far]) == FILTER_DROP
    assert attribute(trace, [far])[far]["stage"] == "autocut"
    assert confirm(trace, close) is None


# -- 3. it changes nothing when not requested -----------------------------------------------


def _sample_memory(**settings: Any) -> Memory:
    memory = new_memory(**settings)
    load_sample(memory)
    return memory


CASES = [
    ({}, {"query": "bike shop brake pads", "limit": 3}),
    ({}, {"query": "what did the bike shop do?", "limit": 10}),
    ({}, {"query": "", "limit": 5}),
    ({}, {"query": "Sintra ride", "limit": 4, "deep": True}),
    ({}, {"query": "brake pads", "limit": 5, "exclude_contents": ["Mara's bike: new brake pads"]}),
    ({}, {"query": "bike", "limit": 5, "full_content": True}),
    (
        {},
        {
            "query": "bike shop",
            "limit": 3,
            "time_cue": {"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"},
        },
    ),
    ({}, {"query": "bike shop", "limit": 3, "time_cue": {"ago": {"unit": "months", "value": 3}, "confidence": "sure"}}),
    ({}, {"query": "bike shop", "limit": 3, "time_cue": {"ago": {"unit": "days", "value": 0}, "confidence": "sure"}}),
    ({"recall_mode": "rsf"}, {"query": "bike shop brake pads", "limit": 5}),
    ({"episode_penalty_enabled": True, "recall_depth_floor": 20}, {"query": "bike ride", "limit": 5}),
    ({"prior_age_rate": 0.01, "confidence_enabled": True}, {"query": "bike ride", "limit": 5}),
    ({"fts_enabled": False}, {"query": "bike shop", "limit": 5}),
    ({"autocut_enabled": False, "recall_depth_floor": 30}, {"query": "Lisbon", "limit": 8}),
]


@pytest.mark.parametrize(("settings", "arguments"), CASES)
def test_a_trace_changes_nothing_in_the_response(settings: dict[str, Any], arguments: dict[str, Any]) -> None:
    memory = _sample_memory(**settings)
    agent = "demo"
    first = memory.recall(agent_id=agent, **arguments)
    traced = memory.recall(agent_id=agent, trace=True, **arguments)
    last = memory.recall(agent_id=agent, **arguments)
    assert "trace" in traced and "trace" not in first
    stripped = {key: value for key, value in traced.items() if key != "trace"}
    assert json.dumps(stripped, ensure_ascii=False) == json.dumps(first, ensure_ascii=False)
    assert json.dumps(last, ensure_ascii=False) == json.dumps(first, ensure_ascii=False)


def test_trace_false_is_the_same_as_no_trace() -> None:
    memory = _sample_memory()
    plain = memory.recall(agent_id="demo", query="bike", limit=5)
    off = memory.recall(agent_id="demo", query="bike", limit=5, trace=False)
    assert json.dumps(off) == json.dumps(plain)


# -- the trace never holds stored text ------------------------------------------------------

MARKER = "ZQXMARKER"


def marker_store() -> Memory:
    memory = new_memory(recall_depth_floor=10)
    with_filler(memory)
    history = []
    for day, text in enumerate(
        [
            f"The {MARKER} bike lock code is stored in the drawer.",
            f"Mara lent the {MARKER} tandem to her cousin in Braga.",
            f"Velocipede notes: {MARKER} repaired the rear brake pads.",
        ],
        1,
    ):
        stamp = f"2025-10-{day:02d}T09:00:00+00:00"
        store(memory, text, stamp)
        history.append({"timestamp": stamp})
    memory.archive_episode(
        agent_id=AGENT,
        summary=f"Talked about the {MARKER} bikes and the lock.",
        keywords=f"{MARKER}, bike",
        history=history,
    )
    memory.update_profile(agent_id=AGENT, profile=f"Mara, cyclist, owner of {MARKER} bikes.")
    return memory


MARKER_CALLS = [
    {"query": f"{MARKER} bike lock", "limit": 5},
    {"query": f"where is the {MARKER} velocipede", "limit": 5, "deep": True},
    {"query": MARKER, "limit": 3},
    {"query": "", "limit": 10},
    {"query": f"{MARKER} tandem cousin", "limit": 3, "exclude_contents": [f"The {MARKER} bike lock"]},
    {
        "query": f"{MARKER} bike",
        "limit": 3,
        "time_cue": {"after": "2025-10-01", "before": "2025-10-03", "confidence": "sure"},
    },
    {"query": f"{MARKER} bike", "limit": 3, "time_cue": {"ago": "long_ago", "confidence": "vague"}},
    {"query": f"{MARKER} bike", "limit": 3, "time_cue": {"ago": {"unit": "days", "value": 0}, "confidence": "sure"}},
]


@pytest.mark.parametrize("arguments", MARKER_CALLS)
def test_the_trace_holds_no_stored_text(arguments: dict[str, Any]) -> None:
    memory = marker_store()
    response = memory.recall(agent_id=AGENT, trace=True, **arguments)
    messages = json.dumps(response["messages"])
    assert MARKER in messages  # the records were returned: the check below means something
    trace_text = json.dumps(response["trace"], ensure_ascii=False)
    for needle in (MARKER.lower(), "velocipede", "drawer", "tandem", "cyclist"):
        assert needle not in trace_text.lower(), needle


def test_the_trace_does_not_echo_the_query_or_exclusions() -> None:
    memory = marker_store()
    query = "Quixotic-phrase bike lock for Braga"
    trace = memory.recall(
        agent_id=AGENT, query=query, limit=5, trace=True, exclude_contents=["Uniquely-excluded text"]
    )["trace"]
    text = json.dumps(trace, ensure_ascii=False).lower()
    assert "quixotic" not in text and "braga" not in text and "uniquely" not in text
    assert set(trace["request"]) >= {"limit", "depth", "deep", "mode"}
    assert not any(isinstance(v, str) and "bike" in v.lower() for v in trace["request"].values())


# -- the coverage ledger (docs/trace.md#the-coverage-ledger) ----------------------------------------------

QUESTION = (
    "CPersona 2.5.5a1 のリリース前に包括コードレビューで最優先度 P1 と判定されたバグ bug-218 は PR #354 の a/b で直す?"
)
PARTS = [
    ("cpersona", "identifier"),
    ("2.5.5a1", "identifier"),
    ("リリース", "katakana"),
    ("包括", "kanji"),
    ("コードレビュー", "katakana"),
    ("最優先度", "kanji"),
    ("p1", "identifier"),
    ("判定", "kanji"),
    ("バグ", "katakana"),
    ("bug-218", "identifier"),
    ("pr", "identifier"),
    ("#354", "identifier"),
    ("a/b", "identifier"),
]


def coverage_store(preview_chars: int = 500) -> tuple[Memory, dict[str, str]]:
    memory = new_memory(recall_preview_chars=preview_chars)
    with_filler(memory)
    refs = {
        "release": store(memory, "CPersona 2.5.5a1 のリリース判定は来週の予定。", "2025-10-01T09:00:00+00:00"),
        "bug": store(
            memory, "bug-218 は最優先度 P1 のバグで、PR #354 で修正する。対象は 2.5.5a1", "2025-10-02T09:00:00+00:00"
        ),
    }
    memory.calibration.set(AGENT, "cosine", 0.1)  # both records pass the gate: the ledger is what is tested
    return memory, refs


def test_coverage_ledger_on_the_mixed_japanese_and_identifier_question() -> None:
    memory, refs = coverage_store()
    response = memory.recall(agent_id=AGENT, query=QUESTION, limit=5, trace=True)
    ledger = response["trace"]["coverage"]
    normalized = normalize(QUESTION)
    assert ledger["normalization"] == "nfkc-lower"
    assert [(normalized[p["span"][0] : p["span"][1]], p["kind"]) for p in ledger["parts"]] == PARTS
    assert "parts_omitted" not in ledger
    order = [m["ref"] for m in response["messages"]]
    assert set(refs.values()) <= set(order)
    assert ledger["records"] == len(order)
    full = {
        item["ref"]: normalize(item["content"]) for item in memory.get_contents(agent_id=AGENT, refs=order)["items"]
    }
    expected = [[ref for ref in order if part in full[ref]] for part, _ in PARTS]
    assert ledger["covered_by"] == expected
    assert ledger["uncovered"] == [i for i, refs_ in enumerate(expected) if not refs_]
    names = {ref: name for name, ref in refs.items()}
    by_part = {part: {names.get(r, r) for r in ledger["covered_by"][i]} for i, (part, _) in enumerate(PARTS)}
    assert {"release", "bug"} <= by_part["2.5.5a1"]
    assert by_part["bug-218"] >= {"bug"} and "release" not in by_part["bug-218"]
    assert by_part["リリース"] >= {"release"}
    for part in ("包括", "コードレビュー", "a/b"):
        assert PARTS.index((part, dict(PARTS)[part])) in ledger["uncovered"]


def test_coverage_reads_the_full_stored_text_not_the_preview() -> None:
    memory, refs = coverage_store(preview_chars=20)
    response = memory.recall(agent_id=AGENT, query=QUESTION, limit=5, trace=True)
    bug = next(m for m in response["messages"] if m.get("ref") == refs["bug"])
    assert bug.get("content_truncated") and "2.5.5a1" not in bug["content"]
    ledger = response["trace"]["coverage"]
    index = [part for part, _ in PARTS].index("2.5.5a1")
    assert refs["bug"] in ledger["covered_by"][index]


def test_coverage_keeps_32_parts_and_counts_the_rest() -> None:
    memory, _ = coverage_store()
    query = " ".join(f"w{n:02d}" for n in range(40)) + " w00 w01"  # repeats count once
    ledger = memory.recall(agent_id=AGENT, query=query, limit=3, trace=True)["trace"]["coverage"]
    assert len(ledger["parts"]) == 32 and len(ledger["covered_by"]) == 32
    assert ledger["parts_omitted"] == 8
    assert ledger["parts"][0] == {"span": [0, 3], "kind": "identifier"}


def test_coverage_of_an_empty_answer() -> None:
    memory = new_memory()
    ledger = memory.recall(agent_id=AGENT, query="リリース bug-218", limit=3, trace=True)["trace"]["coverage"]
    assert ledger["records"] == 0
    assert ledger["uncovered"] == list(range(len(ledger["parts"]))) == [0, 1]


def test_coverage_error_when_the_ledger_cannot_be_built(monkeypatch: pytest.MonkeyPatch) -> None:
    memory, _ = coverage_store()
    plain = memory.recall(agent_id=AGENT, query=QUESTION, limit=5)

    def broken(question: Any) -> Any:
        raise RuntimeError("cannot cut the question")

    monkeypatch.setattr(coverage_module, "question_parts", broken)
    traced = memory.recall(agent_id=AGENT, query=QUESTION, limit=5, trace=True)
    assert traced["trace"]["coverage"] == {"error": "RuntimeError"}
    assert "coverage" in traced["trace"]["timing_ms"]
    assert json.dumps({k: v for k, v in traced.items() if k != "trace"}) == json.dumps(plain)

"""reconstruct through the tool: its recall, its envelope, the time cue, the trace, the associations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall import Memory
from cuedrecall.graph.cues import NO_CUES
from tests.conftest import make_settings, open_memory

A = "alice"
TEXTS = [
    ("The CI migration to GitHub Actions finished on Tuesday after two failed runs.", "2026-06-02T10:00:00Z", "bob"),
    ("Deploys now wait for the integration tests of the CI migration to pass.", "2026-06-02T10:00:40Z", "bob"),
    ("My dentist appointment moved to Friday afternoon at the clinic.", "2026-06-05T09:00:00Z", "carol"),
    ("We picked pizza for the team lunch on Wednesday.", "2026-06-03T12:00:00Z", "dave"),
    ("The flaky login test was a timezone bug in the session cookie.", "2026-05-20T08:00:00Z", "erin"),
    ("Our Kansai branch moves to a bigger floor in July.", "2026-04-01T08:00:00Z", "frank"),
]


def turn(text: str, ts: str, who: str, msg_id: str = "") -> dict[str, Any]:
    message = {"content": text, "timestamp": ts, "source": {"type": "User", "id": f"discord:{who}", "name": who}}
    if msg_id:
        message["id"] = msg_id
    return message


@pytest.fixture
def filled(tmp_path: Path) -> Memory:
    memory = open_memory(tmp_path / "m.db")
    for text, ts, who in TEXTS:
        assert memory.store(agent_id=A, message=turn(text, ts, who))["ok"]
    memory.archive_episode(
        agent_id=A,
        summary="The session the CI migration landed and deploys changed",
        history=[{"timestamp": "2026-06-02T09:00:00Z"}, {"timestamp": "2026-06-02T12:00:00Z"}],
    )
    return memory


def ask(memory: Memory, query: str, **arguments: Any) -> dict[str, Any]:
    answer = memory.reconstruct(agent_id=A, query=query, **arguments)
    assert answer.get("ok") is not False, answer
    return answer


def test_the_candidates_are_the_recalls_rows_at_top_k_most_relevant_first(filled: Memory) -> None:
    answer = ask(filled, "what happened with the CI migration?", top_k=5, trace=True)
    recalled = filled.recall(agent_id=A, query="what happened with the CI migration?", limit=5, full_content=True)
    assert answer["trace"]["candidate_refs"] == [m["ref"] for m in reversed(recalled["messages"]) if "ref" in m]
    assert answer["trace"]["recall"]["request"]["limit"] == 5


def test_every_candidate_is_cited_once_by_one_item_and_items_follow_relevance(filled: Memory) -> None:
    answer = ask(filled, "what happened with the CI migration?", trace=True)
    candidates = answer["trace"]["candidate_refs"]
    heads = [item["head_ref"] for item in answer["items"]]
    cited = [claim["ref"] for item in answer["items"] for claim in item["claims"]]
    assert sorted(cited) == sorted(candidates) and len(set(cited)) == len(cited)
    best = [min(candidates.index(c["ref"]) for c in item["claims"]) for item in answer["items"]]
    assert best == sorted(best) and all(head in cited for head in heads)


def test_the_episode_and_the_turns_in_its_span_form_one_item(filled: Memory) -> None:
    answer = ask(filled, "CI migration deploys", trace=True)
    episode_items = [item for item in answer["items"] if any(c["ref"] == "ep:1" for c in item["claims"])]
    assert episode_items, answer["trace"]["candidate_refs"]
    inside = [c for c in episode_items[0]["claims"] if c["ref"].startswith("mem:")]
    assert inside and all(c["why"] in ("cluster:episode", "cluster:adjacent") for c in inside)
    assert episode_items[0]["independence_reason"] in ("episode", "adjacent")


def test_a_count_is_a_ceiling_and_zero_returns_nothing_with_its_reason(filled: Memory) -> None:
    assert ask(filled, "CI migration", count=1)["returned_count"] <= 1
    zero = ask(filled, "CI migration", count=0)
    assert zero["items"] == [] and zero["returned_count"] == 0 and zero["shortfall_reason"] == "count_zero"


def test_a_clamped_count_is_reported_without_a_trace(filled: Memory) -> None:
    answer = ask(filled, "CI migration", count=50)
    assert answer["effective_count"] == 10 and answer["requested_count"] == 50
    assert answer["count_policy"] == {"source": "caller", "clamped": True, "reason": "count_requested"}


def test_without_a_trace_the_envelope_keeps_only_what_moved(filled: Memory) -> None:
    answer = ask(filled, "CI migration")
    assert {"items", "effective_count", "returned_count"} <= set(answer)
    assert not {"count_policy", "budget_policy", "trace", "requested_count"} & set(answer)
    full = ask(filled, "CI migration", trace=True)
    assert {"count_policy", "budget_policy", "bounds", "reconstruction", "used_budget", "trace"} <= set(full)
    assert full["items"] == answer["items"]


def test_a_small_budget_keeps_items_before_excerpts(filled: Memory) -> None:
    wide = ask(filled, "CI migration deploys tests", budget=20000, trace=True)
    narrow = ask(filled, "CI migration deploys tests", budget=1, trace=True)
    assert narrow["budget_policy"]["reason"] == "raised_to_one_excerpt" and narrow["effective_budget"] == 800
    assert narrow["used_budget"] <= 800 or narrow["returned_count"] == 1
    assert [i["head_ref"] for i in narrow["items"]] == [i["head_ref"] for i in wide["items"]][
        : narrow["returned_count"]
    ]


@pytest.mark.parametrize("cue", [{"after": "June", "confidence": "sure"}, {"confidence": "certain"}, "yesterday"])
def test_an_unreadable_time_cue_is_refused_with_no_items(filled: Memory, cue: Any) -> None:
    answer = filled.reconstruct(agent_id=A, query="CI migration", time_cue=cue)
    assert answer["ok"] is False and answer["items"] == [] and answer["returned_count"] == 0 and answer["error"]


def test_the_time_cue_is_applied_to_the_candidate_recall_and_echoed(filled: Memory) -> None:
    cue = {"after": "2026-06-01", "before": "2026-06-08", "confidence": "sure"}
    query = "what happened with the CI migration?"
    answer = ask(filled, query, time_cue=cue, trace=True)
    recalled = filled.recall(agent_id=A, query=query, limit=20, full_content=True, time_cue=cue, trace=True)
    assert answer["time_cue"] == recalled["time_cue"]
    assert answer["trace"]["recall"]["request"]["time_cue"] == recalled["trace"]["request"]["time_cue"]
    assert answer["trace"]["candidate_refs"] == [m["ref"] for m in reversed(recalled["messages"]) if "ref" in m]


def test_no_trace_holds_stored_text(filled: Memory) -> None:
    filled.declare_associations(
        agent_id=A, associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]}
    )
    for query in ("what happened with the CI migration?", "the Osaka office", "dentist"):
        trace = json.dumps(ask(filled, query, trace=True)["trace"], ensure_ascii=False)
        for text, _, _ in TEXTS:
            for start in range(0, len(text) - 24, 8):
                assert text[start : start + 24] not in trace, (query, text[start : start + 24])


def test_a_declared_alias_reaches_a_record_that_uses_the_other_name(filled: Memory) -> None:
    before = ask(filled, "the Osaka office", trace=True)
    declared = filled.declare_associations(
        agent_id=A, associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]}
    )
    assert declared["ok"]
    after = ask(filled, "the Osaka office", trace=True)
    kansai = "mem:6"
    assert kansai not in before["trace"]["candidate_refs"]
    assert kansai in after["trace"]["candidate_refs"]
    assert after["trace"]["cues"]["entities"] == ["Osaka office"] and "Kansai branch" in after["trace"]["cues"]["terms"]


def _keyword_refs(answer: dict[str, Any]) -> set[str]:
    return {hit["ref"] for hit in answer["trace"]["recall"]["arms"]["memory_keyword"]}


def test_a_kanji_name_and_its_katakana_alias_reach_records_in_either_spelling(tmp_path: Path) -> None:
    """The lexical arm reaches both spellings (what the gate then admits is the recall's own business)."""
    memory = open_memory(tmp_path / "j.db")
    memory.store(agent_id=A, message=turn("東京本社の会議は木曜日に移りました。", "2026-06-01T10:00:00Z", "ken"))
    memory.store(
        agent_id=A, message=turn("トウキョウホンシャの新しいオフィスは広いです。", "2026-06-02T10:00:00Z", "yui")
    )
    queries = {"東京本社について": "mem:2", "トウキョウホンシャについて": "mem:1"}
    for query, other_spelling in queries.items():
        assert other_spelling not in _keyword_refs(ask(memory, query, trace=True))
    memory.declare_associations(
        agent_id=A, associations={"entities": [{"name": "東京本社", "aliases": ["トウキョウホンシャ"]}]}
    )
    for query in queries:
        assert _keyword_refs(ask(memory, query, trace=True)) == {"mem:1", "mem:2"}, query


def test_a_two_character_name_reaches_records_the_trigram_index_cannot(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "k.db")
    memory.store(agent_id=A, message=turn("東京の会議は木曜日です。", "2026-06-01T10:00:00Z", "ken"))
    memory.store(agent_id=A, message=turn("トウキョウのオフィスは広いです。", "2026-06-02T10:00:00Z", "yui"))
    memory.declare_associations(agent_id=A, associations={"entities": [{"name": "東京", "aliases": ["トウキョウ"]}]})
    for query in ("トウキョウについて", "東京について"):
        assert _keyword_refs(ask(memory, query, trace=True)) == {"mem:1", "mem:2"}, query


def _without_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    import cuedrecall.handlers.reconstruct as handler
    import cuedrecall.reconstruct.process as process
    from cuedrecall.graph.walk import WalkResult

    monkeypatch.setattr(handler, "query_cues", lambda store, scope, query: NO_CUES)
    monkeypatch.setattr(process, "record_relations", lambda store, scope, refs: [])
    monkeypatch.setattr(
        process, "walk", lambda store, scope, items, **_: WalkResult([[] for _ in items], [False] * len(items), False)
    )


@pytest.mark.parametrize("query", ["what happened with the CI migration?", "the Osaka office", "dentist Friday", ""])
def test_with_an_empty_graph_the_answer_is_byte_identical_to_one_without_the_layer(
    filled: Memory, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    other = "someone-else"
    filled.store(agent_id=other, message=turn("Osaka office notes", "2026-06-01T00:00:00Z", "x"))
    filled.declare_associations(
        agent_id=other, associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]}
    )
    with_layer = json.dumps(ask(filled, query), sort_keys=True)
    _without_layer(monkeypatch)
    assert json.dumps(ask(filled, query), sort_keys=True) == with_layer


def test_association_adds_claims_never_items_and_never_reorders_them(filled: Memory) -> None:
    filled.declare_associations(
        agent_id=A,
        anchor_ref="mem:1",
        associations={
            "entities": [{"name": "GitHub Actions"}],
            "relations": [{"subject": "GitHub Actions", "predicate": "runs", "object": "login tests"}],
        },
    )
    filled.declare_associations(agent_id=A, anchor_ref="mem:5", associations={"entities": [{"name": "login tests"}]})
    walked = ask(filled, "CI migration GitHub Actions", max_hops=2, trace=True)
    still = ask(filled, "CI migration GitHub Actions", max_hops=0, trace=True)
    assert [i["head_ref"] for i in walked["items"]] == [i["head_ref"] for i in still["items"]]
    for with_walk, without in zip(walked["items"], still["items"]):
        assert {c["ref"] for c in without["claims"]} <= {c["ref"] for c in with_walk["claims"]}
    hopped = [c for item in walked["items"] for c in item["claims"] if "hops" in c]
    if "mem:5" not in walked["trace"]["candidate_refs"]:
        assert any(c["ref"] == "mem:5" and c["why"] == "relation:runs" and c["hops"] == 1 for c in hopped), walked


def test_record_relations_bundle_candidates_and_name_roles(filled: Memory) -> None:
    filled.declare_associations(
        agent_id=A, associations={"relations": [{"subject": "mem:2", "predicate": "supports", "object": "mem:1"}]}
    )
    answer = ask(filled, "CI migration GitHub Actions deploys integration tests", trace=True)
    together = [item for item in answer["items"] if {"mem:1", "mem:2"} <= {c["ref"] for c in item["claims"]}]
    candidates = answer["trace"]["candidate_refs"]
    if {"mem:1", "mem:2"} <= set(candidates):
        assert together
        claim = next(c for c in together[0]["claims"] if c["ref"] == "mem:1")
        assert {"ref": "mem:2", "role": "supports"} in claim["roles"]


def test_versions_of_one_message_are_one_item_headed_by_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    memory = open_memory(path)
    memory.store(
        agent_id=A, message=turn("The launch date is March 3 for the rocket.", "2026-01-01T00:00:00Z", "bob", "launch")
    )
    memory.store(
        agent_id=A, message=turn("The launch date is March 9 for the rocket.", "2026-01-05T00:00:00Z", "carol")
    )
    with memory.store_.write() as conn:  # two versions of one message, as an import from elsewhere leaves them
        conn.execute("UPDATE memories SET msg_id = 'launch' WHERE id = 2")
    answer = ask(memory, "launch date rocket", trace=True)
    item = next(i for i in answer["items"] if any(c["ref"] == "mem:1" for c in i["claims"]))
    assert item["head_ref"] == "mem:2" and [c["ref"] for c in item["claims"]] == ["mem:2", "mem:1"]
    assert item["claims"][1]["roles"] == [{"ref": "mem:2", "role": "supersedes"}]


def test_a_long_records_head_quote_is_built_from_its_blocks_and_expands_through_get_contents(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "q.db")
    text = " ".join(f"Line {i} is about the weather on day {i}." for i in range(60)) + " The dentist moved."
    memory.store(agent_id=A, message=turn(text, "2026-06-01T00:00:00Z", "bob"))
    item = ask(memory, "dentist moved", trace=True)["items"][0]
    assert len(item["content"]) <= 800 and item["content_len"] == len(text) and "dentist" in item["content"]
    start, end = item["ranges"][0]
    served = memory.get_contents(agent_id=A, refs=[{"ref": "mem:1", "span": [start, end]}])["items"][0]
    assert served["content"] == text[start:end]


def test_mode_lite_leaves_out_ranges_bounds_and_budget_fields(filled: Memory) -> None:
    lite = ask(filled, "CI migration", mode="lite")
    assert not {"bounds", "effective_budget", "used_budget", "budget_policy"} & set(lite)
    assert all("ranges" not in item for item in lite["items"])
    assert all(("claims" in item) != ("as_of" in item) for item in lite["items"])
    assert filled.reconstruct(agent_id=A, query="x", mode="lite", lite=True)["ok"] is False


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"count": True}, "count"),
        ({"count": -1}, "count"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 101}, "top_k"),
        ({"budget": 0}, "budget"),
        ({"max_hops": "2"}, "max_hops"),
        ({"mode": "huge"}, "mode"),
    ],
)
def test_a_bad_argument_is_refused_naming_it(filled: Memory, arguments: dict[str, Any], named: str) -> None:
    answer = filled.reconstruct(agent_id=A, query="CI", **arguments)
    assert answer["ok"] is False and named in answer["error"] and answer["items"] == []


def test_an_unknown_argument_is_ignored_and_named(filled: Memory) -> None:
    # docs/tools.md: an argument a tool does not declare is ignored and listed, as CPersona's clients expect
    answer = filled.call("reconstruct", {"agent_id": A, "query": "CI", "colour": "red"})
    assert answer.get("ok") is not False and answer["ignored_arguments"] == ["colour"] and answer["items"]


def test_max_hops_over_five_is_lowered_and_bounds_say_the_value_applied(filled: Memory) -> None:
    assert ask(filled, "CI migration", max_hops=9, trace=True)["bounds"]["max_hops"] == 5


def test_the_profile_row_has_no_provenance_and_is_counted(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "p.db", settings=make_settings())
    memory.update_profile(agent_id=A, content="Alice likes hiking and the CI migration")
    for i in range(55):
        memory.store(
            agent_id=A, message=turn(f"note {i} about CI migration step {i}", f"2026-06-01T00:{i:02d}:00Z", f"u{i}")
        )
    answer = ask(memory, "CI migration", trace=True)
    refs = [claim["ref"] for item in answer["items"] for claim in item["claims"]]
    assert all(ref.startswith(("mem:", "ep:")) for ref in refs)
    assert answer["reconstruction"]["excluded_without_provenance"] in (0, 1)


WORDS = ["river", "garden", "budget", "concert", "ticket", "harbor", "lantern", "violin", "orchard", "meadow"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5), min_size=3, max_size=12),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 11)), max_size=12),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=8),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(1, 5),
)
def test_the_walk_never_creates_removes_or_reorders_items_and_only_adds_claims(
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[list[str]],
    mentions: list[tuple[int, int]],
    links: list[tuple[int, int]],
    query: list[str],
    hops: int,
) -> None:
    memory = open_memory(tmp_path_factory.mktemp("walk") / "w.db")
    for i, words in enumerate(texts):
        memory.store(
            agent_id=A, message=turn(" ".join(words) + f" note {i}.", f"2026-06-{i + 1:02d}T10:00:00Z", f"u{i}")
        )
    for entity, record in mentions:  # entity names never occur in the query: the cues stay empty
        if record < len(texts):
            memory.declare_associations(
                agent_id=A, anchor_ref=f"mem:{record + 1}", associations={"entities": [{"name": f"entity{entity}"}]}
            )
    memory.declare_associations(
        agent_id=A,
        associations={
            "relations": [
                {"subject": f"entity{a}", "predicate": "links", "object": f"entity{b}"} for a, b in links if a != b
            ]
        },
    )
    walked = ask(memory, " ".join(query), max_hops=hops)
    still = ask(memory, " ".join(query), max_hops=0)
    assert [i["head_ref"] for i in walked["items"]] == [i["head_ref"] for i in still["items"]]
    for with_walk, without in zip(walked["items"], still["items"]):
        before = [c["ref"] for c in without["claims"]]
        after = [c["ref"] for c in with_walk["claims"]]
        assert set(before) <= set(after)
        assert all(c.get("hops", 1) <= hops for c in with_walk["claims"])
        assert all("hops" in c for c in with_walk["claims"] if c["ref"] not in before)

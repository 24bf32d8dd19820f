"""reconstruct's stages one by one, on hand-made records: bundling, structuring, quotes, allocation, resolution."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.clock import to_epoch
from cuedrecall.config import Settings
from cuedrecall.graph.relations import RecordRelation
from cuedrecall.reconstruct.allocate import allocate
from cuedrecall.reconstruct.bundle import bundle
from cuedrecall.reconstruct.quotes import Blocks, Query, head_quote, passage_quote
from cuedrecall.reconstruct.resolve import resolve_budget, resolve_count
from cuedrecall.reconstruct.rows import Row, revision
from cuedrecall.reconstruct.structure import build_item, choose_head, claims, conflicts, independence_reason
from cuedrecall.store.base import EPISODE, MEMORY, Record
from cuedrecall.text.blocks import divide
from cuedrecall.text.excerpts import SEPARATOR

S = Settings.from_env({})


SESSION = 86_400.0  # the episode window at its default: a day


def record(
    row_id: int,
    text: str = "x",
    *,
    ts: str = "2026-06-01T10:00:00Z",
    kind: str = MEMORY,
    msg_id: str = "",
    who: str = "alice",
    project: str = "",
    channel: str = "",
    start: str | None = None,
    end: str | None = None,
) -> Record:
    source = {"type": "User", "id": f"discord:{who}"} if who else {}
    return Record(
        f"{kind}:{row_id}",
        kind,
        row_id,
        "a",
        project,
        channel,
        text,
        start or ts if kind == EPISODE else ts,
        ts,
        msg_id=msg_id,
        source=source if kind == MEMORY else {},
        start_time=start,
        end_time=end,
        ts_epoch=to_epoch(start or ts if kind == EPISODE else ts),
    )


def rows(*records: Record) -> list[Row]:
    return [Row(r, rank) for rank, r in enumerate(records)]


def refs(clusters: list[list[Row]]) -> list[list[str]]:
    return [[row.ref for row in cluster] for cluster in clusters]


# -- stage 2: bundling ----------------------------------------------------------------------------------------------


def test_versions_of_one_message_in_one_project_bundle_by_msg_id() -> None:
    given_rows = rows(
        record(1, msg_id="m", who="a"),
        record(2, who="b", ts="2026-07-01T00:00:00Z"),
        record(3, msg_id="m", who="c", ts="2026-08-01T00:00:00Z"),
    )
    assert refs(bundle(given_rows, [], 60, SESSION)) == [["mem:1", "mem:3"], ["mem:2"]]
    assert [row.why for row in given_rows] == ["cluster:msg_id", "seed", "cluster:msg_id"]


def test_one_msg_id_in_two_projects_does_not_bundle() -> None:
    given_rows = rows(
        record(1, msg_id="m", who="a"), record(2, msg_id="m", project="p", who="b", ts="2026-07-01T00:00:00Z")
    )
    assert refs(bundle(given_rows, [], 60, SESSION)) == [["mem:1"], ["mem:2"]]


def test_a_memory_inside_an_episodes_span_and_scope_joins_it() -> None:
    episode = record(9, kind=EPISODE, start="2026-06-01T09:00:00Z", end="2026-06-01T11:00:00Z")
    inside, elsewhere = record(1, who="a"), record(2, who="b", channel="other")
    outside = record(3, who="c", ts="2026-06-02T10:00:00Z")
    assert refs(bundle(rows(inside, outside, episode, elsewhere), [], 60, SESSION)) == [
        ["mem:1", "ep:9"],
        ["mem:3"],
        ["mem:2"],
    ]


def test_an_episode_longer_than_a_session_bundles_nothing_by_its_span() -> None:
    """A month's digest holds a job offer and a flat viewing: lying in its span does not make them one thing."""
    month = record(9, kind=EPISODE, start="2026-06-01T00:00:00Z", end="2026-06-30T00:00:00Z")
    offer, viewing = record(1, who="a", ts="2026-06-03T10:00:00Z"), record(2, who="b", ts="2026-06-20T10:00:00Z")
    assert refs(bundle(rows(offer, viewing, month), [], 60, SESSION)) == [["mem:1"], ["mem:2"], ["ep:9"]]
    # the same records under an episode of one session's span are one item
    day = record(9, kind=EPISODE, start="2026-06-03T09:00:00Z", end="2026-06-03T11:00:00Z")
    assert refs(bundle(rows(offer, viewing, day), [], 60, SESSION)) == [["mem:1", "ep:9"], ["mem:2"]]


def test_one_sources_turns_within_the_window_of_the_bursts_first_row_bundle() -> None:
    first = record(1, ts="2026-06-01T10:00:00Z")
    near = record(2, ts="2026-06-01T10:00:50Z")
    past_first = record(3, ts="2026-06-01T10:01:10Z")  # 20 s after the second, 70 s after the burst's first
    other_source = record(4, ts="2026-06-01T10:00:10Z", who="bob")
    clusters = bundle(rows(past_first, other_source, first, near), [], 60, SESSION)
    assert refs(clusters) == [["mem:3"], ["mem:4"], ["mem:1", "mem:2"]]


def test_a_source_alone_never_bundles() -> None:
    assert len(bundle(rows(record(1), record(2, ts="2026-06-09T10:00:00Z")), [], 60, SESSION)) == 2


def test_a_declared_record_relation_between_candidates_bundles_with_its_predicate() -> None:
    given_rows = rows(record(1, who="a"), record(2, who="b", ts="2026-07-01T00:00:00Z"))
    relation = RecordRelation(1, "mem:2", "corrects", "mem:1", "2026-07-02T00:00:00Z")
    assert refs(bundle(given_rows, [relation], 60, SESSION)) == [["mem:1", "mem:2"]]
    assert [row.why for row in given_rows] == ["relation:corrects"] * 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 400), st.sampled_from(["", "m1", "m2"])), min_size=1, max_size=12
    )
)
def test_bundling_partitions_the_candidates_and_orders_clusters_by_their_best_row(spec: list[Any]) -> None:
    given_rows = rows(
        *(
            record(i + 1, who=f"u{who}", msg_id=msg, ts=f"2026-06-01T10:{sec // 60:02d}:{sec % 60:02d}Z")
            for i, (who, sec, msg) in enumerate(spec)
        )
    )
    clusters = bundle(given_rows, [], 60, SESSION)
    flat = [row.ref for cluster in clusters for row in cluster]
    assert sorted(flat) == sorted(row.ref for row in given_rows) and len(flat) == len(set(flat))
    best = [min(row.rank for row in cluster) for cluster in clusters]
    assert best == sorted(best)
    assert all(row.why == "seed" for cluster in clusters if len(cluster) == 1 for row in cluster)


# -- stage 4: structure ---------------------------------------------------------------------------------------------


def test_the_head_is_the_newest_version_of_the_most_relevant_record() -> None:
    old = Row(record(1, msg_id="m", ts="2026-06-01T10:00:00Z"), 0)
    new = Row(record(2, msg_id="m", ts="2026-06-03T10:00:00Z"), 2)
    other = Row(record(3, ts="2026-06-05T10:00:00Z"), 1)
    assert choose_head([old, other, new]) is new
    best_without_versions = Row(record(4, ts="2026-05-01T10:00:00Z"), 0)
    assert choose_head([best_without_versions, Row(old.record, 1), Row(new.record, 2)]) is best_without_versions


def test_claims_are_newest_first_with_supersedes_and_supports_roles() -> None:
    episode = Row(record(9, kind=EPISODE, start="2026-06-01T00:00:00Z", end="2026-06-30T00:00:00Z"), 3)
    old = Row(record(1, msg_id="m", ts="2026-06-01T10:00:00Z"), 0)
    new = Row(record(2, msg_id="m", ts="2026-06-03T10:00:00Z"), 1)
    bundle([old, new, episode], [], 60, SESSION)
    item = build_item([old, new, episode], [], 40, held=False, hop_bound=False)
    listed = claims(item, [])
    assert [c["ref"] for c in listed] == ["mem:2", "mem:1", "ep:9"]
    assert {"ref": "mem:2", "role": "supersedes"} in listed[1]["roles"]
    assert {"ref": "ep:9", "role": "supports"} in listed[0]["roles"]
    assert independence_reason(item) == "msg_id"


def test_a_declared_role_predicate_names_the_subjects_role_on_the_object() -> None:
    a, b = Row(record(1), 0), Row(record(2, who="b", ts="2026-07-01T00:00:00Z"), 1)
    relation = RecordRelation(1, "mem:2", "contradicts", "mem:1", "2026-07-02T00:00:00Z")
    item = build_item([a, b], [], 40, held=False, hop_bound=False)
    by_ref = {c["ref"]: c for c in claims(item, [relation])}
    assert by_ref["mem:1"]["roles"] == [{"ref": "mem:2", "role": "contradicts"}]
    assert "roles" not in by_ref["mem:2"]


def test_versions_with_one_timestamp_are_reported_as_an_undecided_conflict() -> None:
    a, b = Row(record(1, msg_id="m"), 0), Row(record(2, msg_id="m"), 1)
    item = build_item([a, b], [], 40, held=False, hop_bound=False)
    assert conflicts(item) == [{"why": "same_msg_id", "undecided": ["mem:1", "mem:2"], "msg_id": "m"}]
    assert all("roles" not in claim for claim in claims(item, []))  # neither replaces the other


def test_versions_at_two_times_are_a_conflict_with_the_newest_current() -> None:
    old, new = Row(record(1, msg_id="m"), 0), Row(record(2, msg_id="m", ts="2026-06-02T10:00:00Z"), 1)
    item = build_item([old, new], [], 40, held=False, hop_bound=False)
    assert conflicts(item) == [{"why": "same_msg_id", "current": "mem:2", "stale": ["mem:1"], "msg_id": "m"}]


def test_max_evidence_keeps_the_head_then_members_then_walked_rows_and_counts_the_rest() -> None:
    members = [Row(record(i), i) for i in range(1, 4)]
    walked = [Row(record(10), 9, why="relation:knows", hops=1)]
    item = build_item(members, walked, 2, held=False, hop_bound=False)
    assert [row.ref for row in item.retained] == ["mem:1", "mem:2"] and item.claims_omitted == 2


# -- quotes ---------------------------------------------------------------------------------------------------------

LONG = " ".join(f"Sentence {i} talks about topic {i}." for i in range(80)) + " The dentist moved to Friday."


def lexical(text: str) -> Blocks:
    return Blocks(divide(text), "lexical")


def test_a_text_within_the_cap_is_quoted_whole() -> None:
    quote = head_quote("mem:1", "short text.", lexical("short text."), Query("text", None), 800)
    assert quote == {"content": "short text.", "quote_basis": "whole", "ranges": [[0, 11]]}


def test_a_long_head_quote_fits_the_cap_holds_the_best_block_and_names_its_ranges() -> None:
    quote = head_quote("mem:1", LONG, lexical(LONG), Query("when is the dentist?", None), 800)
    assert len(quote["content"]) <= 800 and "dentist moved to Friday" in quote["content"]
    assert quote["quote_basis"] == "lexical" and quote["content_truncated"] and quote["content_len"] == len(LONG)
    pieces = [LONG[start:end].strip() for start, end in quote["ranges"]]
    assert quote["content"] == SEPARATOR.join(pieces)


def test_a_one_block_record_over_the_cap_quotes_its_start_and_offers_the_rest() -> None:
    text = "word " * 300
    quote = head_quote(
        "mem:1", text, Blocks(divide(text)[:1] if len(divide(text)) == 1 else [], "lexical"), Query("word", None), 800
    )
    assert quote["quote_basis"] == "start" and quote["content"] == text[:800]
    assert quote["expand"] == {"ref": "mem:1", "span": [0, len(text)]}


def test_a_passage_is_its_best_blocks_context_within_the_preview_with_the_block_named() -> None:
    quote = passage_quote("mem:1", LONG, lexical(LONG), Query("dentist", None), 500)
    assert "dentist" in quote["content"] and len(quote["content"]) <= 500
    assert quote["block"]["of"] == len(divide(LONG)) and quote["content_len"] == len(LONG)
    start, end = quote["block"]["span"]
    assert LONG[start:end] == quote["content"]


def test_a_passage_over_the_preview_is_cut_and_offers_its_block_at_this_revision() -> None:
    text = "a" * 5 + ". " + "b" * 700 + " dentist " + "c" * 10
    quote = passage_quote("mem:1", text, lexical(text), Query("dentist", None), 500)
    assert len(quote["content"]) == 500 and quote["context_incomplete"] and quote["content_truncated"]
    assert quote["expand"]["revision"] == revision(text)


# -- allocation and resolution ---------------------------------------------------------------------------------------


def test_breadth_before_depth_every_head_before_any_excerpt() -> None:
    allocation = allocate([100, 100, 100], [[50, 50], [50], []], 350)
    assert allocation.items == 3 and allocation.excerpts == [1, 0, 0] and allocation.used == 350


def test_the_first_head_is_always_carried_and_a_head_that_does_not_fit_drops_its_item() -> None:
    allocation = allocate([900, 100], [[10], [10]], 800)
    assert allocation.items == 1 and allocation.head_cut and allocation.excerpts == [0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 900), min_size=1, max_size=8), st.data(), st.integers(1, 6000), st.integers(0, 3000))
def test_raising_the_budget_never_removes_anything(heads: list[int], data: Any, budget: int, more: int) -> None:
    excerpts = [data.draw(st.lists(st.integers(1, 500), max_size=4)) for _ in heads]
    low, high = allocate(heads, excerpts, budget), allocate(heads, excerpts, budget + more)
    assert high.items >= low.items
    assert all(hi >= lo for hi, lo in zip(high.excerpts, low.excerpts))
    assert low.used <= budget or (low.items == 1 and low.excerpts == [0])


def test_a_count_over_the_maximum_is_lowered_and_the_policy_says_so() -> None:
    resolved = resolve_count(S, 25)
    assert resolved.effective == 10 and resolved.policy == {
        "source": "caller",
        "clamped": True,
        "reason": "count_requested",
    }
    assert resolve_count(Settings.from_env({}, reconstruct_forced_count=3), 7).policy["source"] == "operator_forced"


def test_a_defaulted_budget_holds_a_head_quote_per_item_and_a_tiny_one_is_raised() -> None:
    assert resolve_budget(S, None, 10).effective == 8000
    assert resolve_budget(S, None, 2).policy["reason"] == "budget_omitted"
    raised = resolve_budget(S, 10, 10)
    assert raised.effective == 800 and raised.policy["reason"] == "raised_to_one_excerpt"
    assert resolve_budget(S, 10**6, 10).effective == 20000

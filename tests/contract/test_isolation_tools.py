"""Isolation through every tool: random calls as several agents never read or change what is not theirs.

tests/contract/test_isolation.py proves recall and the store's arms keep inside the read scope; this file drives the
other tools too (reconstruct, get_contents, traverse, list, export, delete, update, lock, merge, associations,
the repairs) through ``Memory.call``. The world, the calls and the rules are benchmarks/isolation_fuzz.py's
(its docstring states them); hypothesis draws the calls here, a few hundred a run, and the benchmark makes
10,000 of them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import isolation_fuzz as fuzz
from benchmarks import pg
from benchmarks.hostile import TABLES
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.sqlite.grown_stats import GrownStats
from tests.conftest import visible

STEPS = 25  # calls per drawn world


class DrawChooser:
    """The fuzzer's choices drawn by hypothesis, so a failing run shrinks to a short sequence of calls."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def pick(self, items: Sequence[Any]) -> Any:
        return self.data.draw(st.sampled_from(list(items)))

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(min_value=low, max_value=high))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data(), seed=st.integers(min_value=0, max_value=10_000))
def test_no_tool_call_reads_or_changes_another_agents_rows_or_rows_outside_the_scope_asked_for(
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    seed: int,
) -> None:
    world = fuzz.open_world(tmp_path_factory.mktemp("iso-tools"), seed)
    chooser = DrawChooser(data)
    try:
        for _ in range(STEPS):
            outcome = fuzz.step(world, chooser)
            assert outcome.problems == []
    finally:
        world.memory.close()


def test_a_nul_in_any_string_is_refused_by_name_and_a_flood_of_scopes_stays_bounded(tmp_path: Path) -> None:
    """The fuzzer's hostile calls: a NUL put into one string of any call, recalls naming scopes never seen."""
    world = fuzz.open_world(tmp_path, 7)
    world.memory.store_._grown = GrownStats(limit=8)  # a small bound, so a few recalls pass it
    chooser = fuzz.RandomChooser(random.Random(7))
    try:
        for make in (fuzz.nul_call, fuzz.flood_call) * 20:
            outcome = fuzz.step(world, chooser, make)
            assert outcome.problems == []
            assert outcome.call.nul is None or outcome.refused
        assert fuzz._scope_stats(world) == (8, 8)
    finally:
        world.memory.close()


owners = st.builds(
    fuzz.Owner,
    kind=st.sampled_from(("memory", "episode")),
    agent_id=st.sampled_from(fuzz.AGENTS),
    project_id=st.sampled_from(fuzz.PROJECTS),
    channel=st.sampled_from(fuzz.CHANNELS),
    source_id=st.sampled_from(fuzz.SOURCES),
)
scopes = st.builds(
    fuzz.Scope,
    agent_id=st.sampled_from((*fuzz.AGENTS, "agent-unknown")),
    project_id=st.sampled_from(fuzz.READ_PROJECTS),
    channel=st.sampled_from(fuzz.READ_CHANNELS),
    source_id=st.sampled_from((*fuzz.READ_SOURCES, *fuzz.SOURCES)),
)


@given(owner=owners, scope=scopes)
def test_the_fuzzers_read_semantics_are_the_ones_the_store_tests_hold(owner: fuzz.Owner, scope: fuzz.Scope) -> None:
    """benchmarks.isolation_fuzz.in_scope (written apart, so the benchmark stands alone) agrees with
    conftest.visible, the statement tests/contract/test_isolation.py checks every arm against."""
    row = type(
        "Row",
        (),
        {
            "agent_id": owner.agent_id,
            "project_id": owner.project_id,
            "channel": owner.channel,
            "source_id": owner.source_id,
            "kind": MEMORY if owner.kind == "memory" else EPISODE,
        },
    )
    assert fuzz.in_scope(owner, scope) == visible(
        row, Scope(scope.agent_id, scope.project_id, scope.channel, scope.source_id)
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Iterator[fuzz.World]:
    world = fuzz.open_world(tmp_path_factory.mktemp("iso-rules"), 5)
    yield world
    world.memory.close()


def _first(world: fuzz.World, agent: str, kind: str = "memory") -> str:
    return next(ref for ref, owner in sorted(world.refs.items()) if owner.agent_id == agent and owner.kind == kind)


def _token_of(world: fuzz.World, ref: str) -> str:
    """A token of the ref's text (or of a row on the same axes: the same owner to the rules)."""
    prefix = "r" if ref.startswith("mem:") else "e"
    return next(t for t, owners in world.tokens.items() if world.refs[ref] in owners and t.startswith(prefix))


def test_the_rules_catch_a_leak_of_a_ref_or_a_text_in_any_answer(world: fuzz.World) -> None:
    """The property above is not vacuous: an answer naming another agent's ref, or showing its text anywhere
    (an exported file included), breaks the rules; the caller's own rows do not."""
    mine, theirs = _first(world, "agent-1"), _first(world, "agent-2")
    call = fuzz.Call("recall", {"agent_id": "agent-1", "query": "harbour"}, "agent-1", scope=fuzz.Scope("agent-1"))
    own = {"messages": [{"ref": mine, "content": f"a {_token_of(world, mine)}"}]}
    assert fuzz.rule_breaks(world, call, own, json.dumps(own), {}, {}) == []
    for shown in (f"nested {{'x': ['{theirs}']}}", f"a file line: {_token_of(world, theirs)}"):
        assert fuzz.rule_breaks(world, call, {}, shown, {}, {}) != []
    narrow = fuzz.Call("recall", {"agent_id": "agent-1"}, "agent-1", scope=fuzz.Scope("agent-1", "", "c9", ""))
    outside = next(r for r, o in world.refs.items() if o.agent_id == "agent-1" and o.project_id == "p1")
    assert fuzz.rule_breaks(world, narrow, {}, outside, {}, {}) != []  # the caller's own row, another project


def test_the_rules_catch_a_write_on_another_agents_rows_and_a_refusal_that_wrote(world: fuzz.World) -> None:
    theirs = _first(world, "agent-2")
    delete = fuzz.Call(
        "delete_memory",
        {"memory_id": int(theirs[4:]), "agent_id": "agent-1"},
        "agent-1",
        frozenset({"agent-1"}),
        fuzz.Scope("agent-1"),
        theirs,
        "agent-2",
    )
    before, after = {"agent-2": {"memories": [1]}}, {"agent-2": {"memories": []}}
    breaks = fuzz.rule_breaks(world, delete, {"ok": True}, "", before, after)
    assert any("changed the rows of ['agent-2']" in b for b in breaks)
    assert any("was not refused" in b for b in breaks)
    refused = fuzz.rule_breaks(world, delete, {"ok": False, "error": "x"}, "", before, after)
    assert any("refused (x) yet changed" in b for b in refused)


def test_the_rules_want_another_agents_refs_reported_missing(world: fuzz.World) -> None:
    mine, theirs = _first(world, "agent-1"), _first(world, "agent-2", "episode")
    call = fuzz.Call(
        "get_contents",
        {"agent_id": "agent-1", "refs": [mine, theirs, "mem:999999"]},
        "agent-1",
        scope=fuzz.Scope("agent-1"),
    )
    answer = world.memory.call(call.tool, call.args)
    assert answer["missing"] == [theirs, "mem:999999"]
    assert fuzz.rule_breaks(world, call, answer, json.dumps(answer), {}, {}) == []
    assert fuzz.rule_breaks(world, call, {**answer, "missing": ["mem:999999"]}, "", {}, {}) != []


# -- leaks the fuzzer found, each fixed in the module that leaked --------------------------------------------------


def test_traverse_names_a_relations_anchor_only_when_the_scope_reads_that_record(tmp_path: Path) -> None:
    """A relation is readable in its project and channel; the record it was declared in may lie elsewhere, or
    carry a source the read leaves out. traverse named it anyway (found by benchmarks/isolation_fuzz.py):
    now the anchor is named only when the scope may read the record (graph/traverse.py)."""
    from tests.conftest import open_memory

    with open_memory(tmp_path / "anchor.db") as memory:
        anchor = memory.store(
            agent_id="a",
            content="Alice knows Bob",
            project_id="p2",
            channel="c2",
            source={"type": "User", "id": "discord:alice"},
        )["ref"]
        episode = memory.archive_episode(agent_id="a", summary="a talk with Carol")["ref"]
        memory.declare_associations(
            agent_id="a",
            anchor_ref=anchor,
            associations={"relations": [{"subject": "Alice", "predicate": "knows", "object": "Bob"}]},
        )
        memory.declare_associations(
            agent_id="a",
            anchor_ref=episode,
            associations={"relations": [{"subject": "Alice", "predicate": "met", "object": "Carol"}]},
        )

        def anchors(**scope: Any) -> dict[str, str | None]:
            answer = memory.traverse(agent_id="a", entity="Alice", **scope)
            return {r["predicate"]: r.get("anchor_ref") for r in answer["relations"]}

        assert anchors() == {"knows": anchor, "met": episode}
        assert anchors(project_id="p2", channel="c2", source_id="discord:") == {"knows": anchor, "met": episode}
        assert anchors(project_id="p1") == {"knows": None, "met": episode}  # the anchor lies in p2
        assert anchors(channel="c1") == {"knows": None, "met": episode}  # ... and in channel c2
        assert anchors(source_id="slack:") == {"knows": None, "met": None}  # another source; episodes hidden
        assert anchors(source_id="discord:alice") == {"knows": anchor, "met": None}
        assert anchors(channel="c2", source_id="discord:alice") == {"knows": anchor, "met": episode}


records = st.builds(
    lambda kind, owner: type(
        "Rec",
        (),
        {
            "kind": kind,
            "agent_id": owner.agent_id,
            "project_id": owner.project_id,
            "channel": owner.channel,
            "source": {"id": owner.source_id} if owner.source_id else {},
            "source_id": owner.source_id,
        },
    )(),
    kind=st.sampled_from((MEMORY, EPISODE)),
    owner=owners,
)


@given(record=records, scope=scopes)
def test_scope_reads_one_record_as_every_arm_reads_the_scope(record: Any, scope: fuzz.Scope) -> None:
    """Scope.reads (the rule in plain Python, for the few refs an answer names beside the arms' hits) is
    conftest.visible, the statement every arm is checked against."""
    full = Scope(scope.agent_id, scope.project_id, scope.channel, scope.source_id)
    assert full.reads(record) == visible(record, full)


@pytest.mark.skipif(
    not pg.available(), reason="pgserver is not installed (pip install -c constraints.txt '.[test,postgres]')"
)
def test_the_postgres_backend_option_runs_the_isolation_fuzz_over_postgresql(tmp_path: Path) -> None:
    """``--backend postgres``: the world in a private PostgreSQL server, a few dozen calls checked by the same rules
    (the rows read through the store's read methods), the results file's SQLite section kept."""
    out = tmp_path / "isolation.md"
    out.write_text("# old\n\n<!-- sqlite -->\n## SQLite\n\nkept\n<!-- /sqlite -->\n")
    assert fuzz.main(["--backend", "postgres", "--calls", "40", "--out", str(out)]) == 0
    text = out.read_text()
    assert "## SQLite\n\nkept" in text and "## PostgreSQL" in text and "- calls: 40\n- rule breaks: 0" in text


def test_the_snapshot_sees_a_change_in_every_table_it_reads(tmp_path: Path) -> None:
    """The backend-neutral snapshot is not blind: a write of each kind changes its agent's rows."""
    world = fuzz.open_world(tmp_path, 3)
    try:
        m = world.memory
        for write in (
            lambda: m.store(agent_id="agent-2", content="one more"),
            lambda: m.update_profile(agent_id="agent-2", profile="another"),
            lambda: m.call("set_recall_precision", {"agent_id": "agent-2", "precision": "strict"}),
            lambda: m.call(
                "declare_associations",
                {
                    "agent_id": "agent-2",
                    "associations": {
                        "entities": [{"name": "Quay", "aliases": ["Pier"]}],
                        "relations": [{"subject": "Quay", "predicate": "near", "object": "Alice"}],
                    },
                },
            ),
        ):
            before = world.snapshot()
            write()
            after = world.snapshot()
            assert [a for a in set(before) | set(after) if before.get(a) != after.get(a)] == ["agent-2"]
        tables = world.snapshot()["agent-2"]
        assert all(tables[t] for t in TABLES if t != "calibration")
    finally:
        world.memory.close()

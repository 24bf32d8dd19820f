"""keyword-budget-v2's joined pass on both backends: a word the first pass leaves out for its rows still ranks.

docs/recall-process.md#the-full-text-query. The budgets are shrunk so a store of a
few dozen rows is past them, as a store grown with other text is past the shipped
ones: the name fits the first pass, the ordinary word ("degree") does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cuedrecall.store import term_counts
from tests.conftest import make_settings, open_memory

A = "agent-a"
DEPTH = 10
NAME_ONLY = 20  # short rows that hold the name alone: bm25 on the name puts each above the longer row holding both
WORD_ONLY = 30  # rows that hold the ordinary word alone


@pytest.fixture
def shrunk_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_counts, "FIRST_PASS_ROWS", 40)  # the name's 21 rows fit; with the word's 31 they do not
    monkeypatch.setattr(term_counts, "FALLBACK_ROWS", 200)
    monkeypatch.setattr(term_counts, "SCOPE_SCAN_ROWS", 0)  # no scope is scanned in place of the fallback


def _store(tmp_path: Path, coverage: bool = False):  # type: ignore[no-untyped-def]
    settings = make_settings(
        word_arm_enabled=True, lexical_coverage_enabled=coverage, recall_depth_floor=DEPTH, fused_gate_enabled=False
    )
    memory = open_memory(tmp_path / "budget.db", settings=settings)
    for i in range(NAME_ONLY):
        memory.store(agent_id=A, content=f"Quincy waved {i}")
    for i in range(WORD_ONLY):
        memory.store(agent_id=A, content=f"It is {i} degrees in the greenhouse today")
    both = memory.store(agent_id=A, content="After four long years of evening classes Quincy finally has the degree")
    return memory, both["ref"]


@pytest.mark.usefixtures("shrunk_budget")
@pytest.mark.parametrize("coverage", [False, True], ids=["arm order", "lexical coverage (shipped)"])
def test_the_row_holding_the_name_and_the_left_out_word_leads_both_lexical_arms(tmp_path: Path, coverage: bool) -> None:
    """With lexical coverage on (the default) the trace still names each arm's plan and pass."""
    memory, both = _store(tmp_path, coverage)
    try:
        trace = memory.recall(agent_id=A, query="Quincy degree", trace=True)["trace"]
        for arm in ("memory_keyword", "memory_words"):
            plan = trace["keyword_terms"][arm]
            assert plan["first"] == [0] and plan["fallback"] == [0, 1]  # the budget took the name, not the word
            assert plan["ranked_on"] == "joined"
            refs = [hit["ref"] for hit in trace["arms"][arm]]
            assert refs[0] == both and len(refs) == DEPTH
    finally:
        memory.close()


@pytest.mark.usefixtures("shrunk_budget")
def test_the_first_pass_alone_would_have_cut_that_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case the joined pass exists for: without it the name's short rows fill the depth."""
    memory, both = _store(tmp_path)
    original = term_counts.run_plan

    def first_pass_only(plan, run, depth, *, key):  # type: ignore[no-untyped-def]
        return original(plan, lambda terms, also: [] if also else run(terms, also), depth, key=key)

    monkeypatch.setattr("cuedrecall.store.sqlite.arms.run_plan", first_pass_only)
    monkeypatch.setattr("cuedrecall.store.postgres.arms.run_plan", first_pass_only)
    try:
        trace = memory.recall(agent_id=A, query="Quincy degree", trace=True)["trace"]
        for arm in ("memory_keyword", "memory_words"):
            assert trace["keyword_terms"][arm]["ranked_on"] == "first"
            assert both not in [hit["ref"] for hit in trace["arms"][arm]]
    finally:
        memory.close()

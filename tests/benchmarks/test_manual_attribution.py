"""The trace reproduces a manual attribution on a real store (docs/trace.md#what-makes-the-trace-ready).

tests/fixtures/manual_attribution.json holds failed LoCoMo recalls (server defaults), each looked at by
hand and attributed to the stage that lost the evidence, with the reasoning written out, and the trace of
the recall (refs, ranks, scores; no dataset text). Here the confirmation tool reads each stored trace with
its evidence refs and must name the hand-attributed stage and code, for every case. The traces are
regenerated with ``python -m benchmarks.manual_attribution --data <LoCoMo JSON>``; nothing here needs the
data.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from benchmarks import manual_attribution as ma
from benchmarks.recall_trace_confirm import attribute, confirm
from cuedrecall.recall.trace_schema import SECTIONS

FIXTURE = json.loads(ma.FIXTURE.read_text(encoding="utf-8"))
CASES = {case["qid"]: case for case in FIXTURE["cases"]}
TEXT_KEYS = {"content", "text", "summary", "query", "question", "answer", "keywords"}


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_the_fixture_holds_enough_cases_over_more_than_one_stage() -> None:
    assert 8 <= len(CASES) <= 15
    assert len(CASES) == len(FIXTURE["cases"])  # each question once
    assert len({case["stage"] for case in CASES.values()}) >= 2
    assert len({case["code"] for case in CASES.values()}) >= 2
    assert FIXTURE["command"].startswith("python -m benchmarks.manual_attribution --data")


@pytest.mark.parametrize("qid", list(CASES))
def test_the_confirmation_tool_names_the_hand_attributed_stage(qid: str) -> None:
    case = CASES[qid]
    trace, gold = case["trace"], case["gold"]
    assert confirm(trace, gold) == case["code"], case["reasoning"]
    found = attribute(trace, gold)
    assert set(case["stages"]) == set(gold)  # every evidence ref attributed by hand
    for ref, stage in case["stages"].items():
        assert found[ref]["stage"] == stage, (ref, found[ref]["why"])
    # the case's stage is the stage of the evidence that decides the code, and means that code
    deciding = {a["stage"] for a in found.values() if a["code"] == case["code"]}
    assert case["stage"] in deciding
    assert ma.STAGE_CODES[case["stage"]] == case["code"]
    assert ma.disagreements(case) == []


@pytest.mark.parametrize("qid", list(CASES))
def test_a_case_is_written_by_hand_and_holds_no_dataset_text(qid: str) -> None:
    case = CASES[qid]
    assert case["qid"].startswith(case["trace"]["scope"]["agent_id"] + ":")
    assert len(case["gold"]) <= len(case["evidence"]) and case["gold"]
    reasoning = case["reasoning"]
    assert len(reasoning) > 80 and not any(mark in reasoning for mark in '"“”')  # own words, nothing quoted
    assert case["code"] in reasoning
    if len(case["gold"]) > 1:
        assert all(ref in reasoning for ref in case["gold"])  # several evidence turns: each one discussed
    assert set(case["trace"]) <= set(SECTIONS)
    assert not _keys(case["trace"]) & TEXT_KEYS


def test_disagreements_name_what_the_tool_reads_otherwise() -> None:
    case = copy.deepcopy(next(c for c in CASES.values() if c["stage"] == "gate"))
    ref = next(iter(case["stages"]))
    case["code"], case["stage"], case["stages"][ref] = "RANKING_MISS", "count", "count"
    problems = ma.disagreements(case)
    assert any(p.startswith("code: the tool says FILTER_DROP") for p in problems)
    assert any(p.startswith("stage:") for p in problems)
    assert any(p.startswith(f"{ref}: the tool says gate") for p in problems)


def test_leaked_text_finds_a_run_of_words_in_a_trace() -> None:
    trace = {"arms": {"vector_near": [{"ref": "mem:1", "rank": 0, "raw": 0.5}]}, "note": "the red bike shed"}
    assert ma.leaked_text(trace, ["Was the red bike shed painted?"]) == ["the red bike shed"]
    assert ma.leaked_text(trace, ["the red car shed"]) == []
    assert ma.leaked_text(CASES[next(iter(CASES))]["trace"], ["what did she take away from the book"]) == []


def test_the_fixture_is_written_as_it_is_read() -> None:
    assert json.loads(ma.dumps(FIXTURE)) == FIXTURE
    assert ma.dumps(FIXTURE) == ma.FIXTURE.read_text(encoding="utf-8")

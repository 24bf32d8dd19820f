"""benchmarks/recall_trace_confirm.py: confirm() on hand-made traces for every code, attribute(), and the CLI."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchmarks.recall_trace_confirm import (
    AGENT_MISUSE,
    CANDIDATE_MISS,
    CODES,
    FILTER_DROP,
    RANKING_MISS,
    RECONSTRUCTION_LOSS,
    UNATTRIBUTED,
    attribute,
    confirm,
    evaluate,
    main,
)
from tests.conftest import REPO_ROOT

ROOT = REPO_ROOT


def hit(ref: str, rank: int, raw: float | None = 0.5) -> dict[str, Any]:
    return {"ref": ref, "rank": rank, "raw": raw}


def decision(ref: str, passed: bool, score: float = 0.5, threshold: float = 0.4) -> dict[str, Any]:
    d = {
        "ref": ref,
        "signal": "cosine",
        "score": score,
        "threshold": threshold,
        "origin": "heuristic",
        "passed": passed,
    }
    if not passed:
        d["reason"] = "below_gate"
    return d


def make_trace(
    arms: dict[str, list[str]] | None = None,
    passed: list[str] = (),  # type: ignore[assignment]
    refused: list[str] = (),  # type: ignore[assignment]
    autocut: list[str] | None = None,
    before_cut: list[str] = (),  # type: ignore[assignment]
    limit: int | None = 2,
    reservation: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    """A trace in this project's shape, with only what confirm() reads filled in."""
    before = list(before_cut)
    return {
        "trace_version": 1,
        "arms": {name: [hit(ref, rank) for rank, ref in enumerate(refs)] for name, refs in (arms or {}).items()},
        "gate": {
            "decisions": [decision(r, True) for r in passed] + [decision(r, False, 0.1) for r in refused],
            "calibrated": {},
            "heuristic_min": 0.4,
            "pool": 10,
            "gate_fallback": False,
        },
        "autocut": {"fired": True, "at": 1, "dropped": autocut} if autocut else {"fired": False},
        "order": {"before_cut": before, "limit": limit, "cut_by_count": before[limit:] if limit is not None else []},
        "reservation": [{"ref": ref, "kind": kind} for ref, kind in reservation],
    }


# A trace with every fate: mem:1, mem:2 returned; mem:3 cut by count; mem:4 refused by the gate;
# mem:5 dropped by autocut; mem:6 only on the cue arm (no seat); mem:7 seated by the cue;
# mem:8 on an arm but neither judged nor ordered (excluded); mem:9 on no arm.
FULL = make_trace(
    arms={
        "vector_near": ["mem:1", "mem:2", "mem:3", "mem:4", "mem:5"],
        "memory_keyword": ["mem:8", "mem:1"],
        "vector_far": [],
        "cue": ["mem:7", "mem:6", "mem:1"],
    },
    passed=["mem:1", "mem:2", "mem:3", "mem:5"],
    refused=["mem:4"],
    autocut=["mem:5"],
    before_cut=["mem:1", "mem:2", "mem:3"],
    limit=2,
    reservation=[("mem:7", "cue")],
)


@pytest.mark.parametrize(
    ("gold", "code"),
    [
        ([], UNATTRIBUTED),
        (["mem:9"], CANDIDATE_MISS),
        (["mem:4"], FILTER_DROP),
        (["mem:5"], FILTER_DROP),
        (["mem:3"], RANKING_MISS),
        (["mem:6"], RANKING_MISS),
        (["mem:8"], UNATTRIBUTED),
        (["mem:1"], None),
        (["mem:7"], None),
        (["mem:9", "mem:2"], None),  # one piece of evidence returned is enough
        (["mem:9", "mem:4"], FILTER_DROP),
        (["mem:4", "mem:3"], RANKING_MISS),  # not all judged gold refs were refused
        (["mem:5", "mem:4"], FILTER_DROP),  # refused, or passed and all autocut
        (["mem:5", "mem:3"], RANKING_MISS),  # a passed gold ref survived autocut
        (["mem:8", "mem:6"], RANKING_MISS),
    ],
)
def test_codes_on_a_trace_with_every_fate(gold: list[str], code: str | None) -> None:
    assert confirm(FULL, gold) == code


def test_no_gold_is_unattributed_even_for_an_empty_trace() -> None:
    assert confirm({}, []) == UNATTRIBUTED
    assert confirm(make_trace(), None) == UNATTRIBUTED  # type: ignore[arg-type]


def test_an_empty_trace_is_a_candidate_miss() -> None:
    assert confirm({"trace_version": 1}, ["mem:1"]) == CANDIDATE_MISS
    assert confirm(make_trace(arms={"vector_near": []}), ["mem:1"]) == CANDIDATE_MISS


@pytest.mark.parametrize("arm", ["block", "far", "propagation", "cue", "cue_stage_1", "cue_stage_2"])
def test_seat_arms_are_ranking_misses(arm: str) -> None:
    trace = make_trace(arms={arm: ["mem:1"], "vector_near": ["mem:2"]}, passed=["mem:2"], before_cut=["mem:2"])
    assert confirm(trace, ["mem:1"]) == RANKING_MISS


@pytest.mark.parametrize("arm", ["keyword", "vector_far", "newest", "cues"])
def test_other_arms_are_not_seat_arms(arm: str) -> None:
    trace = make_trace(arms={arm: ["mem:1"], "vector_near": ["mem:2"]}, passed=["mem:2"], before_cut=["mem:2"])
    assert confirm(trace, ["mem:1"]) == UNATTRIBUTED


def test_cut_by_count_wins_over_a_seat_arm_and_the_gate_wins_over_both() -> None:
    trace = make_trace(
        arms={"vector_near": ["mem:1", "mem:2", "mem:3"], "cue": ["mem:3"]},
        passed=["mem:1", "mem:2"],
        refused=["mem:3"],
        before_cut=["mem:1", "mem:2"],
        limit=1,
    )
    assert confirm(trace, ["mem:2"]) == RANKING_MISS
    assert confirm(trace, ["mem:3"]) == FILTER_DROP  # refused by the gate, although the cue arm found it


def test_a_null_limit_keeps_the_whole_order() -> None:
    trace = make_trace(
        arms={"vector_near": ["mem:1", "mem:2", "mem:3"]},
        passed=["mem:1", "mem:2", "mem:3"],
        before_cut=["mem:1", "mem:2", "mem:3"],
        limit=None,
    )
    assert confirm(trace, ["mem:3"]) is None


def test_kept_is_read_from_before_cut_and_limit_not_from_cut_by_count() -> None:
    trace = make_trace(
        arms={"vector_near": ["mem:1", "mem:2"]}, passed=["mem:1", "mem:2"], before_cut=["mem:1", "mem:2"], limit=1
    )
    trace["order"]["cut_by_count"] = []  # an inconsistent trace: still not returned, and nothing says why
    assert confirm(trace, ["mem:2"]) == UNATTRIBUTED


def test_cpersona_order_entries_and_wrapped_responses_are_read() -> None:
    trace = make_trace(
        arms={"vector_near": ["mem:1", "mem:2"]}, passed=["mem:1", "mem:2"], before_cut=["mem:1", "mem:2"], limit=1
    )
    trace["order"]["before_cut"] = [{"ref": "mem:1"}, {"ref": "mem:2"}]
    assert confirm(trace, ["mem:1"]) is None
    assert confirm(trace, ["mem:2"]) == RANKING_MISS
    assert confirm({"messages": [], "trace": trace}, ["mem:2"]) == RANKING_MISS


# -- returned evidence: the reader's codes -----------------------------------------------------

RETURNED = make_trace(arms={"vector_near": ["mem:1"]}, passed=["mem:1"], before_cut=["mem:1"])


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({}, None),
        ({"correct": True}, None),
        ({"correct": False}, UNATTRIBUTED),
        ({"shown_text": "Mara  fixed\nthe brake\tpads.", "quotes": ["fixed the brake pads"]}, None),
        (
            {"shown_text": "Mara fixed the brake pads.", "quotes": ["fixed the   brake\npads"], "correct": False},
            AGENT_MISUSE,
        ),
        (
            {"shown_text": "Mara fixed the brake pads.", "quotes": ["chain", "fixed the brake pads"], "correct": True},
            None,
        ),
        ({"shown_text": "Mara fixed the bike.", "quotes": ["brake pads"]}, RECONSTRUCTION_LOSS),
        ({"shown_text": "Mara fixed the bike.", "quotes": ["brake pads"], "correct": False}, RECONSTRUCTION_LOSS),
        ({"shown_text": "", "quotes": ["brake pads"]}, RECONSTRUCTION_LOSS),
        ({"shown_text": "Mara fixed the bike.", "quotes": [], "correct": False}, UNATTRIBUTED),
        ({"shown_text": "Mara fixed the bike.", "quotes": ["   "], "correct": False}, UNATTRIBUTED),
        ({"quotes": ["brake pads"], "correct": False}, UNATTRIBUTED),  # no shown text: the quote cannot be checked
    ],
)
def test_returned_evidence(kwargs: dict[str, Any], code: str | None) -> None:
    assert confirm(RETURNED, ["mem:1"], **kwargs) == code


def test_reader_codes_apply_to_seated_rows_too() -> None:
    assert confirm(FULL, ["mem:7"], shown_text="abc", quotes=["xyz"]) == RECONSTRUCTION_LOSS
    assert confirm(FULL, ["mem:7"], correct=False) == UNATTRIBUTED


# -- attribute ----------------------------------------------------------------------------------


def test_attribute_names_the_stage_and_why() -> None:
    found = attribute(FULL, ["mem:1", "mem:3", "mem:4", "mem:5", "mem:6", "mem:7", "mem:8", "mem:9", "mem:9"])
    assert list(found) == ["mem:1", "mem:3", "mem:4", "mem:5", "mem:6", "mem:7", "mem:8", "mem:9"]
    stages = {ref: (a["stage"], a["code"]) for ref, a in found.items()}
    assert stages == {
        "mem:1": ("returned", None),
        "mem:3": ("count", RANKING_MISS),
        "mem:4": ("gate", FILTER_DROP),
        "mem:5": ("autocut", FILTER_DROP),
        "mem:6": ("seat", RANKING_MISS),
        "mem:7": ("reservation", None),
        "mem:8": ("unknown", UNATTRIBUTED),
        "mem:9": ("arms", CANDIDATE_MISS),
    }
    assert found["mem:1"]["arms"] == {
        "vector_near": {"rank": 0, "raw": 0.5},
        "memory_keyword": {"rank": 1, "raw": 0.5},
        "cue": {"rank": 2, "raw": 0.5},
    }
    assert found["mem:3"]["position"] == 2 and found["mem:3"]["limit"] == 2 and found["mem:3"]["cut_by_count"]
    assert found["mem:4"]["gate"]["reason"] == "below_gate" and "below_gate" in found["mem:4"]["why"]
    assert found["mem:5"]["autocut"] == {"at": 1}
    assert found["mem:7"]["reservation"] == "cue" and found["mem:7"]["returned"]
    assert found["mem:9"]["arms"] == {} and found["mem:9"]["gate"] is None


def test_attribute_reads_fusion_and_scoring() -> None:
    trace = make_trace(arms={"vector_near": ["mem:1"]}, passed=["mem:1"], before_cut=["mem:1"])
    trace["fusion"] = [{"ref": "mem:1", "score": 0.03, "votes": {"vector_near": 0.03}}]
    trace["scoring"] = {"episode_penalty": {"mem:1": 0.5}, "prior": {"mem:2": 0.9}}
    got = attribute(trace, ["mem:1"])["mem:1"]
    assert got["fusion"] == {"score": 0.03, "votes": {"vector_near": 0.03}}
    assert got["scoring"] == {"episode_penalty": 0.5}


# -- the command ---------------------------------------------------------------------------------

LINES = [
    {"id": "q1", "trace": FULL, "gold": ["mem:1"]},
    {"id": "q2", "trace": FULL, "gold": ["mem:9"]},
    {"id": "q3", "trace": FULL, "gold": ["mem:4"]},
    {"id": "q4", "trace": FULL, "gold": ["mem:3"]},
    {"id": "q5", "trace": {"messages": [], "trace": FULL}, "gold": ["mem:6"]},
    {"id": "q6", "trace": FULL, "gold": ["mem:1"], "shown_text": "a b c", "quotes": ["x"]},
    {"id": "q7", "trace": FULL, "gold": ["mem:1"], "shown_text": "a  b c", "quotes": ["a b"], "correct": False},
    {"trace": FULL, "gold": []},
]
EXPECTED = {
    CANDIDATE_MISS: 1,
    FILTER_DROP: 1,
    RANKING_MISS: 2,
    RECONSTRUCTION_LOSS: 1,
    AGENT_MISUSE: 1,
    UNATTRIBUTED: 1,
    "returned": 1,
}


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in LINES) + "\n\n", encoding="utf-8")
    return path


def test_evaluate_counts_every_code() -> None:
    summary = evaluate(LINES)
    assert summary["total"] == 8
    assert summary["counts"] == {code: EXPECTED.get(code, 0) for code in (*CODES, "returned")}
    assert summary["items"][0] == {"id": "q1", "code": None}


def test_cli_prints_a_table_of_counts(run_file: Path) -> None:
    out = io.StringIO()
    assert main([str(run_file)], console=Console(file=out, width=200, color_system=None)) == 0
    text = out.getvalue()
    assert "confirmed failure codes (8 traced recalls)" in text
    for code, count in EXPECTED.items():
        row = next(line for line in text.splitlines() if f" {code} " in line)
        assert f" {count} " in row, row
    assert "q4, q5" in text  # the ids of the RANKING_MISS rows


def test_cli_json(run_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(run_file), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 8
    assert {k: v for k, v in data["counts"].items() if v} == EXPECTED
    assert [item["id"] for item in data["items"]][:2] == ["q1", "q2"]
    assert data["items"][-1]["id"] == "8"  # a line without an id is named by its line number


def test_cli_json_details(run_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(run_file), "--json", "--details"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["items"][2]["attribution"]["mem:4"]["stage"] == "gate"


def test_cli_single_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"messages": [], "trace": FULL}), encoding="utf-8")
    assert main(["--trace", str(path), "--gold", "mem:3", "mem:9", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["items"] == [{"id": "trace.json", "code": RANKING_MISS}]
    shown = tmp_path / "shown.txt"
    shown.write_text("nothing relevant", encoding="utf-8")
    assert (
        main(["--trace", str(path), "--gold", "mem:1", "--shown-text", str(shown), "--quote", "brake pads", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["items"][0]["code"] == RECONSTRUCTION_LOSS
    assert main(["--trace", str(path), "--gold", "mem:1", "--incorrect", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["code"] == UNATTRIBUTED


def test_cli_details_table(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(FULL), encoding="utf-8")
    out = io.StringIO()
    assert (
        main(
            ["--trace", str(path), "--gold", "mem:4", "--details"],
            console=Console(file=out, width=200, color_system=None),
        )
        == 0
    )
    assert "refused by the gate: below_gate" in out.getvalue()


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(LINES[0]) + "\n{not json\n", encoding="utf-8")
    assert main([str(bad)]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["--trace", str(bad)])  # --gold is required with --trace


def test_cli_help_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.recall_trace_confirm", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "RUN.jsonl" in result.stdout or "run" in result.stdout
    assert "--trace" in result.stdout and "--gold" in result.stdout and "--json" in result.stdout


def test_cli_on_real_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: traces from a real store, written as a benchmark harness would keep them."""
    from tests.contract.test_trace_readiness import attribution_store

    memory, refs = attribution_store()
    response = memory.recall(agent_id="a", query="brake pads for the road bike", limit=2, trace=True)
    path = tmp_path / "real.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for name in ("A", "X", "Y", "Z"):
            out.write(json.dumps({"id": name, "trace": response["trace"], "gold": [refs[name]]}) + "\n")
    assert main([str(path), "--json"]) == 0
    codes = {item["id"]: item["code"] for item in json.loads(capsys.readouterr().out)["items"]}
    assert codes == {"A": None, "X": CANDIDATE_MISS, "Y": FILTER_DROP, "Z": RANKING_MISS}

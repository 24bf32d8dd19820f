"""benchmarks.cue_propagation: reading what propagation did, the counts, the sign tests and the verdict, on
constructed responses and rows (no dataset needed), and the study end to end on the generated history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import cue_propagation as cp
from tests.conftest import study_argv


def message(ref: str, **reason: Any) -> dict[str, Any]:
    return {"ref": ref, "match_reason": reason}


def response(best_first: list[dict[str, Any]], stages: list[dict[str, Any]]) -> dict[str, Any]:
    """A recall's response: messages run worst to best."""
    return {"messages": list(reversed(best_first)), "trace": {"stages": stages, "policy": {"process": "p"}}}


PASS = {"stage": 0, "searched": "all arms", "next": None}


def fired_stage(lifted: list[dict[str, Any]], seated: list[str], found: int = 3) -> dict[str, Any]:
    return {
        "stage": 1,
        "searched": "the cue arm over the strong hit's period (propagated-v1)",
        "source": "mem:1",
        "period": ["a", "b"],
        "found": found,
        "lifted": lifted,
        "seated": seated,
        "next": None,
        "stopped": "found",
    }


def test_no_strong_hit_is_not_fired() -> None:
    did = cp.what_it_did(response([message("mem:1"), message("mem:2")], [PASS]), ["mem:2"])
    assert did == {
        "fired": False,
        "found": 0,
        "moved": False,
        "rose": 0,
        "rose_gold": False,
        "fell_gold": False,
        "source_fell": False,
        "seated": 0,
        "seated_gold": False,
        "stopped": None,
    }


def test_fired_moved_and_seated_are_read_from_the_trace_and_the_rows() -> None:
    lifted = [{"ref": "mem:3", "from": 2, "to": 1}, {"ref": "mem:2", "from": 1, "to": 2}]
    rows = [
        message("mem:1"),
        message("mem:3"),
        message("mem:2"),
        message("blk:1", admission="reservation", signal="block"),
        message("mem:9", admission="reservation", signal="propagated_cue", cue_rank=0),
    ]
    did = cp.what_it_did(response(rows, [PASS, fired_stage(lifted, ["mem:9"])]), ["mem:3", "mem:9"])
    assert did["fired"] and did["moved"] and did["rose"] == 1 and did["rose_gold"]
    assert did["seated"] == 1 and did["seated_gold"] and did["found"] == 3 and did["stopped"] == "found"
    assert not did["fell_gold"] and not did["source_fell"]
    # the strong hit (mem:1, left out of what its period found) loses first place to its neighbour
    lifted = [{"ref": "mem:3", "from": 1, "to": 0}, {"ref": "mem:1", "from": 0, "to": 1}]
    did = cp.what_it_did(response([message("mem:3"), message("mem:1")], [PASS, fired_stage(lifted, [])]), ["mem:1"])
    assert did["source_fell"] and did["fell_gold"] and not did["rose_gold"]
    assert cp.propagated_seats(response(rows, [])) == ["mem:9"]  # the block seat is not the propagated one


def test_a_fired_stage_that_moved_nothing_and_seated_nothing() -> None:
    did = cp.what_it_did(response([message("mem:1")], [PASS, fired_stage([], [], found=0)]), ["mem:5"])
    assert did["fired"] and not did["moved"] and did["seated"] == 0 and did["found"] == 0


def test_metrics_over_the_first_ten_and_the_returned_rows() -> None:
    ranked = [f"mem:{i}" for i in range(12)]
    m = cp.metrics(ranked, ["mem:3", "mem:11"])
    assert m["rows"] == 12 and m["hit@10"] == 1.0 and m["recall@10"] == 0.5
    assert m["hit"] == 1.0 and m["recall"] == 1.0 and m["ndcg"] > 0 and m["ndcg@10"] > 0
    assert cp.metrics(ranked, [])["recall"] == 0.0


def row(
    on: float, off: float, w: float, *, fired: bool = True, seated: int = 1, moved: bool = False, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "layout": "set",
        "embedder": "hash",
        "fired": fired,
        "found": 2 if fired else 0,
        "moved": moved,
        "rose": int(moved),
        "rose_gold": False,
        "seated": seated,
        "seated_gold": False,
        "stopped": "found" if fired else None,
        "changed": on != off,
        **extra,
    }
    for metric in cp.METRICS:
        for name, value in (("on", on), ("off", off), ("w", w), ("d", w)):
            out[f"{metric}:{name}"] = value
    return out


def test_counts() -> None:
    rows = [
        row(1, 0, 0, moved=True),
        row(0, 0, 0, seated=0),
        row(0, 0, 0, fired=False, seated=0),
        row(0, 0, 0, stopped=cp.TIME_LIMIT, seated=0),
    ]
    c = cp.counts(rows)
    assert (c["n"], c["fired"], c["moved"], c["seated"], c["changed"], c["time_limit"]) == (4, 3, 1, 1, 1, 1)


def test_helps_only_when_it_beats_both_controls() -> None:
    # on above off in 6 questions (sign test p = 1/64) and above (w) too: it helps, nothing hurts
    both = [row(1, 0, 0) for _ in range(6)] + [row(0.5, 0.5, 0.5) for _ in range(10)]
    j = cp.judge(both)
    assert j["helps"] and not j["hurts"]
    t = j["tests"][("off", "ndcg")]
    assert (t["rose"], t["fell"], t["tied"]) == (6, 0, 10) and abs(t["p"] - 1 / 64) < 1e-12
    assert cp.verdict([j])
    # above off but not above the extra rows (w): the places did it, not the cue
    places = [row(1, 0, 1) for _ in range(6)]
    j = cp.judge(places)
    assert not j["helps"] and not j["hurts"] and not cp.verdict([j])
    # too few questions moved: p = 1/8 is no evidence
    assert not cp.judge([row(1, 0, 0) for _ in range(3)])["helps"]


def test_harm_on_any_set_keeps_it_off() -> None:
    helps = cp.judge([row(1, 0, 0) for _ in range(6)])
    hurts = cp.judge([row(0, 1, 1) for _ in range(6)])
    assert hurts["hurts"] and not hurts["helps"]
    assert "off > on on ndcg" in hurts["hurts"] and "w > on on hit@10" in hurts["hurts"]
    assert not cp.verdict([helps, hurts])
    assert cp.verdict([helps, cp.judge([row(0, 0, 0) for _ in range(6)])])  # a set where nothing moved is neutral


def test_the_study_runs_end_to_end_on_the_generated_history(tmp_path: Path) -> None:
    out, kept = tmp_path / "cp.md", tmp_path / "rows.json"
    argv = study_argv(tmp_path, out, "--rows", str(kept), locomo=False)
    assert cp.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "## Verdict" in text and "| long-span |" in text and "propagated-v1" in text
    merged = tmp_path / "merged.md"
    assert cp.main(["--locomo", "none", "--long-span", "small", "--merge", str(kept), "--out", str(merged)]) == 0
    lines = merged.read_text(encoding="utf-8").splitlines()
    assert sum(line.startswith("Command: ") for line in lines) == 2  # the run's command, then the merge's

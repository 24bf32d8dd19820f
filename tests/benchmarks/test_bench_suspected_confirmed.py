"""benchmarks/suspected_confirmed.py: its counting on constructed traces with a known answer, and a small run.

No LoCoMo file is needed: the traces are built here, and the run uses the generated long-span history.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import harness as h
from benchmarks import suspected_confirmed as sc
from benchmarks.cues import extract_cue
from benchmarks.datasets import generate_long_span
from benchmarks.recall_trace_confirm import CANDIDATE_MISS, FILTER_DROP, RANKING_MISS

GOLD = ["mem:7"]


def trace(
    *,
    arms: dict[str, list[str]] | None = None,
    failed_gate: tuple[str, ...] = (),
    before_cut: tuple[str, ...] = (),
    limit: int = 2,
    reserved: dict[str, str] | None = None,
    suspected: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A trace of the shape the recorder writes, with only what ``confirm`` and the counting read."""
    arms = arms if arms is not None else {"vector_near": ["mem:1", "mem:2", "mem:3"]}
    judged = {ref for hits in arms.values() for ref in hits}
    return {
        "trace_version": 1,
        "arms": {
            name: [{"ref": ref, "rank": i, "raw": 0.5} for i, ref in enumerate(refs)] for name, refs in arms.items()
        },
        "gate": {
            "decisions": [
                {
                    "ref": ref,
                    "signal": "cosine",
                    "score": 0.3,
                    "threshold": 0.4,
                    "origin": "heuristic",
                    "passed": ref not in failed_gate,
                }
                for ref in sorted(judged)
            ]
        },
        "order": {"before_cut": list(before_cut), "limit": limit, "cut_by_count": list(before_cut[limit:])},
        "reservation": [{"ref": ref, "kind": kind} for ref, kind in (reserved or {}).items()],
        "suspected": [
            {"stage": 0, "code": code, "reason": "constructed", "action": "constructed"} for code in suspected
        ],
    }


# Each case: a trace, and what the recall suspected, what is confirmed, and what its action rescued.
CASES: dict[str, tuple[dict[str, Any], frozenset[str], str | None, frozenset[str]]] = {
    # the cue period held nothing and no arm reached the evidence: suspected and confirmed
    "cue-miss": (trace(suspected=(CANDIDATE_MISS,)), frozenset({CANDIDATE_MISS}), CANDIDATE_MISS, frozenset()),
    # the same suspicion, but the wider stage found the evidence and a cue seat held it: rescued
    "cue-widened": (
        trace(
            arms={"vector_near": ["mem:1"], "cue_stage_1": ["mem:7"]},
            before_cut=("mem:1",),
            reserved={"mem:7": "cue"},
            suspected=(CANDIDATE_MISS,),
        ),
        frozenset({CANDIDATE_MISS}),
        None,
        frozenset({CANDIDATE_MISS}),
    ),
    # relief was suspected (rows under the gate), yet the evidence passed and the count cut it
    "relief-but-count": (
        trace(
            arms={"vector_near": ["mem:1", "mem:2", "mem:7"]},
            before_cut=("mem:1", "mem:2", "mem:7"),
            suspected=(FILTER_DROP,),
        ),
        frozenset({FILTER_DROP}),
        RANKING_MISS,
        frozenset(),
    ),
    # the gate refused the evidence and relief saw it under the gate but had no room: suspected and confirmed
    "gate-suspected": (
        trace(
            arms={"vector_near": ["mem:1", "mem:7"]},
            failed_gate=("mem:7",),
            before_cut=("mem:1",),
            suspected=(FILTER_DROP, FILTER_DROP),
        ),
        frozenset({FILTER_DROP}),
        FILTER_DROP,
        frozenset(),
    ),
    # the gate refused the evidence and nothing was suspected
    "gate-silent": (
        trace(arms={"vector_near": ["mem:1", "mem:7"]}, failed_gate=("mem:7",), before_cut=("mem:1",)),
        frozenset(),
        FILTER_DROP,
        frozenset(),
    ),
    # relief admitted the evidence it suspected was under the gate: rescued
    "relief-rescued": (
        trace(
            arms={"vector_near": ["mem:1", "mem:7"]},
            failed_gate=("mem:7",),
            before_cut=("mem:1",),
            reserved={"mem:7": "relief"},
            suspected=(FILTER_DROP,),
        ),
        frozenset({FILTER_DROP}),
        None,
        frozenset({FILTER_DROP}),
    ),
    # cut by the count, nothing suspected
    "count-silent": (
        trace(arms={"vector_near": ["mem:1", "mem:2", "mem:7"]}, before_cut=("mem:1", "mem:2", "mem:7")),
        frozenset(),
        RANKING_MISS,
        frozenset(),
    ),
    # no arm reached the evidence, nothing suspected (no cue)
    "arms-silent": (trace(), frozenset(), CANDIDATE_MISS, frozenset()),
    # returned, nothing suspected
    "returned": (
        trace(arms={"vector_near": ["mem:7", "mem:1"]}, before_cut=("mem:7", "mem:1")),
        frozenset(),
        None,
        frozenset(),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_judge_reads_what_was_suspected_confirmed_and_rescued(name: str) -> None:
    built, suspected, confirmed, rescued = CASES[name]
    assert sc.judge(built, GOLD) == sc.Judged(suspected, confirmed, rescued)


def test_the_tally_of_the_constructed_cases() -> None:
    summary = sc.tally(sc.judge(built, GOLD) for built, *_ in CASES.values())
    assert (summary["recalls"], summary["failed"], summary["returned"]) == (9, 6, 3)
    assert (summary["with_suspicion"], summary["failed_with_suspicion"]) == (5, 3)
    codes = summary["codes"]
    assert list(codes)[:3] == [CANDIDATE_MISS, FILTER_DROP, RANKING_MISS]
    # CANDIDATE_MISS: suspected twice (cue-miss, cue-widened), confirmed twice (cue-miss, arms-silent)
    assert codes[CANDIDATE_MISS] == {
        "suspected": 2,
        "confirmed": 2,
        "both": 1,
        "suspected_only": 1,
        "suspected_returned": 1,
        "rescued": 1,
        "suspected_other": 0,
        "confirmed_only": 1,
        "precision": 0.5,
        "recall": 0.5,
    }
    # FILTER_DROP: suspected three times (relief-but-count, gate-suspected, relief-rescued), confirmed twice
    assert codes[FILTER_DROP] == {
        "suspected": 3,
        "confirmed": 2,
        "both": 1,
        "suspected_only": 2,
        "suspected_returned": 1,
        "rescued": 1,
        "suspected_other": 1,
        "confirmed_only": 1,
        "precision": pytest.approx(1 / 3),
        "recall": 0.5,
    }
    # RANKING_MISS: never suspected, confirmed twice: no precision, recall 0
    assert codes[RANKING_MISS]["suspected"] == 0 and codes[RANKING_MISS]["confirmed"] == 2
    assert codes[RANKING_MISS]["precision"] is None and codes[RANKING_MISS]["recall"] == 0.0
    assert summary["unsuspected"] == {CANDIDATE_MISS: 1, FILTER_DROP: 1, RANKING_MISS: 1}


def test_a_code_only_suspected_gets_a_row_of_its_own() -> None:
    built = trace(arms={"vector_near": ["mem:7"]}, before_cut=("mem:7",), suspected=("NEW_CODE",))
    summary = sc.tally([sc.judge(built, GOLD)])
    assert summary["codes"]["NEW_CODE"]["suspected"] == 1
    assert summary["codes"]["NEW_CODE"]["precision"] == 0.0 and summary["codes"]["NEW_CODE"]["recall"] is None
    assert summary["unsuspected"] == {}


def test_an_empty_tally_divides_nothing() -> None:
    summary = sc.tally([])
    assert summary["recalls"] == 0
    assert all(c["precision"] is None and c["recall"] is None for c in summary["codes"].values())


def test_render_writes_the_tables_and_the_command() -> None:
    rows = [
        {
            "qid": name,
            "category": "4 single-hop",
            "cued": name.startswith("cue"),
            "gold": GOLD,
            "judged": sc.judge(built, GOLD),
            "suspects": built["suspected"],
            "stages": sc.evidence_stages(built, GOLD) if confirmed else None,
        }
        for name, (built, _, confirmed, _) in CASES.items()
    ]
    args = sc.build_parser().parse_args(["--data", "x.json"])
    text = sc.render(["--data", "x.json"], args, [], rows, "model", 1.0)
    assert text.startswith(
        "# Suspected against confirmed failure codes\n\nCommand: "
        "`python -m benchmarks.suspected_confirmed --data x.json`"
    )
    assert "| CANDIDATE_MISS | 2 | 2 | 1 | 1 | 1 | 1 | 0 | 1 | 0.500 | 0.500 |" in text
    assert "| FILTER_DROP | 3 | 2 | 1 | 2 | 1 | 1 | 1 | 1 | 0.333 | 0.500 |" in text
    assert "| RANKING_MISS | 0 | 2 | 0 | 0 | 0 | 0 | 0 | 2 | n/a | 0.000 |" in text
    assert "## Cued recalls only" in text
    assert "| FILTER_DROP | 0 | constructed | 4 |" in text  # gate-suspected recorded it twice
    stages = text[text.index("## Where the evidence") :]
    for code, stage in ((CANDIDATE_MISS, "arms"), (FILTER_DROP, "gate"), (RANKING_MISS, "count")):
        assert f"| {code} | {stage} | 2 |" in stages


def test_a_small_run_on_a_generated_history(tmp_path: Path) -> None:
    """evaluate_conversation end to end (hash embedder, blocks on): every row is judged from its own trace."""
    conversation = generate_long_span(seed=0, size="small")
    args = argparse.Namespace(mode="rrf", limit=5, history="asked", no_cues=False)
    lines: list[str] = []

    class Dump:
        def write(self, line: str) -> None:
            lines.append(line)

    embedder = h.new_embedder("hash")
    rows = sc.evaluate_conversation(conversation, embedder, args, tmp_path, Dump(), lambda: None)
    assert len(rows) == len(conversation.questions) == len(lines)
    questions = {q.qid: q for q in conversation.questions}
    for row, line in zip(rows, lines, strict=True):
        dumped = json.loads(line)
        assert dumped["id"] == row["qid"] and dumped["gold"] == row["gold"]
        question = questions[row["qid"]]
        assert row["cued"] == (extract_cue(question.text, question.asked_at) is not None)
        assert row["judged"] == sc.judge(dumped["trace"], row["gold"])
        assert row["suspects"] == dumped["trace"]["suspected"]
        assert (row["stages"] is None) == (row["judged"].confirmed is None)
    assert any(r["cued"] for r in rows)
    summary = sc.tally(r["judged"] for r in rows)
    assert summary["recalls"] == len(rows) and summary["failed"] + summary["returned"] == len(rows)

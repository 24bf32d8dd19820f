"""benchmarks/session_levers.py: the re-ordering rules it measures, on a dump made by hand."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import session_levers as sl


def _dump(tmp_path: Path) -> Path:
    """One recall: sessions 1-5 fill the first five distinct places, the evidence (f1, session 6) comes sixth;
    session 6 also holds three strong candidates the gate did not pass, and session 1 holds three passed rows."""
    passed = ["a1", "a2", "a3", "b1", "c1", "d1", "e1", "f1", "g1"]
    session = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}
    fused = [{"ref": ref, "score": 1.0 - 0.05 * i} for i, ref in enumerate(passed)]
    fused += [{"ref": f"f{n}", "score": 0.5} for n in (2, 3, 4)]
    line = {
        "id": "locomo/local/rrf/conv-1:q0",
        "gold": ["f1"],
        "ranked": passed,
        "sessions": [session[ref[0]] for ref in passed],
        "gold_sessions": [6],
        "trace": {"order": {"before_cut": passed}, "fusion": fused, "scoring": {"episode_context": {"f2": "f1"}}},
    }
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_unchanged_order_scores_the_answer_as_dumped(tmp_path: Path) -> None:
    recalls = sl.load(_dump(tmp_path))
    figures = sl.score(recalls, sl.unchanged)
    assert figures["sessions@5"] == 0.0  # the evidence's session is the sixth distinct one
    assert figures["session@10"] == 1.0 and figures["recall_any@10"] == 1.0


def test_capping_rows_per_session_never_moves_a_session_s_first_appearance(tmp_path: Path) -> None:
    recalls = sl.load(_dump(tmp_path))
    for most in sl.CAPS:
        order = sl.cap(most)(recalls[0])
        assert sorted(order) == sorted(recalls[0].passed)
        firsts = list(dict.fromkeys(recalls[0].session[ref] for ref in order))
        assert firsts == [1, 2, 3, 4, 5, 6, 7]
        assert sl.score(recalls, sl.cap(most))["sessions@5"] == 0.0
    assert sl.cap(1)(recalls[0])[:7] == ["a1", "b1", "c1", "d1", "e1", "f1", "g1"]


def test_support_lifts_the_rows_of_a_session_the_arms_reach_often(tmp_path: Path) -> None:
    recalls = sl.load(_dump(tmp_path))
    assert recalls[0].session["f2"] == 6  # a candidate no answer names takes its lender's session
    order = sl.support(1.0, None)(recalls[0])
    # f1: 0.65 + 3 x 0.5 = 2.15, under session 1's rows (2.85 each) and over b1 (0.85, a session of one row)
    assert sorted(order[:3]) == ["a1", "a2", "a3"] and order[3:5] == ["f1", "b1"]
    assert sl.score(recalls, sl.support(1.0, None))["sessions@5"] == 1.0
    assert sl.support(0.0, None)(recalls[0]) == list(recalls[0].passed)  # no weight, no move


def test_the_report_lists_every_rule_with_its_command(tmp_path: Path) -> None:
    out = tmp_path / "levers.md"
    assert sl.main(["--traces", str(_dump(tmp_path)), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "python -m benchmarks.session_levers --traces" in text
    for name, _order, _rows in sl.rules():
        assert f"| {name} |" in text

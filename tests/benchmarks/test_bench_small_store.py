"""benchmarks/small_store.py: windows of a conversation as small stores, and a tiny run side by side."""

from __future__ import annotations

from pathlib import Path

from benchmarks.datasets import Conversation, Question, Turn
from benchmarks.small_store import SYSTEMS, main, windows
from tests.conftest import LOCOMO_MINI


def _conversation() -> Conversation:
    turns = tuple(Turn(f"c:{i}", f"turn {i}", f"2025-01-01T00:{i:02d}:00+00:00", "A", 1) for i in range(25))
    questions = (
        Question("q1", "in the first window", "2025-02-01T00:00:00+00:00", ("c:1", "c:9"), "4", ""),
        Question("q2", "across two windows", "2025-02-01T00:00:00+00:00", ("c:9", "c:10"), "4", ""),
        Question("q3", "adversarial", "2025-02-01T00:00:00+00:00", ("c:12",), "5", ""),
        Question("q4", "in the second window", "2025-02-01T00:00:00+00:00", ("c:12",), "1", ""),
    )
    return Conversation("c", turns, (), questions)


def test_windows_are_consecutive_turns_asked_the_questions_they_hold_the_evidence_of() -> None:
    cut = windows(_conversation(), 10, None)
    assert [(w.index, [t.msg_id for t in w.turns][:1], [q.qid for q in w.questions]) for w in cut] == [
        (0, ["c:0"], ["q1"]),
        (1, ["c:10"], ["q4"]),
    ]  # the third window (5 turns) is short; q3 is category 5
    assert all(len(w.turns) == 10 for w in cut) and cut[0].agent_id == "c-10-0"
    assert windows(_conversation(), 10, 1) == cut[:1]


def test_a_tiny_run_writes_every_system_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "small_store.md"
    argv = [
        "--locomo",
        str(LOCOMO_MINI),
        "--limit-conversations",
        "1",
        "--sizes",
        "10",
        "50",
        "--most",
        "2",
        "--embedders",
        "hash",
        "--workdir",
        str(tmp_path / "db"),
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Retrieval in small stores (issue 13)\n\nCommand: `python -m benchmarks.small_store")
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| hash | **all** |")
    ]
    assert [r[2] for r in rows] == list(SYSTEMS)
    calibrated = {r[2]: float(r[8]) for r in rows}
    assert calibrated["gate-v0"] == calibrated["defaults"] == 0.0 < calibrated["defaults +cal"]  # the 50s calibrate

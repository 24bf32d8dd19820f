"""benchmarks/call_floor.py on a tiny realistic store: in process, stdio and HTTP each answer every question,
and the table and the floor's parts are written."""

from __future__ import annotations

from pathlib import Path

from benchmarks import call_floor
from tests.conftest import LOCOMO_MINI


def test_each_transport_answers_the_same_recall_and_its_floor_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "call_floor.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--sizes", "300", "--queries", "3"]
    assert call_floor.main([*argv, "--workdir", str(tmp_path / "w"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Command: `python -m benchmarks.call_floor --locomo" in text
    row = next(line for line in text.splitlines() if line.startswith("| 300 |"))
    cells = [cell.strip() for cell in row.strip(" |").split("|")]
    assert all(float(cell) > 0 for cell in (cells[1], cells[2], cells[4]))  # in process, stdio, HTTP timed
    assert int(cells[-1]) > 0  # the recall returned rows
    for part in ("request line read", "answer encoded", "worker-thread hop", "query embedding"):
        assert f"| {part}" in text

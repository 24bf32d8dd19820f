"""The block-arm speed benchmark runs end to end on a small store and reports what it measured."""

from __future__ import annotations

from pathlib import Path

from benchmarks import block_speed
from tests.conftest import LOCOMO_MINI as LOCOMO


def test_the_benchmark_builds_blocks_and_times_the_arm_on_and_off(tmp_path: Path) -> None:
    out = tmp_path / "block_speed.md"
    assert block_speed.main(["--locomo", str(LOCOMO), "--sizes", "300", "--questions", "8", "--out", str(out)]) == 0
    table = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("| 300 |")]
    assert len(table) == 1
    cells = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert int(cells[1].replace(",", "")) > 300  # LoCoMo turns divide into more blocks than records
    assert float(cells[5]) > 0 and float(cells[4]) > 0  # both sides were timed

"""benchmarks/window_speed.py on a tiny realistic store: both windows timed, the table written."""

from __future__ import annotations

from pathlib import Path

from benchmarks import window_speed
from tests.conftest import LOCOMO_MINI


def test_both_windows_are_timed_on_the_same_store_and_the_ratio_is_against_cpersonas(tmp_path: Path) -> None:
    out = tmp_path / "window_speed.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--sizes", "300", "--queries", "4", "--rounds", "1"]
    assert window_speed.main([*argv, "--workdir", str(tmp_path / "w"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Command: `python -m benchmarks.window_speed --locomo" in text
    rows = [line for line in text.splitlines() if line.startswith("| 300 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["10,000", "1,000,000"]
    assert rows[0].rstrip(" |").endswith("x1.00")

"""benchmarks/open_ab.py on a tiny realistic store: each commit's snapshot opens the store in a fresh process, and
a commit set against itself builds indexes that answer alike."""

from __future__ import annotations

from pathlib import Path

from benchmarks import open_ab
from tests.conftest import LOCOMO_MINI


def test_a_commit_against_itself_opens_the_store_and_answers_alike(tmp_path: Path) -> None:
    out = tmp_path / "open_ab.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--before", "HEAD", "--after", "HEAD", "--sizes", "300", "--runs", "1"]
    assert open_ab.main([*argv, "--workdir", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Command: `python -m benchmarks.open_ab --locomo" in text
    row = next(line for line in text.splitlines() if line.startswith("| 300 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and float(cells[4]) > 0 and cells[-1] == "yes"

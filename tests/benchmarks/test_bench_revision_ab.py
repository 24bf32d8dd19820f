"""benchmarks/revision_ab.py on a tiny realistic store: each commit's snapshot answers in its own process, and a
commit set against itself gives the same answers to every question."""

from __future__ import annotations

from pathlib import Path

from benchmarks import revision_ab
from tests.conftest import LOCOMO_MINI


def test_a_commit_against_itself_answers_every_question_alike(tmp_path: Path) -> None:
    out = tmp_path / "revision_ab.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--before", "HEAD", "--after", "HEAD", "--sizes", "300"]
    assert (
        revision_ab.main([*argv, "--queries", "4", "--rounds", "1", "--workdir", str(tmp_path), "--out", str(out)]) == 0
    )
    text = out.read_text(encoding="utf-8")
    assert "Command: `python -m benchmarks.revision_ab --locomo" in text
    row = next(line for line in text.splitlines() if line.startswith("| 300 |"))
    assert row.rstrip(" |").endswith("4 of 4")

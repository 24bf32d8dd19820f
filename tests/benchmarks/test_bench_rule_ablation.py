"""benchmarks/rule_ablation.py: one rule on (the defaults) and off over every store shape, side by side."""

from __future__ import annotations

from pathlib import Path

from benchmarks import rule_ablation
from tests.conftest import LOCOMO_MINI


def test_every_shape_has_the_rule_on_off_and_their_difference(tmp_path: Path) -> None:
    out = tmp_path / "ablation.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--off", "CPERSONA_TIME_CONTEXT_ENABLED=false", "--embedders", "hash"]
    assert rule_ablation.main([*argv, "--grow", "200", "--long-span", "small", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Rule ablation: CPERSONA_TIME_CONTEXT_ENABLED=false")
    assert "Command: `python -m benchmarks.rule_ablation --locomo" in text
    lines = [line for line in text.splitlines() if line.startswith("|") and "---" not in line][1:]
    assert len(lines) == 4 * 3  # four shapes, each on, off and on - off
    for on, off, delta in zip(lines[0::3], lines[1::3], lines[2::3], strict=True):
        assert "| on (defaults) |" in on and "| off |" in off and "on − off" in delta
        values = [[float(cell) for cell in line.split("|")[4:11]] for line in (on, off, delta)]
        assert all(abs(d - (a - b)) < 1.5e-3 for a, b, d in zip(*values, strict=True))
    assert "the same with 200 other turns" in text and "long-span history (small)" in text

"""benchmarks/neighbours.py: the neighbours rule studied, and a tiny run."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.neighbours import VARIANTS, main, with_neighbours
from tests.conftest import study_argv

SESSION = [f"mem:{i}" for i in range(1, 9)]
PLACES = {ref: (i, SESSION) for i, ref in enumerate(SESSION)}


def test_the_best_rows_neighbours_replace_the_tail_nearest_first() -> None:
    ranked = ["mem:4", "ep:1", "mem:8", "mem:2", "mem:3"]
    assert with_neighbours(ranked, PLACES, keep=2, top=1, reach=2, limit=5) == [
        "mem:4",
        "ep:1",
        "mem:5",
        "mem:3",
        "mem:6",
    ]
    assert with_neighbours(ranked, PLACES, keep=10, top=0, reach=0, limit=10) == ranked  # base: the answer
    assert with_neighbours(["ep:1", "mem:1"], PLACES, keep=1, top=2, reach=1) == ["ep:1", "mem:2", "mem:1"]


@given(
    st.lists(st.sampled_from([*SESSION, "ep:1", "ep:2"]), unique=True, max_size=10),
    st.integers(0, 10),
    st.integers(0, 3),
    st.integers(0, 3),
)
def test_the_answer_keeps_its_first_rows_adds_only_neighbours_and_stays_within_the_limit(
    ranked: list[str], keep: int, top: int, reach: int
) -> None:
    out = with_neighbours(ranked, PLACES, keep, top, reach)
    assert out[: min(keep, len(ranked))] == ranked[:keep] and len(out) == len(set(out)) <= 10
    near = {
        SESSION[PLACES[r][0] + d]
        for r in ranked[:top]
        if r in PLACES
        for d in range(-reach, reach + 1)
        if 0 <= PLACES[r][0] + d < len(SESSION)
    }
    assert set(out) <= set(ranked) | near


def test_a_tiny_run_reports_every_variant_and_base_is_the_plain_answer(tmp_path: Path) -> None:
    out = tmp_path / "neighbours.md"
    assert main(study_argv(tmp_path, out, long_span="none")) == 0
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in out.read_text().splitlines()
        if line.startswith("| locomo | hash |")
    ]
    assert [r[2] for r in rows] == list(VARIANTS) and len({r[6] for r in rows}) == 1
    assert all(0.0 <= float(r[3]) <= 1.0 for r in rows)

"""benchmarks/trace_overhead.py keeps working: a tiny run end to end, and its bulk loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.synthetic import AGENT, bulk_load, queries, records
from benchmarks.trace_overhead import COLUMNS, EPISODE_EVERY, Timing, main, time_recalls
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from tests.conftest import NOW, make_settings


def _cells(line: str) -> dict[str, float]:
    """One row of the markdown table, by column key, as numbers (thousands separators dropped)."""
    values = [cell.strip().replace(",", "") for cell in line.strip().strip("|").split("|")]
    return {key: float(value) for (_, key, _), value in zip(COLUMNS, values, strict=True)}


def test_a_tiny_run_writes_what_its_report_promises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every promised column, for every size, and consistent with itself; no claim on the speed itself."""
    out = tmp_path / "results" / "trace_overhead.md"
    assert (
        main(
            [
                "--sizes",
                "120",
                "60",
                "--queries",
                "6",
                "--limit",
                "5",
                "--out",
                str(out),
                "--workdir",
                str(tmp_path / "db"),
            ]
        )
        == 0
    )
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# Recall trace overhead"
    assert "Command: `python -m benchmarks.trace_overhead --sizes 120 60 --queries 6 --limit 5" in text
    header = next(line for line in lines if line.startswith("| memories"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == [title for title, _, _ in COLUMNS]
    rows = [_cells(line) for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [row["memories"] for row in rows] == [120, 60]
    half = 0.0005  # the table rounds to three decimals
    for row in rows:
        assert row["episodes"] == row["memories"] // EPISODE_EVERY and row["queries"] == 6
        untraced, traced = row["untraced_p50_ms"], row["traced_p50_ms"]
        assert untraced > 0 and traced > 0
        # ratio p50 is traced p50 over untraced p50, within what rounding the three allows
        low, high = (traced - half) / (untraced + half) - half, (traced + half) / (untraced - half) + half
        assert low <= row["ratio_p50"] <= high, row
        assert row["paired_ratio_median"] > 0
        assert row["untraced_p90_ms"] >= untraced and row["traced_p90_ms"] >= traced
        assert row["coverage_p50_ms"] >= 0 and row["load_s"] >= 0
        assert row["mismatches"] == 0  # the traced answers, minus the trace, are the untraced ones
    printed = capsys.readouterr().out
    assert "ratio p50" in printed and "answers differing" in printed


def test_the_row_is_computed_from_the_timings() -> None:
    """Known timings: the medians, their ratio, the median of the paired ratios, and the 90th percentiles."""
    timing = Timing(
        size=100,
        episodes=2,
        queries=4,
        plain_ms=[1.0, 2.0, 4.0, 8.0],
        traced_ms=[2.0, 2.0, 6.0, 8.0],
        trace_total_ms=[0.5] * 4,
        coverage_ms=[0.1, 0.2, 0.3, 0.4],
        mismatches=0,
        load_s=1.5,
    )
    row = timing.row()
    assert row["untraced_p50_ms"] == 3.0 and row["traced_p50_ms"] == 4.0
    assert row["ratio_p50"] == pytest.approx(4.0 / 3.0)
    assert row["paired_ratio_median"] == pytest.approx(1.25)  # median of 2, 1, 1.5, 1
    assert row["untraced_p90_ms"] == 8.0 and row["traced_p90_ms"] == 8.0
    assert row["coverage_p50_ms"] == pytest.approx(0.25)


def test_answers_differing_counts_a_traced_answer_that_is_not_the_untraced_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mismatch count measures something: identical answers give 0, an untraced answer changed gives one
    per query."""
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    bulk_load(memory, 60, seed=2, episode_every=EPISODE_EVERY)
    asked = queries(4, seed=3)
    plain, traced, totals, coverage, mismatches = time_recalls(memory, asked, 5)
    assert len(plain) == len(traced) == len(totals) == len(coverage) == len(asked)
    assert mismatches == 0 and all(t > 0 for t in plain + traced)
    recall = memory.recall

    def changed(**arguments: Any) -> dict[str, Any]:
        answer = recall(**arguments)
        if not arguments.get("trace"):
            answer["messages"] = [*answer["messages"][:-1], {"content": "not the traced recall's row"}]
        return answer

    monkeypatch.setattr(memory, "recall", changed)
    assert time_recalls(memory, asked, 5)[4] == len(asked)


def test_the_synthetic_store_is_seeded() -> None:
    assert list(records(20, seed=3)) == list(records(20, seed=3))
    assert list(records(20, seed=4)) != list(records(20, seed=3))
    assert len(set(queries(20, seed=5))) > 10


def test_bulk_load_writes_searchable_rows_and_an_episode_every_so_often() -> None:
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    assert bulk_load(memory, 250, seed=1, episode_every=EPISODE_EVERY) == 250 // EPISODE_EVERY
    assert memory.store_.pool_counts(memory.scope(AGENT, None, "", "")) == (250, 250 // EPISODE_EVERY)
    assert len(memory.store_.embedded_memory_ids(AGENT)[0]) == 250
    first = memory.list_memories(agent_id=AGENT, limit=1)["memories"][0]["content"]
    word = max(first.rstrip(".").split(), key=len)
    answer = memory.recall(agent_id=AGENT, query=word, limit=5, trace=True)
    assert answer["trace"]["arms"]["memory_keyword"]  # the FTS index followed the bulk writes
    assert answer["trace"]["arms"]["vector_near"]  # and so did the vector index

"""benchmarks/time_cue.py: the wrong-cue construction, the verdict, and a tiny run end to end (the sign test:
tests/benchmarks/test_bench_stats.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks import harness as h
from benchmarks import stats
from benchmarks import time_cue as tc
from benchmarks.cues import extract_cue
from benchmarks.datasets import generate_long_span
from tests.conftest import study_argv

UTC = UTC


def test_rank_scores() -> None:
    assert tc.rank_score(None) < tc.rank_score(10) < tc.rank_score(1)


def test_places_fell_and_appended_rows() -> None:
    before = ["a", "g", "b", "c"]
    assert tc.places_fell(before, ["a", "b", "c", "g"], ["g"]) == 2
    assert tc.places_fell(before, ["g", "a", "b", "c"], ["g"]) == 0
    assert tc.places_fell(before, before, ["zz"]) == 0
    assert tc.appended(["a", "b"], ["b", "x", "a", "y", "z"], 2) == ["a", "b", "x", "y"]
    assert tc.appended(["a"], ["a", "x"], 0) == ["a"]


def _rows(a: list[float], b: list[float], c: list[float]) -> list[dict[str, float]]:
    """Study rows holding only the three scores the verdict reads."""
    return [{"ndcg_a": x, "ndcg_b": y, "ndcg_c": z} for x, y, z in zip(a, b, c, strict=True)]


def _counts(t: dict[str, Any]) -> dict[str, Any]:
    """What the verdict reads of a comparison: rose, fell, tied and the one-sided p."""
    return {key: t[key] for key in ("rose", "fell", "tied", "p")}


def test_the_verdict_passes_when_the_cue_beats_both_controls() -> None:
    """Ten questions, the cue above both controls on each: p = 1/1024 twice, and the higher mean."""
    v = tc.verdict(_rows([0.2] * 10, [0.6] * 10, [0.3] * 10))
    assert _counts(v["vs_a"]) == {"rose": 10, "fell": 0, "tied": 0, "p": 1 / 1024}
    assert _counts(v["vs_c"]) == {"rose": 10, "fell": 0, "tied": 0, "p": 1 / 1024}
    assert v["means"] == pytest.approx({"a": 0.2, "b": 0.6, "c": 0.3})
    assert v["n"] == 10 and v["passed"] is True


def test_the_verdict_makes_no_claim_when_the_extra_rows_do_as_well() -> None:
    """The cue beats no cue on all ten, but the extra rows score the same as the cue: no rise against (c)."""
    v = tc.verdict(_rows([0.2] * 10, [0.6] * 10, [0.6] * 10))
    assert v["vs_a"]["p"] == 1 / 1024
    assert _counts(v["vs_c"]) == {"rose": 0, "fell": 0, "tied": 10, "p": 1.0}
    assert v["passed"] is False


def test_the_verdict_makes_no_claim_on_a_lower_mean_despite_the_sign_test() -> None:
    """Nine small rises and one large fall: the sign test passes (p = 11/1024) but the cue's mean is lower."""
    a = [0.5] * 10
    b = [0.51] * 9 + [0.0]
    v = tc.verdict(_rows(a, b, a))
    assert v["vs_a"]["p"] == pytest.approx(11 / 1024) and v["vs_a"]["p"] < stats.ALPHA
    assert v["means"]["b"] < v["means"]["a"]
    assert v["passed"] is False


def test_the_verdict_makes_no_claim_on_too_few_questions() -> None:
    """Four questions that all rise: p = 1/16, above 0.05, so even a clean sweep is no claim."""
    v = tc.verdict(_rows([0.0] * 4, [1.0] * 4, [0.0] * 4))
    assert v["vs_a"]["p"] == v["vs_c"]["p"] == 1 / 16
    assert v["passed"] is False


def test_the_verdict_table_prints_the_verdict_it_computed() -> None:
    passing = [
        {"dataset": "d", "embedder": "hash", "mode": "rrf", **r} for r in _rows([0.2] * 10, [0.6] * 10, [0.3] * 10)
    ]
    failing = [{**r, "dataset": "e"} for r in passing[:4]]
    table = tc.verdict_table(passing + failing)
    row = {line.split("|")[1].strip(): line for line in table[2:]}
    assert row["d"].rstrip().endswith("| **pass** |") and "| 10 / 0 | 0.00098 |" in row["d"]
    assert row["e"].rstrip().endswith("| **no claim** |") and "| 4 / 0 | 0.062 |" in row["e"]


def _daily(start: str, days: int) -> list[datetime]:
    first = datetime.fromisoformat(start)
    return [first + timedelta(days=i, hours=12) for i in range(days)]


def test_a_wrong_cue_moves_the_period_off_the_evidence() -> None:
    cue = {"after": "2025-03-01", "before": "2025-03-31", "confidence": "likely"}
    now = datetime(2025, 9, 1, tzinfo=UTC)
    records = _daily("2025-01-01T00:00:00+00:00", 240)
    span = (records[0], records[-1])
    evidence = [datetime(2025, 3, 10, 15, tzinfo=UTC)]
    made = tc.wrong_cue(cue, now, span, evidence, records)
    assert made is not None
    wrong, shift = made
    assert shift == 120  # -120 days holds no record, +120 is the first that qualifies
    assert wrong["confidence"] == "likely"
    searched = tc.searched_period(wrong, now, span)
    assert not tc.holds(searched, evidence)
    assert tc.holds(searched, records)
    assert searched[1] <= now + timedelta(days=40)  # its own period ends before now; the margin may pass it


def test_no_wrong_cue_when_every_move_still_holds_the_evidence() -> None:
    cue = {"after": "2025-01-01", "before": "2025-12-31", "confidence": "vague"}
    now = datetime(2026, 1, 5, tzinfo=UTC)
    records = _daily("2025-01-01T00:00:00+00:00", 360)
    assert tc.wrong_cue(cue, now, (records[0], records[-1]), [datetime(2025, 6, 1, tzinfo=UTC)], records) is None


def test_wrong_cues_on_a_generated_store_hold_no_evidence_in_the_period_searched(tmp_path: Path) -> None:
    conversation = generate_long_span(seed=0, size="small")
    store = h.ConversationStore(conversation, h.new_embedder("hash"), "rrf", tmp_path)
    made = 0
    try:
        cued = [q for q in conversation.questions if extract_cue(q.text, q.asked_at)]
        for question in h.replay(store, cued, "asked"):
            cue = extract_cue(question.text, question.asked_at)
            now = datetime.fromisoformat(question.asked_at)
            gold = store.gold(question, with_episodes=True)
            evidence = [store.times[r] for r in gold]
            mems = [t for ref, t in store.times.items() if ref.startswith("mem:")]
            found = tc.wrong_cue(cue, now, store.memory_span(), evidence, mems)
            if found is None:
                continue
            made += 1
            response = store.ask(question, time_cue=found[0])
            summary = response["time_cue"]
            start, end = (datetime.fromisoformat(t) for t in summary["period"])
            assert not any(start <= t < end for t in evidence)  # the server searched a period without evidence
            assert "ignored" not in summary
    finally:
        store.close()
    assert made >= len(cued) // 2


def test_main_runs_end_to_end_on_tiny_data(tmp_path: Path) -> None:
    out = tmp_path / "results" / "time_cue.md"
    argv = study_argv(tmp_path, out)
    assert tc.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# The time-cue study\n\nCommand: `python -m benchmarks.time_cue --locomo")
    rule, setup, verdict = text.index("## The rule"), text.index("## Setup"), text.index("## Verdict")
    assert rule < setup < verdict  # the rule comes first, before any number
    assert not any(line.startswith("|") for line in text[rule:verdict].splitlines())
    assert set(re.findall(r"(?<!§)\b\d+\.\d+", text[rule:setup])) == {"0.05"}  # section marks aside
    assert out.with_suffix(".png").stat().st_size > 0
    questions = len(generate_long_span(seed=0, size="small").questions)
    line = next(row for row in text.splitlines() if row.startswith(f"| long-span-small | hash | rrf | {questions} |"))
    verdicts = text[verdict : text.index("Invariant check")].splitlines()
    assert line in verdicts
    for row in verdicts:
        if row.startswith("| ") and row.rstrip().endswith(("**pass** |", "**no claim** |")):
            assert_verdict_follows_the_rule(row)
    assert re.search(
        r"in 0 of \d+ cued recalls", text
    )  # docs/recall-process.md#invariants: the cue never changes the returned rows
    assert "## Wrong cues" in text


def assert_verdict_follows_the_rule(line: str) -> None:
    """A verdict row's label is what the rule gives for the figures the row prints: each p is the sign test of
    its rises and falls, and **pass** needs both p under ALPHA and (b)'s mean above (a)'s and (c)'s."""
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    mean_a, mean_b, mean_c = (float(x) for x in cells[4:7])
    for counts, printed in ((cells[7], cells[8]), (cells[9], cells[10])):
        rose, fell = (int(x) for x in counts.split(" / "))
        assert float(printed) == pytest.approx(stats.sign_test(rose, fell), rel=0.01, abs=5e-4)
    p_a, p_c = float(cells[8]), float(cells[10])
    if mean_b in (mean_a, mean_c):  # the means tie at three decimals: the rounded table cannot decide
        assert cells[11] in ("**pass**", "**no claim**")
        return
    expected = p_a < stats.ALPHA and p_c < stats.ALPHA and mean_b > mean_a and mean_b > mean_c
    assert cells[11] == ("**pass**" if expected else "**no claim**")

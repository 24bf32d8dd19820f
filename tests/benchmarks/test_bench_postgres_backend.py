"""benchmarks/postgres_backend.py: how a backend's answers are compared with SQLite's, and the report it writes."""

from __future__ import annotations

import argparse

from benchmarks import postgres_backend as pb
from benchmarks.postgres_backend import Timed


def run(answers: list[tuple[str, ...]], arm: list[list[str]], lists: list[dict[str, list[str]]]) -> Timed:
    return Timed(None, 5.0, [10.0, 12.0, 30.0], None, answers, arm, lists)


def test_agreement_counts_equal_answers_names_the_arms_that_differ_and_the_vector_arms_recall() -> None:
    exact = run(
        [("mem:1", "mem:2"), ("mem:3",), ("mem:4",)],
        [["mem:1", "mem:2", "mem:5", "mem:6"], ["mem:3"], ["mem:4"]],
        [{"memory_words": ["mem:1"], "vector_near": ["mem:1"]}, {"memory_words": ["mem:3"]}, {}],
    )
    other = run(
        [("mem:2", "mem:1"), ("mem:3",)],  # the second question only: fewer questions asked (the slow modes)
        [["mem:1", "mem:7", "mem:5", "mem:8"], ["mem:3"]],
        [{"memory_words": ["mem:2"], "vector_near": ["mem:1"]}, {"memory_words": ["mem:3"]}],
    )
    n, same, arms, at_10, at_depth = pb._agreement(exact, other)
    assert (n, same, arms) == (2, 1, "memory_words 1")  # one answer differs, and only its word arm
    assert at_10 == at_depth == (2 / 4 + 1) / 2  # mem:2 and mem:6 missed on the first; the second whole


def test_the_report_has_the_latency_rows_the_ratio_and_the_agreement_rows() -> None:
    latency = [
        [100_000, "sqlite", 66.6, 40.0, 15.0, 21.7, None],
        [100_000, "postgres (index)", 116.6, 1800.0, 27.0, 60.0, 20.6],
    ]
    agreement = [[100_000, "postgres (index)", 100, 63, "memory_words 37", 1.0, 1.0, 30]]
    text = pb.render(["--no-quality"], [], latency, agreement)
    assert "| 100,000 | postgres (index) | 116.6 | 1800.0 | 27.0 | 60.0 | 20.6 |" in text
    assert "takes 1.80x SQLite's p50" in text
    assert "| 100,000 | postgres (index) | 100 | 63 | memory_words 37 | 1.000 | 1.000 | 30 |" in text


def test_the_slow_modes_can_be_asked_fewer_questions() -> None:
    args = pb.parse_args(["--no-quality", "--sizes", "1000000", "--slow-queries", "30"])
    assert isinstance(args, argparse.Namespace) and args.slow_queries == 30 and args.queries == 100

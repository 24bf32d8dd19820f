"""benchmarks/stats.py: the exact sign tests, the rose/fell counts and the comparisons the studies judge by."""

from __future__ import annotations

import math

import pytest

from benchmarks import stats


def test_sign_test_on_known_cases() -> None:
    sign_test = stats.sign_test
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == 1 / 32
    assert sign_test(3, 0) == 0.125
    assert sign_test(0, 4) == 1.0
    assert sign_test(1, 1) == 0.75
    assert sign_test(10, 2) == pytest.approx(79 / 4096)
    assert sign_test(8, 5) == pytest.approx(2380 / 8192)
    # P(X >= 7) + P(X >= 7 of the other side) + P(X = 6) = 1 for n = 13
    assert sign_test(7, 6) + sign_test(7, 6) == pytest.approx(1.0)
    assert sign_test(6, 7) == pytest.approx(sign_test(7, 6) + math.comb(13, 6) / 2**13)
    assert sign_test(1029, 0) == 2.0**-1029
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_the_two_sided_sign_test_is_exact() -> None:
    assert stats.two_sided_sign_test(0, 0) == 1.0
    assert stats.two_sided_sign_test(5, 0) == pytest.approx(2 / 32)
    assert stats.two_sided_sign_test(3, 3) == 1.0


def test_rose_fell_and_a_comparison_of_paired_scores() -> None:
    assert stats.rose_fell([0.5, 0.2, 0.3], [0.4, 0.2, 0.6]) == (1, 1, 1)
    t = stats.compare([1.0] * 6, [0.0] * 6)
    assert (t["rose"], t["fell"], t["tied"]) == (6, 0, 0) and t["p"] == 1 / 64 and t["p_fell"] == 1.0
    assert stats.beats(t) and not stats.beaten(t)
    rows = [{"ndcg:on": 0.0, "ndcg:off": 1.0}] * 6
    assert stats.beaten(stats.compare_rows(rows, "on", "off", lambda v: f"ndcg:{v}"))


def test_a_comparison_prints_as_the_reports_print_it() -> None:
    t = {"rose": 3, "fell": 1, "p": 0.3125, "p_fell": 0.9375}
    assert stats.rose_fell_text(t) == "3 / 1 (p 0.312)"
    assert stats.rose_fell_text(t, fell_p=True) == "3 / 1 (p 0.312; p fell 0.938)"
    assert stats.p_text(0.0001234) == "0.00012"


def test_distinct_session_recall_counts_sessions_not_rows() -> None:
    from benchmarks.harness import distinct_session_recall, session_recall

    rows = [1, 1, 1, None, 2, 2, 3, 4, 9]  # five rows name only sessions 1 and 2; the fifth distinct session is 9
    assert session_recall(rows, [9], 5) == 0.0
    assert distinct_session_recall(rows, [9], 5) == 1.0
    assert distinct_session_recall(rows, [9], 4) == 0.0
    assert distinct_session_recall(rows, [], 5) == 0.0

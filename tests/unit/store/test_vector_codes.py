"""vector-codes-v2 (store/index/vector_codes.py): the index holds int8 codes, and every vector arm returns what an
exact float32 scan returns: the same rows, scores and order, reading stored vectors only for rows near the cut."""

from __future__ import annotations

import contextlib
import sys
import threading
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import Scope
from cuedrecall.store.index import vector_codes
from cuedrecall.store.index.vector_codes import (
    approximate,
    candidates,
    error_bound,
    exact_scores,
    int8_dots,
    pick,
    quantize,
    round_query,
)
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex

AGENTS = ("a", "b")


@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.floats(1e-3, 1e3))
def test_the_band_bounds_the_codes_error_for_any_query(seed: int, dim: int, magnitude: float) -> None:
    rng = np.random.default_rng(seed)
    vectors = (rng.standard_normal((20, dim)) * magnitude).astype(np.float32)
    vectors[0, rng.integers(dim)] *= 50  # one dominant dimension: the coarsest scale
    query = rng.standard_normal(dim).astype(np.float32)
    codes, scale, band, reach = quantize(vectors)
    exact = vectors.astype(np.float64) @ query.astype(np.float64)
    rounded = round_query(query)
    error = np.abs(exact - approximate(codes, scale, rounded))
    bound = error_bound(band, reach, rounded)
    assert (error <= bound).all()
    ordinary = bound[1:] / (np.linalg.norm(vectors[1:], axis=1) * np.linalg.norm(query))
    assert (ordinary < 0.05).all()  # tight enough to prune: a few hundredths of the product's largest value


def test_a_vector_with_a_non_finite_value_is_always_scored_exactly() -> None:
    codes, _scale, band, _reach = quantize(np.array([[np.nan, 1.0], [0.5, 0.5]], dtype=np.float32))
    assert band[0] == np.inf and not codes[0].any() and np.isfinite(band[1])


def _exact_scan(
    vectors: np.ndarray,
    agents: list[str],
    agent: str,
    query: np.ndarray,
    floor: float,
    depth: int,
    positions: tuple[int, int | None],
) -> list[tuple[int, float, int]]:
    """The rule the index keeps: the scope's rows newest first, sliced, best ``depth`` by score >= floor, ties to
    the earlier position."""
    rows = [i for i in range(len(vectors)) if agents[i] == agent][::-1][positions[0] : positions[1]]
    start = positions[0]
    scored = [(float(vectors[i] @ query), start + p, i + 1) for p, i in enumerate(rows)]
    kept = sorted((s for s in scored if s[0] >= floor), key=lambda s: (-s[0], s[1]))[:depth]
    return [(row_id, score, position) for score, position, row_id in kept]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 300),
    st.integers(1, 40),
    st.sampled_from([-2.0, -0.1, 0.0, 0.2]),
    st.integers(0, 30),
    st.sampled_from([None, 5, 60]),
    st.booleans(),
)
def test_search_returns_the_exact_scans_rows_scores_and_order(
    seed: int, count: int, depth: int, floor: float, start: int, stop: int | None, large: bool
) -> None:
    """``large``: the rules of a large slice fire at any size (the shortlist, the int8 pass in two halves)."""
    rng = np.random.default_rng(seed)
    # eighths in [-1, 1]: every product is exact in float32, so the scan and the index agree to the bit, and
    # repeated rows make ties that only the position can break
    vectors = (rng.integers(-8, 9, size=(count, 16)) / 8).astype(np.float32)
    vectors[rng.integers(count, size=count // 3)] = vectors[0]
    agents = [AGENTS[i] for i in rng.integers(2, size=count)]
    index = VectorIndex(lambda ids: {i: vectors[i - 1] for i in ids})
    for i, (vector, agent) in enumerate(zip(vectors, agents), 1):
        index.add(IndexRow(i, vector, agent, "", "", "", float(i)))
    query = (rng.integers(-8, 9, size=16) / 8).astype(np.float32)
    sizes = mock.patch.multiple(vector_codes, SHORTLIST_ROWS=1, SPLIT_ROWS=2) if large else contextlib.nullcontext()
    with sizes:
        for agent in AGENTS:
            found = index.search(Scope(agent), query, floor=floor, depth=depth, positions=(start, stop))
            assert found == _exact_scan(vectors, agents, agent, query, floor, depth, (start, stop))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.sampled_from([-1.0, 0.0, 0.1]))
def test_the_shortlist_keeps_every_candidate_of_the_whole_slice(seed: int, depth: int, floor: float) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((6_000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[rng.integers(6_000)] + 0.3 * rng.standard_normal(64).astype(np.float32)
    codes, scale, band, reach = quantize(vectors)
    rounded = round_query(query)
    approx = approximate(codes, scale, rounded)
    slack = error_bound(band, reach, rounded)
    read: list[int] = []

    def slack_of(rows: np.ndarray) -> np.ndarray:
        read.append(rows.size)
        return slack[rows]

    with mock.patch.object(vector_codes, "SHORTLIST_ROWS", 1_000):
        found = pick(approx, slack_of, float(slack.max()), floor, depth)
    assert set(found.tolist()) >= set(candidates(approx, slack, floor, depth).tolist())
    assert read[0] < 6_000  # the shortlist was taken: its slacks were all that was read
    assert len(read) == 1  # and it held: no second pass over every row


def test_the_int8_pass_in_two_halves_gives_the_same_values() -> None:
    rng = np.random.default_rng(5)
    codes = rng.integers(-127, 128, size=(1_001, 384), dtype=np.int8)
    query = rng.integers(-127, 128, size=384, dtype=np.int8)
    whole = int8_dots(codes, query)
    with mock.patch.object(vector_codes, "SPLIT_ROWS", 2):
        halves = int8_dots(codes, query)
    assert np.array_equal(whole, halves)
    assert np.array_equal(whole, (codes.astype(np.int64) @ query.astype(np.int64)).astype(np.float32))


def test_a_write_or_removal_renews_the_scopes_kept_rows() -> None:
    vectors = {i: np.eye(8, dtype=np.float32)[i % 8] for i in range(1, 40)}
    index = VectorIndex(lambda ids: {i: vectors[i] for i in ids})
    for i in range(1, 30):
        index.add(IndexRow(i, vectors[i], "a", "", "", "", float(i)))
    query = np.eye(8, dtype=np.float32)[3]
    assert [row_id for row_id, _, _ in index.search(Scope("a"), query, floor=0.5, depth=10)] == [27, 19, 11, 3]
    index.add(IndexRow(35, vectors[35], "a", "", "", "", 35.0))
    assert next(row_id for row_id, _, _ in index.search(Scope("a"), query, floor=0.5, depth=10)) == 35
    index.replace(IndexRow(35, vectors[35], "b", "", "", "", 35.0))  # moved to another agent
    assert next(row_id for row_id, _, _ in index.search(Scope("a"), query, floor=0.5, depth=10)) == 27
    index.remove(27)
    assert [row_id for row_id, _, _ in index.search(Scope("a"), query, floor=0.5, depth=10)] == [19, 11, 3]


def _counting_index(rng: np.random.Generator, count: int) -> tuple[np.ndarray, VectorIndex, list[int]]:
    """``count`` random unit vectors of agent "a" (ids from 1), their index, and the ids it reads stored vectors of."""
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    asked: list[int] = []

    def stored(ids: list[int]) -> dict[int, np.ndarray]:
        asked.extend(ids)
        return {i: vectors[i - 1] for i in ids}

    index = VectorIndex(stored, capacity=count)
    index.extend(IndexRow(i, vector, "a", "", "", "", float(i)) for i, vector in enumerate(vectors, 1))
    return vectors, index, asked


def test_an_arm_reads_stored_vectors_only_near_its_cut() -> None:
    vectors, index, asked = _counting_index(np.random.default_rng(3), 5_000)
    query = vectors[17] + 0.5 * vectors[4_000]
    found = index.search(Scope("a"), query / np.linalg.norm(query), floor=0.0, depth=10)
    assert [row_id for row_id, _, _ in found][:2] == [18, 4_001]
    assert len(asked) < 100  # of 5,000 rows: the ten and the few whose band reaches the tenth's score


def test_the_candidates_met_by_the_unrounded_query_are_fewer_than_the_int8_pass_keeps() -> None:
    rng = np.random.default_rng(11)
    vectors, index, asked = _counting_index(rng, 20_000)
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    found = index.search(Scope("a"), query, floor=-1.0, depth=100)
    codes, scale, band, reach = quantize(vectors)
    rounded = round_query(query)
    kept = candidates(approximate(codes, scale, rounded), error_bound(band, reach, rounded), -1.0, 100)
    assert len(found) == 100 and len(asked) < kept.size


def test_the_index_holds_a_384_wide_row_in_under_a_third_of_its_float32_size() -> None:
    index = VectorIndex(lambda ids: {}, capacity=1_000)
    for i in range(1, 1_001):
        index.add(IndexRow(i, np.full(384, 0.05, dtype=np.float32), "a", "", "", "", float(i)))
    held = sum(getattr(index, name).nbytes for name in ("_ids", "_codes", "_scale", "_band", "_reach", "_bits", "_ts"))
    assert held / 1_000 < 384 * 4 / 3


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 700))
def test_a_rows_exact_score_is_the_same_whatever_else_is_scored(seed: int, count: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    together = exact_scores(list(vectors), query)
    alone = np.array([exact_scores([vector], query)[0] for vector in vectors[: min(count, 40)]])
    assert np.array_equal(together[: alone.shape[0]], alone)  # bit for bit, batch of one or of hundreds


def test_recalls_searching_at_once_get_what_each_would_alone() -> None:
    rng = np.random.default_rng(8)
    agents = [f"agent-{i}" for i in range(7)]  # more scopes than the index keeps: the kept ones turn over
    vectors = rng.standard_normal((700, 32)).astype(np.float32)
    index = VectorIndex(lambda ids: {i: vectors[i - 1] for i in ids})
    for i, vector in enumerate(vectors, 1):
        index.add(IndexRow(i, vector, agents[i % len(agents)], "", "", "", float(i)))
    queries = rng.standard_normal((len(agents), 32)).astype(np.float32)
    alone = [index.search(Scope(agent), query, floor=-1.0, depth=5) for agent, query in zip(agents, queries)]
    failures: list[BaseException] = []

    def search_all(offset: int) -> None:
        try:
            for step in range(300):
                k = (step + offset) % len(agents)
                assert index.search(Scope(agents[k]), queries[k], floor=-1.0, depth=5) == alone[k]
        except BaseException as error:  # reported by the test's own thread
            failures.append(error)

    threads = [threading.Thread(target=search_all, args=(offset,)) for offset in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change places between almost any two steps
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "replace", "remove", "insert", "read"]), st.integers(0, 10**6))))
def test_a_scopes_kept_rows_are_always_its_rows_now(steps: list[tuple[str, int]]) -> None:
    """Appends extend the kept rows; a rewrite, a move or a removal makes them again: either way a search reads
    exactly the rows the scope holds at that moment."""
    index = VectorIndex(lambda ids: {})
    vector = np.ones(4, dtype=np.float32)
    next_id, paths = 1_000, set()
    for op, draw in [("add", 0), ("read", 0), *steps, ("read", 0)]:
        ids = index._ids[: len(index)].tolist()
        agent = AGENTS[draw % 2]
        if op == "add":
            next_id += 1 + draw % 3
            index.add(IndexRow(next_id, vector, agent, "", "", "", 0.0))
        elif op == "replace" and ids:
            index.replace(IndexRow(ids[draw % len(ids)], vector, agent, "", "", "", 0.0))
        elif op == "remove" and ids:
            index.remove(ids[draw % len(ids)])
        elif op == "insert" and ids and ids[0] > 1:
            index.insert([IndexRow(ids[0] - 1, vector, agent, "", "", "", 0.0)])  # below the newest: rows move
        for name in AGENTS:
            kept = index._kept.get(Scope(name))
            if kept is not None and kept[0] == index._writes:
                paths.add("extended" if kept[1] < len(index) else "kept")
            rows = index.scope_rows(Scope(name))
            assert rows.tolist() == np.flatnonzero(index.scope_mask(Scope(name))).tolist()
    assert steps == [] or paths  # the kept rows were reused or extended, not only made afresh

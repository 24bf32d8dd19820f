"""The vectors file (store/index/exact_file.py): a vector arm re-scores from the index's own copy of the stored
vectors and returns exactly what reading the store gives, through any writes, compaction, or a refused disk
(docs/storage.md#sqlite-the-default)."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.index import exact_file, vector_index
from cuedrecall.store.index.exact_file import PREFIX, ExactFile, open_exact_file
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex, window_cosines
from tests.conftest import open_memory

DIM = 16
AGENTS = ("a", "b")


def test_rows_read_back_as_written_and_the_file_leaves_no_name(tmp_path: Path) -> None:
    file = open_exact_file(str(tmp_path), DIM)
    assert file is not None
    assert not [name for name in os.listdir(tmp_path) if name.startswith(PREFIX)]  # unlinked once open
    rows = np.random.default_rng(1).standard_normal((5, DIM)).astype(np.float32)
    assert file.append(rows[:3]).tolist() == [0, 1, 2]
    assert file.append(rows[3:]).tolist() == [3, 4]
    assert np.array_equal(file.read(np.array([4, 0, 2])), rows[[4, 0, 2]])
    assert file.read(np.zeros(0, dtype=np.int64)).shape == (0, DIM)
    with pytest.raises(IndexError):
        file.read(np.array([5]))  # never written: not read as zeros
    file.close()


@settings(max_examples=80, deadline=None)
@given(
    written=st.integers(1, 40),
    asked=st.lists(st.integers(0, 39), max_size=60),
    chunked=st.booleans(),
)
def test_any_slots_in_any_order_read_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, written: int, asked: list[int], chunked: bool
) -> None:
    """Runs of neighbouring slots are read by one call each; the rows still come back in the order asked, repeats
    included, and a short read (as a pipe or a signal may give) is finished, not taken for the end."""
    file = open_exact_file(str(tmp_path_factory.mktemp("slots")), DIM)
    assert file is not None
    rows = np.random.default_rng(written).standard_normal((written, DIM)).astype(np.float32)
    file.append(rows)
    slots = np.array([slot % written for slot in asked], dtype=np.int64)
    runs = int((np.diff(np.sort(slots)) != 1).sum()) + 1 if slots.size else 0
    event(f"fewer reads than rows: {0 < runs < slots.size}")
    real = os.preadv
    calls: list[int] = []

    def short(fd: int, buffers: list[memoryview], offset: int) -> int:  # at most 7 bytes a call when chunked
        calls.append(offset)
        return real(fd, [buffers[0][:7]] if chunked else buffers, offset)

    with mock.patch.object(exact_file.os, "preadv", short):
        read = file.read(slots)
    np.testing.assert_array_equal(read, rows[slots])
    if not chunked:
        assert len(calls) == runs


def test_no_file_without_a_directory_or_on_a_platform_without_positional_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert open_exact_file(None, DIM) is None  # an in-memory database
    assert open_exact_file(str(tmp_path / "missing"), DIM) is None  # a directory that refuses it
    monkeypatch.delattr(exact_file.os, "preadv")  # Windows has none
    assert open_exact_file(str(tmp_path), DIM) is None


def _stored(truth: dict[int, np.ndarray], asked: list[int]) -> vector_index.ExactVectors:
    def read(ids: list[int]) -> dict[int, np.ndarray]:
        asked.extend(ids)
        return {i: truth[i] for i in ids if i in truth}

    return read


def _answers(index: VectorIndex, query: np.ndarray) -> list[list[tuple[int, float, int]]]:
    found = [index.search(Scope(agent), query, floor=-1.0, depth=7) for agent in AGENTS]
    for agent, rows in zip(AGENTS, found):  # the outlier bar's scores: the search's, value for value, in order
        indexes = {MEMORY: index, EPISODE: VectorIndex(lambda ids: {})}  # no episodes: the memories' scores alone
        cosines = window_cosines(indexes, Scope(agent), query, floor=-1.0, depth=7, window=len(index))
        assert cosines.tolist() == [score for _, score, _ in rows]
    return found


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(
        st.tuples(st.sampled_from(["add", "replace", "replace", "remove", "insert", "search"]), st.integers(0, 10**6)),
        min_size=4,
        max_size=60,
    ),
)
def test_the_file_and_the_store_give_the_same_rows_scores_and_order(
    tmp_path_factory: pytest.TempPathFactory, seed: int, steps: list[tuple[str, int]]
) -> None:
    """Two indexes take the same writes, one re-scoring from its file and one from the store's rows: every
    search answers the same, bit for bit, and the file's garbage is compacted away."""
    rng = np.random.default_rng(seed)
    directory = str(tmp_path_factory.mktemp("spill"))
    truth: dict[int, np.ndarray] = {}
    asked_file: list[int] = []
    asked_store: list[int] = []
    filed = VectorIndex(_stored(truth, asked_file), spill=directory)
    plain = VectorIndex(_stored(truth, asked_store))
    next_id = 1_000
    files = set()

    def row(row_id: int, draw: int) -> IndexRow:
        truth[row_id] = rng.standard_normal(DIM).astype(np.float32)
        return IndexRow(row_id, truth[row_id], AGENTS[draw % 2], "", "", "", float(row_id))

    with mock.patch.object(vector_index, "_GARBAGE_ROWS", 8):
        for op, draw in [("add", 0), ("add", 1), *steps, ("search", 0)]:
            ids = filed._ids[: len(filed)].tolist()
            if op == "add":
                next_id += 1 + draw % 3
                new = row(next_id, draw)
                filed.add(new)
                plain.add(new)
            elif op == "replace" and ids:
                new = row(ids[draw % len(ids)], draw)
                filed.replace(new)
                plain.replace(new)
            elif op == "remove" and ids:
                gone = ids[draw % len(ids)]
                truth.pop(gone)
                filed.remove(gone)
                plain.remove(gone)
            elif op == "insert" and ids and ids[0] > 1:
                new = row(ids[0] - 1, draw)  # below the newest: the rows after it move
                filed.insert([new])
                plain.insert([new])
            query = rng.standard_normal(DIM).astype(np.float32)
            assert _answers(filed, query) == _answers(plain, query)
            file = filed._file
            assert file is not None
            assert file.slots <= 2 * len(filed) + 8  # garbage never outgrows the live rows by more than the margin
            files.add(id(file))
    assert asked_file == []  # every exact score came from the file
    event("compacted" if len(files) > 1 else "not compacted")


def test_rewriting_rows_again_and_again_compacts_the_file_and_keeps_the_answers(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    truth = {i: rng.standard_normal(DIM).astype(np.float32) for i in range(1, 6)}
    index = VectorIndex(_stored(truth, []), spill=str(tmp_path))
    plain = VectorIndex(_stored(truth, []))
    for index_ in (index, plain):
        index_.extend(IndexRow(i, truth[i], "a", "", "", "", float(i)) for i in truth)
    first = index._file
    with mock.patch.object(vector_index, "_GARBAGE_ROWS", 4):
        for step in range(40):  # a re-embedding, eight times over
            row_id = 1 + step % 5
            truth[row_id] = rng.standard_normal(DIM).astype(np.float32)
            for index_ in (index, plain):
                index_.replace(IndexRow(row_id, truth[row_id], "a", "", "", "", float(row_id)))
    assert index._file is not None and index._file is not first and index._file.slots <= 2 * 5 + 4
    query = rng.standard_normal(DIM).astype(np.float32)
    assert _answers(index, query) == _answers(plain, query)


def test_a_disk_that_refuses_a_write_retires_the_file_and_the_store_answers(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    truth = {i: rng.standard_normal(DIM).astype(np.float32) for i in range(1, 41)}
    asked: list[int] = []
    index = VectorIndex(_stored(truth, asked), spill=str(tmp_path))
    plain = VectorIndex(_stored(truth, []))
    rows = [IndexRow(i, truth[i], "a", "", "", "", float(i)) for i in truth]
    index.extend(rows[:20])
    plain.extend(rows)
    with mock.patch.object(ExactFile, "append", side_effect=OSError(28, "No space left on device")):
        index.extend(rows[20:])
    assert index._file is None
    query = rng.standard_normal(DIM).astype(np.float32)
    assert _answers(index, query) == _answers(plain, query)
    assert asked  # the store's rows answered


def test_a_failed_read_falls_back_to_the_store_for_that_search(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    truth = {i: rng.standard_normal(DIM).astype(np.float32) for i in range(1, 31)}
    asked: list[int] = []
    index = VectorIndex(_stored(truth, asked), spill=str(tmp_path))
    index.extend(IndexRow(i, truth[i], "a", "", "", "", float(i)) for i in truth)
    query = rng.standard_normal(DIM).astype(np.float32)
    before = _answers(index, query)
    assert asked == []
    with mock.patch.object(ExactFile, "read", side_effect=OSError(5, "Input/output error")):
        assert _answers(index, query) == before
    assert asked and index._file is not None  # a search never retires the file: a write may be reading it


@pytest.mark.sqlite_only
def test_a_store_on_a_file_recalls_what_the_same_store_in_memory_recalls(tmp_path: Path) -> None:
    """The shipped configuration: a database file gets a vectors file, and its recalls equal an in-memory
    store's (which reads the rows), scores and all."""
    texts = [
        f"note {i}: the {['ferry', 'garden', 'invoice', 'violin'][i % 4]} plan for week {i % 9}" for i in range(60)
    ]
    answers = []
    for path in (tmp_path / "m.db", ":memory:"):
        with open_memory(path) as memory:
            for text in texts:
                assert memory.store(agent_id="a", content=text)["ok"]
            file = memory.store_._indexes[MEMORY]._file
            assert (file is not None) == (path != ":memory:")
            answers.append([memory.recall(agent_id="a", query=q, limit=8) for q in ("ferry plan", "violin week 3")])
    assert answers[0] == answers[1] and answers[0][0]["messages"]

"""store/index/mapped.py: the index's codes live in an unlinked file mapped shared. Nothing is left on disk, no
descriptor stays open, ``release`` gives back resident pages without losing a byte, and a directory where no file
can be made falls back to memory; a store answers the same with its codes mapped or in memory."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pytest

from cuedrecall.store.base import Scope
from cuedrecall.store.index import mapped
from cuedrecall.store.index.mapped import PREFIX, copy_rows, mapped_zeros, release
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex


def _resident_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_mapped_array_leaves_no_file_and_holds_one_descriptor_while_it_lives(tmp_path: Path) -> None:
    descriptors = len(os.listdir("/proc/self/fd"))
    arrays = [mapped_zeros((100, 384), np.int8, str(tmp_path)) for _ in range(50)]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(PREFIX)]
    assert len(os.listdir("/proc/self/fd")) <= descriptors + 50  # the mapping's own (Python's mmap keeps one)
    assert all(not array.any() for array in arrays)  # zeroed, as np.zeros
    del arrays
    assert len(os.listdir("/proc/self/fd")) == descriptors


def test_release_gives_back_resident_pages_and_keeps_every_value(tmp_path: Path) -> None:
    array = mapped_zeros((64 * 1024, 1024), np.int8, str(tmp_path))  # 64 MiB
    rng = np.random.default_rng(1)
    array[:] = rng.integers(-127, 128, size=array.shape, dtype=np.int8)
    checksum = int(array.sum(dtype=np.int64))
    before = _resident_kib()
    release(array)
    assert before - _resident_kib() > 48 * 1024  # most of the 64 MiB is no longer resident
    assert int(array.sum(dtype=np.int64)) == checksum  # read back from the file


def test_a_directory_where_no_file_can_be_made_falls_back_to_memory(tmp_path: Path) -> None:
    array = mapped_zeros((10, 4), np.int8, str(tmp_path / "missing"))
    array[3] = 7
    release(array)  # nothing to give back: an anonymous array
    assert array[3].tolist() == [7, 7, 7, 7] and isinstance(array.base, (np.ndarray, type(None)))


def test_an_index_with_mapped_codes_answers_as_one_in_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3_000, 64)).astype(np.float32)

    def stored(ids: list[int]) -> dict[int, np.ndarray]:
        return {i: vectors[i - 1] for i in ids}

    mapped, in_memory = VectorIndex(stored, spill=str(tmp_path)), VectorIndex(stored)
    for index in (mapped, in_memory):
        index.extend(
            IndexRow(i, vector, "a" if i % 4 else "b", "", "", "", float(i)) for i, vector in enumerate(vectors, 1)
        )
        for row_id in range(5, 3_000, 97):
            index.remove(row_id)  # rows moved, pages released
    for query in rng.standard_normal((5, 64)).astype(np.float32):
        for scope in (Scope("a"), Scope("b")):
            assert mapped.search(scope, query, floor=-1.0, depth=20) == in_memory.search(
                scope, query, floor=-1.0, depth=20
            )
            assert mapped.coarse(scope, query, start=50, count=10) == in_memory.coarse(scope, query, start=50, count=10)


def test_a_chunked_copy_moves_the_same_rows_as_a_plain_one(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    source = mapped_zeros((10_000, 8), np.int8, str(tmp_path))
    source[:] = rng.integers(-127, 128, size=source.shape, dtype=np.int8)
    keep = rng.random(9_000) < 0.3
    grown, compacted = (mapped_zeros((20_000, 8), np.int8, str(tmp_path)) for _ in range(2))
    assert copy_rows(grown, source, 9_000) == 9_000
    assert (grown[:9_000] == source[:9_000]).all() and not grown[9_000:].any()
    assert copy_rows(compacted, source, 9_000, keep) == int(keep.sum())
    assert (compacted[: int(keep.sum())] == source[:9_000][keep]).all()


def test_a_platform_without_posix_fallocate_holds_the_codes_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has no posix_fallocate: the array is an ordinary one and the store still opens and searches."""
    monkeypatch.delattr(mapped.os, "posix_fallocate")
    array = mapped_zeros((10, 384), np.int8, str(tmp_path))
    assert array.base is None or not isinstance(array.base, mmap.mmap)
    assert not [name for name in os.listdir(tmp_path) if name.startswith(PREFIX)]  # the made file is unlinked
    index = VectorIndex(lambda ids: {}, spill=str(tmp_path))
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    index.add(IndexRow(1, vector, "a", "", "", "", 0.0))
    assert [row_id for row_id, _, _ in index.search(Scope("a"), vector, floor=0.5, depth=1)] == [1]

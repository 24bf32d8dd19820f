"""The block arm's scan against approximate-nearest-neighbour libraries: recall, build, memory, file, query time.

    python -m benchmarks.ann_candidates --locomo PATH/TO/locomo10-dev.json --sizes 100000 1000000

Vectors: the block rows the realistic speed store holds (``benchmarks/realistic.py``'s
memory texts in order, each divided as the builder divides it, a record of fewer than
two blocks contributing none), hash-embedded and quantised as the builder quantises
(``handlers.blocks.quantise``: int8 codes, each row's largest component at ±127, and
sign bits); the first N block rows. Queries: the realistic questions (LoCoMo's and
long-span's), hash-embedded. Built once per size and cached under
``benchmarks/.cache/ann/`` with the exact answers and every index file.

The truth is the exact scan the arm approximates: every row's cosine between its
int8 code and the query, the best ``DEPTH`` rows (the arm's ``rerank``), collapsed to
records (a record's score is its best block's). Each candidate gives up to ``DEPTH``
rows, scored exactly from their codes and collapsed the same way. recall@10: of the
truth's 10 best records, how many the candidate's 10 best reach (a record whose exact
score ties the 10th counts); recall@depth: the same over every record of the truth's
``DEPTH`` rows. Means over the queries, and the worst query.

Candidates (each in its own process: its memory is its own):

- ``current``: ``BlockIndex`` as shipped (sign-bit Hamming over the first ``examine``
  rows in key order, the best ``DEPTH`` re-ranked by int8 cosine); codes in a mapped
  file, as the store keeps them; rebuilt from the rows at every open (no file).
- ``exact``: the exact int8 scan itself (numpy, 1,024-row float32 chunks), codes mapped.
- ``usearch``: HNSW over the int8 codes, cosine (its i8 cosine is the exact one),
  library defaults (connectivity 16, expansion_add 128); served from its file mapped
  (``Index.restore(view=True)``); the query as int8; expansion_search swept.
- ``faiss-hnsw-sq8``: ``IndexHNSWSQ`` (8-bit scalar quantiser, M 32), inner product over
  the unit codes; efSearch swept. faiss's HNSW cannot remove a vector.
- ``faiss-ivf-sq8``: ``IndexIVFScalarQuantizer`` (4·sqrt(N) lists, 8-bit), nprobe swept;
  it can remove vectors.
- ``sqlite-vec``: a ``vec0`` table of int8[384] with cosine distance, its KNN query (an
  exact brute-force scan inside SQLite). The project's CPython here is built without
  ``enable_load_extension``; the worker then runs under /usr/bin/python3 (no numpy).

Memory vector sets (``--vectors memories memories-local``): the vector arm's rows instead of the
block arm's, one row per memory (``realistic.texts``, each its own record), hash-embedded or
embedded with the packaged model (``local``: the model users run at the defaults, whose
neighbours are by meaning; 280 texts a second here, so built to 100,000 only), quantised
the same way; queries embedded by the same model. The vector arm scans every memory of the
scope: these rows say whether an approximate index could replace that scan.

Every candidate's rows are re-scored exactly from the codes before collapsing (part of its
query time). Builds use 2 threads (the machine's 2 shared cores), queries 1.
Writes ``benchmarks/results/ann-candidates.md`` (``--out``) with the command at the top.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import argparse
import json
import math
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".cache" / "ann"
RESULTS = HERE / "results"
DIM = 384
DEPTH = 200  # the block arm's rerank: the rows it asks for (store/sqlite/blocks.py block_arm)
EXAMINE = 250_000  # the block arm's examine default before issue 29
SIGN_BITS_REV = "dafead4~1"  # the last commit whose block arm is the sign-bit scan
PER_RECORD = 64
ID_SHIFT = 16  # key = record << 16 | block, as the block index's sort key
BUILD_THREADS = 2
QUERIES = 150
CANDIDATES = (
    "current",
    "chosen",
    "exact",
    "exact-numkong",
    "exact-distinct",
    "vector-index",
    "usearch",
    "usearch-m32",
    "faiss-hnsw-sq8",
    "faiss-ivf-sq8",
    "sqlite-vec",
)
SWEEPS = {
    "usearch": [256, 512, 1024, 2048],  # below DEPTH the library searches with DEPTH
    "usearch-m32": [256, 512, 1024, 2048],
    "faiss-hnsw-sq8": [256, 512, 1024, 2048],
    "faiss-ivf-sq8": [16, 32, 64, 128],
}
EPS = 1e-5  # score slack of a tie (float32 sums of 384 products)
VECTOR_SETS = ("realistic", "random", "memories", "memories-local")
MEMORY_SETS = {"memories": "hash", "memories-local": "local"}  # the memory vector sets and their embedders
# built only up to this size: usearch-m32's 100k build took 613 s on 2 shared cores (about ten times that at 1M)
SMALL_ONLY = {"usearch-m32": 100_000}
SET = "realistic"  # the vector set this process measures (main and the workers set it from --vectors)


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


# -- the vectors ---------------------------------------------------------------------------------------


def _paths(n: int) -> dict[str, Path]:
    return {name: CACHE / f"blocks-{SET}-{n}-{name}.npy" for name in ("codes", "bits", "keys", "norms")}


def _cached_sizes(part: str) -> list[int]:
    """The sizes of this vector set held in the cache, smallest first."""
    prefix, suffix = f"blocks-{SET}-", f"-{part}.npy"
    sizes = (p.name[len(prefix) : -len(suffix)] for p in CACHE.glob(f"{prefix}*{suffix}"))
    return sorted(int(size) for size in sizes if size.isdigit())  # "memories-local-..." is not a size of "memories"


def corpus(locomo: Path, n: int) -> dict[str, np.ndarray]:
    """The first ``n`` block rows (codes, bits, keys, norms), mapped from the cache; built once for the largest size
    asked (smaller sizes are its prefix)."""
    cached = [size for size in _cached_sizes("keys") if size >= n]
    if not cached:
        if SET in MEMORY_SETS:
            _build_memories(locomo, n, MEMORY_SETS[SET])
        else:
            (_build_corpus if SET == "realistic" else _build_random)(locomo, n)
        cached = [n]
    paths = _paths(cached[0])
    return {name: np.load(path, mmap_mode="r")[:n] for name, path in paths.items()}


def _build_corpus(locomo: Path, n: int) -> None:
    from benchmarks import realistic
    from cuedrecall.embed.hashing import HashEmbedder
    from cuedrecall.text.blocks import divide

    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    memories = int(n / 2.0) + 1000  # about 2.3 blocks a memory on this text
    texts, keys = [], []
    for record, text in enumerate(realistic.texts(locomo, memories)):
        spans = divide(text)
        if len(spans) > 1:
            texts += [span.text(text) for span in spans]
            keys += [(record << ID_SHIFT) | block for block in range(len(spans))]
        if len(texts) >= n:
            break
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} block rows from {memories} memories; raise the estimate")
    _write_rows(texts[:n], np.asarray(keys[:n], dtype=np.int64), HashEmbedder())
    print(f"corpus: {n} block rows from {record + 1} memories in {time.perf_counter() - started:.1f} s", flush=True)


def _write_rows(texts: list[str], keys: np.ndarray, embedder: Any) -> None:
    """The rows of these texts (embedded, quantised as the builder quantises) and their keys, into the cache."""
    from cuedrecall.handlers.blocks import quantise

    n = len(texts)
    paths = _paths(n)
    codes = np.lib.format.open_memmap(paths["codes"], "w+", np.int8, (n, DIM))
    bits = np.lib.format.open_memmap(paths["bits"], "w+", np.uint8, (n, DIM // 8))
    for start in range(0, n, 8192):
        chunk_bits, chunk_codes = quantise(embedder.embed(texts[start : start + 8192]))
        codes[start : start + len(chunk_codes)] = chunk_codes
        bits[start : start + len(chunk_codes)] = chunk_bits
    norms = np.sqrt(np.einsum("ij,ij->i", codes.astype(np.float32), codes.astype(np.float32)))
    codes.flush()
    bits.flush()
    np.save(paths["norms"], norms.astype(np.float32))
    np.save(paths["keys"], keys)


def _embedder(embedding: str) -> Any:
    from cuedrecall.embed.hashing import HashEmbedder
    from cuedrecall.embed.models import local_embedder

    return HashEmbedder() if embedding == "hash" else local_embedder()


def _build_memories(locomo: Path, n: int, embedding: str) -> None:
    """The first ``n`` memory texts of the realistic corpus, one row each (its own record), embedded and quantised."""
    from benchmarks import realistic

    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    _write_rows(realistic.texts(locomo, n), np.arange(n, dtype=np.int64) << ID_SHIFT, _embedder(embedding))
    print(f"corpus: {n} memories ({embedding}) in {time.perf_counter() - started:.1f} s", flush=True)


def _build_random(locomo: Path, n: int) -> None:
    """Random-normal rows (no neighbourhood structure, no duplicates: the hard case), records of two blocks."""
    from cuedrecall.handlers.blocks import quantise

    CACHE.mkdir(parents=True, exist_ok=True)
    paths = _paths(n)
    codes = np.lib.format.open_memmap(paths["codes"], "w+", np.int8, (n, DIM))
    bits = np.lib.format.open_memmap(paths["bits"], "w+", np.uint8, (n, DIM // 8))
    rng = np.random.default_rng(1)
    for start in range(0, n, 65536):
        chunk_bits, chunk_codes = quantise(rng.standard_normal((min(65536, n - start), DIM), dtype=np.float32))
        codes[start : start + len(chunk_codes)] = chunk_codes
        bits[start : start + len(chunk_codes)] = chunk_bits
    norms = np.sqrt(np.einsum("ij,ij->i", codes.astype(np.float32), codes.astype(np.float32)))
    codes.flush()
    bits.flush()
    np.save(paths["norms"], norms.astype(np.float32))
    rows = np.arange(n, dtype=np.int64)
    np.save(paths["keys"], ((rows // 2) << ID_SHIFT) | (rows % 2))


def queries(locomo: Path) -> np.ndarray:
    path = CACHE / f"queries-{SET}-{QUERIES}.npy"
    if SET == "random" and not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, np.random.default_rng(2).standard_normal((QUERIES, DIM)).astype(np.float32))
    if not path.exists():
        from benchmarks import realistic
        from cuedrecall.embed.base import embed_queries

        CACHE.mkdir(parents=True, exist_ok=True)
        embedder = _embedder(MEMORY_SETS.get(SET, "hash"))
        np.save(path, embed_queries(embedder, realistic.questions(locomo, QUERIES)).astype(np.float32))
    return np.load(path)


def unit(query: np.ndarray) -> np.ndarray:
    return (query / (float(np.linalg.norm(query)) or 1.0)).astype(np.float32)


def exact_cosines(data: dict[str, np.ndarray], rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The exact cosine of these rows' codes with the query (what the arm re-ranks by)."""
    rows = np.asarray(rows, dtype=np.int64)
    return (data["codes"][rows].astype(np.float32) @ unit(query)) / np.maximum(data["norms"][rows], 1e-12)


def truth(data: dict[str, np.ndarray], qs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cosines) of the exact best DEPTH rows of each query, cached."""
    path = CACHE / f"truth-{SET}-{n}.npz"
    if path.exists():
        saved = np.load(path)
        return saved["rows"], saved["scores"]
    units = np.stack([unit(q) for q in qs]).T  # (DIM, queries)
    best_rows = np.zeros((len(qs), 0), dtype=np.int64)
    best_scores = np.full((len(qs), 0), -np.inf, dtype=np.float32)
    for start in range(0, n, 65536):
        block = data["codes"][start : start + 65536].astype(np.float32)
        scores = (block @ units) / np.maximum(data["norms"][start : start + 65536], 1e-12)[:, None]
        rows = np.concatenate(
            [best_rows, np.broadcast_to(np.arange(start, start + len(block)), (len(qs), len(block)))], 1
        )
        both = np.concatenate([best_scores, scores.T], 1)
        keep = np.argpartition(-both, DEPTH - 1, axis=1)[:, :DEPTH]
        best_rows, best_scores = np.take_along_axis(rows, keep, 1), np.take_along_axis(both, keep, 1)
    order = np.argsort(-best_scores, axis=1, kind="stable")
    best_rows, best_scores = np.take_along_axis(best_rows, order, 1), np.take_along_axis(best_scores, order, 1)
    np.savez(path, rows=best_rows, scores=best_scores)
    return best_rows, best_scores


def collapse(keys: np.ndarray, rows: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (any order) to records, best first: (record ids, each record's best score)."""
    order = np.argsort(-scores, kind="stable")
    records = keys[rows[order]] >> ID_SHIFT
    _, first = np.unique(records, return_index=True)
    first = np.sort(first)
    return records[first], scores[order][first]


def recall(true_scores: np.ndarray, got_scores: np.ndarray, k: int | None) -> float:
    """Tie-aware recall of records: how many of the candidate's first k reach the truth's k-th score."""
    want = len(true_scores) if k is None else min(k, len(true_scores))
    if want == 0:
        return 1.0
    bar = true_scores[want - 1] - EPS
    return min(1.0, float(np.sum(got_scores[:want] >= bar)) / want)


# -- the candidates (run in a worker process each) --------------------------------------------------------


def _index_path(name: str, n: int) -> Path:
    return CACHE / f"{name}-{SET}-{n}.index"


def _int8_query(query: np.ndarray) -> np.ndarray:
    peak = float(np.abs(query).max()) or 1.0
    return np.round(query * (127.0 / peak)).astype(np.int8)


def _unit_codes(data: dict[str, np.ndarray], start: int, stop: int) -> np.ndarray:
    return data["codes"][start:stop].astype(np.float32) / np.maximum(data["norms"][start:stop], 1e-12)[:, None]


class Candidate:
    """build() (timed, may write a file), open() (the serving form), search(query, setting) -> rows."""

    settings: ClassVar[list[Any]] = [None]
    file: Path | None = None

    def __init__(self, data: dict[str, np.ndarray], n: int) -> None:
        self.data, self.n = data, n

    def built(self) -> bool:
        return self.file is not None and self.file.exists()

    def build(self) -> None: ...

    def open(self) -> None: ...

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        """(record ids, exact scores) best first."""
        raise NotImplementedError

    def rescored(self, rows: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[rows >= 0]
        return collapse(self.data["keys"], rows, exact_cosines(self.data, rows, query))


def block_index_module(rev: str | None) -> Any:
    """``store/index/block_index.py`` as committed at ``rev`` (None: the working tree's), imported under its own
    name: the sign-bit scan before issue 29 beside the exact scan that replaced it."""
    import importlib
    import importlib.util

    if rev is None:
        return importlib.import_module("cuedrecall.store.index.block_index")
    source = subprocess.run(
        ["git", "show", f"{rev}:cuedrecall/store/index/block_index.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = CACHE / f"block_index_{rev.replace('~', '_')}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"block_index_{rev.replace('~', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


class Current(Candidate):
    """BlockIndex: built from the records at open, searched with the arm's defaults. ``REV``: the sign-bit scan as
    shipped before issue 29 (``SignBits``), or the working tree's (``Chosen``)."""

    REV: str | None = SIGN_BITS_REV
    EXAMINE = EXAMINE

    def build(self) -> None:
        module = block_index_module(self.REV)
        BlockIndex, RecordBlocks = module.BlockIndex, module.RecordBlocks

        self._spill = tempfile.mkdtemp(dir=CACHE)
        self.index = BlockIndex(spill=self._spill)
        keys = np.asarray(self.data["keys"])
        records = keys >> ID_SHIFT
        bounds = np.flatnonzero(np.diff(records)) + 1
        for count, (start, stop) in enumerate(zip([0, *bounds], [*bounds, len(keys)]), 1):
            self.index.add(
                RecordBlocks(
                    kind="mem",
                    record_id=int(records[start]),
                    model="hash-384",
                    blocks=keys[start:stop] & ((1 << ID_SHIFT) - 1),
                    bits=np.asarray(self.data["bits"][start:stop]),
                    codes=list(np.asarray(self.data["codes"][start:stop])),
                    agent_id="bench",
                    project_id="",
                    channel="",
                    source_id="",
                )
            )
            if count % 1024 == 0:
                self.index.settle()
        if hasattr(self.index, "fold"):
            self.index.fold()  # as the store's load does (store/sqlite/blocks.py)
        self.index.settle()
        shutil.rmtree(self._spill, ignore_errors=True)  # the files are unlinked once open

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        from cuedrecall.store.base import Scope

        found, _ = self.index.search(
            Scope("bench"), query, "hash-384", examine=self.EXAMINE, rerank=DEPTH, per_record=PER_RECORD
        )
        return np.array([f.record_id for f in found]), np.array([f.cosine for f in found], dtype=np.float32)


class Chosen(Current):
    """The exact scan over distinct codes as integrated (the working tree's BlockIndex; every row examined)."""

    REV = None
    EXAMINE = 1 << 62


class Exact(Candidate):
    """The exact int8 scan in numpy, codes mapped."""

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        q = unit(query)
        scores = np.empty(self.n, dtype=np.float32)
        codes = self.data["codes"]
        for start in range(0, self.n, 1024):
            np.matmul(codes[start : start + 1024].astype(np.float32), q, out=scores[start : start + 1024])
        scores /= self.data["norms"]
        rows = np.argpartition(-scores, DEPTH - 1)[:DEPTH]
        return collapse(self.data["keys"], rows, scores[rows])


def bounded_top(codes: np.ndarray, norms: np.ndarray, query: np.ndarray, depth: int) -> np.ndarray:
    """Positions of rows that may be among the ``depth`` best by exact cosine: every one that is.

    numkong's int8 dot products with the query rounded to int8 (q8, scale s); for a unit query q,
    |c.q - s(c.q8)| <= ||c|| ||q - s q8||, so each row's cosine lies within ``band`` of its approximation,
    and a row whose upper bound is below the depth-th best lower bound cannot be among the best."""
    import numkong as nk

    q = unit(query)
    scale = float(np.abs(q).max()) / 127 or 1.0
    q8 = np.round(q / scale).astype(np.int8)
    band = float(np.linalg.norm(q - scale * q8.astype(np.float32))) * (1 + 1e-4) + 1e-6
    approx = np.asarray(nk.cdist(q8[None, :], codes, metric="dot", out_dtype="float32"))[0]
    approx *= scale / np.maximum(norms, 1e-12)
    if approx.shape[0] <= depth:
        return np.arange(approx.shape[0])
    bar = np.partition(approx, approx.shape[0] - depth)[approx.shape[0] - depth] - band
    return np.flatnonzero(approx >= bar - band)


class ExactNumkong(Candidate):
    """The exact scan with numkong's int8 kernel: a bounded int8 pass, then the few rows near the cut re-scored."""

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        rows = bounded_top(self.data["codes"], self.data["norms"], query, DEPTH)
        scores = exact_cosines(self.data, rows, query)
        best = np.argsort(-scores, kind="stable")[:DEPTH]
        return collapse(self.data["keys"], rows[best], scores[best])


class ExactDistinct(Candidate):
    """The exact scan over distinct codes only (numkong, bounded as above), each code's rows reached after."""

    def build(self) -> None:
        codes = np.ascontiguousarray(self.data["codes"])
        _, first, inverse = np.unique(
            codes.view(np.dtype((np.void, DIM))).ravel(), return_index=True, return_inverse=True
        )
        self.distinct = np.ascontiguousarray(codes[first])
        self.distinct_norms = np.asarray(self.data["norms"])[first]
        self.order = np.argsort(inverse, kind="stable")  # rows grouped by code
        self.starts = np.searchsorted(inverse[self.order], np.arange(len(first) + 1))
        del codes

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        slots = bounded_top(self.distinct, self.distinct_norms, query, DEPTH)
        q = unit(query)
        scores = (self.distinct[slots].astype(np.float32) @ q) / np.maximum(self.distinct_norms[slots], 1e-12)
        ranked = slots[np.argsort(-scores, kind="stable")]
        rows, row_scores, total = [], [], 0
        for slot, score in zip(ranked, np.sort(scores)[::-1]):
            members = self.order[self.starts[slot] : self.starts[slot + 1]]
            rows.append(members)
            row_scores.append(np.full(len(members), score, dtype=np.float32))
            total += len(members)
            if total >= DEPTH:
                break
        got_rows, got_scores = np.concatenate(rows)[:DEPTH], np.concatenate(row_scores)[:DEPTH]
        return collapse(self.data["keys"], got_rows, got_scores)


class ShippedVectorIndex(Candidate):
    """The vector arm as shipped (``store/index/vector_index.py``): its int8 codes of each row, the shortlist and
    the bounds, and the exact re-score of the rows near the cut from the stored vectors, here the rows' unit codes
    (so its exact score is the truth's). Built in the serving process, as a store's open builds it."""

    def build(self) -> None:
        from cuedrecall.store.index.vector_index import IndexRow, VectorIndex

        units = self.data

        def stored(ids: list[int]) -> dict[int, np.ndarray]:
            return dict(zip(ids, _unit_codes_rows(units, np.asarray(ids, dtype=np.int64)))) if ids else {}

        self.index = VectorIndex(stored, capacity=self.n)
        self.index.extend(
            IndexRow(i, vector, "bench", "", "", "", float(i))
            for start in range(0, self.n, 65536)
            for i, vector in enumerate(_unit_codes(units, start, min(self.n, start + 65536)), start)
        )

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        from cuedrecall.store.base import Scope

        found = self.index.search(Scope("bench"), unit(query), floor=-1.0, depth=DEPTH)
        rows = np.array([row for row, _, _ in found], dtype=np.int64)
        return collapse(self.data["keys"], rows, np.array([score for _, score, _ in found], dtype=np.float32))


class Usearch(Candidate):
    settings = SWEEPS["usearch"]

    def __init__(self, data: dict[str, np.ndarray], n: int) -> None:
        super().__init__(data, n)
        self.file = _index_path("usearch", n)

    def build(self) -> None:
        from usearch.index import Index

        index = Index(ndim=DIM, metric="cos", dtype="i8")
        for start in range(0, self.n, 65536):
            stop = min(self.n, start + 65536)
            index.add(np.arange(start, stop, dtype=np.uint64), np.asarray(self.data["codes"][start:stop]), threads=2)
        index.save(str(self.file))

    def open(self) -> None:
        from usearch.index import Index

        self.index = Index.restore(str(self.file), view=True)

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        self.index.expansion_search = setting
        found = self.index.search(_int8_query(query), DEPTH, threads=1)
        return self.rescored(found.keys.astype(np.int64), query)


class UsearchM32(Usearch):
    """usearch with twice the default connectivity (32) and expansion_add 256: a denser graph, a slower build."""

    def __init__(self, data: dict[str, np.ndarray], n: int) -> None:
        super().__init__(data, n)
        self.file = _index_path("usearch-m32", n)

    def build(self) -> None:
        from usearch.index import Index

        index = Index(ndim=DIM, metric="cos", dtype="i8", connectivity=32, expansion_add=256)
        for start in range(0, self.n, 65536):
            stop = min(self.n, start + 65536)
            index.add(np.arange(start, stop, dtype=np.uint64), np.asarray(self.data["codes"][start:stop]), threads=2)
        index.save(str(self.file))


class FaissHnsw(Candidate):
    settings = SWEEPS["faiss-hnsw-sq8"]

    def __init__(self, data: dict[str, np.ndarray], n: int) -> None:
        super().__init__(data, n)
        self.file = _index_path("faiss-hnsw-sq8", n)

    def build(self) -> None:
        import faiss

        faiss.omp_set_num_threads(BUILD_THREADS)
        index = faiss.IndexHNSWSQ(DIM, faiss.ScalarQuantizer.QT_8bit, 32, faiss.METRIC_INNER_PRODUCT)
        index.train(_unit_codes(self.data, 0, min(self.n, 65536)))
        for start in range(0, self.n, 65536):
            index.add(_unit_codes(self.data, start, min(self.n, start + 65536)))
        faiss.write_index(index, str(self.file))

    def open(self) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        self.index = faiss.read_index(str(self.file))

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        params = faiss.SearchParametersHNSW(efSearch=max(setting, DEPTH))
        _, rows = self.index.search(unit(query)[None, :], DEPTH, params=params)
        return self.rescored(rows[0], query)


class FaissIvf(Candidate):
    settings = SWEEPS["faiss-ivf-sq8"]

    def __init__(self, data: dict[str, np.ndarray], n: int) -> None:
        super().__init__(data, n)
        self.file = _index_path("faiss-ivf-sq8", n)
        self.lists = int(4 * math.sqrt(n))

    def build(self) -> None:
        import faiss

        faiss.omp_set_num_threads(BUILD_THREADS)
        quantizer = faiss.IndexFlatIP(DIM)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, DIM, self.lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        sample = np.random.default_rng(0).choice(self.n, min(self.n, 64 * self.lists), replace=False)
        index.train(_unit_codes_rows(self.data, np.sort(sample)))
        for start in range(0, self.n, 65536):
            index.add(_unit_codes(self.data, start, min(self.n, start + 65536)))
        faiss.write_index(index, str(self.file))

    def open(self) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        self.index = faiss.read_index(str(self.file))

    def search(self, query: np.ndarray, setting: Any) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        _, rows = self.index.search(unit(query)[None, :], DEPTH, params=faiss.SearchParametersIVF(nprobe=setting))
        return self.rescored(rows[0], query)


def _unit_codes_rows(data: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    return data["codes"][rows].astype(np.float32) / np.maximum(data["norms"][rows], 1e-12)[:, None]


CLASSES: dict[str, Callable[[dict[str, np.ndarray], int], Candidate]] = {
    "current": Current,
    "chosen": Chosen,
    "exact": Exact,
    "exact-numkong": ExactNumkong,
    "exact-distinct": ExactDistinct,
    "vector-index": ShippedVectorIndex,
    "usearch": Usearch,
    "usearch-m32": UsearchM32,
    "faiss-hnsw-sq8": FaissHnsw,
    "faiss-ivf-sq8": FaissIvf,
}


def worker(name: str, n: int, locomo: Path) -> dict[str, Any]:
    """One candidate at one size, in this process: build (unless its file is cached), then open it afresh in a
    child (the serving process: its memory is what a store would hold) and time the queries."""
    data = corpus(locomo, n)
    candidate = CLASSES[name](data, n)
    out: dict[str, Any] = {"name": name, "size": n}
    if candidate.file is not None:
        marker = candidate.file.with_suffix(".json")
        if not (candidate.built() and marker.exists()):
            base = _kib("VmRSS")
            started = time.perf_counter()
            candidate.build()
            marker.write_text(
                json.dumps({"build_s": time.perf_counter() - started, "build_peak_mib": (_kib("VmHWM") - base) / 1024})
            )
        out.update(json.loads(marker.read_text()))
        out["file_mib"] = candidate.file.stat().st_size / 2**20
        return out | _serve(name, n, locomo)
    return out | serve(name, n, locomo, candidate)


def _serve(name: str, n: int, locomo: Path) -> dict[str, Any]:
    code = (
        "import json,sys; from pathlib import Path; from benchmarks import ann_candidates as a; "
        f"a.SET = {SET!r}; print(json.dumps(a.serve({name!r}, {n}, Path({str(locomo)!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise RuntimeError(f"{name} {n}: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def serve(name: str, n: int, locomo: Path, candidate: Candidate | None = None) -> dict[str, Any]:
    """Open (or build, for the candidates without a file) and query: time, memory and recall per setting."""
    qs = queries(locomo)
    data = corpus(locomo, n)
    true_rows, true_scores = truth(data, qs, n)
    true_records = [collapse(data["keys"], true_rows[i], true_scores[i]) for i in range(len(qs))]
    base = _kib("VmRSS")
    out: dict[str, Any] = {}
    started = time.perf_counter()
    if candidate is None:
        candidate = CLASSES[name](data, n)
        candidate.open()
        out["open_s"] = time.perf_counter() - started
    else:
        candidate.build()
        out["build_s"] = out["open_s"] = time.perf_counter() - started
        out["build_peak_mib"] = (_kib("VmHWM") - base) / 1024
    out["open_mib"] = (_kib("VmRSS") - base) / 1024
    out["runs"] = []
    for setting in candidate.settings:
        for q in qs[:5]:
            candidate.search(q, setting)
        ms, at10, atdepth = [], [], []
        for i, q in enumerate(qs):
            started = time.perf_counter()
            _, scores = candidate.search(q, setting)
            ms.append((time.perf_counter() - started) * 1000)
            at10.append(recall(true_records[i][1], scores, 10))
            atdepth.append(recall(true_records[i][1], scores, None))
        out["runs"].append(
            {
                "setting": setting,
                "p50_ms": float(np.percentile(ms, 50)),
                "p99_ms": float(np.percentile(ms, 99)),
                "recall10": float(np.mean(at10)),
                "recall10_min": float(np.min(at10)),
                "recall_depth": float(np.mean(atdepth)),
                "recall_depth_min": float(np.min(atdepth)),
            }
        )
    out["serve_mib"] = (_kib("VmRSS") - base) / 1024
    out["serve_peak_mib"] = (_kib("VmHWM") - base) / 1024
    return out


# -- sqlite-vec: a worker without numpy (the system Python when ours cannot load extensions) ----------------

SQLITE_VEC_WORKER = r"""
import json, sqlite3, struct, sys, time, os
sys.path.insert(0, sys.argv[1])
import sqlite_vec
db, codes_path, queries_path = sys.argv[2], sys.argv[3], sys.argv[6]
n, dim, depth, build = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[7]), sys.argv[8] == "1"
def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
base = kib("VmRSS")
out = {}
conn = sqlite3.connect(db)
conn.enable_load_extension(True)
sqlite_vec.load(conn)
if build:
    started = time.perf_counter()
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(e int8[{dim}] distance_metric=cosine)")
    with open(codes_path, "rb") as fh:
        fh.seek(int(sys.argv[9]))
        for start in range(0, n, 8192):
            rows = min(8192, n - start)
            raw = fh.read(rows * dim)
            conn.executemany("INSERT INTO v(rowid, e) VALUES (?, vec_int8(?))",
                             ((start + i, raw[i * dim:(i + 1) * dim]) for i in range(rows)))
            conn.commit()
    out["build_s"] = time.perf_counter() - started
    out["build_peak_mib"] = (kib("VmHWM") - base) / 1024
    print(json.dumps(out)); sys.exit(0)
qs = json.load(open(queries_path))
found = []
for q in qs:
    started = time.perf_counter()
    rows = conn.execute("SELECT rowid FROM v WHERE e MATCH vec_int8(?) AND k = ?", (bytes(q), depth)).fetchall()
    found.append({"ms": (time.perf_counter() - started) * 1000, "rows": [r[0] for r in rows]})
out["serve_mib"] = (kib("VmRSS") - base) / 1024
out["serve_peak_mib"] = (kib("VmHWM") - base) / 1024
out["found"] = found
print(json.dumps(out))
"""


def _sqlite_python() -> str:
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sys.executable
    return "/usr/bin/python3"


def sqlite_vec_worker(n: int, locomo: Path) -> dict[str, Any]:
    import sqlite_vec

    data = corpus(locomo, n)
    qs = queries(locomo)
    true_rows, true_scores = truth(data, qs, n)
    db = _index_path("sqlite-vec", n).with_suffix(".db")
    marker = db.with_suffix(".json")
    size = next(size for size in _cached_sizes("codes") if size >= n)  # the mapped array's file: its header's length
    codes_path = _paths(size)["codes"]
    with open(codes_path, "rb") as fh:
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
        offset = fh.tell()
    site = str(Path(sqlite_vec.__file__).resolve().parent.parent)
    python = _sqlite_python()
    qfile = CACHE / f"queries-{SET}-int8.json"
    qfile.write_text(json.dumps([[int(x) & 0xFF for x in _int8_query(q)] for q in qs]))

    def run(build: bool) -> dict[str, Any]:
        argv = [python, "-c", SQLITE_VEC_WORKER, site, str(db), str(codes_path), str(n), str(DIM), str(qfile)]
        argv += [str(DEPTH), "1" if build else "0", str(offset)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=7200)
        if done.returncode:
            raise RuntimeError(f"sqlite-vec: {done.stderr[-800:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    if not (db.exists() and marker.exists()):
        db.unlink(missing_ok=True)
        marker.write_text(json.dumps(run(True)))
    out: dict[str, Any] = {"name": "sqlite-vec", "size": n, **json.loads(marker.read_text())}
    out["file_mib"] = db.stat().st_size / 2**20
    out["python"] = python
    served = run(False)
    ms = [f["ms"] for f in served["found"]]
    at10, atdepth = [], []
    for i, f in enumerate(served["found"]):
        true_records = collapse(data["keys"], true_rows[i], true_scores[i])
        rows = np.asarray(f["rows"], dtype=np.int64)
        _, scores = collapse(data["keys"], rows, exact_cosines(data, rows, qs[i]))
        at10.append(recall(true_records[1], scores, 10))
        atdepth.append(recall(true_records[1], scores, None))
    out.update(serve_mib=served["serve_mib"], serve_peak_mib=served["serve_peak_mib"])
    out["runs"] = [
        {
            "setting": None,
            "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)),
            "recall10": float(np.mean(at10)),
            "recall10_min": float(np.min(at10)),
            "recall_depth": float(np.mean(atdepth)),
            "recall_depth_min": float(np.min(atdepth)),
        }
    ]
    return out


# -- the report ----------------------------------------------------------------------------------------------


SETTING_NAMES = {
    "usearch": "expansion_search",
    "usearch-m32": "expansion_search",
    "faiss-hnsw-sq8": "efSearch",
    "faiss-ivf-sq8": "nprobe",
}


def _cell(value: Any, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def distinct_codes(data: dict[str, np.ndarray]) -> int:
    """How many distinct int8 codes the rows hold (by a 64-bit hash of each: a collision would undercount by one)."""
    from cuedrecall.store.index.block_scan import hash_rows

    codes = data["codes"]
    hashes = np.concatenate([hash_rows(np.asarray(codes[i : i + 65536])) for i in range(0, codes.shape[0], 65536)])
    return int(np.unique(hashes).shape[0])


def render(
    results: list[dict[str, Any]],
    argv: str,
    versions: dict[str, str],
    load: list[float],
    distinct: dict[str, dict[int, int]],
) -> str:
    shares = "; ".join(
        f"{name} {n:,}: {count:,} distinct codes ({count / n:.0%})"
        for name, sizes in distinct.items()
        for n, count in sizes.items()
    )
    lines = [
        f"Command: `python -m benchmarks.ann_candidates {argv}`",
        "",
        "# Approximate nearest neighbours for the block and vector arms: the candidates",
        "",
        f"CPython {platform.python_version()}, 2 shared CPUs (load average {load[0]:.2f} at the start, "
        f"{load[-1]:.2f} at the end: other work shares the machine). Libraries: "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ".",
        "",
        "Vectors: the block rows of the realistic speed store (benchmarks/realistic.py's memory texts in order, "
        "divided as the builder divides them), hash-embedded (384 wide) and quantised as the builder quantises "
        "(int8 codes, sign bits); the first N rows. The hash vectors are not a trained model's: their neighbours "
        "are by shared words and trigrams, with no topical clusters, a harder case for a graph index than a "
        "sentence encoder's; and the generator reuses its sentences, so most block rows repeat a code another row "
        f"holds. Random: random-normal rows (no structure, no repeats: the hardest case for every index), "
        "records of two blocks, random-normal queries. Memories (the vector arm's rows): one row per memory text "
        "of the same corpus, hash-embedded (memories) or embedded with the packaged model (memories-local, "
        "its neighbours by meaning), quantised the same way, each row its own record; the questions embedded by "
        f"the same model. {shares}. {QUERIES} realistic questions (LoCoMo's and "
        "long-span's). Truth: the exact scan "
        f"(every row's int8-code cosine, the best {DEPTH} rows, the arm's depth, collapsed to records). recall@10: "
        "the truth's 10 best records reached by the candidate's 10 best (ties count); recall@depth: every record "
        f"of the truth's {DEPTH} rows. Each candidate's rows are re-scored exactly from the codes (in its query "
        "time). Query: one at a time, one thread; build: 2 threads. Memory: the serving process's resident set "
        "over its own start (index opened, then the queries run; mapped pages it touched count); build peak: "
        "the building process's VmHWM over its start.",
        "",
        "| vectors | N | candidate | setting | recall@10 (worst) | recall@depth (worst) | query p50 ms | query p99 ms "
        "| build s | build peak MiB | file MiB | open s | serving MiB |",
        "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        if "error" in r:
            lines.append(
                f"| {r['vectors']} | {r['size']:,} | {r['name']} | error: {r['error'][:200]} | | | | | | | | | |"
            )
            continue
        for run in r["runs"]:
            setting = "—" if run["setting"] is None else f"{SETTING_NAMES.get(r['name'], '')} {run['setting']}"
            lines.append(
                f"| {r['vectors']} | {r['size']:,} | {r['name']} | {setting} "
                f"| {run['recall10']:.3f} ({run['recall10_min']:.2f}) "
                f"| {run['recall_depth']:.3f} ({run['recall_depth_min']:.2f}) | {run['p50_ms']:.2f} "
                f"| {run['p99_ms']:.2f} | {_cell(r.get('build_s'), '.1f')} | {_cell(r.get('build_peak_mib'), '.0f')} "
                f"| {_cell(r.get('file_mib'), '.0f')} | {_cell(r.get('open_s'), '.2f')} "
                f"| {_cell(r.get('serve_mib'), '.0f')} |"
            )
    lines += [
        "",
        f"- current: `BlockIndex` as shipped before issue 29 (commit {SIGN_BITS_REV}: the best {DEPTH} rows by "
        "sign-bit Hamming distance re-ranked by int8 cosine), built from the records in the process (its build "
        "is the store's open: no file); it examines the first 250,000 rows in key order only.",
        "- chosen: the working tree's `BlockIndex` (issue 29): the exact scan over distinct codes "
        "(store/index/block_scan.py), every row examined; its build is the store's open (no file).",
        "- exact: the exact scan in numpy (1,024-row float32 chunks, the codes mapped): recall 1 by definition.",
        "- exact-numkong: the same scan with numkong's int8 kernel, the query rounded to int8, and every row whose "
        "bound reaches the cut re-scored exactly. exact-distinct: that scan over the distinct codes only, each "
        "code's rows reached after (the design the chosen index integrates, here without the scope).",
        "- vector-index: the vector arm as shipped (store/index/vector_index.py), built in the serving process "
        "(its build is the store's open), the rows' unit codes standing for the stored vectors it re-scores "
        "from.",
        "- usearch-m32 is built at 100,000 only (its build there took over 600 s on 2 shared cores).",
        "- Wheels (pip download, CPython 3.11-3.13): usearch 2.26.6 (with numkong 7.8.6) and sqlite-vec 0.1.9 "
        "for Linux x86_64, macOS arm64 and x86_64, Windows (sqlite-vec: none for Linux aarch64); faiss-cpu 1.15.1 "
        "for Linux and Windows, macOS only up to 1.10.0; hnswlib 0.8.0 has no wheel at all (a source build), so it "
        "was not measured.",
        "- sqlite-vec runs under "
        + next((r.get("python", "") for r in results if r.get("name") == "sqlite-vec"), "—")
        + " (the project's CPython here is built without `enable_load_extension`, as pyenv's and macOS's system "
        "Pythons often are: there sqlite-vec cannot load at all).",
    ]
    return "\n".join(lines) + "\n"


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {"numpy": np.__version__}
    for dist in ("usearch", "faiss-cpu", "sqlite-vec"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _sizes(args: argparse.Namespace, vectors: str) -> list[int]:
    """The sizes a vector set is measured at."""
    return {"random": args.random_sizes, "memories-local": args.local_sizes}.get(vectors, args.sizes)


def main(argv: list[str] | None = None) -> int:
    global SET
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES))
    parser.add_argument("--vectors", nargs="+", choices=VECTOR_SETS, default=list(VECTOR_SETS))
    parser.add_argument("--random-sizes", type=int, nargs="+", default=[100_000], help="sizes of the random set")
    parser.add_argument(
        "--local-sizes", type=int, nargs="+", default=[100_000], help="sizes of the packaged model's memory set"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "ann-candidates.md")
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        SET = args.vectors[0]
        name, n = args.worker[0], int(args.worker[1])
        result = sqlite_vec_worker(n, args.locomo) if name == "sqlite-vec" else worker(name, n, args.locomo)
        print(json.dumps({"vectors": SET, **result}))
        return 0
    CACHE.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0]]
    results = []
    for SET in args.vectors:
        sizes = _sizes(args, SET)
        corpus(args.locomo, max(sizes))  # built once, for the largest size
        for n in sizes:
            truth(corpus(args.locomo, n), queries(args.locomo), n)
            for name in args.candidates:
                if name in SMALL_ONLY and n > SMALL_ONLY[name]:
                    continue
                started = time.perf_counter()
                cmd = [sys.executable, "-m", "benchmarks.ann_candidates", "--locomo", str(args.locomo)]
                cmd += ["--vectors", SET, "--worker", name, str(n)]
                done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=7200)
                if done.returncode:
                    tail = (done.stderr.strip().splitlines() or [""])[-1]
                    error = f"exit status {done.returncode}: {tail[:300]}"
                    results.append({"vectors": SET, "name": name, "size": n, "error": error})
                else:
                    results.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"{SET} {name} {n}: {time.perf_counter() - started:.0f} s", flush=True)
    load.append(os.getloadavg()[0])
    distinct: dict[str, dict[int, int]] = {}
    for SET in args.vectors:
        for n in _sizes(args, SET):
            distinct.setdefault(SET, {})[n] = distinct_codes(corpus(args.locomo, n))
    text = render(results, " ".join(sys.argv[1:] if argv is None else argv), _versions(), load, distinct)
    args.out.write_text(text)
    (CACHE / "ann-candidates.json").write_text(json.dumps(results, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

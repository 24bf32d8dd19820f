"""The block arm's exact scan (store/index/block_scan.py, block_index.py): against an exact scan written out here.

The reference scores every live row's int8 code against the query (float64 cosine), keeps the rows the scope rule
(conftest.visible), the block cap and the examine cap admit, takes the best ``rerank`` by (-cosine, kind, id, block)
and collapses them to records. The index must reach the same records (recall@rerank against the reference, ties
counted, at least 0.99: in fact all of them) with each hit's cosine the exact one, through duplicated codes,
replaced and deleted records, folds and compactions. A store killed in the middle of block writes reopens with an
index rebuilt from its rows that answers as that reference over the rows it holds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.index import block_index
from cuedrecall.store.index.block_index import KIND_CODES, BlockIndex, RecordBlocks
from cuedrecall.store.index.block_scan import DistinctCodes, hash_rows, int8_dots, query_codes
from cuedrecall.store.sqlite import SqliteStore
from tests.conftest import REPO_ROOT, visible

REPO = REPO_ROOT
DIM = 384
MODEL = "hash-384"
A, B = "agent-a", "agent-b"


@dataclass(frozen=True)
class Record:
    kind: str
    record_id: int
    agent_id: str
    project_id: str
    channel: str
    source_id: str
    codes: np.ndarray  # (blocks, DIM) int8


def blocks_of(record: Record) -> RecordBlocks:
    codes = record.codes
    return RecordBlocks(
        kind="mem" if record.kind == MEMORY else "ep",
        record_id=record.record_id,
        model=MODEL,
        blocks=np.arange(len(codes)),
        bits=np.packbits(codes > 0, axis=1),
        codes=list(codes),
        agent_id=record.agent_id,
        project_id=record.project_id,
        channel=record.channel,
        source_id=record.source_id if record.kind == MEMORY else "",
    )


def reference(
    records: dict[tuple[str, int], Record],
    scope: Scope,
    query: np.ndarray,
    *,
    examine: int,
    rerank: int,
    per_record: int,
) -> list[tuple[tuple[str, int], float]]:
    """The exact scan, written out: (record, its best examined block's cosine), best first."""
    unit = query.astype(np.float64) / np.linalg.norm(query.astype(np.float64))
    rows = []
    for key in sorted(records, key=lambda k: (KIND_CODES["mem" if k[0] == MEMORY else "ep"], k[1])):
        record = records[key]
        if not visible(record, scope):
            continue
        for block, code in enumerate(record.codes[:per_record]):
            wide = code.astype(np.float64)
            rows.append((key, block, float(wide @ unit / np.sqrt(wide @ wide))))
    rows = rows[:examine]  # key order: memories, then episodes, by id, by block
    kind_order = {MEMORY: 0, EPISODE: 1}
    rows.sort(key=lambda r: (-r[2], kind_order[r[0][0]], r[0][1], r[1]))
    best: dict[tuple[str, int], float] = {}
    for key, _, cosine in rows[:rerank]:
        best.setdefault(key, cosine)
    return list(best.items())


def recall(expected: list[tuple[tuple[str, int], float]], got: list[tuple[tuple[str, int], float]]) -> float:
    """Of the reference's records, the share the index reached; a record tied with the reference's last counts."""
    if not expected:
        return 1.0 if not got else 0.0
    bar = min(cosine for _, cosine in expected) - 1e-9
    reached = {key for key, _ in expected} | {key for key, cosine in got if cosine >= bar}
    return sum(1 for key, _ in got if key in reached) / len(expected)


def searched(index: BlockIndex, scope: Scope, query: np.ndarray, **limits: int) -> list[tuple[tuple[str, int], float]]:
    found, order = index.search(scope, query, MODEL, **limits)
    assert order == "vector"
    names = {code: name for name, code in (("mem", KIND_CODES["mem"]), ("ep", KIND_CODES["ep"]))}
    out = []
    for hit in found:
        assert hit.cosine is not None
        out.append(((MEMORY if names[hit.kind] == "mem" else EPISODE, hit.record_id), hit.cosine))
    return out


POOL = np.random.default_rng(7).integers(-127, 128, size=(12, DIM), dtype=np.int8)  # shared codes: duplicates

codes_strategy = st.lists(
    st.one_of(st.integers(0, len(POOL) - 1), st.integers(1000, 2**32 - 1)), min_size=1, max_size=6
).map(
    lambda picks: np.stack(
        [POOL[p] if p < len(POOL) else np.random.default_rng(p).integers(-127, 128, DIM, dtype=np.int8) for p in picks]
    )
)
record_strategy = st.tuples(
    st.sampled_from((MEMORY, MEMORY, EPISODE)),
    st.sampled_from((A, B)),
    st.sampled_from(("", "p1", "p2")),
    st.sampled_from(("", "c1")),
    st.sampled_from(("", "discord:1", "discord:12", "slack:al")),
    codes_strategy,
)
scope_strategy = st.builds(
    Scope,
    agent_id=st.sampled_from((A, B)),
    project_id=st.sampled_from((None, "", "p1")),
    channel=st.sampled_from(("", "c1")),
    source_id=st.sampled_from(("", "discord:", "discord:1", "slack:al")),
)


@settings(max_examples=60, deadline=None)
@given(
    written=st.lists(record_strategy, min_size=1, max_size=40),
    replaced=st.lists(st.integers(0, 39), max_size=10),
    deleted=st.lists(st.integers(0, 39), max_size=10),
    fold_at=st.integers(0, 40),
    reads=st.lists(
        st.tuples(
            scope_strategy, st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(1, 6), st.integers(1, 300)
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_the_block_arm_reaches_the_exact_scan_s_records_through_duplicates_replacements_and_folds(
    written: list[tuple], replaced: list[int], deleted: list[int], fold_at: int, reads: list[tuple]
) -> None:
    first_take = block_index._FIRST_TAKE
    block_index._FIRST_TAKE = 1  # the fewest slots first: the rounds and the bound decide, not one whole pass
    try:
        index = BlockIndex()
        records: dict[tuple[str, int], Record] = {}
        for i, (kind, agent, project, channel, source, codes) in enumerate(written):
            record = Record(kind, i + 1, agent, project, channel, source, codes)
            assert index.add(blocks_of(record))
            records[(kind, i + 1)] = record
            if i == fold_at:
                index.fold()
        keys = list(records)
        for n in replaced:  # a new set: the old blocks go, the new come (codes of the pool again: more duplicates)
            key = keys[n % len(keys)]
            if key in records:
                old = records[key]
                index.remove([("mem" if key[0] == MEMORY else "ep", key[1])])
                records[key] = replace(old, codes=POOL[: len(old.codes)][::-1].copy())
                assert index.add(blocks_of(records[key]))
        for n in deleted:
            key = keys[n % len(keys)]
            if records.pop(key, None) is not None:
                index.remove([("mem" if key[0] == MEMORY else "ep", key[1])])
        for scope, seed, rerank, per_record, examine in reads:
            query = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            if seed % 3 == 0:  # a query near one of the shared codes
                query = POOL[seed % len(POOL)].astype(np.float32) + query * 8
            limits = {"examine": examine, "rerank": rerank, "per_record": per_record}
            expected = reference(records, scope, query, **limits)
            got = searched(index, scope, query, **limits)
            assert recall(expected, got) >= 0.99, (scope, limits)
            assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)
            exact = dict(reference(records, scope, query, examine=10**9, rerank=10**9, per_record=per_record))
            for key, cosine in got:  # each hit's cosine is its best examined block's exact cosine
                assert cosine <= exact[key] + 1e-9
    finally:
        block_index._FIRST_TAKE = first_take


def test_the_int8_pass_is_within_its_band_of_the_exact_cosine() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(-127, 128, size=(2000, DIM), dtype=np.int8)
    table = DistinctCodes(DIM, None)
    table.append(codes)
    for _ in range(20):
        query = rng.standard_normal(DIM).astype(np.float32) * rng.uniform(0.01, 100)
        unit, q8, scale, band = query_codes(query)
        approx = table.approximate(q8, scale)
        exact = table.exact(np.arange(len(codes)), unit)
        assert np.all(np.abs(approx - exact) <= band) and band < 0.05
    wide = codes.astype(np.float32)
    assert np.array_equal(int8_dots(codes, q8), wide @ q8.astype(np.float32))


def test_a_fold_keeps_one_slot_a_distinct_code_and_drops_dead_ones_even_through_a_hash_collision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(4)
    distinct = rng.integers(-127, 128, size=(5, DIM), dtype=np.int8)
    table = DistinctCodes(DIM, None)
    slots = table.append(distinct[[0, 1, 0, 2, 3, 0, 4]])
    table.drop(slots[[3]])  # the only row of code 2 died
    import cuedrecall.store.index.block_scan as block_scan

    monkeypatch.setattr(block_scan, "hash_rows", lambda rows: np.zeros(len(rows), dtype=np.uint64))  # all collide
    remap = table.fold()
    assert table.n == 4 and table.refs[:4].tolist() == [3, 1, 1, 1]
    assert remap[slots].tolist() == [0, 1, 0, -1, 2, 0, 3] and remap[-1] == -1
    assert np.array_equal(table.codes[:4], distinct[[0, 1, 3, 4]])
    assert hash_rows(distinct[[0, 0]])[0] == hash_rows(distinct[[0, 0]])[1]


_KILLED_WRITER = """
import numpy as np
from cuedrecall.embed.hashing import hash_vector
from cuedrecall.handlers.rows import memory_row
from cuedrecall.store.base import BlockSet, MEMORY, make_ref
from cuedrecall.store.sqlite import SqliteStore
from cuedrecall.text.blocks import divide

store = SqliteStore({path!r})
rng = np.random.default_rng(0)
for i in range(100000):
    text = f"record {{i}}. " + " ".join(f"Sentence {{j}} of note {{i % 7}} is here." for j in range(6))
    row = memory_row(agent_id="a", project_id="", channel="", msg_id="", content=text, source={{}},
                     timestamp="2025-11-01T12:00:00+00:00", metadata={{}}, created_at="2025-11-01T12:00:00+00:00",
                     vector=hash_vector(text), model="hash-384")
    with store.write() as conn:
        ref = make_ref(MEMORY, store.insert_memory(conn, row))
    found = store.record_text(ref)
    spans = divide(found[0])
    vectors = np.stack([hash_vector(s.text(found[0])) for s in spans])
    codes = np.round(vectors * (127 / np.abs(vectors).max(axis=1, keepdims=True))).astype(np.int8)
    block_set = BlockSet(ref, found[1], "hash-384", tuple((s.start, s.end, s.forced) for s in spans),
                         np.packbits(vectors > 0, axis=1), codes)
    with store.write() as conn:
        store.write_blocks(conn, block_set)
    if i == 20:
        print("writing", flush=True)
"""


def test_a_store_killed_mid_write_reopens_with_an_index_rebuilt_from_its_rows_that_answers_exactly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "killed.db"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED_WRITER.format(path=str(path)))],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)  # somewhere in a write: a torn transaction the journal rolls back
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store = SqliteStore(path)
    try:
        rows = store._read("SELECT record_id, block, codes FROM blocks WHERE kind = 'mem' AND codes IS NOT NULL")
        assert len(rows) > 20
        records: dict[tuple[str, int], Record] = {}
        by_record: dict[int, list[tuple[int, bytes]]] = {}
        for record_id, block, codes in rows:
            by_record.setdefault(record_id, []).append((block, codes))
        for record_id, blocks in by_record.items():
            codes = np.stack([np.frombuffer(c, dtype=np.int8) for _, c in sorted(blocks)])
            records[(MEMORY, record_id)] = Record(MEMORY, record_id, "a", "", "", "", codes)
        assert len(store._blocks) == len(rows)
        for seed in range(5):
            query = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            limits = {"examine": 250_000, "rerank": 50, "per_record": 64}
            expected = reference(records, Scope("a"), query, **limits)
            hits, order = store.block_arm(Scope("a"), query, MODEL, **limits)
            assert order == "vector"
            got = [((MEMORY, int(hit.ref.split(":")[1])), float(hit.cosine or 0.0)) for hit in hits]
            assert recall(expected, got) == 1.0
    finally:
        store.close()

"""A store's open loads its block index in batches (``BlockIndex.load``, store/sqlite/blocks.py): however the
records are cut into batches, the index is the one loading each record alone builds (what ``add`` does), the
records a load leaves out (a block index past MAX_BLOCK, a width that does not fit the model's rows) left out
alike, and it answers every search alike (docs/storage.md#sqlite-the-default)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import Scope
from cuedrecall.store.index.block_index import BlockIndex, BlockRows, RecordBlocks
from cuedrecall.store.rows import MAX_BLOCK

DIM = 16
POOL = np.random.default_rng(5).integers(-127, 128, size=(6, DIM), dtype=np.int8)  # shared codes: folds merge them
SCOPES = [("a", "", "", ""), ("a", "p1", "", "discord:1"), ("b", "", "c1", "")]

code_strategy = st.one_of(
    st.integers(0, len(POOL) - 1).map(lambda i: POOL[i].tobytes()),
    st.just(bytes(DIM)),  # all zeros: no slot
    st.just(POOL[0][: DIM // 2].tobytes()),  # another width: no slot, the row falls back to its bits
    st.none(),
)
record_strategy = st.tuples(
    st.sampled_from(("mem", "mem", "ep")),
    st.sampled_from(("m1", "m1", "m2")),
    st.sampled_from((2, 2, 2, 3)),  # the sign bits' bytes: a record of another width is refused by its model
    st.lists(code_strategy, min_size=1, max_size=4),
    st.booleans(),  # a block index past MAX_BLOCK: refused
    st.integers(0, len(SCOPES) - 1),
)


def _records(drawn: list[tuple]) -> list[RecordBlocks]:
    out = []
    for i, (kind, model, nbytes, codes, too_far, scope) in enumerate(drawn):
        blocks = np.arange(len(codes), dtype=np.int64)
        if too_far:
            blocks[-1] = MAX_BLOCK + 1
        bits = np.random.default_rng(i).integers(0, 256, size=(len(codes), nbytes), dtype=np.uint8)
        out.append(
            RecordBlocks(
                kind,
                i + 1,
                model,
                blocks,
                bits,
                [None if c is None else np.frombuffer(c, np.int8) for c in codes],
                *SCOPES[scope],
            )
        )
    return out


def _batch(records: list[RecordBlocks]) -> BlockRows:
    rows = [(r, j) for r in records for j in range(len(r.blocks))]
    return BlockRows(
        kinds=[r.kind for r, _ in rows],
        record_ids=[r.record_id for r, _ in rows],
        blocks=[int(r.blocks[j]) for r, j in rows],
        models=[r.model for r, _ in rows],
        bits=[r.bits[j].tobytes() for r, j in rows],
        codes=[None if r.codes[j] is None else r.codes[j].tobytes() for r, j in rows],
        scopes=[(r.agent_id, r.project_id, r.channel, r.source_id) for r, _ in rows],
    )


def _state(index: BlockIndex) -> dict[str, Any]:
    """Every model's rows as values: key, alive, bits, code (or none), scope; the table's live distinct codes."""
    out = {}
    for model, rows in index._models.items():
        n, values = rows.n, rows.axes._codes.values
        codes = [
            None if slot < 0 else rows.table.codes[slot].tobytes()  # type: ignore[union-attr]
            for slot in rows.slot[:n].tolist()
        ]
        axes = [
            tuple(values[int(getattr(rows.axes, name)[i])] for name in ("agent", "project", "channel", "source"))
            for i in range(n)
        ]
        table = (
            None
            if rows.table is None
            else sorted(rows.table.codes[s].tobytes() for s in range(rows.table.n) if rows.table.refs[s] > 0)
        )
        out[model] = (
            rows.nbytes,
            n,
            rows.key[:n].tolist(),
            rows.alive[:n].tolist(),
            rows.words[:n].tobytes(),
            codes,
            axes,
            rows.codeless,
            rows.dim,
            table,
        )
    return out


@settings(max_examples=150, deadline=None)
@given(
    drawn=st.lists(record_strategy, min_size=1, max_size=30),
    cuts=st.lists(st.integers(0, 30), max_size=4),
    seed=st.integers(0, 2**16),
)
def test_a_batched_load_builds_the_index_adding_each_record_builds(
    drawn: list[tuple], cuts: list[int], seed: int
) -> None:
    records = _records(drawn)
    one_by_one, batched = BlockIndex(), BlockIndex()
    taken = [one_by_one.add(record) for record in records]
    event(f"a record refused: {not all(taken)}")
    bounds = sorted({0, len(records), *(c % (len(records) + 1) for c in cuts)})
    for start, stop in itertools.pairwise(bounds):  # batches end at a record's end, as the store reads them
        batched.load(_batch(records[start:stop]))
    one_by_one.fold()
    batched.fold()
    assert _state(batched) == _state(one_by_one)
    query = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    for agent, project, channel, source in SCOPES:
        scope = Scope(agent, project or None, channel, source)
        for model in ("m1", "m2"):
            limits = {"examine": 100, "rerank": 1 + seed % 7, "per_record": 1 + seed % 4}
            assert one_by_one.search(scope, query, model, **limits) == batched.search(scope, query, model, **limits)

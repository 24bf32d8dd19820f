"""Recall at the shipped defaults with the sign-bit block index (before issue 29) against the exact scan, one store.

    python -m benchmarks.block_arm_ab --locomo PATH/TO/locomo10-dev.json --sizes 100000 1000000

The store is ``benchmarks/realistic.py``'s with every record's blocks built (``realistic.build_blocks``, cached
under benchmarks/.cache/realistic). It is opened twice in one process: once with ``store/index/block_index.py``
as committed at ``ann_candidates.SIGN_BITS_REV`` (the best 200 blocks by sign-bit Hamming distance over the first
250,000 rows in key order, re-ranked by int8 cosine), once with the working tree's (the exact scan over distinct
codes, every row). Each realistic question is asked of both, alternating which goes first: the recall's CPU and
wall time, then the block arm alone (``store.block_arm``, its CPU time), and whether the two answers hold the
same rows in the same order. Writes ``benchmarks/results/block-arm-ab.md`` with the command at the top.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import ann_candidates, realistic

HERE = Path(__file__).resolve().parent


def measure(path: Path, questions: list[str]) -> dict[str, Any]:
    import cuedrecall.store.sqlite.blocks as blocks
    import cuedrecall.store.sqlite.store as store_module
    from cuedrecall.store.base import Scope

    new_index, new_record = blocks.BlockIndex, blocks.RecordBlocks
    use_sign_bits()
    try:
        stores = {"sign bits": realistic.open_store(path, blocks=True)}
    finally:
        blocks.BlockIndex = store_module.BlockIndex = new_index
        blocks.RecordBlocks = new_record
    stores["exact scan"] = realistic.open_store(path, blocks=True)
    out: dict[str, Any] = {name: {"cpu": [], "wall": [], "arm": []} for name in stores}
    for memory in stores.values():
        for text in questions:
            memory.queries.embed_query(text)
        for text in questions[:5]:
            memory.recall(agent_id=realistic.AGENT, query=text)
    same = 0
    for i, text in enumerate(questions):
        answers = {}
        for name in list(stores) if i % 2 == 0 else list(stores)[::-1]:
            memory = stores[name]
            started, cpu = time.perf_counter(), time.process_time()
            answers[name] = memory.recall(agent_id=realistic.AGENT, query=text)
            out[name]["wall"].append((time.perf_counter() - started) * 1000)
            out[name]["cpu"].append((time.process_time() - cpu) * 1000)
            vector = memory.queries.embed_query(text)
            cpu = time.process_time()
            memory.store_.block_arm(Scope(realistic.AGENT), vector, memory.embedder.model)
            out[name]["arm"].append((time.process_time() - cpu) * 1000)
        refs = [[row.get("ref") for row in answer["messages"]] for answer in answers.values()]
        same += refs[0] == refs[1]
    for memory in stores.values():
        memory.close()
    out["same"] = same
    return out


RETRIEVAL = ["--embedders", "hash", "--modes", "rrf", "--long-span", "large"]
BLOCKS_ON = ["--setting", "CPERSONA_BLOCK_BUILD_ENABLED=true", "--setting", "CPERSONA_BLOCK_RETRIEVAL_ENABLED=true"]


def use_sign_bits() -> None:
    """From here on, every store this process opens holds the sign-bit block index of SIGN_BITS_REV."""
    import cuedrecall.store.sqlite.blocks as blocks
    import cuedrecall.store.sqlite.store as store_module

    old = ann_candidates.block_index_module(ann_candidates.SIGN_BITS_REV)
    old.BlockIndex.fold = lambda self: None
    blocks.BlockIndex = store_module.BlockIndex = old.BlockIndex
    blocks.RecordBlocks = old.RecordBlocks


def retrieval_rows(locomo: Path, workdir: Path) -> dict[str, list[str]]:
    """``benchmarks.retrieval`` (hash, rrf, LoCoMo and long-span, blocks built and searched) with each block index,
    each in a process of its own: the rows of its "**all**" lines."""
    import subprocess

    out = {}
    for name in ("sign bits", "exact scan"):
        target = workdir / f"retrieval-{name.replace(' ', '-')}.md"
        argv = ["--out", str(target), "--locomo", str(locomo), *RETRIEVAL, *BLOCKS_ON]
        code = (
            "import sys; from benchmarks import block_arm_ab, retrieval; "
            + ("block_arm_ab.use_sign_bits(); " if name == "sign bits" else "")
            + f"sys.exit(retrieval.main({argv!r}))"
        )
        subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, check=True, capture_output=True, timeout=7200)
        out[name] = [line for line in target.read_text().splitlines() if "**all**" in line]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--workdir", type=Path, default=HERE / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "block-arm-ab.md")
    parser.add_argument(
        "--retrieval", action="store_true", help="also retrieval quality with each index (benchmarks.retrieval)"
    )
    args = parser.parse_args(argv)
    from benchmarks.speed_realistic_peer import tree_note

    questions = realistic.questions(args.locomo, args.queries)
    load = [os.getloadavg()[0]]
    rows = []
    for size in args.sizes:
        path, _, _ = realistic.build_blocks(args.workdir, args.locomo, size)
        rows.append((size, measure(path, questions)))
    load.append(os.getloadavg()[0])
    p = np.percentile
    lines = [
        f"Command: `python -m benchmarks.block_arm_ab {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        "# The block arm before and after issue 29, recall at the shipped defaults",
        "",
        f"CPython {platform.python_version()}, 2 shared CPUs; load average {load[0]:.2f} at the start, "
        f"{load[-1]:.2f} at the end. {tree_note(None).replace('Our server: the', 'Code: the')} The realistic "
        "store with every record's blocks built (hash vectors), opened twice in one process: the sign-bit block "
        f"index of commit {ann_candidates.SIGN_BITS_REV} and the exact scan over distinct codes; {len(questions)} "
        "questions, each asked of both (alternating which goes first), limit 10. Block arm: `store.block_arm` "
        "alone, CPU time. Same answer: the two recalls returned the same rows in the same order (they differ "
        "where the sign bits missed a block the exact scan finds: a block seat changes).",
        "",
        "| memories | block index | recall CPU p50 ms | p99 ms | recall wall p50 ms | p99 ms | block arm CPU p50 ms "
        "| p99 ms | same answer |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, out in rows:
        for name in ("sign bits", "exact scan"):
            r = out[name]
            lines.append(
                f"| {size:,} | {name} | {p(r['cpu'], 50):.1f} | {p(r['cpu'], 99):.1f} | {p(r['wall'], 50):.1f} "
                f"| {p(r['wall'], 99):.1f} | {p(r['arm'], 50):.2f} | {p(r['arm'], 99):.2f} "
                f"| {out['same']} of {len(questions)} |"
            )
    if args.retrieval:
        found = retrieval_rows(args.locomo, args.workdir)
        lines += [
            "",
            "## Retrieval quality with each index",
            "",
            f"`python -m benchmarks.retrieval {' '.join(RETRIEVAL + BLOCKS_ON)}` with each block index (its own "
            "process): blocks built and searched, every metric over all questions. The block seats come after the "
            "count, so the @10 metrics move only where a seat changes what precedes it; MRR counts the seats.",
            "",
            "| block index | dataset | embedder | mode | category | recall_any@5 | recall_any@10 | recall_all@10 "
            "| ndcg@10 | mrr | session@5 | session@10 | foreign@10 | n |",
            "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, rows in found.items():
            lines += [f"| {name} {row}" for row in rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

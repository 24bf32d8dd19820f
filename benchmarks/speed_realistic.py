"""Speed on conversational text: recall p50/p90/p99, RSS, ingest and the worst inputs, beside CPersona 2.6.14.

    python -m benchmarks.speed_realistic --locomo PATH/TO/locomo10.json \\
        --sizes 10000 100000 --peer-sizes 10000 100000

The store is ``benchmarks/realistic.py``'s: LoCoMo's turns and the long-span
generator's, one agent, hash vectors, blocks off. Per size:

1. Build: bulk insert (1,024 a transaction), seconds and memories/s.
2. In process: ``Memory.recall`` with the hash embedder, every query vector computed
   before timing (the pipeline alone), plain and traced interleaved query by query,
   over the realistic questions (LoCoMo's and long-span's, each asked once).
3. RSS: a child process opens the store and runs 20 recalls; its VmHWM (peak) and
   VmRSS (after), and the open time.
4. Ingest: ``Memory.store`` one at a time, 200 new turns into the store of that size.
5. Worst inputs (largest size): a 16,000-character CJK query, 1,400 distinct terms,
   a common sentence 200 times over, limit 100 (the tools' largest), 1,000 exclusions.
6. Side by side (``--peer-sizes``): both servers over MCP stdio, query vectors from one
   ``cuedrecall embed-server`` (hash); CPersona loads our rows and vectors through
   ``import_memories`` (benchmarks/speed.py's import, probe included).

Writes ``benchmarks/results/speed_realistic.md`` (``--out``) with the command at the top.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller says otherwise, set before numpy loads: on 2 shared cores OpenBLAS's
# threads turn the vector arm's 0.3 ms product over a 10,000-row window into 2 to 4 ms of spinning.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import peer, realistic, serving
from benchmarks.stats import percentile
from cuedrecall.api import Memory

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
WARMUP = 5
RSS_QUERIES = 20
INGEST = 200


def timed_recalls(memory: Memory, questions: list[str]) -> dict[str, list[float]]:
    """Milliseconds per recall, plain and traced, interleaved (rotating which goes first); "cpu": the plain
    recalls' process CPU time, which other work on a shared machine does not inflate as it does the wall time."""
    for text in questions:
        memory.queries.embed_query(text)
    for text in questions[:WARMUP]:
        memory.recall(agent_id=realistic.AGENT, query=text)
    out: dict[str, list[float]] = {"plain": [], "trace": [], "cpu": []}
    for i, text in enumerate(questions):
        for name in ("plain", "trace") if i % 2 == 0 else ("trace", "plain"):
            started, cpu = time.perf_counter(), time.process_time()
            answer = memory.recall(agent_id=realistic.AGENT, query=text, trace=name == "trace")
            out[name].append((time.perf_counter() - started) * 1000)
            if name == "plain":
                out["cpu"].append((time.process_time() - cpu) * 1000)
            if answer.get("ok") is False:
                raise RuntimeError(f"recall failed: {answer}")
    return out


def ingest(memory: Memory, locomo: Path, questions: list[str], count: int = INGEST) -> dict[str, float]:
    """``count`` new turns stored one at a time, each followed by a recall (as an agent's turn: store, then
    recall): memories/s and per-store p50/p95 ms, and the p50/p99 ms of the recall right after a store."""
    for question in questions:  # warm, as the timed recalls are: each question's term counts read once
        memory.recall(agent_id=realistic.AGENT, query=question)
    ms, after = [], []
    for i, text in enumerate(realistic.texts(locomo, count)):
        started = time.perf_counter()
        answer = memory.store(agent_id=realistic.AGENT, content=f"{text} (new {i})")
        ms.append((time.perf_counter() - started) * 1000)
        if not answer.get("ok"):
            raise RuntimeError(f"store failed: {answer}")
        started = time.perf_counter()
        memory.recall(agent_id=realistic.AGENT, query=questions[i % len(questions)])
        after.append((time.perf_counter() - started) * 1000)
    return {
        "rate": 1000 * len(ms) / sum(ms),
        "p50": percentile(ms, 0.5),
        "p95": percentile(ms, 0.95),
        "after_p50": percentile(after, 0.5),
        "after_p99": percentile(after, 0.99),
    }


def worst_inputs(memory: Memory) -> dict[str, float]:
    """The slowest of 3 tries (ms) of each hostile input the tools let through."""
    rng = random.Random(5)
    question = "what did Caroline do at the support group"
    inputs = {
        "16,000-character CJK query": {"query": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(16_000))},
        "1,400 distinct terms (16,000 characters)": {
            "query": " ".join(f"w{rng.randint(0, 10**9)}" for _ in range(1_400))[:16_000]
        },
        "a common sentence 200 times": {"query": " ".join(["what did you do with your family and friends"] * 200)},
        "limit 100": {"query": question, "limit": 100},
        "limit 100, deep, traced": {"query": question, "limit": 100, "deep": True, "trace": True},
        "1,000 exclusions of 60 characters": {
            "query": question,
            "exclude_contents": [f"held text {i:04d} " * 4 for i in range(1_000)],
        },
    }
    out = {}
    for name, arguments in inputs.items():
        ms = []
        for _ in range(3):
            started = time.perf_counter()
            answer = memory.recall(agent_id=realistic.AGENT, **arguments)
            ms.append((time.perf_counter() - started) * 1000)
            if answer.get("ok") is False:
                raise RuntimeError(f"{name}: {answer}")
        out[name] = max(ms)
    return out


def _status_kib(field: str) -> int:
    return serving.status_kib(os.getpid(), field) or 0


def rss_child(path: str, locomo: str, blocks: bool = False) -> dict[str, Any]:
    """In a child process: open the store, run RSS_QUERIES recalls; peak and current resident set (KiB)."""
    baseline = _status_kib("VmHWM")
    started = time.perf_counter()
    memory = realistic.open_store(Path(path), blocks)
    opened = time.perf_counter() - started
    for text in realistic.questions(Path(locomo), RSS_QUERIES):
        memory.recall(agent_id=realistic.AGENT, query=text)
    result = {
        "baseline_kib": baseline,
        "peak_kib": _status_kib("VmHWM"),
        "rss_kib": _status_kib("VmRSS"),
        "open_s": opened,
    }
    memory.close()
    return result


def measure_rss(path: Path, locomo: Path, blocks: bool = False) -> dict[str, Any]:
    code = (
        "import json; from benchmarks.speed_realistic import rss_child; "
        f"print(json.dumps(rss_child({str(path)!r}, {str(locomo)!r}, {blocks!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"RSS child failed: {done.stderr[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(size: int, args: argparse.Namespace, questions: list[str], worst: bool) -> dict[str, Any]:
    blocks = bool(getattr(args, "blocks", False))
    if blocks:
        path, build_s, blocks_s = realistic.build_blocks(args.workdir, args.locomo, size)
    else:
        (path, build_s), blocks_s = realistic.build(args.workdir, args.locomo, size), None
    row: dict[str, Any] = {"size": size, "build_s": build_s, "db_mib": path.stat().st_size / 2**20}
    if blocks_s is not None:
        row["blocks_s"] = blocks_s
    row["rss"] = measure_rss(path, args.locomo, blocks)
    with realistic.open_store(path, blocks) as memory:
        row["ms"] = timed_recalls(memory, questions)
        if worst:
            row["worst"] = worst_inputs(memory)
    scratch = args.workdir / f"ingest-{size}.db"  # stores go into a copy: the timed store stays as built
    peer.db_copy(path, scratch)
    with realistic.open_store(scratch, blocks) as memory:
        for text in questions:
            memory.queries.embed_query(text)  # query vectors first, as for the timed recalls
        row["ingest"] = ingest(memory, args.locomo, questions)
    scratch.unlink(missing_ok=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--peer-sizes", type=int, nargs="*", default=[])
    parser.add_argument(
        "--blocks",
        action="store_true",
        help="at the shipped defaults: every record's blocks built before timing, the block arm searched",
    )
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--workdir", type=Path, default=HERE / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "speed_realistic.md")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    questions = realistic.questions(args.locomo, args.queries)
    load = [os.getloadavg()[0]]
    rows = [measure(size, args, questions, worst=size == max(args.sizes)) for size in args.sizes]
    peers = {}
    if args.peer_sizes:
        from benchmarks.speed_realistic_peer import side_by_side

        peers = side_by_side(args, questions)
    load.append(os.getloadavg()[0])
    from benchmarks.speed_realistic_report import render

    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    from benchmarks.speed_realistic_peer import tree_note

    tree = tree_note(None).replace("Our server: the", "Ours: the")
    args.out.write_text(render(rows, peers, argv_text, len(questions), load, platform.python_version(), tree))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

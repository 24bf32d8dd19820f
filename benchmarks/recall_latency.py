"""Recall latency per store size, query embedding excluded (hash embedder): only the pipeline is timed.

    python -m benchmarks.recall_latency --sizes 1000 10000 100000 --queries 100
    python -m benchmarks.recall_latency --corpus realistic --locomo PATH/TO/locomo10.json

The store is the synthetic one (``benchmarks/synthetic.py``) or, with ``--corpus realistic``,
conversational turns (``benchmarks/realistic.py``) asked the realistic questions. Writes a markdown
table to benchmarks/results/recall_latency.md (the command at the top).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks import realistic
from benchmarks.datasets import locomo_file
from benchmarks.harness import WITHOUT_BLOCKS
from benchmarks.synthetic import AGENT, bulk_load, queries
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

RESULTS = Path(__file__).parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def open_store(path: Path, size: int, progress: Progress | None = None, locomo: Path | None = None) -> Memory:
    """A hash-embedded store of ``size`` memories at ``path`` (built once, reused when present): synthetic, or
    the realistic corpus when ``locomo`` names the LoCoMo file."""
    settings = Settings.from_env(WITHOUT_BLOCKS, embedding_mode="hash", db_path=str(path))
    fresh = not path.exists()
    memory = Memory(settings=settings, clock=fixed_clock("2026-01-02T00:00:00+00:00"))
    if fresh:
        task = progress.add_task(f"building {size:,}", total=size) if progress else None
        advance = (lambda n: progress.advance(task, n)) if progress else None
        if locomo is None:
            bulk_load(memory, size, progress=advance)
        else:
            realistic.bulk_load(memory, realistic.texts(locomo, size), agent=AGENT, progress=advance)
    return memory


def time_recalls(memory: Memory, texts: list[str], **arguments: object) -> list[float]:
    """Milliseconds per recall, after one warm-up pass over the same queries."""
    for text in texts[:5]:
        memory.recall(agent_id=AGENT, query=text, **arguments)
    out = []
    for text in texts:
        start = time.perf_counter()
        memory.recall(agent_id=AGENT, query=text, **arguments)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--workdir", type=Path, help="keep the stores here (default: a temporary folder)")
    parser.add_argument("--corpus", choices=("synthetic", "realistic"), default="synthetic")
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON, for --corpus realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "recall_latency.md")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cuedrecall-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    locomo = args.locomo if args.corpus == "realistic" else None
    if args.corpus == "realistic":
        locomo_file(locomo)  # one line saying how to get LoCoMo, exit code 2
    texts = realistic.questions(locomo, args.queries) if locomo else queries(args.queries)
    rows = []
    with Progress(console=Console(stderr=True)) as progress:
        for size in args.sizes:
            memory = open_store(workdir / f"{args.corpus}-{size}.db", size, progress, locomo)
            ms = time_recalls(memory, texts)
            memory.close()
            rows.append((size, statistics.median(ms), percentile(ms, 0.95)))
    table = Table(title="recall latency (hash embedder: query embedding excluded)")
    for column in ("memories", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right")
    lines = [
        f"`python -m benchmarks.recall_latency {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        f"{args.queries} queries per size, limit 10, rrf, hash embedder (query embedding excluded); "
        f"{args.corpus} corpus.",
        "",
        "| memories | p50 ms | p95 ms |",
        "| ---: | ---: | ---: |",
    ]
    for size, p50, p95 in rows:
        table.add_row(f"{size:,}", f"{p50:.1f}", f"{p95:.1f}")
        lines.append(f"| {size:,} | {p50:.1f} | {p95:.1f} |")
    Console().print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

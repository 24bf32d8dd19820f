"""What a requested recall trace costs (target: at most a fifth of the recall).

The target is docs/trace.md#what-makes-the-trace-ready.

For each store size, a store of ``benchmarks.synthetic`` sentences is bulk-loaded (hash
embedder, vectors computed in batches, rows written straight through the store
in large transactions rather than one ``store()`` call each), then the same
queries are recalled with and without ``trace: true``. The two are interleaved
in one run, query by query, alternating which goes first, so drift in the
machine's speed lands on both alike. Query vectors are embedded before timing
(the cache then answers), so embedding is excluded from both.

    python -m benchmarks.trace_overhead --sizes 1000 10000 100000 --queries 200 \
        --out benchmarks/results/trace_overhead.md
"""

from __future__ import annotations

import argparse
import gc
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchmarks.harness import WITHOUT_BLOCKS
from benchmarks.synthetic import AGENT, START, bulk_load
from benchmarks.synthetic import queries as synthetic_queries
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

SPAN = timedelta(days=365)  # benchmarks.synthetic spreads its records over a year from START
EPISODE_EVERY = 50  # one episode per this many memories


def _settings(db_path: str, **overrides: Any) -> Settings:
    return Settings.from_env(WITHOUT_BLOCKS, **{"embedding_mode": "hash", "db_path": db_path, **overrides})


@dataclass
class Timing:
    size: int
    episodes: int
    queries: int
    plain_ms: list[float]
    traced_ms: list[float]
    trace_total_ms: list[float]
    coverage_ms: list[float]
    mismatches: int
    load_s: float

    @staticmethod
    def _q(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def row(self) -> dict[str, Any]:
        p50_plain, p50_traced = statistics.median(self.plain_ms), statistics.median(self.traced_ms)
        paired = [t / p for t, p in zip(self.traced_ms, self.plain_ms) if p > 0]
        return {
            "memories": self.size,
            "episodes": self.episodes,
            "queries": self.queries,
            "untraced_p50_ms": p50_plain,
            "traced_p50_ms": p50_traced,
            "ratio_p50": p50_traced / p50_plain,
            "paired_ratio_median": statistics.median(paired),
            "untraced_p90_ms": self._q(self.plain_ms, 0.9),
            "traced_p90_ms": self._q(self.traced_ms, 0.9),
            "coverage_p50_ms": statistics.median(self.coverage_ms),
            "mismatches": self.mismatches,
            "load_s": self.load_s,
        }


def time_recalls(
    memory: Memory, queries: Sequence[str], limit: int, progress: Progress | None = None, label: str = ""
) -> tuple[list[float], list[float], list[float], list[float], int]:
    """Traced and untraced recall of each query, back to back, alternating which runs first."""
    for query in queries:  # embedding excluded: the cache answers during timing
        memory.queries.embed_query(query)
    for query in queries[:3]:  # warm caches (scope statistics, SQLite pages) for both paths
        memory.recall(agent_id=AGENT, query=query, limit=limit)
        memory.recall(agent_id=AGENT, query=query, limit=limit, trace=True)
    plain, traced, totals, coverage = [], [], [], []
    mismatches = 0
    task = progress.add_task(f"recalling {label}", total=len(queries)) if progress else None
    for i, query in enumerate(queries):
        answers: dict[bool, dict[str, Any]] = {}
        for with_trace in (True, False) if i % 2 == 0 else (False, True):
            started = time.perf_counter()
            answer = memory.recall(agent_id=AGENT, query=query, limit=limit, trace=with_trace)
            elapsed = (time.perf_counter() - started) * 1000
            (traced if with_trace else plain).append(elapsed)
            answers[with_trace] = answer
        trace = answers[True].pop("trace")
        totals.append(trace["timing_ms"]["total"])
        coverage.append(trace["timing_ms"].get("coverage", 0.0))
        mismatches += answers[True] != answers[False]
        if progress is not None and task is not None:
            progress.advance(task)
    return plain, traced, totals, coverage, mismatches


def measure(size: int, queries: int, limit: int, seed: int, workdir: Path, progress: Progress | None = None) -> Timing:
    db = workdir / f"overhead-{size}.db"
    clock = fixed_clock(START + SPAN + timedelta(days=1))
    with Memory(settings=_settings(str(db)), clock=clock) as memory:
        task = progress.add_task(f"loading {size:,}", total=size) if progress else None
        started = time.perf_counter()
        episodes = bulk_load(
            memory,
            size,
            seed=seed,
            episode_every=EPISODE_EVERY,
            progress=(lambda n: progress.advance(task, n)) if progress else None,
        )
        loaded = {"load_s": time.perf_counter() - started, "episodes": episodes}
        asked = synthetic_queries(queries, seed + 1)
        gc.collect()
        plain, traced, totals, coverage, mismatches = time_recalls(memory, asked, limit, progress, f"{size:,}")
    return Timing(size, int(loaded["episodes"]), queries, plain, traced, totals, coverage, mismatches, loaded["load_s"])


COLUMNS = [
    ("memories", "memories", "{:,}"),
    ("episodes", "episodes", "{:,}"),
    ("queries", "queries", "{}"),
    ("untraced p50 ms", "untraced_p50_ms", "{:.3f}"),
    ("traced p50 ms", "traced_p50_ms", "{:.3f}"),
    ("ratio p50", "ratio_p50", "{:.3f}"),
    ("median paired ratio", "paired_ratio_median", "{:.3f}"),
    ("untraced p90 ms", "untraced_p90_ms", "{:.3f}"),
    ("traced p90 ms", "traced_p90_ms", "{:.3f}"),
    ("coverage p50 ms", "coverage_p50_ms", "{:.3f}"),
    ("answers differing", "mismatches", "{}"),
    ("load s", "load_s", "{:.1f}"),
]

CONSOLE_COLUMNS = {
    "memories",
    "queries",
    "untraced_p50_ms",
    "traced_p50_ms",
    "ratio_p50",
    "paired_ratio_median",
    "coverage_p50_ms",
    "mismatches",
}


def markdown(rows: list[dict[str, Any]], command: str, args: argparse.Namespace) -> str:
    lines = [
        "# Recall trace overhead",
        "",
        f"Command: `{command}`",
        "",
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}; "
        f"hash embedder (384 dimensions); limit {args.limit}; seed {args.seed}.",
        "Traced and untraced recalls of the same queries are interleaved in one run (alternating which goes "
        "first); query vectors are embedded before timing, so embedding is excluded from both. The ratio is "
        "traced over untraced; the trace's target (docs/trace.md#what-makes-the-trace-ready) is at most 1.2 (a "
        "fifth of the recall's own time). "
        '"answers differing" counts queries whose traced response, minus the trace, differed from the '
        "untraced one (must be 0).",
        "",
        "| " + " | ".join(title for title, _, _ in COLUMNS) + " |",
        "|" + "|".join("---:" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(fmt.format(row[key]) for _, key, fmt in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.trace_overhead", description="Time traced vs untraced recall on generated stores."
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="store sizes (memories)")
    parser.add_argument("--queries", type=int, default=200, help="queries per size (default 200)")
    parser.add_argument("--limit", type=int, default=10, help="recall limit (default 10)")
    parser.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    parser.add_argument("--out", help="write a markdown table here (e.g. benchmarks/results/trace_overhead.md)")
    parser.add_argument("--workdir", help="where the databases go (default: a temporary directory)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if any(size < 1 for size in args.sizes) or args.queries < 1:
        print("trace_overhead: sizes and --queries must be positive", file=sys.stderr)
        return 2
    command = "python -m benchmarks.trace_overhead " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)
    )
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        with progress:
            for size in args.sizes:
                rows.append(measure(size, args.queries, args.limit, args.seed, workdir, progress).row())
    table = Table(title="recall trace overhead (traced / untraced)")
    shown = [c for c in COLUMNS if c[1] in CONSOLE_COLUMNS]
    for title, _, _ in shown:
        table.add_column(title, justify="right")
    for row in rows:
        table.add_row(*(fmt.format(row[key]) for _, key, fmt in shown))
    console.print(table)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown(rows, command, args), encoding="utf-8")
        console.print(f"wrote {out}")
    return 0 if all(row["mismatches"] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

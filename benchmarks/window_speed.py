"""What the scan window costs: recall latency on the realistic corpus at CPersona's window and at ours, side by side.

    python -m benchmarks.window_speed --locomo PATH/TO/locomo10-dev.json --sizes 100000

The vector arm scores the scope's newest ``CUEDRECALL_MAX_MEMORIES`` rows (docs/recall-process.md#the-scan-window):
10,000 in CPersona, 1,000,000 in ours. The same store (benchmarks/realistic.py, blocks built and searched, as a
user runs it) is opened once per window and asked the same questions, in process, rounds alternating between
the windows so the machine's noise falls on both. Writes benchmarks/results/window_speed.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks import realistic
from benchmarks.harness import RESULTS
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock

PROG = "benchmarks.window_speed"
WINDOWS = (10_000, 1_000_000)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every query per window (default: 2)")
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "window_speed.md")
    return parser


def timings(path: Path, queries: Sequence[str], rounds: int) -> dict[int, list[float]]:
    """Milliseconds per recall for each window, the windows taking turns round by round."""
    memories = {}
    for window in WINDOWS:
        settings = replace(realistic.settings(path, blocks=True), max_memories=window)
        memories[window] = Memory(settings=settings, clock=fixed_clock(realistic.NOW), background=False)
    out: dict[int, list[float]] = {window: [] for window in WINDOWS}
    try:
        for memory in memories.values():  # warm: the index loaded, the codes read once
            for query in queries[:10]:
                memory.recall(agent_id=realistic.AGENT, query=query)
        for _ in range(rounds):
            for window, memory in memories.items():
                for query in queries:
                    started = time.perf_counter()
                    memory.recall(agent_id=realistic.AGENT, query=query)
                    out[window].append((time.perf_counter() - started) * 1000)
    finally:
        for memory in memories.values():
            memory.close()
    return out


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def render(argv: Sequence[str], rows: Sequence[tuple[int, int, list[float]]], queries: int, rounds: int) -> str:
    load = os.getloadavg()[0]
    lines = [
        "# What the scan window costs",
        "",
        f"Command: `python -m {PROG} {' '.join(argv)}`",
        "",
        f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs (load average {load:.2f} at the end: other work "
        "may share the machine; the windows take turns, so its noise falls on both). The realistic corpus "
        "(`benchmarks/realistic.py`: LoCoMo's turns and the long-span generator's, one agent, hash vectors), "
        f"blocks built and searched; {queries} LoCoMo and long-span questions, {rounds} rounds, in process.",
        "",
        "| memories | window | p50 ms | p95 ms | mean ms | p50 against 10,000 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = {size: statistics.median(t) for size, window, t in rows if window == WINDOWS[0]}
    for size, window, t in rows:
        lines.append(
            f"| {size:,} | {window:,} | {percentile(t, 0.5):.1f} | {percentile(t, 0.95):.1f} | "
            f"{statistics.fmean(t):.1f} | x{statistics.median(t) / base[size]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    queries = realistic.questions(args.locomo, args.queries)
    rows = []
    for size in args.sizes:
        path, _, _ = realistic.build_blocks(args.workdir, args.locomo, size)
        for window, values in timings(path, queries, args.rounds).items():
            rows.append((size, window, values))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, rows, len(queries), args.rounds), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Two commits of cuedrecall side by side: how long opening a store takes, and the open's peak memory.

    python -m benchmarks.open_ab --locomo PATH/TO/locomo10-dev.json --before aaf52db --after HEAD \\
        --sizes 100000 1000000

Each commit's package is a ``git archive`` snapshot (benchmarks/speed_realistic_peer.ours_snapshot). For each
size (benchmarks/realistic.py's store: the realistic corpus, hash vectors, every record's blocks built), a fresh
process per commit opens the store at the shipped defaults (its vector and block indexes built from the tables),
the commits taking turns ``--runs`` times. Each child reports the open's wall time, its peak resident memory
(VmHWM) and the refs of a few recalls, which must be the same for both commits (the indexes built alike).
Writes benchmarks/results/open_ab.md (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import realistic
from benchmarks.harness import RESULTS, write_report
from benchmarks.speed_realistic_peer import git_output, ours_snapshot

PROG = "benchmarks.open_ab"
REPO = Path(__file__).resolve().parents[1]
ASKED = 20  # recalls each child answers after its open, to compare the indexes

CHILD = r"""
import json, sys, time
started = time.perf_counter()
import cuedrecall
assert cuedrecall.__file__.startswith(sys.argv[3]), cuedrecall.__file__
from pathlib import Path
from benchmarks import realistic
path, queries = Path(sys.argv[1]), json.loads(sys.argv[2])
with realistic.open_store(path, blocks=True) as memory:
    opened = time.perf_counter() - started
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    refs = [[row.get("ref") for row in memory.recall(agent_id=realistic.AGENT, query=q, limit=10)["messages"]]
            for q in queries]
print(json.dumps({"open_s": opened, "peak_kib": peak, "refs": refs}), flush=True)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--after", default="HEAD", help="the later commit (default: HEAD)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--runs", type=int, default=2, help="opens per commit and size (default: 2)")
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "open_ab.md")
    return parser


def open_once(tree: Path, path: Path, queries: list[str]) -> dict[str, Any]:
    """One fresh process of a commit's package opening the store; what it reports."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(REPO)]), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(queries), str(tree)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def measure(size: int, trees: dict[str, Path], args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    path = realistic.build_blocks(args.workdir, args.locomo, size, realistic.HASH)[0].resolve()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for i in range(args.runs):
        for name in list(trees) if i % 2 == 0 else list(trees)[::-1]:
            runs[name].append(open_once(trees[name], path, queries))
    refs = {name: [run["refs"] for run in found] for name, found in runs.items()}
    return {
        "size": size,
        **{f"{name}_s": statistics.median(run["open_s"] for run in found) for name, found in runs.items()},
        **{f"{name}_mib": max(run["peak_kib"] for run in found) / 1024 for name, found in runs.items()},
        "same": all(r == refs["before"][0] for found in refs.values() for r in found),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started_load = os.getloadavg()[0]
    before, after = git_output("rev-parse", "--short", args.before), git_output("rev-parse", "--short", args.after)
    trees = {"before": ours_snapshot(before), "after": ours_snapshot(after)}
    queries = realistic.questions(args.locomo, ASKED)
    started = time.perf_counter()
    results = [measure(size, trees, args, queries) for size in args.sizes]
    command = (
        f"python -m {PROG} --locomo {args.locomo} --before {args.before} --after {args.after} "
        f"--sizes {' '.join(map(str, args.sizes))}"
        + ("" if args.runs == 2 else f" --runs {args.runs}")
        + ("" if args.out == RESULTS / "open_ab.md" else f" --out {args.out}")
    )
    lines = [
        f"Command: `{command}`",
        "",
        f"# Opening a store, commit {before} against {after}",
        "",
        f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {started_load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end ({time.perf_counter() - started:.0f} s). The realistic corpus at the "
        f"shipped defaults (hash vectors, every record's blocks built); a fresh process per open, {args.runs} opens "
        "per commit, the commits taking turns. Open: from the child's start (its imports included) to the store "
        "answering, median; peak: the process's VmHWM after the open and its recalls, the highest of its runs. "
        f"Same answers: {ASKED} recalls after every open returned the same refs for both commits.",
        "",
        f"| memories | {before} open s | {after} open s | ratio | {before} peak MiB | {after} peak MiB "
        "| same answers |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        lines.append(
            f"| {r['size']:,} | {r['before_s']:.1f} | {r['after_s']:.1f} | x{r['after_s'] / r['before_s']:.2f} | "
            f"{r['before_mib']:.0f} | {r['after_mib']:.0f} | {'yes' if r['same'] else 'NO'} |"
        )
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Two commits of cuedrecall side by side: recall latency in process at the shipped defaults, rounds alternating.

    python -m benchmarks.revision_ab --locomo PATH/TO/locomo10-dev.json --before a3a8308 --after HEAD \\
        --sizes 100000 1000000

Each commit's package is a ``git archive`` snapshot (benchmarks/speed_realistic_peer.ours_snapshot). For each
size, one child process per commit opens the same store (benchmarks/realistic.py: the realistic corpus, hash
vectors, every record's blocks built and searched) and waits; the parent then asks each child in turn for a
round of every question, so the machine's noise falls on both. The children also compare answers: the refs each
returned, question by question. Writes benchmarks/results/revision_ab.md (or ``--out``).
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

PROG = "benchmarks.revision_ab"
REPO = Path(__file__).resolve().parents[1]
WARM = 10

# The child: open the store with its commit's package, then answer "go" lines with one round of timings.
CHILD = r"""
import json, sys, time
import cuedrecall
assert cuedrecall.__file__.startswith(sys.argv[3]), cuedrecall.__file__
from pathlib import Path
from benchmarks import realistic
path, queries, embedding = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[4]
cache = None if embedding == realistic.HASH else 1  # the packaged model: every question embedded, none cached
with realistic.open_store(path, blocks=True, embedding=embedding, query_cache=cache) as memory:
    for query in queries[:WARM]:
        memory.recall(agent_id=realistic.AGENT, query=query, limit=10)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        times, refs = [], []
        for query in queries:
            started = time.perf_counter()
            answer = memory.recall(agent_id=realistic.AGENT, query=query, limit=10)
            times.append((time.perf_counter() - started) * 1000)
            refs.append([row.get("ref") or row.get("id") for row in answer.get("messages", [])])
        print(json.dumps({"times": times, "refs": refs}), flush=True)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--after", default="HEAD", help="the later commit (default: HEAD)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every question per commit (default: 2)")
    parser.add_argument(
        "--embedding",
        choices=["hash", "local"],
        default="hash",
        help="the store's and the queries' embedder (default: hash); local: the packaged model, its own store, "
        "every question embedded as it is asked",
    )
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "revision_ab.md")
    return parser


class Child:
    """One commit's process over one store."""

    def __init__(self, tree: Path, path: Path, queries: list[str], embedding: str) -> None:
        # the snapshot's package first (and as the working directory, which Python puts before everything),
        # the repository's benchmarks after it
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(REPO)])}
        env["OPENBLAS_NUM_THREADS"] = "1"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD.replace("WARM", str(WARM)),
                str(path),
                json.dumps(queries),
                str(tree),
                embedding,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tree,
        )
        assert json.loads(self._line())["ready"]

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the child for {self.process.args[2:3]} ended: {self.process.wait()}")
        return line

    def round(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self._line())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def measure(size: int, trees: dict[str, Path], args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    path, _build_s, _blocks_s = realistic.build_blocks(args.workdir, args.locomo, size, args.embedding)
    children = {name: Child(tree, path.resolve(), queries, args.embedding) for name, tree in trees.items()}
    times: dict[str, list[float]] = {name: [] for name in trees}
    refs: dict[str, list[Any]] = {}
    try:
        for i in range(args.rounds):
            order = list(children) if i % 2 == 0 else list(children)[::-1]
            for name in order:
                answer = children[name].round()
                times[name].extend(answer["times"])
                refs[name] = answer["refs"]
    finally:
        for child in children.values():
            child.close()
    same = sum(a == b for a, b in zip(refs["before"], refs["after"]))
    return {
        "size": size,
        **{name: statistics.median(values) for name, values in times.items()},
        **{f"{name}_p90": statistics.quantiles(values, n=10)[-1] for name, values in times.items()},
        "same": same,
        "asked": len(queries),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started_load = os.getloadavg()[0]
    before, after = git_output("rev-parse", "--short", args.before), git_output("rev-parse", "--short", args.after)
    trees = {"before": ours_snapshot(before), "after": ours_snapshot(after)}
    queries = realistic.questions(args.locomo, args.queries)
    started = time.perf_counter()
    results = [measure(size, trees, args, queries) for size in args.sizes]
    command = (
        f"python -m {PROG} --locomo {args.locomo} --before {args.before} --after {args.after} "
        f"--sizes {' '.join(map(str, args.sizes))}"
        + ("" if args.embedding == "hash" else f" --embedding {args.embedding}")
        + ("" if args.rounds == 2 else f" --rounds {args.rounds}")
        + ("" if args.queries == 150 else f" --queries {args.queries}")
        + ("" if args.out == RESULTS / "revision_ab.md" else f" --out {args.out}")
    )
    vectors = (
        "hash vectors"
        if args.embedding == "hash"
        else f"the {args.embedding} embedder's vectors, every question embedded as it is asked (no cached vector)"
    )
    lines = [
        f"Command: `{command}`",
        "",
        f"# Recall in process, commit {before} against {after}",
        "",
        f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {started_load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end ({time.perf_counter() - started:.0f} s). The realistic corpus at the "
        f"shipped defaults (blocks built and searched), {vectors}, {len(queries)} questions (LoCoMo's and "
        f"long-span's), limit 10; one process per commit over the same store, {args.rounds} rounds of every "
        "question each, the commits taking turns round by round (the first alternating). Same answers: the "
        "questions whose returned refs were identical in both.",
        "",
        f"| memories | {before} p50 ms | {after} p50 ms | ratio | {before} p90 ms | {after} p90 ms | same answers |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['size']:,} | {r['before']:.2f} | {r['after']:.2f} | x{r['after'] / r['before']:.2f} | "
            f"{r['before_p90']:.2f} | {r['after_p90']:.2f} | {r['same']} of {r['asked']} |"
        )
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

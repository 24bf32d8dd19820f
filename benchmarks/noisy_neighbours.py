"""No noisy neighbours: one agent's 20-row recall while other agents hold 0, 10,000 and 100,000 rows of the same text.

    python -m benchmarks.noisy_neighbours --locomo PATH/TO/locomo10.json

The rows are the realistic corpus's (``benchmarks/realistic.py``): alice holds 20 turns,
spread evenly among the others' rows (ten other agents share the rest), so her words are
theirs too and her row ids are far apart. Her recall is timed in process (hash embedder,
query vectors computed before timing, blocks off) over the realistic questions, once
each. ``--json`` keeps the figures; ``--before`` adds a column from such a file (the
same command run on an earlier tree). Writes ``benchmarks/results/noisy_neighbours.md``.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller says otherwise, set before numpy loads: on 2 shared cores OpenBLAS's
# threads turn the vector arm's 0.3 ms product over a 10,000-row window into 2 to 4 ms of spinning.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks import realistic
from benchmarks.stats import percentile

HERE = Path(__file__).resolve().parent
ALICE = "alice"
ALICE_ROWS = 20
OTHER_AGENTS = 10
WARMUP = 5


def build(path: Path, locomo: Path, others: int) -> None:
    """Alice's rows spread evenly among ``others`` rows of OTHER_AGENTS agents, in batches with their vectors."""
    texts = realistic.texts(locomo, others + ALICE_ROWS)
    every = max(1, (others + ALICE_ROWS) // ALICE_ROWS)
    owners = [
        ALICE if i % every == 0 and i // every < ALICE_ROWS else f"other-{i % OTHER_AGENTS}" for i in range(len(texts))
    ]
    with realistic.open_store(path) as memory:
        realistic.bulk_load(memory, texts, agent=owners)


def alice_ms(path: Path, questions: list[str]) -> list[float]:
    with realistic.open_store(path) as memory:
        for text in questions:
            memory.queries.embed_query(text)
        for text in questions[:WARMUP]:
            memory.recall(agent_id=ALICE, query=text)
        out = []
        for text in questions:
            started = time.perf_counter()
            memory.recall(agent_id=ALICE, query=text)
            out.append((time.perf_counter() - started) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON")
    parser.add_argument("--others", type=int, nargs="+", default=[0, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--workdir", type=Path, default=HERE / ".cache" / "noisy")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--before", type=Path, help="figures of the same command on an earlier tree (--json)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "noisy_neighbours.md")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    questions = realistic.questions(args.locomo, args.queries)
    figures: dict[str, list[float]] = {}
    load = [os.getloadavg()[0]]
    for others in args.others:
        path = args.workdir / f"noisy-{others}.db"
        if not path.exists():
            build(path, args.locomo, others)
        figures[str(others)] = alice_ms(path, questions)
    load.append(os.getloadavg()[0])
    if args.json:
        args.json.write_text(json.dumps(figures))
    before = json.loads(args.before.read_text()) if args.before else None
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    args.out.write_text(render(figures, before, argv_text, len(questions), load))
    print(f"wrote {args.out}")
    return 0


def render(
    figures: dict[str, list[float]], before: dict[str, list[float]] | None, argv: str, questions: int, load: list[float]
) -> str:
    head = "| other agents' rows | alice p50 ms | p90 ms | p99 ms |"
    rule = "| ---: | ---: | ---: | ---: |"
    if before:
        head += " before p50 ms | before p90 ms | before p99 ms |"
        rule += " ---: | ---: | ---: |"
    lines = [
        f"Command: `python -m benchmarks.noisy_neighbours {argv}`",
        "",
        "# No noisy neighbours: one agent's recall against the rows other agents hold",
        "",
        f"Realistic corpus (`benchmarks/realistic.py`): alice holds {ALICE_ROWS} turns, {OTHER_AGENTS} other "
        "agents the rest of the same text. Alice's recall in process (hash embedder, query vectors computed "
        f"before timing, blocks off, limit 10, rrf), {questions} questions once each after {WARMUP} warm-up. "
        f"Load average {load[0]:.2f} at the start, {load[-1]:.2f} at the end (2 shared CPUs); "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '')}.",
        "",
        head,
        rule,
    ]
    for others, ms in figures.items():
        row = (
            f"| {int(others):,} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.9):.1f} | {percentile(ms, 0.99):.1f} |"
        )
        if before and others in before:
            old = before[others]
            row += f" {percentile(old, 0.5):.1f} | {percentile(old, 0.9):.1f} | {percentile(old, 0.99):.1f} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

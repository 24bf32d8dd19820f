"""What the block arm costs a recall, and how fast blocks are built, on conversational text.

    python -m benchmarks.block_speed --locomo PATH/TO/locomo10.json --sizes 10000 100000

The store holds LoCoMo's turns repeated to each size (hash embedder: the query's
embedding is excluded and the build rate is the pipeline's, not a model's). For
each size, in one run:

- the build: every record's blocks built by the backfill, timed (blocks/s);
- recall p50/p95 with block retrieval on and off, interleaved query by query over
  LoCoMo's questions, after the build has finished;
- the same while a backfill runs in the background on a copy of the store without
  blocks (on: the arm and the builder share the machine), to see whether the build
  starves recalls.

Writes ``benchmarks/results/block_speed.md`` with the command at the top.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from benchmarks.bulk import insert_memories
from benchmarks.datasets import load_locomo
from benchmarks.stats import percentile
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

RESULTS = Path(__file__).parent / "results"
AGENT = "bench"
NOW = "2026-01-02T00:00:00+00:00"
WARMUP = 5


def settings(db_path: Path, blocks: bool) -> Settings:
    return Settings.from_env(
        {}, embedding_mode="hash", db_path=str(db_path), block_build_enabled=True, block_retrieval_enabled=blocks
    )


def build_store(path: Path, texts: list[str], size: int) -> None:
    """``size`` memories from the turns, inserted in large transactions with their vectors (no blocks yet)."""
    with Memory(settings=settings(path, True), clock=fixed_clock(NOW), background=False) as memory:
        chunk_size = 1024
        rows = list(islice(cycle(texts), size))
        for start in range(0, size, chunk_size):
            chunk = [f"{text} ({start + i})" for i, text in enumerate(rows[start : start + chunk_size])]
            insert_memories(memory, [(AGENT, text, NOW) for text in chunk])


def build_blocks(path: Path) -> tuple[float, int]:
    """(seconds, block rows) to build every record's blocks through the backfill."""
    with Memory(settings=settings(path, True), clock=fixed_clock(NOW), background=False) as memory:
        assert memory.blocks is not None
        started = time.perf_counter()
        memory.blocks.queue_backfill()
        memory.blocks.drain()
        seconds = time.perf_counter() - started
        return seconds, memory.store_.block_counts(AGENT)["block_rows"]


def interleaved(on: Memory, off: Memory, questions: list[str]) -> dict[str, list[float]]:
    """Milliseconds per recall with the arm on and off, alternating query by query after a warm-up."""
    for text in questions[:WARMUP]:
        on.recall(agent_id=AGENT, query=text)
        off.recall(agent_id=AGENT, query=text)
    out: dict[str, list[float]] = {"on": [], "off": []}
    for text in questions:
        for name, memory in (("on", on), ("off", off)):
            started = time.perf_counter()
            memory.recall(agent_id=AGENT, query=text)
            out[name].append((time.perf_counter() - started) * 1000)
    return out


def during_backfill(path: Path, questions: list[str]) -> tuple[list[float], int]:
    """Recall latencies (arm on) while a background builder backfills the store; blocks built meanwhile."""
    with Memory(settings=settings(path, True), clock=fixed_clock(NOW)) as memory:  # starts the builder thread
        ms = []
        for text in cycle(questions):
            if len(ms) >= len(questions):
                break
            started = time.perf_counter()
            memory.recall(agent_id=AGENT, query=text)
            ms.append((time.perf_counter() - started) * 1000)
        built = memory.store_.block_counts(AGENT)["block_rows"]
    return ms, built


def measure(size: int, texts: list[str], questions: list[str], workdir: Path) -> dict[str, object]:
    path = workdir / f"blocks-{size}.db"
    build_store(path, texts, size)
    bare = workdir / f"bare-{size}.db"
    shutil.copy(path, bare)
    seconds, blocks = build_blocks(path)
    with (
        Memory(settings=settings(path, True), clock=fixed_clock(NOW), background=False) as on,
        Memory(settings=settings(path, False), clock=fixed_clock(NOW), background=False) as off,
    ):
        timed = interleaved(on, off, questions)
    busy, built_meanwhile = during_backfill(bare, questions)
    return {
        "size": size,
        "blocks": blocks,
        "build_s": seconds,
        "on": timed["on"],
        "off": timed["off"],
        "busy": busy,
        "built_meanwhile": built_meanwhile,
    }


def report(rows: list[dict[str, object]], argv: list[str], questions: int) -> str:
    lines = [
        f"`python -m benchmarks.block_speed {' '.join(argv)}`",
        "",
        f"LoCoMo turns repeated to each size, one agent, hash embedder (query embedding excluded); "
        f"{questions} LoCoMo questions, limit 10, rrf. Arm on/off interleaved query by query after the "
        'build; "during backfill": a copy of the store without blocks, recalled with the arm on while a '
        "background builder fills it.",
        "",
        "| memories | blocks | build s | blocks/s | p50 off | p50 on | on/off | p95 off | p95 on | "
        "p50 during backfill | blocks built meanwhile |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        on, off, busy = row["on"], row["off"], row["busy"]
        p50_on, p50_off = statistics.median(on), statistics.median(off)  # type: ignore[arg-type]
        lines.append(
            f"| {row['size']:,} | {row['blocks']:,} | {row['build_s']:.1f} | {row['blocks'] / row['build_s']:,.0f} | "
            f"{p50_off:.1f} | {p50_on:.1f} | {p50_on / p50_off:.2f} | {percentile(off, 0.95):.1f} | "
            f"{percentile(on, 0.95):.1f} | {statistics.median(busy):.1f} | {row['built_meanwhile']:,} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return speed_main(argv, __doc__.splitlines()[0], measure, report, "block_speed.md")


def speed_main(argv: list[str] | None, description: str, measure_one: Any, render: Any, out_name: str) -> int:
    """The flow of a side-by-side speed study on LoCoMo text: parse, measure each size, write the report."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--out", type=Path, default=RESULTS / out_name)
    args = parser.parse_args(argv)
    conversations = load_locomo(args.locomo)
    texts = [turn.content for c in conversations for turn in c.turns]
    questions = [q.text for c in conversations for q in c.questions][: args.questions]
    with tempfile.TemporaryDirectory(prefix="cuedrecall-speed-") as tmp:
        rows = [measure_one(size, texts, questions, Path(tmp)) for size in args.sizes]
    text = render(rows, sys.argv[1:] if argv is None else argv, len(questions))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda info: print(f"builder thread failed: {info.exc_value!r}", file=sys.stderr)
    sys.exit(main())

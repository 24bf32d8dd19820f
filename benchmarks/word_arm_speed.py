"""What the word arm costs a recall, on conversational text, measured on and off side by side.

    python -m benchmarks.word_arm_speed --locomo PATH/TO/locomo10.json --sizes 10000 100000

The store holds LoCoMo's turns repeated to each size (hash embedder: the query's
embedding is excluded; blocks off on both sides, so only the word arm differs). For
each size, recall p50/p95 with the word arm on and off, interleaved query by query
over LoCoMo's questions, on the same database file. Writes
``benchmarks/results/word_arm_speed.md`` with the command at the top.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.block_speed import NOW, build_store, interleaved, speed_main
from benchmarks.stats import percentile
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings


def settings(db_path: Path, words: bool) -> Settings:
    return Settings.from_env(
        {},
        embedding_mode="hash",
        db_path=str(db_path),
        block_build_enabled=False,
        block_retrieval_enabled=False,
        word_arm_enabled=words,
    )


def measure(size: int, texts: list[str], questions: list[str], workdir: Path) -> dict[str, object]:
    path = workdir / f"words-{size}.db"
    build_store(path, texts, size)
    with (
        Memory(settings=settings(path, True), clock=fixed_clock(NOW), background=False) as on,
        Memory(settings=settings(path, False), clock=fixed_clock(NOW), background=False) as off,
    ):
        timed = interleaved(on, off, questions)
    return {"size": size, "on": timed["on"], "off": timed["off"]}


def report(rows: list[dict[str, object]], argv: list[str], questions: int) -> str:
    lines = [
        f"`python -m benchmarks.word_arm_speed {' '.join(argv)}`",
        "",
        f"LoCoMo turns repeated to each size, one agent, hash embedder (query embedding excluded), blocks off; "
        f"{questions} LoCoMo questions, limit 10, rrf; word arm on/off interleaved query by query.",
        "",
        "| memories | p50 off ms | p50 on ms | on/off | p95 off ms | p95 on ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        on, off = row["on"], row["off"]
        p50_on, p50_off = statistics.median(on), statistics.median(off)  # type: ignore[arg-type]
        lines.append(
            f"| {row['size']:,} | {p50_off:.1f} | {p50_on:.1f} | {p50_on / p50_off:.2f} | "
            f"{percentile(off, 0.95):.1f} | {percentile(on, 0.95):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return speed_main(argv, __doc__.splitlines()[0], measure, report, "word_arm_speed.md")


if __name__ == "__main__":
    sys.exit(main())

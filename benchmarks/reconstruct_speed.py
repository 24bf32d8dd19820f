"""What reconstruct costs over the recall it reads from, on LoCoMo, measured side by side in one run.

    python -m benchmarks.reconstruct_speed --embedders local hash

Every LoCoMo conversation is stored in full (``harness.ConversationStore``, our
defaults: blocks built and searched), then each question is asked three ways,
interleaved so that drift hits all alike: ``recall`` at limit 20 with full content
(the recall reconstruct makes), ``reconstruct`` at its defaults, and ``reconstruct``
with ``trace: true``. The query vectors are warm for all three (the first call of a
question embeds it; each way is timed on a second call). Writes
benchmarks/results/reconstruct_speed.md with p50 / p95 per way and the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h

PROG = "benchmarks.reconstruct_speed"
DEFAULTS = {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}  # as shipped
WAYS = ("recall top 20", "reconstruct", "reconstruct + trace")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO)
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "reconstruct_speed.md"))
    return parser


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def calls(store: h.ConversationStore, question: Any) -> dict[str, Callable[[], dict[str, Any]]]:
    agent, query = store.agent_id, question.text
    memory = store.memory
    return {
        WAYS[0]: lambda: memory.recall(agent_id=agent, query=query, limit=20, full_content=True),
        WAYS[1]: lambda: memory.reconstruct(agent_id=agent, query=query),
        WAYS[2]: lambda: memory.reconstruct(agent_id=agent, query=query, trace=True),
    }


def measure(embedder_mode: str, datasets: list[h.Dataset], console: Console) -> dict[str, Any]:
    embedder = h.new_embedder(embedder_mode)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    sizes: dict[str, list[int]] = {way: [] for way in WAYS}
    records = 0
    workdir = h.workdir_for(None)
    for dataset in datasets:
        for conversation in dataset.conversations:
            store = h.ConversationStore(conversation, embedder, "rrf", workdir, DEFAULTS)
            records += store.advance(None)
            for question in conversation.questions:
                store.memory.clock = h.fixed_clock(question.asked_at)
                for way, call in calls(store, question).items():
                    call()  # warm: the query's vector is cached after this
                    started = time.perf_counter()
                    answer = call()
                    times[way].append((time.perf_counter() - started) * 1000)
                    if answer.get("ok") is False:
                        raise RuntimeError(f"{way} failed: {answer.get('error')}")
                    sizes[way].append(len(json.dumps(answer, ensure_ascii=False)))
            store.close()
            console.print(f"{embedder_mode}: {conversation.conv_id} done ({len(times[WAYS[0]])} questions)")
    return {
        "embedder": embedder_mode,
        "records": records,
        "questions": len(times[WAYS[0]]),
        "p50": {w: statistics.median(v) for w, v in times.items()},
        "p95": {w: percentile(v, 0.95) for w, v in times.items()},
        "size": {w: statistics.mean(v) for w, v in sizes.items()},
    }


def report(results: list[dict[str, Any]], argv: list[str]) -> str:
    lines = [
        "# reconstruct's cost over its recall (LoCoMo)",
        "",
        f"`{h.command_line(PROG, argv)}`",
        "",
        "Each question asked three ways, interleaved, on the same store (all conversation turns and session "
        "summaries, our defaults: blocks built and searched); query vectors warm; milliseconds of wall time "
        "in process (no transport).",
        "",
    ]
    for r in results:
        base = r["p50"][WAYS[0]]
        lines += [f"## embedder `{r['embedder']}`: {r['questions']} questions, {r['records']} records", ""]
        lines += h.markdown_table(
            ["way", "p50 ms", "p95 ms", "p50 / recall", "mean response chars"],
            [
                [w, f"{r['p50'][w]:.2f}", f"{r['p95'][w]:.2f}", f"×{r['p50'][w] / base:.2f}", f"{r['size'][w]:,.0f}"]
                for w in WAYS
            ],
        )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    console = Console()
    datasets = h.load_datasets(args.locomo, args.limit_conversations, None)
    results = [measure(mode, datasets, console) for mode in args.embedders]
    text = report(results, argv)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    console.print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

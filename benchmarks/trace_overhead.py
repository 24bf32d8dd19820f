"""What a requested recall trace costs (spec recall-process-v0 §1.4: target, at most a fifth of the recall).

For each store size, a store of generated English sentences is bulk-loaded (hash
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
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock, iso
from cuedrecall.config import Settings

AGENT = "bench"
START = datetime(2023, 1, 1, tzinfo=timezone.utc)
SPAN = timedelta(days=730)  # the generated history covers two years
EPISODE_EVERY = 50  # one episode per this many memories
CHUNK = 2000

NAMES = ["Mara", "Joao", "Ines", "Tomas", "Rita", "Bruno", "Clara", "Diogo", "Helena", "Nuno", "Sofia", "Pedro",
         "Lucia", "Miguel", "Ana", "Rui", "Beatriz", "Filipe", "Marta", "Hugo"]
VERBS = ["fixed", "bought", "sold", "lost", "found", "painted", "cleaned", "borrowed", "returned", "ordered",
         "cooked", "planned", "cancelled", "booked", "repaired", "measured", "packed", "shipped", "tested", "tuned",
         "rebuilt", "replaced", "photographed", "recorded", "reviewed", "signed", "renewed", "installed",
         "upgraded", "sketched"]
ADJECTIVES = ["old", "new", "blue", "broken", "shiny", "heavy", "small", "wooden", "electric", "vintage",
              "cheap", "borrowed", "spare", "rusty", "folding", "quiet", "noisy", "leather", "cracked", "red",
              "green", "tiny", "huge", "second-hand", "handmade", "waterproof", "digital", "ceramic", "steel",
              "striped"]
OBJECTS = ["bike", "laptop", "guitar", "kettle", "camera", "tent", "stove", "lamp", "chair", "table", "boat",
           "printer", "phone", "watch", "jacket", "backpack", "helmet", "ladder", "drill", "piano", "oven",
           "fridge", "scooter", "car", "router", "monitor", "keyboard", "speaker", "microphone", "telescope",
           "sofa", "bookshelf", "mirror", "clock", "radio", "fan", "heater", "vacuum", "blender", "toaster",
           "suitcase", "umbrella", "wallet", "passport", "ticket", "contract", "invoice", "recipe", "garden",
           "roof", "window", "door", "fence", "boiler", "tyre", "saddle", "chain", "battery", "charger", "lens"]
PLACES = ["Lisbon", "Porto", "Braga", "Faro", "Sintra", "Cascais", "Coimbra", "Evora", "Aveiro", "Madeira",
          "the market", "the workshop", "the office", "the harbour", "the station", "the library", "the garage",
          "the beach", "the park", "the bakery", "the museum", "the airport", "the hospital", "the school",
          "the cafe", "the hardware store", "the repair shop", "the post office", "the bank", "the gym",
          "the hotel", "the farm", "the studio", "the warehouse", "the clinic", "the bridge", "the square",
          "the campsite", "the ferry", "the stadium"]
TIMES = ["on Monday", "on a rainy Tuesday", "last weekend", "before lunch", "after work", "in the morning",
         "late at night", "during the holidays", "at the end of the month", "before the trip", "after the meeting",
         "on Sunday evening", "in early spring", "in the summer", "before the deadline", "on the way home",
         "during the storm", "at dawn", "over the long weekend", "right after the call"]
REASONS = ["because it kept failing", "for the upcoming trip", "as a birthday present", "to save money",
           "after reading a review", "since the warranty ran out", "for the new flat", "on a friend's advice",
           "to replace the broken one", "before the guests arrived", "because the price dropped",
           "for the photography course", "to sell it later", "for the club race", "after the inspection"]
TEMPLATES = [
    "{name} {verb} the {adj} {obj} at {place} {time}.",
    "{time}, {name} {verb} a {adj} {obj} {reason}.",
    "At {place}, {name} {verb} the {obj} {reason}.",
    "{name} said the {adj} {obj} from {place} was {verb} {time}.",
    "We {verb} {name}'s {obj} at {place} {reason}.",
    "{name} and {name2} {verb} the {adj} {obj} {time} at {place}.",
    "The {adj} {obj} was {verb} by {name} {reason}.",
    "{name} wants the {obj} {verb} before going to {place} {time}.",
]
QUERY_TEMPLATES = [
    "what did {name} do with the {obj}",
    "{adj} {obj} {place}",
    "when was the {obj} {verb}",
    "{name} {obj} {reason_word}",
    "who {verb} the {adj} {obj} at {place}",
    "{obj} {time}",
]


class SentenceGenerator:
    """Random-ish English sentences from a fixed seed: the same seed gives the same store."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _fill(self, template: str) -> str:
        r = self.rng
        name, name2 = r.sample(NAMES, 2)
        reason = r.choice(REASONS)
        return template.format(name=name, name2=name2, verb=r.choice(VERBS), adj=r.choice(ADJECTIVES),
                               obj=r.choice(OBJECTS), place=r.choice(PLACES), time=r.choice(TIMES), reason=reason,
                               reason_word=reason.split()[-1])

    def sentence(self) -> str:
        text = self._fill(self.rng.choice(TEMPLATES))
        if self.rng.random() < 0.3:  # some longer records
            text += " " + self._fill(self.rng.choice(TEMPLATES))
        if self.rng.random() < 0.05:  # and a few identifiers, as real notes carry
            text += f" Ref {self.rng.choice(['INV', 'bug', 'PR', 'TKT'])}-{self.rng.randrange(1000, 99999)}."
        return text

    def query(self) -> str:
        return self._fill(self.rng.choice(QUERY_TEMPLATES))


def _settings(db_path: str, **overrides: Any) -> Settings:
    return Settings.from_env({}, **{"embedding_mode": "hash", "db_path": db_path, **overrides})


def bulk_load(memory: Memory, size: int, seed: int, progress: Progress | None = None) -> dict[str, float]:
    """Write ``size`` memories (and one episode per EPISODE_EVERY) in transactions of CHUNK rows."""
    generator = SentenceGenerator(seed)
    model = memory.embedder.model
    step = SPAN.total_seconds() / max(1, size)
    task = progress.add_task(f"loading {size:,}", total=size) if progress else None
    started = time.perf_counter()
    episodes = 0
    for first in range(0, size, CHUNK):
        count = min(CHUNK, size - first)
        texts = [generator.sentence() for _ in range(count)]
        vectors = memory.embedder.embed(texts)
        summaries = [f"Session notes: {generator.sentence()} {generator.sentence()}"
                     for i in range(first, first + count) if (i + 1) % EPISODE_EVERY == 0]
        episode_vectors = memory.embedder.embed(summaries) if summaries else []
        with memory.store_.write() as conn:
            for offset, (text, vector) in enumerate(zip(texts, vectors)):
                epoch = START.timestamp() + (first + offset) * step
                stamp = iso(datetime.fromtimestamp(epoch, timezone.utc))
                memory.store_.insert_memory(conn, {
                    "agent_id": AGENT, "project_id": "", "channel": "", "msg_id": "", "content": text,
                    "source": "{}", "source_id": "", "timestamp": stamp, "ts_epoch": epoch, "metadata": "{}",
                    "created_at": stamp, "embedding": vector, "embedding_model": model,
                })
            for summary, vector in zip(summaries, episode_vectors):
                episodes += 1
                epoch = START.timestamp() + episodes * EPISODE_EVERY * step
                stamp = iso(datetime.fromtimestamp(epoch, timezone.utc))
                memory.store_.insert_episode(conn, {
                    "agent_id": AGENT, "project_id": "", "channel": "", "summary": summary, "keywords": "",
                    "start_time": stamp, "end_time": stamp, "ts_epoch": epoch, "resolved": 0, "embedding": vector,
                    "embedding_model": model, "created_at": stamp,
                })
        if progress is not None and task is not None:
            progress.advance(task, count)
    return {"load_s": time.perf_counter() - started, "episodes": episodes}


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
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    def row(self) -> dict[str, Any]:
        p50_plain, p50_traced = statistics.median(self.plain_ms), statistics.median(self.traced_ms)
        paired = [t / p for t, p in zip(self.traced_ms, self.plain_ms) if p > 0]
        return {
            "memories": self.size, "episodes": self.episodes, "queries": self.queries,
            "untraced_p50_ms": p50_plain, "traced_p50_ms": p50_traced, "ratio_p50": p50_traced / p50_plain,
            "paired_ratio_median": statistics.median(paired),
            "untraced_p90_ms": self._q(self.plain_ms, 0.9), "traced_p90_ms": self._q(self.traced_ms, 0.9),
            "coverage_p50_ms": statistics.median(self.coverage_ms), "mismatches": self.mismatches,
            "load_s": self.load_s,
        }


def time_recalls(memory: Memory, queries: Sequence[str], limit: int, progress: Progress | None = None,
                 label: str = "") -> tuple[list[float], list[float], list[float], list[float], int]:
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
        for with_trace in ((True, False) if i % 2 == 0 else (False, True)):
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


def measure(size: int, queries: int, limit: int, seed: int, workdir: Path,
            progress: Progress | None = None) -> Timing:
    db = workdir / f"overhead-{size}.db"
    clock = fixed_clock(START + SPAN + timedelta(days=1))
    with Memory(settings=_settings(str(db)), clock=clock) as memory:
        loaded = bulk_load(memory, size, seed, progress)
        generator = SentenceGenerator(seed + 1)
        asked = [generator.query() for _ in range(queries)]
        gc.collect()
        plain, traced, totals, coverage, mismatches = time_recalls(memory, asked, limit, progress, f"{size:,}")
    return Timing(size, int(loaded["episodes"]), queries, plain, traced, totals, coverage, mismatches,
                  loaded["load_s"])


COLUMNS = [
    ("memories", "memories", "{:,}"), ("episodes", "episodes", "{:,}"), ("queries", "queries", "{}"),
    ("untraced p50 ms", "untraced_p50_ms", "{:.3f}"), ("traced p50 ms", "traced_p50_ms", "{:.3f}"),
    ("ratio p50", "ratio_p50", "{:.3f}"), ("median paired ratio", "paired_ratio_median", "{:.3f}"),
    ("untraced p90 ms", "untraced_p90_ms", "{:.3f}"), ("traced p90 ms", "traced_p90_ms", "{:.3f}"),
    ("coverage p50 ms", "coverage_p50_ms", "{:.3f}"), ("answers differing", "mismatches", "{}"),
    ("load s", "load_s", "{:.1f}"),
]

CONSOLE_COLUMNS = {"memories", "queries", "untraced_p50_ms", "traced_p50_ms", "ratio_p50", "paired_ratio_median",
                   "coverage_p50_ms", "mismatches"}


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
        "traced over untraced; the spec's target is at most 1.2 (a fifth of the recall's own time). "
        "\"answers differing\" counts queries whose traced response, minus the trace, differed from the "
        "untraced one (must be 0).",
        "",
        "| " + " | ".join(title for title, _, _ in COLUMNS) + " |",
        "|" + "|".join("---:" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(fmt.format(row[key]) for _, key, fmt in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_overhead",
                                     description="Time traced vs untraced recall on generated stores.")
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
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
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

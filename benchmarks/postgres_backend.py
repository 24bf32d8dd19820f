"""The PostgreSQL backend beside SQLite: retrieval quality (LoCoMo, long-span) and recall latency at size.

    python -m benchmarks.postgres_backend                          # quality (hash, local) + latency at 100k
    python -m benchmarks.postgres_backend --embedders hash --sizes 10000 --queries 50

Quality: ``benchmarks.retrieval``'s run, once with every conversation store in a
SQLite file and once in a fresh schema of a PostgreSQL database; the gap is the
PostgreSQL figure minus the SQLite one (the bar: NDCG@10 within 1 point).
Latency: a synthetic store (benchmarks/synthetic.py, hash vectors) of each size in
both backends, recall p50/p95 over the same queries (query vectors embedded before
timing; SQLite and PostgreSQL's shipped mode asked each question in turn); for
PostgreSQL the shipped exact vector arms (the in-process index following the change
log), the same arms scanned in SQL (``CUEDRECALL_PG_VECTOR_INDEX=false``) and the optional HNSW index; the
PostgreSQL store is timed after VACUUM ANALYZE (what autovacuum does after a load).

PostgreSQL is a private pgserver (16 + pgvector) in a temporary folder unless
``--url`` names one (the runs then create schemas cuedrecall_bench_* in it).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rich.console import Console

from benchmarks import harness as h
from benchmarks import retrieval
from benchmarks.synthetic import AGENT, bulk_load, queries
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.store.base import Scope

RESULTS = Path(__file__).resolve().parent / "results"
NOW = "2026-01-01T00:00:00+00:00"
_names = itertools.count()


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """The PostgreSQL URL to use: the one given, or a private pgserver's for the run."""
    if url:
        yield url
        return
    import pgserver

    folder = tempfile.mkdtemp(prefix="cuedrecall-pg-bench-")
    pg = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        pg.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        # room for an HNSW graph of a million rows while it is built (pgvector builds slowly once it spills)
        pg.psql("ALTER SYSTEM SET maintenance_work_mem = '2GB';")
        pg.psql("SELECT pg_reload_conf();")
        yield pg.get_uri()
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def fresh_schema(url: str) -> str:
    """A URL whose search path is a new, empty schema of the database."""
    import psycopg

    name = f"cuedrecall_bench_{int(time.time())}_{next(_names)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={name},public')}"


# -- quality ----------------------------------------------------------------------------------------


def quality(args: argparse.Namespace, url: str, console: Console) -> list[list[Any]]:
    """(dataset, embedder, metric, sqlite, postgres, gap) rows of retrieval's run on both backends."""
    study = retrieval.build_parser().parse_args(
        ["--embedders", *args.embedders, "--modes", "rrf", "--long-span", args.long_span, "--locomo", args.locomo]
    )
    study.dump_traces = None
    sqlite_rows = retrieval.run(study, console)[1]
    original = h.settings_for

    def on_postgres(embedder: str, mode: str, path: Any, environ: Any = None) -> Settings:
        return Settings.from_env(
            {**h.WITHOUT_BLOCKS, **(environ or {})},
            embedding_mode=embedder,
            recall_mode=mode,
            db_path=":memory:",
            db_url=fresh_schema(url),
        )

    h.settings_for = on_postgres  # every conversation store in a schema of its own
    try:
        postgres_rows = retrieval.run(study, console)[1]
    finally:
        h.settings_for = original
    out = []
    for key, group in h.group_rows(sqlite_rows, ("dataset", "embedder")).items():
        other = h.group_rows(postgres_rows, ("dataset", "embedder"))[key]
        left, right = retrieval.summarise(group), retrieval.summarise(other)
        for metric in ("recall_any@10", "ndcg@10", "mrr", "session@10"):
            out.append([*key, metric, left[metric], right[metric], right[metric] - left[metric]])
    return out


# -- latency ----------------------------------------------------------------------------------------


ARM_DEPTH = 100  # the vector arm's depth at the defaults (recall_depth_floor)


@dataclass
class Timed:
    """One backend's run over the queries: the figures of a row of the table, and what it answered."""

    built: float | None  # seconds to fill the store, or to build the HNSW index
    first: float  # ms of the first recall after the store opened (the in-process index is read then)
    spent: list[float]  # ms of each timed recall
    trips: float | None  # statements a recall (PostgreSQL)
    answers: list[tuple[str, ...]]  # each query's rows, in the order returned
    arm: list[list[str]]  # each query's vector arm (ARM_DEPTH rows, no floor), best first
    lists: list[dict[str, list[str]]]  # each query's arm lists, from its trace (asked again, untimed)

    def row(self, size: int, name: str) -> list[Any]:
        p95 = statistics.quantiles(self.spent, n=20)[18] if len(self.spent) >= 20 else max(self.spent)
        return [size, name, self.built, round(self.first, 1), statistics.median(self.spent), p95, self.trips]


def latency(
    args: argparse.Namespace, url: str, console: Console, written: Callable[[list[list[Any]], list[list[Any]]], None]
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Per store size and backend: the latency rows (size, backend, build s, first recall ms, p50 ms, p95 ms,
    statements a recall) and the agreement rows (size, backend, queries, answers equal to SQLite's, vector arm
    recall@10 and @ARM_DEPTH against SQLite's exact scan, answers equal to PostgreSQL's SQL scan). SQLite and
    PostgreSQL with its index (the shipped defaults) are filled first, then asked each question in turn, each
    first every other question, so the ratio of their p50s sees the same machine. ``written`` is given the rows
    so far after each run (a run at a million rows takes long: what finished is kept)."""
    rows: list[list[Any]] = []
    agreement: list[list[Any]] = []
    texts = queries(args.queries)
    slow = texts[: args.slow_queries] if args.slow_queries else texts
    for size in args.sizes:
        folder = Path(tempfile.mkdtemp(prefix="cuedrecall-lat-"))
        try:
            pg = {"db_path": ":memory:", "db_url": fresh_schema(url)}
            with _filled({"db_path": str(folder / "m.db")}, size) as lite, _filled(pg, size) as indexed:
                timed = _timed({"sqlite": lite, "postgres (index)": indexed}, texts)
            sqlite, runs = timed["sqlite"], {"postgres (index)": timed["postgres (index)"]}
            rows.append(sqlite.row(size, "sqlite"))
            pair = runs["postgres (index)"]  # kept at once: the slow runs after it take long at a million rows
            written(
                [*rows, pair.row(size, "postgres (index)")],
                [*agreement, [size, "postgres (index)", *_agreement(sqlite, pair), None]],
            )
            for name, (settings, asked) in {
                "postgres (sql scan)": ({**pg, "pg_vector_index": False}, slow),
                "postgres (hnsw)": ({**pg, "pg_hnsw": True, "pg_vector_index": False}, slow),
            }.items():
                with _filled(settings, 0) as store:
                    runs[name] = _timed({name: store}, asked)[name]
            for name, run in runs.items():
                rows.append(run.row(size, name))
                same_as_scan = sum(a == b for a, b in zip(runs["postgres (sql scan)"].answers, run.answers))
                agreement.append([size, name, *_agreement(sqlite, run), same_as_scan])
                console.print(f"{name} {size:,}: p50 {statistics.median(run.spent):.1f} ms")
            written(rows, agreement)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return rows, agreement


def _agreement(exact: Timed, other: Timed) -> tuple[int, int, str, float, float]:
    """(queries, answers equal to the exact run's, the arms whose lists differ where the answers differ, vector
    arm recall@10, recall@ARM_DEPTH) over the queries both ran: the share of the exact scan's rows the other arm
    found too."""
    n = len(other.answers)
    same = sum(a == b for a, b in zip(exact.answers, other.answers))
    differing: Counter[str] = Counter()
    for mine, theirs, left, right in zip(exact.answers, other.answers, exact.lists, other.lists):
        if mine != theirs:
            differing.update(name for name in left.keys() | right.keys() if left.get(name) != right.get(name))
    arms = ", ".join(f"{name} {count}" for name, count in differing.most_common()) or "none"

    def recall(k: int) -> float:
        shares = [len(set(e[:k]) & set(o[:k])) / len(e[:k]) for e, o in zip(exact.arm, other.arm) if e]
        return statistics.fmean(shares) if shares else float("nan")

    return n, same, arms, recall(10), recall(ARM_DEPTH)


@dataclass
class Filled:
    """An open store filled for timing."""

    memory: Memory
    settings: Settings
    built: float | None  # seconds to fill it, or to build the HNSW index as it opened; None: neither


@contextmanager
def _filled(where: dict[str, Any], size: int) -> Iterator[Filled]:
    """A store over ``where``, filled with ``size`` synthetic memories (0: as it is), vacuumed on PostgreSQL."""
    settings = Settings.from_env(h.WITHOUT_BLOCKS, embedding_mode="hash", calibrate_on_growth=False, **where)
    start = time.perf_counter()
    with Memory(settings=settings, clock=fixed_clock(NOW), background=False) as memory:
        opened = time.perf_counter() - start  # the HNSW index is built as the store opens
        start = time.perf_counter()
        if size:
            bulk_load(memory, size, batch=2000)
        built = time.perf_counter() - start if size else (opened if where.get("pg_hnsw") else None)
        if where.get("db_url"):
            vacuum(where["db_url"])
        yield Filled(memory, settings, None if built is None else round(built, 1))


def _timed(stores: dict[str, Filled], texts: Sequence[str]) -> dict[str, Timed]:
    """Each store's first recall, then one recall a question on every store in turn (each store first every
    other question), then each question's traced arms and vector arm, untimed."""
    vectors = {name: store.memory.embed(list(texts)) for name, store in stores.items()}  # cached before timing
    first = {}
    for name, store in stores.items():
        begin = time.perf_counter()
        store.memory.recall(agent_id=AGENT, query=texts[0], limit=10)
        first[name] = (time.perf_counter() - begin) * 1000
        for text in texts[:3]:
            store.memory.recall(agent_id=AGENT, query=text, limit=10)  # warm
    spent: dict[str, list[float]] = {name: [] for name in stores}
    answers: dict[str, list[tuple[str, ...]]] = {name: [] for name in stores}
    sent = dict.fromkeys(stores, 0)
    with statements() as counter:
        for i, text in enumerate(texts):
            for name in list(stores) if i % 2 == 0 else list(stores)[::-1]:
                before = counter[0]
                begin = time.perf_counter()
                answer = stores[name].memory.recall(agent_id=AGENT, query=text, limit=10)
                spent[name].append((time.perf_counter() - begin) * 1000)
                sent[name] += counter[0] - before
                answers[name].append(tuple(row["ref"] for row in answer["messages"]))
    out = {}
    for name, store in stores.items():
        memory, scope, window = store.memory, Scope(AGENT), store.settings.max_memories
        lists = [
            {arm: [hit["ref"] for hit in hits] for arm, hits in traced["trace"]["arms"].items()}
            for traced in (memory.recall(agent_id=AGENT, query=text, limit=10, trace=True) for text in texts)
        ]
        arm = [
            [hit.ref for hit in memory.store_.vector_near(scope, vector, floor=-1.0, depth=ARM_DEPTH, window=window)]
            if vector is not None
            else []
            for vector in vectors[name]
        ]
        trips = sent[name] / len(texts) if store.settings.db_url else None
        out[name] = Timed(store.built, first[name], spent[name], trips, answers[name], arm, lists)
    return out


@contextmanager
def statements() -> Iterator[list[int]]:
    """Counts the statements psycopg sends while inside (every thread's, each one round trip): [count]."""
    sent = [0]
    try:
        import psycopg
    except ImportError:  # a SQLite-only install: nothing is sent
        yield sent
        return
    execute = psycopg.Cursor.execute

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent[0] += 1
        return execute(self, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def vacuum(url: str) -> None:
    """VACUUM ANALYZE, as autovacuum leaves a table some time after a bulk load: planner statistics, and the
    visibility map that lets a count read an index alone."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


# -- report -----------------------------------------------------------------------------------------


def render(
    argv: Sequence[str], quality_rows: list[list[Any]], latency_rows: list[list[Any]], agreement: list[list[Any]]
) -> str:
    command = f"    python -m benchmarks.postgres_backend {' '.join(argv)}"
    lines = [
        "# The PostgreSQL backend beside SQLite",
        "",
        command,
        "",
        "PostgreSQL 16 + pgvector 0.6 (pgserver) on the same machine as SQLite; one process each.",
        "",
    ]
    if quality_rows:
        lines += [
            "## Retrieval quality (rrf, every scored question)",
            "",
            "| dataset | embedder | metric | sqlite | postgres | gap (points) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        lines += [f"| {d} | {e} | {m} | {a:.3f} | {b:.3f} | {100 * g:+.1f} |" for d, e, m, a, b, g in quality_rows]
        lines.append("")
    if latency_rows:
        lines += [
            "## Recall latency (hash embedder, query vectors cached, limit 10)",
            "",
            "| memories | backend | build s | first recall ms | p50 ms | p95 ms | statements a recall |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {s:,} | {b} | {'' if t is None else t} | {first} | {p50:.1f} | {p95:.1f} | "
            f"{'' if trips is None else f'{trips:.1f}'} |"
            for s, b, t, first, p50, p95, trips in latency_rows
        ]
        lines.append("")
        sqlite = {row[0]: row[4] for row in latency_rows if row[1] == "sqlite"}
        lines += [
            f"At {row[0]:,} memories PostgreSQL with its index takes {row[4] / sqlite[row[0]]:.2f}x SQLite's p50."
            for row in latency_rows
            if row[1] == "postgres (index)" and sqlite.get(row[0])
        ]
        lines += [
            "",
            "SQLite and PostgreSQL with its index (the defaults) are filled first and then asked each question in "
            "turn, each first every other question, so their ratio sees the same machine; the SQL scan and HNSW "
            "runs follow, over the same PostgreSQL store. "
            "Build s: filling the store (hash vectors embedded in batches, inserted in large transactions); for "
            "HNSW, building its index over the filled store as the store opens. First recall: the first after the "
            "store opened (PostgreSQL's in-process index is read from the rows then). Statements a recall: what "
            "psycopg sent during the timed recalls (each a round trip; the recall's snapshot, its helper's and "
            "their reads), over the recalls.",
            "",
            "## Answers against SQLite's",
            "",
            "| memories | backend | queries | answers equal to SQLite's | arms whose lists differ there | "
            f"vector arm recall@10 | vector arm recall@{ARM_DEPTH} | answers equal to PostgreSQL's SQL scan |",
            "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {s:,} | {b} | {n} | {same} | {arms} | {r10:.3f} | {rdepth:.3f} | {'' if scan is None else scan} |"
            for s, b, n, same, arms, r10, rdepth, scan in agreement
        ]
        lines += [
            "",
            "Answers equal: the same rows in the same order; where an answer differs, the arms whose lists (from "
            "each recall's trace, asked again untimed) differ from SQLite's, and on how many questions. Both "
            "backends' word arms hold SQLite's words (porter over unicode61, docs/storage.md); the modes of one "
            "backend differ only in their vector arm. "
            f"The vector arm: the {ARM_DEPTH} rows nearest each query (no floor), the arm's depth at the defaults; "
            "recall: the share of SQLite's exact rows the backend's arm found too.",
        ]
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres_backend", description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a postgresql:// URL (default: a private pgserver)")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["hash", "local"])
    parser.add_argument("--long-span", choices=["small", "large", "none"], default="large")
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO)
    parser.add_argument("--sizes", nargs="*", type=int, default=[100_000], help="latency store sizes (none: skip)")
    parser.add_argument("--queries", type=int, default=100, help="timed recalls per store")
    parser.add_argument(
        "--slow-queries", type=int, default=0, help="recalls for the SQL scan and HNSW runs (0: --queries)"
    )
    parser.add_argument("--no-quality", action="store_true", help="latency only")
    parser.add_argument("--out", type=Path, default=RESULTS / "postgres_backend.md")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    console = Console(stderr=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with server(args.url) as url:
        quality_rows = [] if args.no_quality else quality(args, url, console)

        def written(latency_rows: list[list[Any]], agreement: list[list[Any]]) -> None:
            partial = render(argv, quality_rows, latency_rows, agreement)
            args.out.write_text(partial + "\n\n(Partial: the run has not finished.)\n", encoding="utf-8")

        latency_rows, agreement = latency(args, url, console, written) if args.sizes else ([], [])
    report = render(argv, quality_rows, latency_rows, agreement)
    args.out.write_text(report + "\n", encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

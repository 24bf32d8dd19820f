"""Load: many MCP clients at once over Streamable HTTP, and several stdio servers over one database file.

Every run is on loopback, bounded in calls and time, and stops by itself (its servers
are killed on the way out, whatever happened). Two parts:

- **HTTP**: one ``cuedrecall serve --http`` process on 127.0.0.1 (bearer token,
  hash embedder, every other setting at its default). ``--clients`` MCP sessions
  store and recall at once for ``--seconds`` (the mixed phase); then recall alone
  at each of ``--recall-clients`` concurrent sessions (1, 4, 8): the throughput of
  concurrent readers in one server.
- **stdio**: ``--stdio-procs`` ``cuedrecall serve`` processes over the same file,
  each driven by its own MCP session, store and recall for ``--seconds``; with
  ``--import-rows`` another process imports that many rows (``cuedrecall import``,
  batches committed one by one) meanwhile.

Each call is timed and checked: a store must answer ``ok`` with a ref, a recall a
``messages`` list whose rows carry a ref and text; anything else (an ``ok: false``,
an exception, a missing answer) is an error, and a ``database is locked`` reaching
a client is counted apart. Afterwards the database is read back: every acknowledged
store must be present exactly once, under the ref it was acknowledged with.

    python -m benchmarks.load --out benchmarks/results/load.md
    python -m benchmarks.load --seconds 2 --clients 3 --recall-clients 1,2 --stdio-procs 2   # the CI size
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks import serving
from benchmarks.bulk import insert_memories
from cuedrecall.api import Memory
from cuedrecall.config import Settings
from cuedrecall.store.base import MEMORY

AGENT = "load"
TOKEN = "load-benchmark-token"
WORDS = [
    "ferry",
    "harbour",
    "lantern",
    "orchard",
    "violin",
    "glacier",
    "pepper",
    "tunnel",
    "meadow",
    "copper",
    "saddle",
    "rocket",
    "quartz",
    "willow",
    "mirror",
    "canyon",
    "basil",
    "falcon",
    "ember",
    "marble",
    "thistle",
    "comet",
    "pebble",
    "walnut",
]
MAX_CALLS = 200_000  # per phase, whatever the time: a bound on the work one run can do
# the servers' background work (block building, calibration as an agent grows) is off, so the figures are the
# calls' own and not a backfill of the prefilled rows competing with them
SERVER_ENV = {
    "CUEDRECALL_EMBEDDING_MODE": "hash",
    "CUEDRECALL_AUTH_TOKEN": TOKEN,
    "CUEDRECALL_BLOCK_BUILD_ENABLED": "false",
    "CUEDRECALL_BLOCK_RETRIEVAL_ENABLED": "false",
    "CUEDRECALL_CALIBRATE_ON_GROWTH": "false",
}


@dataclass
class Tally:
    """What one phase's calls did: latencies per kind, errors, and each acknowledged store (content -> ref)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"store": [], "recall": []})
    errors: list[str] = field(default_factory=list)
    locked: int = 0  # errors that were SQLite's "database is locked" reaching the client
    acknowledged: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def fail(self, what: str) -> None:
        self.errors.append(what[:300])
        self.locked += "database is locked" in what

    def row(self, name: str) -> dict[str, Any]:
        calls = sum(len(v) for v in self.latencies.values())
        out: dict[str, Any] = {
            "phase": name,
            "calls": calls,
            "errors": len(self.errors),
            "locked": self.locked,
            "calls_per_s": calls / self.seconds if self.seconds else 0.0,
        }
        for kind, values in self.latencies.items():
            if values:
                out[kind] = {
                    "n": len(values),
                    "per_s": len(values) / self.seconds,
                    "p50_ms": float(np.percentile(values, 50)) * 1000,
                    "p99_ms": float(np.percentile(values, 99)) * 1000,
                }
        return out


# -- one client's calls ----------------------------------------------------------------------------------------


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


async def _store(session: ClientSession, tally: Tally, content: str) -> None:
    started = time.perf_counter()
    try:
        result = await session.call_tool("store", {"agent_id": AGENT, "message": {"content": content}})
        answer = json.loads(result.content[0].text)
    except Exception as exc:  # a transport failure is an error of the run, not of the harness
        tally.fail(f"store raised {type(exc).__name__}: {exc}")
        return
    tally.latencies["store"].append(time.perf_counter() - started)
    if answer.get("ok") is True and answer.get("result") == "stored" and str(answer.get("ref", "")).startswith("mem:"):
        tally.acknowledged[content] = answer["ref"]
    else:
        tally.fail(f"store answered {json.dumps(answer)[:200]}")


async def _recall(session: ClientSession, tally: Tally, query: str) -> None:
    started = time.perf_counter()
    try:
        result = await session.call_tool("recall", {"agent_id": AGENT, "query": query, "limit": 10})
        answer = json.loads(result.content[0].text)
    except Exception as exc:
        tally.fail(f"recall raised {type(exc).__name__}: {exc}")
        return
    tally.latencies["recall"].append(time.perf_counter() - started)
    if not _well_formed(answer):
        tally.fail(f"recall answered {json.dumps(answer)[:200]}")


def _well_formed(answer: Any) -> bool:
    """A recall's answer: not ok:false, a messages list, each row a dict with text (and a ref when it is a row)."""
    messages = answer.get("messages") if isinstance(answer, dict) else None
    return (
        answer.get("ok") is not False
        and isinstance(messages, list)
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        and all(str(m["ref"]).startswith(("mem:", "ep:")) for m in messages if "ref" in m)
    )


async def _drive(session: ClientSession, tally: Tally, name: str, deadline: float, store_every: int) -> None:
    """Calls until the deadline (or MAX_CALLS): a store every ``store_every`` calls (0: none), recalls between."""
    rng = random.Random(name)
    for i in range(MAX_CALLS):
        if time.monotonic() >= deadline:
            return
        if store_every and i % store_every == 0:
            await _store(session, tally, f"{name} note {i}: {_text(rng, 8)}")
        else:
            await _recall(session, tally, _text(rng, 2))


async def _phase(sessions: Sequence[ClientSession], seconds: float, store_every: int, label: str) -> Tally:
    tally = Tally()
    started = time.monotonic()
    with anyio.fail_after(seconds + 120):  # a hung call cannot hold the run past its bound
        async with anyio.create_task_group() as group:
            for number, session in enumerate(sessions):
                group.start_soon(_drive, session, tally, f"{label}-{number}", started + seconds, store_every)
    tally.seconds = time.monotonic() - started
    return tally


# -- HTTP --------------------------------------------------------------------------------------------------------


def _server_env(pythonpath: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUEDRECALL_", "CPERSONA_"))}
    env.update(SERVER_ENV)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextmanager
def http_server(db: Path, pythonpath: str = "") -> Iterator[str]:
    """``cuedrecall serve --http`` on a free loopback port; yields its /mcp URL; killed on the way out."""
    port = serving.free_port()
    proc = subprocess.Popen(
        serving.serve_command(db, "--http", "--host", serving.LOOPBACK, "--port", str(port)),
        env=_server_env(pythonpath),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        try:
            serving.wait_listening(port, proc)
        except RuntimeError:  # the refused connection says nothing; the server's own stderr says why
            serving.stop(proc)
            raise RuntimeError(f"the HTTP server did not start: {proc.stderr.read().decode()[-2000:]}") from None
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        serving.stop(proc)


@asynccontextmanager
async def http_sessions(url: str, count: int) -> AsyncIterator[list[ClientSession]]:
    """``count`` initialised MCP sessions over Streamable HTTP, each its own HTTP client."""
    async with _nested(count, lambda: _http_session(url)) as sessions:
        yield sessions


@asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[ClientSession]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def _nested(count: int, open_one: Any) -> AsyncIterator[list[ClientSession]]:
    if count == 0:
        yield []
        return
    async with open_one() as first, _nested(count - 1, open_one) as rest:
        yield [first, *rest]


async def run_http(
    db: Path, clients: int, recall_clients: Sequence[int], seconds: float, pythonpath: str = ""
) -> list[tuple[str, Tally]]:
    """The mixed phase at ``clients`` sessions, then recall alone at each count of ``recall_clients``."""
    phases: list[tuple[str, Tally]] = []
    with http_server(db, pythonpath) as url:
        async with http_sessions(url, max([clients, *recall_clients])) as sessions:
            phases.append((f"http mixed, {clients} clients", await _phase(sessions[:clients], seconds, 2, "http")))
            for count in recall_clients:
                tally = await _phase(sessions[:count], seconds, 0, f"read{count}")
                phases.append((f"http recall, {count} client{'s' * (count > 1)}", tally))
    return phases


# -- stdio --------------------------------------------------------------------------------------------------------


@asynccontextmanager
async def _stdio_session(db: Path) -> AsyncIterator[ClientSession]:
    command, *args = serving.serve_command(db)
    params = StdioServerParameters(command=command, args=args, env=_server_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def run_stdio(db: Path, procs: int, seconds: float, import_rows: int = 0) -> list[tuple[str, Tally]]:
    """``procs`` stdio servers over ``db`` storing and recalling at once (and an import of ``import_rows``)."""
    importer = _start_import(db, import_rows) if import_rows else None
    try:
        async with _nested(procs, lambda: _stdio_session(db)) as sessions:
            tally = await _phase(sessions, seconds, 2, "stdio")
    finally:
        imported = _finish_import(importer) if importer is not None else ""
    return [(f"stdio mixed, {procs} server processes{imported}", tally)]


def _finish_import(proc: subprocess.Popen[bytes]) -> str:
    """Wait for the import (bounded) and say what it did, for the phase's label."""
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return ", meanwhile an import (stopped: over 600 s)"
    try:
        answer = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f", meanwhile an import (exit {proc.returncode}, no answer)"
    if not answer.get("ok"):
        return f", meanwhile an import that failed: {answer.get('error')}"
    return f", meanwhile another process imported {answer['imported_memories']:,} rows"


def _start_import(db: Path, rows: int) -> subprocess.Popen[bytes]:
    """Another process importing ``rows`` memories of another agent into ``db`` (``cuedrecall import``)."""
    path = db.with_name("import.jsonl")
    rng = random.Random(7)
    lines = [json.dumps({"_type": "header", "version": "cuedrecall-export/1", "memory_count": rows})]
    lines += [
        json.dumps(
            {
                "_type": "memory",
                "agent_id": "importer",
                "content": f"imported {i}: {_text(rng, 10)}",
                "timestamp": "2025-01-01T00:00:00+00:00",
            }
        )
        for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, "-m", "cuedrecall.cli", "import", str(path), "--db", str(db)],
        env=_server_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


# -- in one process: the store's own concurrency, without HTTP or a client in the way -----------------------------


def _settings() -> Settings:
    return Settings.from_env(
        {}, embedding_mode="hash", block_build_enabled=False, block_retrieval_enabled=False, calibrate_on_growth=False
    )


def prefill(db: Path, rows: int) -> None:
    """``rows`` memories of the load agent written straight into the store, 1,000 a transaction (not counted as
    acknowledged stores: they only give the recalls a store of some size to search)."""
    rng = random.Random(3)
    with Memory(db, settings=_settings(), background=False) as memory:
        for start in range(0, rows, 1000):
            texts = [f"prefilled {i}: {_text(rng, 10)}" for i in range(start, min(start + 1000, rows))]
            insert_memories(memory, [(AGENT, text, "2025-01-01T00:00:00+00:00") for text in texts], epoch=False)


def run_threads(db: Path, counts: Sequence[int], seconds: float) -> list[tuple[str, Tally]]:
    """Recall alone from ``count`` threads of one process over one ``Memory``, for each count."""
    phases = []
    with Memory(db, settings=_settings(), background=False) as memory:
        for count in counts:
            tally = Tally()
            started = time.monotonic()
            threads = [
                threading.Thread(target=_recall_loop, args=(memory, tally, n, started + seconds)) for n in range(count)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=seconds + 120)
            tally.seconds = time.monotonic() - started
            phases.append((f"in-process recall, {count} thread{'s' * (count > 1)}", tally))
    return phases


def _recall_loop(memory: Memory, tally: Tally, number: int, deadline: float) -> None:
    rng = random.Random(number)
    for _ in range(MAX_CALLS):
        if time.monotonic() >= deadline:
            return
        started = time.perf_counter()
        answer = memory.recall(agent_id=AGENT, query=_text(rng, 2), limit=10)
        tally.latencies["recall"].append(time.perf_counter() - started)
        if not _well_formed(answer):
            tally.fail(f"recall answered {json.dumps(answer)[:200]}")


# -- after the run: what the database holds ---------------------------------------------------------------------


def verify(db: Path, tallies: Sequence[Tally]) -> dict[str, Any]:
    """Every acknowledged store present exactly once, under its acknowledged ref."""
    acknowledged: dict[str, str] = {}
    for tally in tallies:
        acknowledged.update(tally.acknowledged)
    with Memory(db, settings=_settings(), background=False) as memory:
        rows = list(memory.store_.export_rows(MEMORY, AGENT))
    copies = Counter(row["content"] for row in rows)
    ref_of = {row["content"]: f"mem:{row['id']}" for row in rows}
    missing = [c for c in acknowledged if copies[c] == 0]
    doubled = [c for c in acknowledged if copies[c] > 1]
    moved = [c for c, ref in acknowledged.items() if copies[c] == 1 and ref_of[c] != ref]
    return {
        "acknowledged": len(acknowledged),
        "missing": len(missing),
        "doubled": len(doubled),
        "wrong_ref": len(moved),
        "rows": len(rows),
    }


# -- the report -------------------------------------------------------------------------------------------------


def _cell(row: dict[str, Any], kind: str) -> str:
    stats = row.get(kind)
    if not stats:
        return "–"
    return f"{stats['n']:,} ({stats['per_s']:.0f}/s), p50 {stats['p50_ms']:.1f} ms, p99 {stats['p99_ms']:.1f} ms"


def report(rows: list[dict[str, Any]], checks: dict[str, dict[str, Any]], command: str) -> str:
    lines = [
        "# Load: concurrent MCP clients over HTTP, several stdio servers over one file",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        "hash embedder, background block building and calibration off, every other setting at its default; "
        "clients and servers on one machine (loopback).",
        "",
        "| phase | calls/s | stores | recalls | errors | `database is locked` |",
        "|---|---:|---|---|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['phase']} | {row['calls_per_s']:.0f} | {_cell(row, 'store')} | "
            f"{_cell(row, 'recall')} | {row['errors']} | {row['locked']} |"
        )
    lines += [
        "",
        "Afterwards (the database read back):",
        "",
        "| part | acknowledged stores | missing | present twice | under another ref | rows |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for part, check in checks.items():
        lines.append(
            f"| {part} | {check['acknowledged']:,} | {check['missing']} | {check['doubled']} | "
            f"{check['wrong_ref']} | {check['rows']:,} |"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[str]]:
    """Both parts, each on a fresh database; (phase rows, integrity per part, error samples)."""
    rows: list[dict[str, Any]] = []
    checks: dict[str, dict[str, Any]] = {}
    samples: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cuedrecall-load-") as folder:
        for part in ("http", "stdio"):
            if (part == "http" and not (args.clients or args.threads)) or (part == "stdio" and not args.stdio_procs):
                continue
            db = Path(folder) / f"{part}.db"
            if part == "http":
                prefill(db, args.prefill)
                phases = (
                    anyio.run(run_http, db, args.clients, args.recall_clients, args.seconds, args.server_path)
                    if args.clients
                    else []
                )
                phases += run_threads(db, args.threads, args.seconds)
            else:
                phases = anyio.run(run_stdio, db, args.stdio_procs, args.seconds, args.import_rows)
            rows += [tally.row(name) for name, tally in phases]
            samples += [error for _, tally in phases for error in tally.errors[:3]]
            checks[part] = verify(db, [tally for _, tally in phases])
    return rows, checks, samples


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    parser.add_argument("--clients", type=int, default=8, help="HTTP sessions of the mixed phase (0: no HTTP part)")
    parser.add_argument(
        "--recall-clients",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[1, 4, 8],
        help="concurrent sessions of each recall-only phase (default 1,4,8)",
    )
    parser.add_argument(
        "--prefill",
        type=int,
        default=20000,
        help="rows written before the HTTP part (default 20000), so recalls search a store of some size",
    )
    parser.add_argument(
        "--threads",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[1, 4, 8],
        help="threads of each in-process recall phase over the HTTP part's file (default 1,4,8)",
    )
    parser.add_argument("--stdio-procs", type=int, default=4, help="stdio server processes (0: no stdio part)")
    parser.add_argument("--import-rows", type=int, default=0, help="rows another process imports during stdio")
    parser.add_argument("--server-path", default="", help="PYTHONPATH the HTTP server runs from (an A/B of a tree)")
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= 120:
        parser.error("--seconds must be in (0, 120]: every run stops by itself")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows, checks, samples = run(args)
    command = "python -m benchmarks.load " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    text = report(rows, checks, command)
    print(text)
    for sample in samples:
        print("error:", sample, file=sys.stderr)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    bad = any(check["missing"] or check["doubled"] or check["wrong_ref"] for check in checks.values())
    return 1 if bad or any(row["errors"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

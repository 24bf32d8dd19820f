"""SIGKILL at random moments; every restart must find every acknowledged write whole (issue 16, faults).

Each round starts ``cuedrecall serve`` (stdio, the hash embedder, blocks built in the background) over one
database file, checks what the previous kill left (``verify``), runs one workload and kills the process
with SIGKILL at a random moment of it. The workloads, in turn:

- ``stores``: an endless stream of store calls, several in flight, over three agents, projects and channels;
- ``import``: one import_memories of a file of many memories (committed in batches), the file of a killed
  import again when there is one (as a client retries);
- ``blocks``: long texts stored, the kill falling while the background builder divides and embeds them;
- ``startup``: the kill falling while the server opens the file (migrations, index, the backfill queued).

What a restart must find, the rules of issue 16: the file's ``PRAGMA integrity_check`` answers ok; every
acknowledged store is there with its exact text, agent and vector; every row there is one that was sent,
whole, and there once; a killed import left whole batches, the file's first ones, and its retry completes it
(all there once acknowledged); every block set is the division of
its record's current text; check_health finds nothing wrong with the file, the full-text tables, the vector
index or the vectors; the queue's tasks the killed process did not hold run (pending falls to the held
ones); recall finds an acknowledged row. At the end the held tasks are taken once their lease ran out (the
clock moved past it) and the queue empties, every record with its blocks.

    python -m benchmarks.faults --kills 200 --out benchmarks/results/faults.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import serving

REPO = serving.REPO
AGENTS = ("agent-a", "agent-b", "agent-c")
IMPORT_AGENT = "importer"
HEALTH = [
    "sqlite_integrity",
    "fts_integrity",
    "vector_index",
    "null_embedding",
    "null_episode_embedding",
    "embedding_dimension",
]
WORDS = (
    "harbour",
    "ledger",
    "violin",
    "orchard",
    "comet",
    "lantern",
    "glacier",
    "pepper",
    "saddle",
    "quartz",
    "meadow",
    "anchor",
    "falcon",
    "ember",
    "cobalt",
    "thistle",
)
WAIT_S = 60.0  # the most a restart, an answer or the queue may take before it counts as a failure
# the server's start: its stacks are dumped on SIGUSR1 (faulthandler), so a slow call shows what it waits on
BOOT = (
    "import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "from cuedrecall.cli import main; sys.exit(main(sys.argv[1:]))"
)


class StdioServer:
    """``cuedrecall serve`` as a child process, spoken to in raw JSON-RPC lines (the MCP stdio transport).

    A reader thread files every answer by its id; ``kill`` is SIGKILL, from any thread.
    """

    def __init__(self, db: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", BOOT, "serve", "--db", str(db)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                cwd=REPO,
            )
        self.answers: dict[int, dict[str, Any]] = {}
        self.sent_at: dict[int, float] = {}  # request id -> when it was written (monotonic)
        self.arrived: dict[int, float] = {}  # request id -> when its answer was read
        self.tools: dict[int, str] = {}  # request id -> the tool it called
        self.closed = False
        self.killed = False
        self._cv = threading.Condition()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._cv:
                if isinstance(message.get("id"), int):
                    self.answers[message["id"]] = message
                    self.arrived[message["id"]] = time.monotonic()
                self._cv.notify_all()
        with self._cv:
            self.closed = True
            self._cv.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> int | None:
        """Write one request (or notification); its id, None once the process is gone."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}
        if not notify:
            self._next += 1
            message["id"] = self._next
            self.sent_at[self._next] = time.monotonic()
            self.tools[self._next] = params["name"] if method == "tools/call" and params else method
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return None
        return None if notify else self._next

    def wait(self, request: int | None, timeout: float = WAIT_S) -> dict[str, Any] | None:
        """The answer to a request, None when the process died (or ``timeout`` passed) first."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while request is not None and request not in self.answers and not self.closed:
                if not self._cv.wait(max(0.0, deadline - time.monotonic())) and time.monotonic() >= deadline:
                    break
            return self.answers.get(request) if request is not None else None

    def handshake(self) -> bool:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "1"}}
        if self.wait(self.send("initialize", params)) is None:
            return False
        self.send("notifications/initialized", notify=True)
        return True

    def call(self, tool: str, arguments: dict[str, Any]) -> int | None:
        return self.send("tools/call", {"name": tool, "arguments": arguments})

    def result(self, request: int | None, timeout: float = WAIT_S) -> dict[str, Any] | None:
        """A tool's JSON answer, None when it never came."""
        answer = self.wait(request, timeout)
        if answer is None or "result" not in answer:
            return None
        return json.loads(answer["result"]["content"][0]["text"])

    def ask(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        return self.result(self.call(tool, arguments))

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.proc.poll() is None:
            self.killed = True
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def pending(self) -> dict[int, float]:
        """Calls sent and not answered: request id -> seconds waited so far."""
        now = time.monotonic()
        with self._cv:
            return {i: now - at for i, at in self.sent_at.items() if i not in self.arrived}

    def stop(self) -> None:
        """End it as a client does: close its stdin and wait (killed after WAIT_S)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(WAIT_S)
        except (subprocess.TimeoutExpired, OSError):
            self.kill()


@dataclass
class Ledger:
    """What was sent and what was acknowledged, across every round."""

    sent: dict[str, tuple[str, str]] = field(default_factory=dict)  # msg_id -> (agent, content)
    acked: dict[str, str] = field(default_factory=dict)  # msg_id -> ref
    imports: dict[str, tuple[list[str], bool]] = field(default_factory=dict)  # tag -> (msg_ids, acknowledged)
    serial: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)  # several servers' streams share the ledger

    def next_serial(self) -> int:
        with self.lock:
            self.serial += 1
            return self.serial

    def text(self, rng: random.Random, words: int = 8) -> str:
        """A short text no other row holds: its token ``q<serial>z`` is in no other text."""
        return f"{' '.join(rng.choice(WORDS) for _ in range(words))} note q{self.next_serial()}z"

    def long_text(self, rng: random.Random) -> str:
        """A text of several paragraphs no other row holds: the block builder divides it into several blocks."""
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))) + "." for _ in range(6)]
        return f"long record {self.next_serial()}\n\n" + "\n\n".join(paragraphs)


def _store_args(ledger: Ledger, rng: random.Random, content: str) -> dict[str, Any]:
    msg_id = f"s{ledger.next_serial()}-{rng.randrange(10**9)}"
    agent = rng.choice(AGENTS)
    ledger.sent[msg_id] = (agent, content)
    return {
        "agent_id": agent,
        "content": content,
        "id": msg_id,
        "project_id": rng.choice(("", "p1")),
        "channel": rng.choice(("", "c1")),
    }


def _stream(
    server: StdioServer,
    ledger: Ledger,
    rng: random.Random,
    make: Callable[[], str],
    window: int = 8,
    most: int | None = None,
    stop: threading.Event | None = None,
    timeout: float = WAIT_S,
) -> None:
    """Store texts with up to ``window`` calls in flight until the process dies (or ``most`` were sent, or
    ``stop`` is set: then the calls in flight are waited for)."""
    flying: dict[int, str] = {}
    sent = 0
    while not server.closed and (most is None or sent < most or flying):
        ending = stop is not None and stop.is_set()
        if ending and not flying:
            return
        while not ending and len(flying) < window and (most is None or sent < most):
            args = _store_args(ledger, rng, make())
            request = server.call("store", args)
            if request is None:
                return
            flying[request], sent = args["id"], sent + 1
        oldest = min(flying)
        answer = server.result(oldest, timeout)
        if answer is None:
            return
        msg_id = flying.pop(oldest)
        if answer.get("result") == "stored":
            ledger.acked[msg_id] = answer["ref"]


def work_stores(server: StdioServer, ledger: Ledger, rng: random.Random, ctx: Context) -> None:
    _stream(server, ledger, rng, lambda: ledger.text(rng))


def work_blocks(server: StdioServer, ledger: Ledger, rng: random.Random, ctx: Context) -> None:
    _stream(server, ledger, rng, lambda: ledger.long_text(rng), window=4, most=ctx.long_texts)
    server.proc.wait()  # the builder works until the kill


def work_import(server: StdioServer, ledger: Ledger, rng: random.Random, ctx: Context) -> None:
    """Import a file: the last killed import's file again (as a client retries), else a new one."""
    tag, msg_ids = _next_import(ledger, rng, ctx)
    started = time.monotonic()
    answer = server.ask("import_memories", {"input_path": f"{tag}.jsonl", "target_agent_id": IMPORT_AGENT})
    if answer is not None and answer.get("imported_memories", 0) + answer.get("skipped_memories", 0) == len(msg_ids):
        ledger.imports[tag] = (msg_ids, True)
        ctx.import_s = time.monotonic() - started
    server.proc.wait()


def _next_import(ledger: Ledger, rng: random.Random, ctx: Context) -> tuple[str, list[str]]:
    """The file to import next and its records' msg_ids: the last one not acknowledged (its import was killed,
    and a client retries it), else a new one written now."""
    retry = [tag for tag, (_, acked) in ledger.imports.items() if not acked]
    tag = retry[0] if retry else f"imp{len(ledger.imports)}"
    if not retry:
        _write_import(ledger, rng, ctx, tag)
    return tag, ledger.imports[tag][0]


def _write_import(ledger: Ledger, rng: random.Random, ctx: Context, tag: str) -> None:
    """A new export file of ``ctx.import_rows`` memories in the export folder, entered in the ledger."""
    lines = [
        {"_type": "memory", "agent_id": IMPORT_AGENT, "msg_id": f"{tag}-{k}", "content": ledger.text(rng)}
        for k in range(ctx.import_rows)
    ]
    header = {
        "_type": "header",
        "version": "cuedrecall-export/1",
        "memory_count": len(lines),
        "episode_count": 0,
        "profile_count": 0,
    }
    (ctx.exports / f"{tag}.jsonl").write_text("\n".join(json.dumps(x) for x in [header, *lines]) + "\n")
    for line in lines:
        ledger.sent[line["msg_id"]] = (IMPORT_AGENT, line["content"])
    ledger.imports[tag] = ([line["msg_id"] for line in lines], False)


def work_startup(server: StdioServer, ledger: Ledger, rng: random.Random, ctx: Context) -> None:
    server.proc.wait()


WORKLOADS: dict[str, Callable[..., None]] = {
    "stores": work_stores,
    "import": work_import,
    "blocks": work_blocks,
    "startup": work_startup,
}


@dataclass
class Context:
    """One run's files and sizes, and what it learnt of their timing."""

    db: Path
    env: dict[str, str]
    log: Path
    exports: Path
    import_rows: int = 1500
    long_texts: int = 30
    import_s: float = 1.0  # how long an import took (the kill falls within it)
    db_url: str = ""  # a PostgreSQL database instead of the file (the fleet runs only)
    kill_window: dict[str, float] = field(default_factory=lambda: {"stores": 0.6, "blocks": 1.5, "startup": 1.2})

    def delay(self, workload: str, rng: random.Random) -> float:
        """When the kill falls, seconds after the workload began (after the spawn for startup)."""
        top = self.import_s if workload == "import" else self.kill_window[workload]
        return rng.uniform(0.0, top)


# -- what a restart must find ----------------------------------------------------------------------------------


def file_state(db: Path, db_url: str = "") -> tuple[list[str], int, int]:
    """The file as the kill left it: what ``PRAGMA integrity_check`` finds wrong ([] for ok), how many queued
    tasks it holds, and how many of them the dead process held (their claim runs out after the lease). On
    PostgreSQL: no integrity check, the queue's counts."""
    if db_url:
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as pg:
            row = pg.execute(
                "SELECT COUNT(*), COALESCE(SUM((claimed_until > %s)::int), 0) FROM tasks", (time.time(),)
            ).fetchone()
        assert row is not None
        return [], int(row[0]), int(row[1])
    conn = sqlite3.connect(db, timeout=WAIT_S)
    try:
        problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
        try:
            queued, held = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(claimed_until > ?), 0) FROM tasks", (time.time(),)
            ).fetchone()
        except sqlite3.OperationalError:  # killed before the queue's table was made
            queued, held = 0, 0
    finally:
        conn.close()
    return ([] if problems == ["ok"] else problems), int(queued), int(held)


def row_failures(ledger: Ledger, memory: Any) -> tuple[list[str], int]:
    """Every acknowledged store there with its text, agent and vector; every row one that was sent, whole;
    every import all there or not at all; every block set the division of its text. (failures, writes checked)"""
    from cuedrecall.store.base import MEMORY
    from cuedrecall.text.blocks import divide

    every = list(memory.store_.export_rows(MEMORY, ""))
    rows = {row["msg_id"]: row for row in every}
    failures = [f"{len(every) - len(rows)} rows stored twice"] if len(rows) != len(every) else []
    for msg_id, ref in ledger.acked.items():
        row = rows.get(msg_id)
        agent, content = ledger.sent[msg_id]
        if row is None or f"mem:{row['id']}" != ref or (row["agent_id"], row["content"]) != (agent, content):
            failures.append(f"acknowledged store {ref} ({msg_id}) is missing or changed")
        elif row["embedding"] is None:
            failures.append(f"acknowledged store {ref} has no vector")
    for msg_id, row in rows.items():
        if ledger.sent.get(msg_id) != (row["agent_id"], row["content"]):
            failures.append(f"row mem:{row['id']} ({msg_id!r}) is not a text that was sent, whole")
    checked = len(ledger.acked)
    for tag, (msg_ids, acked) in ledger.imports.items():
        checked += len(msg_ids) if acked else 0
        failures += _import_failures(tag, msg_ids, acked, rows)
    texts = {f"mem:{row['id']}": row["content"] for row in rows.values()}
    for ref, spans in memory.store_.block_spans(list(texts)).items():
        if spans != [(s.start, s.end, s.forced) for s in divide(texts[ref])]:
            failures.append(f"the block set of {ref} is not the division of its text")
    return failures, checked


def _import_failures(tag: str, msg_ids: list[str], acked: bool, rows: dict[str, Any]) -> list[str]:
    """An acknowledged import is all there; a killed one left whole batches, the file's first ones (each batch
    of COMMIT_BATCH records is one transaction; running the file again adds the rest)."""
    from cuedrecall.handlers.portability.importer import COMMIT_BATCH

    present = [m in rows for m in msg_ids]
    count = sum(present)
    whole = present == [i < count for i in range(len(msg_ids))] and (count % COMMIT_BATCH == 0 or count == len(msg_ids))
    if (acked and count != len(msg_ids)) or not whole:
        return [
            f"import {tag} ({'acknowledged' if acked else 'killed'}) left {count} of {len(msg_ids)} rows"
            + ("" if whole else ", not whole batches")
        ]
    return []


def server_failures(server: StdioServer, ledger: Ledger, held: int, rng: random.Random) -> list[str]:
    """Through the restarted server: check_health finds nothing wrong, the queue runs down to the tasks the
    dead process held, recall finds an acknowledged row by its text's own token, get_contents reads a sample
    whole."""
    health = server.ask("check_health", {"agent_id": "", "checks": HEALTH})
    if health is None or health.get("issues") != []:
        return [f"check_health after the restart: {health and health.get('issues')}"]
    failures = _queue_failures(server, held)
    acked = sorted(ledger.acked)
    short = [m for m in acked if ledger.sent[m][1].endswith("z")]
    for msg_id in rng.sample(short, min(3, len(short))):
        agent, content = ledger.sent[msg_id]
        token = content.split()[-1]  # the text's own token
        answer = server.ask("recall", {"agent_id": agent, "query": token, "limit": 10})
        if answer is None or ledger.acked[msg_id] not in [m.get("ref") for m in answer.get("messages", [])]:
            failures.append(f"recall of {token!r} did not find {ledger.acked[msg_id]}: {str(answer)[:300]}")
    for agent in AGENTS:
        mine = [m for m in acked if ledger.sent[m][0] == agent]
        sample = rng.sample(mine, min(20, len(mine)))
        if sample:
            answer = server.ask("get_contents", {"agent_id": agent, "refs": [ledger.acked[m] for m in sample]})
            got = [item.get("content") for item in (answer or {}).get("items", [])]
            if got != [ledger.sent[m][1] for m in sample]:
                failures.append(f"get_contents of {agent}'s acknowledged rows: {str(answer)[:300]}")
    return failures


def _queue_failures(server: StdioServer, held: int) -> list[str]:
    """The queue's tasks run after a restart: pending falls to the tasks the dead process held, within WAIT_S."""
    status: dict[str, Any] = {}

    def ran_down() -> bool:
        status.clear()
        status.update(server.ask("get_queue_status", {}) or {})
        return status.get("pending", 0) <= held

    if serving.wait_until(ran_down, WAIT_S, 0.2):
        return []
    return [f"the queue did not run down after the restart: {status}, {held} held by the dead process"]


def settle(ctx: Context, ledger: Ledger) -> list[str]:
    """After the last round: the tasks the dead processes held are taken once their lease ran out (the clock
    moved past it), the queue empties and every record has its block set."""
    from cuedrecall.api import Memory
    from cuedrecall.handlers.blocks import LEASE_S, BlockBuilder

    with Memory(ctx.db, settings=_settings(ctx.db, ctx.db_url), background=False) as memory:
        BlockBuilder(lambda: memory.runtime, now=lambda: time.time() + LEASE_S + 1).drain()
        failures, _ = row_failures(ledger, memory)
        pending = memory.store_.pending_tasks()
        health = memory.check_health(agent_id="", checks=[*HEALTH, "missing_blocks"])
    failures += [f"{pending} tasks still queued once every lease ran out"] if pending else []
    return failures + ([f"check_health at the end: {health['issues']}"] if health.get("issues") else [])


def _settings(db: Path, db_url: str = "") -> Any:
    from cuedrecall.config import Settings

    return Settings.from_env({}, db_path=str(db), db_url=db_url, embedding_mode="hash")


# -- the rounds -------------------------------------------------------------------------------------------------


@dataclass
class Report:
    kills: dict[str, int] = field(default_factory=dict)
    mid_write: dict[str, int] = field(default_factory=dict)  # kills that fell with a write sent and unanswered
    resumed: int = 0  # restarts that found tasks queued and not held by the dead process, which then ran
    checked: int = 0  # acknowledged writes checked, summed over every restart
    acked: int = 0  # acknowledged writes at the end (stores, and the rows of acknowledged imports)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _restart(
    ctx: Context, ledger: Ledger, rng: random.Random, report: Report | FleetReport, label: str
) -> StdioServer | None:
    """Check the file, start the server on it and check what it finds; the server, None when it did not start."""
    problems, queued, held = file_state(ctx.db, ctx.db_url)
    report.resumed += queued > held  # the dead process left queued work the new one must take up
    report.failures += [f"{label}: integrity_check: {p}" for p in problems[:3]]
    server = StdioServer(ctx.db, ctx.env, ctx.log)
    if not server.handshake():
        report.failures.append(f"{label}: the server did not start (see {ctx.log})")
        server.kill()
        return None
    failures = server_failures(server, ledger, held, rng)
    from cuedrecall.api import Memory

    with Memory(ctx.db, settings=_settings(ctx.db, ctx.db_url), background=False) as memory:
        rows, checked = row_failures(ledger, memory)
    report.checked += checked
    report.failures += [f"{label}: {f}" for f in failures + rows]
    return server


def server_env(workdir: Path, db_url: str = "") -> dict[str, str]:
    """The servers' environment: the hash embedder, HOME in the work folder, PostgreSQL when ``db_url``."""
    return serving.child_env(workdir, CUEDRECALL_EMBEDDING_MODE="hash", CUEDRECALL_DB_URL=db_url)


def run(
    kills: int,
    seed: int,
    workdir: Path,
    *,
    import_rows: int = 1500,
    long_texts: int = 30,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """``kills`` rounds over one fresh database in ``workdir``, the workloads in turn."""
    rng = random.Random(seed)
    db = workdir / "faults.db"
    env = server_env(workdir)
    ctx = Context(db, env, workdir / "server.log", workdir / "exports", import_rows, long_texts)
    ctx.exports.mkdir(parents=True, exist_ok=True)
    ledger, report, started = Ledger(), Report(), time.monotonic()
    order = ["startup", "stores", "import", "blocks"]
    for n in range(kills):
        workload = order[n % len(order)]
        label = f"kill {n + 1} ({workload})"
        before = len(ledger.sent)
        if workload == "startup":
            problems, _, _ = file_state(db)
            report.failures += [f"before {label}: integrity_check: {p}" for p in problems[:3]]
            server: StdioServer | None = StdioServer(db, env, ctx.log)
        else:
            server = _restart(ctx, ledger, rng, report, f"restart before {label}")
        if server is None:
            continue
        timer = threading.Timer(ctx.delay(workload, rng), server.kill)
        timer.start()
        WORKLOADS[workload](server, ledger, rng, ctx)
        timer.join()
        report.kills[workload] = report.kills.get(workload, 0) + 1
        report.mid_write[workload] = report.mid_write.get(workload, 0) + _unanswered(ledger, before, workload)
        if progress:
            progress(f"{label}: {len(ledger.acked)} stores acknowledged, {len(report.failures)} failures")
    server = _restart(ctx, ledger, rng, report, "restart after the last kill")
    if server is not None:
        server.stop()
    report.failures += settle(ctx, ledger)
    report.acked = len(ledger.acked) + sum(len(ids) for ids, acked in ledger.imports.values() if acked)
    report.seconds = time.monotonic() - started
    return report


def _unanswered(ledger: Ledger, before: int, workload: str) -> int:
    """1 when the round's kill fell with a write sent and not acknowledged (an import: its file, new or
    retried, not acknowledged)."""
    if workload == "import":
        return int(any(not acked for _, acked in ledger.imports.values()))
    imported = {m for ids, acked in ledger.imports.values() if acked for m in ids}
    return int(any(m not in ledger.acked and m not in imported for m in list(ledger.sent)[before:]))


# -- several servers on one database, every store's answer time (issue 24) -------------------------------

SLOW_S = 10.0  # a store waiting this long has the server's stacks and the file's locks taken while it waits
STUCK_S = 40.0  # a store a live server has not answered in this long is a failure
SHM_BYTES = {120: "WAL write", 121: "checkpoint", 122: "recovery", 128: "DMS"} | {
    123 + k: f"read mark {k}" for k in range(5)
}


@dataclass
class Waits:
    """Every answered store's time from sending to its answer; the slow ones with what the server was
    doing."""

    seconds: list[float] = field(default_factory=list)
    slow: list[tuple[float, str]] = field(default_factory=list)  # (seconds, where and what) over SLOW_S
    stuck: list[str] = field(default_factory=list)  # stores a live server left unanswered STUCK_S
    cut: int = 0  # stores a kill cut before their answer
    notes: dict[tuple[int, int], str] = field(default_factory=dict)  # (server pid, request) -> snapshot
    lock: threading.Lock = field(default_factory=threading.Lock)

    def harvest(self, server: StdioServer, where: str) -> None:
        """File the answer times of a server that has ended (killed or stopped)."""
        with server._cv:
            answered = {
                i: server.arrived[i] - server.sent_at[i]
                for i, t in server.tools.items()
                if t == "store" and i in server.arrived
            }
            cut = sum(1 for i, t in server.tools.items() if t == "store" and i not in server.arrived)
        with self.lock:
            self.seconds += answered.values()
            self.cut += cut
            for request, took in answered.items():
                if took >= SLOW_S:
                    note = self.notes.get((server.proc.pid, request), "no snapshot")
                    self.slow.append((took, f"{where}, request {request}: {note}"))

    def percentile(self, q: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _file_locks(db: Path, pids: dict[int, str]) -> list[str]:
    """The write locks (and checkpoint or recovery locks) held on the database's files now (``/proc/locks``),
    named: who, which file, which byte."""
    inodes = {}
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            inodes[os.stat(f"{db}{suffix}").st_ino] = f"db{suffix}"
    out = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return ["/proc/locks unreadable"]
    for line in lines:
        parts = line.split()
        if len(parts) < 8 or parts[1] != "POSIX":
            continue
        inode = int(parts[5].split(":")[-1])
        if inode in inodes:
            pid, start = int(parts[4]), int(parts[6])
            what = SHM_BYTES.get(start, f"byte {start}") if inodes[inode] == "db-shm" else f"byte {start}"
            if parts[3] != "WRITE" and what not in ("checkpoint", "recovery"):
                continue  # a reader's marks and the shared locks every open connection holds
            out.append(f"{pids.get(pid, f'pid {pid}')} {parts[3]} {inodes[inode]} {what}")
    return out


def _stacks(server: StdioServer) -> str:
    """The server's threads now (faulthandler on SIGUSR1): each busy thread's two innermost cuedrecall
    frames."""
    try:
        offset = server.log.stat().st_size
        os.kill(server.proc.pid, signal.SIGUSR1)
    except OSError:
        return "gone"
    time.sleep(0.5)
    with open(server.log, "rb") as log:
        log.seek(offset)
        dump = log.read().decode("utf-8", "replace")
    threads = []
    for chunk in dump.split("\n\n"):
        frames = [ln.strip() for ln in chunk.splitlines() if ln.strip().startswith("File ")]
        ours = [
            f.split("cuedrecall/")[-1].replace('File "', "").replace('", line ', ":")
            for f in frames
            if "/cuedrecall/" in f
        ][:2]
        if ours:
            threads.append(" < ".join(ours))
    idle = ("_loop", "wait", "read_line", "cmd_serve")  # the builder idle, workers parked, the event loop
    busy = [t for t in threads if not any(word in t.split(" < ")[0] for word in idle)]
    return f"{len(threads)} threads in cuedrecall, busy: " + ("; ".join(busy) or "none")


def _proc_state(pid: int) -> str:
    """The process's scheduler state and CPU seconds so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return "gone"
    ticks = os.sysconf("SC_CLK_TCK")
    return f"state {fields[0]}, cpu {(int(fields[11]) + int(fields[12])) / ticks:.1f} s"


class Watch:
    """A thread looking at every live server's calls: one waiting SLOW_S gets a snapshot (stacks, the file's
    locks, the load), one waiting STUCK_S is filed as stuck."""

    def __init__(self, db: Path, servers: dict[int, StdioServer], waits: Waits, sqlite: bool) -> None:
        self.db, self.servers, self.waits, self.sqlite = db, servers, waits, sqlite
        self.stop = threading.Event()
        self.stuck: set[tuple[int, int]] = set()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(0.5):
            live = dict(self.servers)
            for slot, server in live.items():
                if server.closed or server.killed:
                    continue
                for request, waited in server.pending().items():
                    key = (server.proc.pid, request)
                    if waited >= SLOW_S and key not in self.waits.notes:
                        waiting = [r for r, w in server.pending().items() if w >= SLOW_S]
                        self._note(slot, server, live, waiting)
                    if waited >= STUCK_S and key not in self.stuck:
                        self.stuck.add(key)
                        tool = server.tools.get(request)
                        self.waits.stuck.append(
                            f"server {slot} (pid {server.proc.pid}), request {request} "
                            f"({tool}): {self.waits.notes.get(key)}; "
                            f"now: {_stacks(server)}"
                        )

    def _note(self, slot: int, server: StdioServer, live: dict[int, StdioServer], requests: list[int]) -> None:
        pids = {s.proc.pid: f"server {n}" for n, s in live.items()}
        locks = "; ".join(_file_locks(self.db, pids)) if self.sqlite else "n/a"
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        note = (
            f"{len(live)} servers live, load {load}; server {slot} {_proc_state(server.proc.pid)}; "
            f"{_stacks(server)}; locks: {locks or 'none'}"
        )
        for request in requests:
            self.waits.notes.setdefault((server.proc.pid, request), note)


STARTUP_SHARE = 0.15  # of a fleet's servers, those killed while they start (the rest once serving)
PHASE_S = 600.0  # the most one phase may take
LIFE_S = 3.0  # a serving server is killed uniform(0.1, LIFE_S) s after its start (importing: twice that)


@dataclass
class Fleet:
    """One phase's servers: slot -> the server it runs now, how many kills fell on each kind of moment, and
    the phase's end (set once ``target`` kills fell)."""

    target: int
    servers: dict[int, StdioServer] = field(default_factory=dict)
    kills: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kill(self, server: StdioServer, doing: str) -> None:
        """SIGKILL ``server`` unless the phase is over or it is gone; the phase ends with its last kill."""
        with self.lock:
            if self.stop.is_set() or server.proc.poll() is not None:
                return
            server.kill()
            self.kills[doing] = self.kills.get(doing, 0) + 1
            if sum(self.kills.values()) >= self.target:
                self.stop.set()

    def at(self, delay: float, server: StdioServer, doing: str) -> threading.Timer:
        timer = threading.Timer(delay, self.kill, (server, doing))
        timer.daemon = True
        timer.start()
        return timer


def _slot(slot: int, ctx: Context, ledger: Ledger, waits: Waits, fleet: Fleet, seed: int) -> None:
    """One server after another in this slot until the phase ends, each killed at a random moment: while it
    starts (STARTUP_SHARE of them), else while it streams stores (one in six a long text, built into blocks
    in the background) or, slot 0's every fourth, while it imports a file and then streams stores."""
    rng = random.Random(seed)
    life = 0
    while not fleet.stop.is_set():
        log = ctx.log.parent / "logs" / f"slot{slot}-{seed}-{life}.log"
        server = StdioServer(ctx.db, ctx.env, log)
        fleet.servers[slot] = server
        starting = rng.random() < STARTUP_SHARE
        timer = fleet.at(rng.uniform(0.0, 1.5), server, "startup") if starting else None
        if server.handshake():
            importing = slot == 0 and life % 4 == 3
            if timer is None:
                top = LIFE_S * (2 if importing else 1)
                timer = fleet.at(rng.uniform(0.1, top), server, "import" if importing else "stores")
            if importing and not fleet.stop.is_set():
                _import_once(server, ledger, rng, ctx)
            _stream(server, ledger, rng, lambda: _mixed(ledger, rng), stop=fleet.stop, timeout=3 * STUCK_S)
        elif not server.killed:
            fleet.failures.append(f"server {slot}: did not start (see {log.name}: {log.read_text()[-300:]})")
        if timer is not None:
            timer.cancel()
        if not server.killed:
            server.stop()
        fleet.servers.pop(slot, None)
        waits.harvest(server, f"server {slot} ({len(fleet.servers) + 1} live)")
        life += 1


def _mixed(ledger: Ledger, rng: random.Random) -> str:
    """A short text, or one time in six a long one (the builders divide it into blocks in the background)."""
    return ledger.long_text(rng) if rng.random() < 1 / 6 else ledger.text(rng)


def _import_once(server: StdioServer, ledger: Ledger, rng: random.Random, ctx: Context) -> None:
    """Import a file (the last killed one's again, as a client retries); acknowledged when answered whole."""
    tag, msg_ids = _next_import(ledger, rng, ctx)
    arguments = {"input_path": f"{tag}.jsonl", "target_agent_id": IMPORT_AGENT}
    answer = server.result(server.call("import_memories", arguments), 3 * STUCK_S)
    answered = answer and answer.get("imported_memories", 0) + answer.get("skipped_memories", 0)
    if answered == len(msg_ids):
        ledger.imports[tag] = (msg_ids, True)


@dataclass
class FleetReport:
    kills: dict[str, int] = field(default_factory=dict)
    phases: list[str] = field(default_factory=list)
    checked: int = 0
    acked: int = 0
    failures: list[str] = field(default_factory=list)
    waits: Waits = field(default_factory=Waits)
    seconds: float = 0.0
    servers: int = 0  # the most servers a phase ran
    resumed: int = 0  # phase ends that found queued work and ran it
    backend: str = "SQLite"


def run_fleet(
    kills: int,
    seed: int,
    workdir: Path,
    *,
    servers: int = 4,
    phase_kills: int = 25,
    import_rows: int = 1500,
    db_url: str = "",
    progress: Callable[[str], None] | None = None,
) -> FleetReport:
    """``kills`` SIGKILLs over 1..``servers`` servers on one database (phases of ``phase_kills`` kills, the
    of servers going 1, 2, .., servers, 1, ..); every store's answer time filed; after each phase, with every
    server stopped, the file and every acknowledged write checked as ``run``'s restarts do."""
    rng = random.Random(seed)
    db = workdir / "faults.db"
    env = server_env(workdir, db_url)
    ctx = Context(db, env, workdir / "server.log", workdir / "exports", import_rows, 0, db_url=db_url)
    ctx.exports.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)
    ledger, report, started = Ledger(), FleetReport(), time.monotonic()
    phase = 0
    while sum(report.kills.values()) < kills:
        count = phase % servers + 1
        fleet = Fleet(min(phase_kills, kills - sum(report.kills.values())))
        watch = Watch(db, fleet.servers, report.waits, sqlite=not db_url)
        watch.thread.start()
        slots = [
            threading.Thread(target=_slot, args=(n, ctx, ledger, report.waits, fleet, seed * 1000 + phase * 10 + n))
            for n in range(count)
        ]
        for thread in slots:
            thread.start()
        if not fleet.stop.wait(PHASE_S):
            report.failures.append(f"phase {phase + 1}: {fleet.target} kills not in {PHASE_S:g} s")
            fleet.stop.set()
        for thread in slots:
            thread.join()
        watch.stop.set()
        watch.thread.join()
        for doing, n in fleet.kills.items():
            report.kills[doing] = report.kills.get(doing, 0) + n
        label = f"phase {phase + 1} ({count} servers, {sum(fleet.kills.values())} kills)"
        report.failures += [f"{label}: {f}" for f in fleet.failures]
        server = _restart(ctx, ledger, rng, report, f"after {label}")
        if server is not None:
            server.stop()
        report.phases.append(label)
        phase += 1
        if progress:
            progress(
                f"{label}: {len(ledger.acked)} stores acknowledged, {len(report.waits.seconds)} timed, "
                f"max {max(report.waits.seconds, default=0):.1f} s, {len(report.waits.stuck)} stuck, "
                f"{len(report.failures)} failures"
            )
    report.failures += settle(ctx, ledger)
    report.acked = len(ledger.acked) + sum(len(ids) for ids, acked in ledger.imports.values() if acked)
    report.seconds = time.monotonic() - started
    report.servers = min(servers, phase)
    report.backend = "PostgreSQL" if db_url else "SQLite"
    return report


def fleet_markdown(report: FleetReport, command: str) -> str:
    """The fleet run's figures: kills, acknowledged writes, answer times, the slowest answers, any stuck."""
    waits = report.waits
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(report.kills.items()))
    slow = sorted(waits.slow, reverse=True)[:5]
    slow_lines = "\n".join(f"- {took:.1f} s: {what}" for took, what in slow) or "none"
    stuck = "\n".join(f"- {line}" for line in waits.stuck) or "none"
    failures = "\n".join(f"- {f}" for f in report.failures) or "none"
    return (
        f"Command: `{command}`\n\n"
        f"- kills: {sum(report.kills.values())} ({kinds}), in {len(report.phases)} phases of 1 to "
        f"{report.servers} servers on one {report.backend} database\n"
        f"- acknowledged writes at the end: {report.acked}; checked, summed over the phase ends: "
        f"{report.checked}; missing, duplicated or changed: see failures ({len(report.failures)})\n"
        f"- store answers timed: {len(waits.seconds)} (cut by a kill before their answer: {waits.cut}); "
        f"median {waits.percentile(0.5):.2f} s, p99 {waits.percentile(0.99):.2f} s, "
        f"p99.9 {waits.percentile(0.999):.2f} s, max {max(waits.seconds, default=0):.2f} s; "
        f"over {SLOW_S:g} s: {len(waits.slow)}; unanswered by a live server within {STUCK_S:g} s: "
        f"{len(waits.stuck)}\n- time: {report.seconds:.0f} s\n\n"
        f"Slowest answers (what the server was doing at {SLOW_S:g} s):\n\n{slow_lines}\n\n"
        f"Stores unanswered within {STUCK_S:g} s:\n\n{stuck}\n\nFailures:\n\n{failures}\n"
    )


def markdown(report: Report, command: str) -> str:
    rows = "\n".join(f"| {w} | {n} | {report.mid_write.get(w, 0)} |" for w, n in report.kills.items())
    failures = "\n".join(f"- {f}" for f in report.failures) or "none"
    return (
        f"# Faults: SIGKILL at random moments (issue 16)\n\nCommand: `{command}`\n\n"
        "`cuedrecall serve` (stdio, hash embedder, blocks built in the background) over one database file, "
        "killed with SIGKILL at a random moment of each workload; every restart checked as "
        "`benchmarks/faults.py` describes.\n\n"
        f"| workload | kills | of them with a write sent and not yet answered |\n|---|---:|---:|\n{rows}\n\n"
        f"- kills: {sum(report.kills.values())}; restarts that found queued work (block builds, the "
        f"backfill) and ran it: {report.resumed}\n"
        f"- acknowledged writes at the end: {report.acked}; acknowledged writes checked, summed over every "
        f"restart: {report.checked}\n- failures: {len(report.failures)}\n- time: {report.seconds:.0f} s\n\n"
        f"## Failures\n\n{failures}\n"
    )


def _postgres_url() -> str:
    """A fresh schema on the tests' private PostgreSQL server (tests/pg_server.py; stopped at exit)."""
    sys.path.insert(0, str(REPO / "tests"))
    from pg_server import postgres_url  # type: ignore[import-not-found]

    return postgres_url()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--import-rows", type=int, default=5000)
    parser.add_argument("--long-texts", type=int, default=60)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "faults.md")
    parser.add_argument(
        "--servers",
        type=int,
        default=0,
        help="the fleet run: phases of 1..N servers on one database, every store timed",
    )
    parser.add_argument("--phase-kills", type=int, default=25)
    parser.add_argument("--postgres", action="store_true", help="the fleet on a private PostgreSQL")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.faults " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.servers:
        with tempfile.TemporaryDirectory(prefix="faults-") as workdir:
            url = _postgres_url() if args.postgres else ""
            fleet = run_fleet(
                args.kills,
                args.seed,
                Path(workdir),
                servers=args.servers,
                phase_kills=args.phase_kills,
                import_rows=args.import_rows,
                db_url=url,
                progress=lambda line: print(line, flush=True),
            )
        text = fleet_markdown(fleet, command.strip())
        args.out.write_text(text, encoding="utf-8")
        print(text)
        return 1 if fleet.failures or fleet.waits.stuck else 0
    with tempfile.TemporaryDirectory(prefix="faults-") as workdir:
        report = run(
            args.kills,
            args.seed,
            Path(workdir),
            import_rows=args.import_rows,
            long_texts=args.long_texts,
            progress=lambda line: print(line, flush=True),
        )
    args.out.write_text(markdown(report, command.strip()), encoding="utf-8")
    print(markdown(report, command.strip()))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())

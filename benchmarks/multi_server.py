"""Several HTTP servers over one database under mixed load, a server killed and PostgreSQL restarted (issue 30).

A private PostgreSQL 16 + pgvector (PyPI ``pgserver``, in a temporary folder; or, with ``--backend sqlite``, one
database file) holds a store prefilled with rows whose vectors another model made (``PRIOR``: the servers must
re-embed them) and whose blocks were never built (the servers' backfill builds them). For each count of servers
(``--servers 1,2,3``) on a fresh schema (or file): that many ``cuedrecall serve --http`` processes on loopback,
each client's token granting one agent (the ACL file), and ``--clients`` clients over ``--agents`` agents, for
``--seconds``, each a closed loop of store / update_memory / delete_memory / recall / reconstruct (``MIX``) on
its own agent's memories. At ``KILL_AT`` of the run one server is SIGKILLed and at once started again (as a
supervisor does); at ``PG_RESTART_AT`` PostgreSQL is stopped (fast shutdown), left down ``--outage`` seconds,
and started again.

The clients do what a proxy in front of the servers does: a call goes to the client's own server first and, when
that refuses the connection, drops it or answers a failure the caller may retry (``inside the server``, ``try
again``), to the next, again and again for at most ``RETRY_FOR_S`` seconds. A call that got no answer in that
time is unanswered, never acknowledged: its write may or may not have happened. Retries are safe: a store carries
its message id (the same id again is skipped), an update its text, and a retried delete answered ``not found``
was done by the attempt that failed. One call in fifty is a cross-agent probe (a store or a recall naming
another agent, an update of another agent's memory) that must be refused.

Afterwards, with every server stopped, the database is read back:

- every acknowledged store is there exactly once, under the ref it was acknowledged with, with its agent and
  the text of its last acknowledged update (or one of the texts an unanswered update may have left), unless an
  acknowledged delete removed it; an unanswered store is there at most once; every row is one that was sent;
- no row crossed agents: every row under the agent its client wrote it for, every ref a recall or a
  reconstruct answered is a row of the agent asked, every probe refused; every recall of an acknowledged
  row's own token (asked of whichever server) finds it;
- every block-build, backfill, re-embedding and calibration task finished once: each task the servers ran
  is logged by the server once it has committed (``serve_child``), and none is logged twice; the servers are
  given time to run the queue down; the tasks the killed server held (its claim lasts ``LEASE_S``) are run at
  the end with the clock moved past the lease, and then the queue is empty, no task was dropped, no row
  carries the prior model's vector, and every row's block set is the division of its text.

Throughput and p50/p99 per operation are for the whole run, faults included (a call's time counts its
retries).

    python -m benchmarks.multi_server --out benchmarks/results/multi-server.md
    python -m benchmarks.multi_server --backend sqlite --out benchmarks/results/multi-server.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import numpy as np

from benchmarks import serving
from benchmarks.faults import WORDS  # the same vocabulary as the single-file fault runs

REPO = serving.REPO
BACKENDS = ("postgres", "sqlite")
AGENTS = ("agent-a", "agent-b", "agent-c", "agent-d")
MIX = (("store", 30), ("update", 12), ("delete", 8), ("recall", 35), ("reconstruct", 15))
PROBE_SHARE = 0.02  # calls that try another agent's data and must be refused
KILL_AT = 0.3  # of the run: one server SIGKILLed (and started again at once)
PG_RESTART_AT = 0.6  # of the run: PostgreSQL stopped, left down, started again
RETRY_FOR_S = 30.0  # the longest a client keeps trying one call (every server, backing off)
ATTEMPT_S = 30.0  # one attempt's read timeout
DRAIN_S = 90.0  # after the load, how long the servers get to run the queue down
TAIL_S = 3.0  # when the faults end after the run's time, the clients go on this long after them
PRIOR = "hash-384-prior"  # the label of the prefilled rows' vectors: another model, to be re-embedded
RETRYABLE = ("inside the server", "try again")  # a failure answer the caller may retry (nothing acknowledged)
REF = re.compile(r"\b(?:mem|ep):\d+\b")


# -- the servers ----------------------------------------------------------------------------------------------


def serve_child() -> None:
    """``cuedrecall serve`` with every queue task that ran to its end appended to ``$MULTI_SERVER_TASK_LOG``
    (``id kind pid``; the task's work and its removal from the queue committed by then), so the run can tell a
    task finished twice. The benchmark's only hook in the server; everything else is the shipped code."""
    from cuedrecall.cli import main
    from cuedrecall.handlers import blocks

    original = blocks.BlockBuilder._run
    path = os.environ["MULTI_SERVER_TASK_LOG"]

    def logged(self: Any, rt: Any, task: Any) -> None:
        original(self, rt, task)
        _log_task(path, task)

    blocks.BlockBuilder._run = logged  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))


def _log_task(path: str, task: Any) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{task.id} {task.kind} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


CHILD = "from benchmarks.multi_server import serve_child; serve_child()"


class Server:
    """One ``cuedrecall serve --http`` slot: its port stays the same across restarts (the proxy's upstream)."""

    def __init__(self, slot: int, port: int, db: Path, env: dict[str, str], logs: Path) -> None:
        self.slot, self.port, self.db, self.env, self.logs = slot, port, db, env, logs
        self.life = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> float:
        """Start it and wait until it listens; the seconds that took."""
        started = time.monotonic()
        log = self.logs / f"server{self.slot}-{self.life}.log"
        self.life += 1
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                # python -c CHILD serve --db DB --http ... (serve_command's arguments after python -m cuedrecall.cli)
                [sys.executable, "-c", CHILD, *self.arguments()],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=self.env,
                cwd=REPO,
            )
        try:
            serving.wait_listening(self.port, self.proc, timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"server {self.slot} did not start: {exc}; {log.read_text()[-1500:]}") from None
        return time.monotonic() - started

    def arguments(self) -> list[str]:
        command = serving.serve_command(self.db, "--http", "--host", serving.LOOPBACK, "--port", str(self.port))
        return command[command.index("serve") :]

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> bool:
        """SIGTERM (SIGKILL after 30 s); whether it stopped by itself."""
        if self.proc is None:
            return True
        serving.stop(self.proc, timeout=30.0)
        return self.proc.returncode != -signal.SIGKILL


class PrivatePostgres:
    """A PostgreSQL 16 + pgvector of this run alone, in a temporary folder: fresh schemas, and a restart."""

    def __init__(self) -> None:
        import pgserver

        self.folder = tempfile.mkdtemp(prefix="cuedrecall-pg-multi-")
        self.server = pgserver.get_server(self.folder, cleanup_mode="stop")
        self.server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        self._names = 0

    def fresh_url(self) -> str:
        """A URL whose search path is a new, empty schema (then public, where the vector extension lives)."""
        self._names += 1
        name = f"multi_{os.getpid()}_{self._names}"
        self.server.psql(f"CREATE SCHEMA {name};")
        uri = self.server.get_uri()
        return f"{uri}{'&' if '?' in uri else '?'}options={quote(f'-csearch_path={name},public')}"

    def restart(self, outage: float) -> float:
        """Stop (fast shutdown: every session ended, open transactions rolled back), stay down ``outage``
        seconds, start again; the seconds it was down."""
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        stopped = time.monotonic()
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)
        time.sleep(outage)
        self.server.ensure_postgres_running()
        return time.monotonic() - stopped

    def close(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def postgres_available() -> bool:
    try:
        import pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


# -- what the clients did -------------------------------------------------------------------------------------


@dataclass
class Note:
    """One memory a client stored: every text it may hold now, its ref once acknowledged, and its deletion."""

    msg_id: str
    agent: str
    texts: list[str]
    ref: str = ""
    sure: bool = True  # it holds texts[-1]: no update of it went unanswered
    updated: int = 0  # acknowledged updates
    deleted: str = ""  # "" | "maybe" (a delete went unanswered) | "yes" (acknowledged)
    acked_at: float = 0.0


@dataclass
class Ledger:
    """Every write sent and what was acknowledged, every call timed, every ref a read answered."""

    notes: dict[str, Note] = field(default_factory=dict)
    prefill: dict[str, tuple[str, str]] = field(default_factory=dict)  # msg_id -> (agent, text)
    calls: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op, _ in MIX})
    retried: Counter[str] = field(default_factory=Counter)  # calls answered after a failed attempt, by op
    unanswered: Counter[str] = field(default_factory=Counter)  # calls never answered, by op
    attempts_failed: Counter[str] = field(default_factory=Counter)  # failed attempts, by what failed
    reads: list[tuple[str, str]] = field(default_factory=list)  # (agent asked, ref answered)
    own_token: list[int] = field(default_factory=lambda: [0, 0])  # recalls of an own row's token: [asked, found]
    misses: list[str] = field(default_factory=list)
    probes: list[int] = field(default_factory=lambda: [0, 0])  # cross-agent probes: [sent, refused]
    failures: list[str] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)  # when each write was acknowledged (monotonic)
    serial: int = 0

    def text(self, rng: random.Random, client: int) -> str:
        """A text no other row holds (its token ``q<serial>z``); one in six long enough to divide into blocks."""
        self.serial += 1
        token = f"q{self.serial}z"
        if rng.random() < 1 / 6:
            paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))) + "." for _ in range(5)]
            return f"long note {token} of client {client}\n\n" + "\n\n".join(paragraphs)
        return f"{' '.join(rng.choice(WORDS) for _ in range(8))} note {token}"


@dataclass
class Until:
    """When the clients stop: at ``at``, or later while the faults are still being made (until TAIL_S after
    them: every run sees writes answered after its last fault)."""

    at: float
    faults_done: threading.Event = field(default_factory=threading.Event)

    def running(self) -> bool:
        return time.monotonic() < self.at or not self.faults_done.is_set()

    def faults_over(self) -> None:
        self.at = max(self.at, time.monotonic() + TAIL_S)
        self.faults_done.set()


class Unanswered(Exception):
    """An attempt that got no answer the caller can rely on (refused, dropped, timed out, failed to retry)."""


# -- one client -----------------------------------------------------------------------------------------------


@dataclass
class Client:
    number: int
    agent: str
    token: str
    ports: list[int]
    ledger: Ledger
    rng: random.Random
    mine: list[Note] = field(default_factory=list)

    async def call(self, http: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> tuple[Any, int]:
        """The tool's answer and the failed attempts before it (at most RETRY_FOR_S of trying, server after
        server from the client's own); Unanswered when none answered."""
        started, failed, last = time.monotonic(), 0, ""
        while True:
            port = self.ports[(self.number + failed) % len(self.ports)]
            try:
                return await self._attempt(http, port, tool, arguments), failed
            except Unanswered as exc:
                last = str(exc)
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            failed += 1
            self.ledger.attempts_failed[last[:60]] += 1
            if time.monotonic() - started > RETRY_FOR_S:
                raise Unanswered(last)
            await anyio.sleep(min(1.0, 0.1 * failed) if failed % len(self.ports) == 0 else 0.02)

    async def _attempt(self, http: httpx.AsyncClient, port: int, tool: str, arguments: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = await http.post(f"http://{serving.LOOPBACK}:{port}/mcp", json=body)
        if response.status_code != 200:
            raise Unanswered(f"HTTP {response.status_code}")
        message = _message(response)
        if "result" not in message:
            raise Unanswered(f"JSON-RPC error {str(message.get('error'))[:80]}")
        answer = json.loads(message["result"]["content"][0]["text"])
        if isinstance(answer, dict) and answer.get("ok") is False:
            error = str(answer.get("error", ""))
            if any(words in error for words in RETRYABLE):
                raise Unanswered(f"answered: {error[:60]}")
        return answer

    async def run(self, until: Until, others: dict[str, list[Note]]) -> None:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        timeout = httpx.Timeout(ATTEMPT_S, connect=5.0)
        async with httpx.AsyncClient(headers=headers, timeout=timeout) as http:
            while until.running():
                if self.rng.random() < PROBE_SHARE:
                    await self.probe(http, others)
                    continue
                op = self.rng.choices([op for op, _ in MIX], weights=[w for _, w in MIX])[0]
                live = [n for n in self.mine if n.ref and not n.deleted]
                if op in ("update", "delete") and not live:
                    op = "store"
                started = time.monotonic()
                try:
                    answered, failed = await getattr(self, op)(http, live)
                except Unanswered:
                    self.ledger.unanswered[op] += 1
                    continue
                if answered:
                    self.ledger.calls[op].append(time.monotonic() - started)
                    self.ledger.retried[op] += failed > 0

    async def store(self, http: httpx.AsyncClient, live: list[Note]) -> tuple[bool, int]:
        note = Note(f"c{self.number}-{len(self.mine)}", self.agent, [self.ledger.text(self.rng, self.number)])
        self.ledger.notes[note.msg_id] = note
        self.mine.append(note)
        arguments = {"agent_id": self.agent, "content": note.texts[0], "id": note.msg_id}
        answer, failed = await self.call(http, "store", arguments)
        if answer.get("ok") and answer.get("result") in ("stored", "skipped") and isinstance(answer.get("id"), int):
            if answer["result"] == "skipped" and answer.get("reason") != "duplicate msg_id":
                self.ledger.failures.append(f"store {note.msg_id} skipped as {answer.get('reason')}")
            note.ref, note.acked_at = f"mem:{answer['id']}", time.monotonic()
            self.ledger.acks.append(note.acked_at)
            return True, failed
        self.ledger.failures.append(f"store {note.msg_id} answered {json.dumps(answer)[:200]}")
        return False, failed

    async def update(self, http: httpx.AsyncClient, live: list[Note]) -> tuple[bool, int]:
        note = self.rng.choice(live)
        text = self.ledger.text(self.rng, self.number)
        arguments = {"agent_id": self.agent, "memory_id": _id(note.ref), "content": text}
        note.texts.append(text)
        try:
            answer, failed = await self.call(http, "update_memory", arguments)
        except Unanswered:
            note.sure = False  # it holds one of its texts since the last sure one
            raise
        if answer.get("ok") and answer.get("updated_id") == _id(note.ref):
            note.updated += 1
            if note.sure:
                note.texts = [text]
            self.ledger.acks.append(time.monotonic())
            return True, failed
        self.ledger.failures.append(f"update of {note.ref} ({note.msg_id}) answered {json.dumps(answer)[:200]}")
        note.sure = False
        return False, failed

    async def delete(self, http: httpx.AsyncClient, live: list[Note]) -> tuple[bool, int]:
        note = self.rng.choice(live)
        note.deleted = "maybe"
        answer, failed = await self.call(http, "delete_memory", {"agent_id": self.agent, "memory_id": _id(note.ref)})
        gone_before = failed and "not found" in str(answer.get("error", ""))  # the failed attempt deleted it
        if (answer.get("ok") and answer.get("deleted_id") == _id(note.ref)) or gone_before:
            note.deleted = "yes"
            self.ledger.acks.append(time.monotonic())
            return True, failed
        self.ledger.failures.append(f"delete of {note.ref} ({note.msg_id}) answered {json.dumps(answer)[:200]}")
        return False, failed

    async def recall(self, http: httpx.AsyncClient, live: list[Note]) -> tuple[bool, int]:
        """A recall of one of this client's rows by its own token (it must be found, whichever server is
        asked), or of two words."""
        sure = [n for n in live if n.sure]
        note = self.rng.choice(sure) if sure and self.rng.random() < 0.5 else None
        query = _token(note.texts[-1]) if note else " ".join(self.rng.sample(WORDS, 2))
        answer, failed = await self.call(http, "recall", {"agent_id": self.agent, "query": query, "limit": 10})
        refs = self._read(answer, "recall")
        if note is not None and not note.deleted:  # not deleted meanwhile by this client (it waits for its calls)
            self.ledger.own_token[0] += 1
            if note.ref in refs:
                self.ledger.own_token[1] += 1
            else:
                self.ledger.misses.append(f"recall of {query!r} ({self.agent}) did not find {note.ref}: {refs[:10]}")
        return isinstance(answer.get("messages"), list), failed

    async def reconstruct(self, http: httpx.AsyncClient, live: list[Note]) -> tuple[bool, int]:
        query = " ".join(self.rng.sample(WORDS, 2))
        answer, failed = await self.call(http, "reconstruct", {"agent_id": self.agent, "query": query, "count": 5})
        self._read(answer, "reconstruct")
        return isinstance(answer.get("items"), list), failed

    def _read(self, answer: Any, tool: str) -> list[str]:
        if not isinstance(answer, dict) or answer.get("ok") is False:
            self.ledger.failures.append(f"{tool} of {self.agent} answered {json.dumps(answer)[:200]}")
            return []
        refs = REF.findall(json.dumps(answer))
        self.ledger.reads += [(self.agent, ref) for ref in refs]
        return refs

    async def probe(self, http: httpx.AsyncClient, others: dict[str, list[Note]]) -> None:
        """A call on another agent's data with this client's token: it must be refused."""
        other = self.rng.choice([a for a in AGENTS if a != self.agent])
        theirs = [n for n in others.get(other, []) if n.ref and not n.deleted]
        kind = self.rng.choice(("store", "recall", "update") if theirs else ("store", "recall"))
        arguments: dict[str, Any]
        if kind == "store":
            msg_id = f"probe-{self.number}-{self.ledger.probes[0]}"
            tool, arguments = "store", {"agent_id": other, "content": f"probe {msg_id}", "id": msg_id}
        elif kind == "recall":
            tool, arguments = "recall", {"agent_id": other, "query": "note", "limit": 10}
        else:  # another agent's memory, named under this client's own agent
            target = self.rng.choice(theirs)
            tool, arguments = "update_memory", {"agent_id": self.agent, "memory_id": _id(target.ref), "content": "x"}
        self.ledger.probes[0] += 1
        try:
            answer, _ = await self.call(http, tool, arguments)
        except Unanswered:
            return
        error = str(answer.get("error", "")) if isinstance(answer, dict) and answer.get("ok") is False else ""
        if error == "permission_denied" or "not owned by agent" in error:
            self.ledger.probes[1] += 1
        else:
            self.ledger.failures.append(f"probe {tool} {arguments} by {self.agent} answered {str(answer)[:200]}")


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer sent as JSON or as a server-sent event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                return dict(json.loads(line[5:]))
        raise Unanswered("an event stream without data")
    return dict(response.json())


def _id(ref: str) -> int:
    return int(ref.split(":")[1])


def _token(text: str) -> str:
    found = re.search(r"\bq\d+z\b", text)
    assert found is not None
    return found.group(0)


# -- one run ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One count of servers: what the clients did, the faults' times, what the database held afterwards."""

    backend: str
    servers: int
    clients: int
    seconds: float = 0.0
    ledger: Ledger = field(default_factory=Ledger)
    events: list[str] = field(default_factory=list)
    kill_back_s: float = 0.0  # from the SIGKILL to the new process listening
    pg_down_s: float = 0.0  # PostgreSQL stopped to started again
    first_ack_after_pg_s: float | None = None  # from PostgreSQL back to the first acknowledged write
    acked_after_pg: int = 0
    acked_after_kill: int = 0
    load: tuple[str, str] = ("", "")  # /proc/loadavg before and after
    checks: dict[str, int] = field(default_factory=dict)
    tasks: Counter[str] = field(default_factory=Counter)  # tasks finished by the servers, by kind
    settled: Counter[str] = field(default_factory=Counter)  # tasks still claimed at the end, run past the lease
    failures: list[str] = field(default_factory=list)


def _acl(path: Path) -> dict[str, str]:
    """An ACL file of one client per agent, read-write on that agent alone; agent -> token."""
    tokens = {agent: f"token-{agent}-{os.urandom(8).hex()}" for agent in AGENTS}
    clients = [{"client_id": f"client-{a}", "token": t, "grants": {a: "read-write"}} for a, t in tokens.items()]
    path.write_text(json.dumps({"clients": clients}), encoding="utf-8")
    return tokens


def _settings(db: Path, db_url: str) -> Any:
    from cuedrecall.config import Settings

    return Settings.from_env({}, db_path=str(db), db_url=db_url, embedding_mode="hash")


def prefill(db: Path, db_url: str, per_agent: int, ledger: Ledger, seed: int) -> None:
    """``per_agent`` memories for each agent written straight into the store under the PRIOR model's label (the
    hash vectors rolled by one place), no blocks built: the servers re-embed them and build their blocks."""
    from cuedrecall.api import Memory
    from cuedrecall.embed import HashEmbedder

    class Prior(HashEmbedder):
        model = PRIOR

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.roll(super().embed(texts), 1, axis=1)

    rng = random.Random(seed)
    stamp = "2025-01-01T00:00:00+00:00"
    with Memory(db, settings=_settings(db, db_url), embedder=Prior(), background=False) as memory:
        for agent in AGENTS:
            texts = [
                f"prefilled {agent} {i}: {' '.join(rng.choice(WORDS) for _ in range(10))}" for i in range(per_agent)
            ]
            vectors = memory.embed(texts)
            with memory.store_.write() as conn:
                for i, (text, vector) in enumerate(zip(texts, vectors)):
                    msg_id = f"pre-{agent}-{i}"
                    row = {"agent_id": agent, "content": text, "msg_id": msg_id, "timestamp": stamp}
                    memory.store_.insert_memory(
                        conn, {**row, "created_at": stamp, "embedding": vector, "embedding_model": PRIOR}
                    )
                    ledger.prefill[msg_id] = (agent, text)


def run_one(
    backend: str,
    servers: int,
    clients: int,
    seconds: float,
    workdir: Path,
    *,
    pg: PrivatePostgres | None = None,
    prefill_rows: int = 250,
    outage: float = 2.0,
    faults: bool = True,
    seed: int = 30,
    progress: Any = None,
) -> Run:
    """One run of ``servers`` servers and ``clients`` clients for ``seconds`` on a fresh database (a fresh
    schema of ``pg`` for postgres), the faults at KILL_AT and PG_RESTART_AT when ``faults``, then the checks."""
    run = Run(backend, servers, clients)
    work = workdir / f"{backend}-{servers}"
    (work / "logs").mkdir(parents=True)
    db = work / "store.db"
    db_url = pg.fresh_url() if backend == "postgres" and pg is not None else ""
    if backend == "postgres" and not db_url:
        raise ValueError("the postgres backend needs a PrivatePostgres")
    tokens = _acl(work / "acl.json")
    task_log = work / "tasks.log"
    env = serving.child_env(
        work,
        CUEDRECALL_EMBEDDING_MODE="hash",
        CUEDRECALL_ACL_FILE=str(work / "acl.json"),
        CUEDRECALL_DB_URL=db_url,
        MULTI_SERVER_TASK_LOG=str(task_log),
    )
    prefill(db, db_url, prefill_rows, run.ledger, seed)
    slots = [Server(n, serving.free_port(), db, env, work / "logs") for n in range(servers)]
    starts: list[float] = []
    threads = [threading.Thread(target=lambda s=s: starts.append(s.start())) for s in slots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(starts) != len(slots):
        for slot in slots:
            slot.stop()
        raise RuntimeError(f"not every server started: see {work / 'logs'}")
    run.events.append(f"{servers} server(s) started in {max(starts):.1f} s")
    run.load = (_loadavg(), "")
    try:
        began, began_wall = time.monotonic(), time.time()
        marks: dict[str, float] = {}
        until = Until(began + seconds)
        fault_thread = threading.Thread(
            target=_faults,
            args=(run, slots, pg if backend == "postgres" else None, began, seconds, outage, marks, until),
        )
        if faults:
            fault_thread.start()
        else:
            until.faults_done.set()
        anyio.run(_drive, run, tokens, [s.port for s in slots], until, seed)
        run.seconds = time.monotonic() - began
        if faults:
            fault_thread.join()
        run.load = (run.load[0], _loadavg())
        _after_faults(run, marks)
        _wait_queue(db, db_url, run, began_wall)
    finally:
        stuck = [slot.slot for slot in slots if not slot.stop()]
    if stuck:
        run.events.append(f"server(s) {stuck} still busy 30 s after SIGTERM at the end, killed")
    run.tasks = _task_counts(task_log, run)
    run.failures += _dropped(work / "logs")
    cut = _unreleased(work / "logs")
    if cut:
        run.events.append(
            f"task runs that failed while the database was down and could not release their claim (it holds "
            f"until its lease runs out): {len(cut)} ({', '.join(cut)})"
        )
    settle_and_check(run, db, db_url, task_log)
    if progress:
        progress(summary_line(run))
    return run


def _faults(
    run: Run,
    slots: list[Server],
    pg: PrivatePostgres | None,
    began: float,
    seconds: float,
    outage: float,
    marks: dict[str, float],
    until: Until,
) -> None:
    """At KILL_AT one server SIGKILLed and started again at once; at PG_RESTART_AT (and at least a second after
    that server is back) PostgreSQL restarted."""
    try:
        time.sleep(max(0.0, began + KILL_AT * seconds - time.monotonic()))
        victim = slots[-1]
        marks["kill"] = time.monotonic()
        victim.kill()
        run.kill_back_s = victim.start()
        run.events.append(
            f"server {victim.slot} SIGKILLed at {marks['kill'] - began:.1f} s, "
            f"listening again {run.kill_back_s:.1f} s later"
        )
        if pg is None:
            return
        time.sleep(max(1.0, began + PG_RESTART_AT * seconds - time.monotonic()))
        marks["pg_stop"] = time.monotonic()
        run.pg_down_s = pg.restart(outage)
        marks["pg_back"] = time.monotonic()
        run.events.append(
            f"PostgreSQL stopped at {marks['pg_stop'] - began:.1f} s (fast shutdown), started again "
            f"{run.pg_down_s:.1f} s later"
        )
    except Exception as exc:  # a fault that could not be made is a failure of the run, not a crash of it
        run.failures.append(f"the faults: {type(exc).__name__}: {exc}")
    finally:
        until.faults_over()


def _after_faults(run: Run, marks: dict[str, float]) -> None:
    acks = run.ledger.acks
    if "kill" in marks:
        run.acked_after_kill = sum(1 for t in acks if t > marks["kill"] + run.kill_back_s)
    if "pg_back" in marks:
        after = sorted(t - marks["pg_back"] for t in acks if t > marks["pg_back"])
        run.acked_after_pg = len(after)
        run.first_ack_after_pg_s = after[0] if after else None
        if not after:
            run.failures.append("no write was acknowledged after PostgreSQL came back")


async def _drive(run: Run, tokens: dict[str, str], ports: list[int], until: Until, seed: int) -> None:
    clients = [
        Client(
            n,
            AGENTS[n % len(AGENTS)],
            tokens[AGENTS[n % len(AGENTS)]],
            ports,
            run.ledger,
            random.Random(seed * 100 + n),
        )
        for n in range(run.clients)
    ]
    others: dict[str, list[Note]] = {}
    for client in clients:
        others.setdefault(client.agent, client.mine)  # one client's notes per agent: what probes aim at
    with anyio.fail_after(until.at - time.monotonic() + 300 + RETRY_FOR_S + 2 * ATTEMPT_S):  # a bound, whatever
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(client.run, until, others)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def queue_counts(db: Path, db_url: str) -> tuple[int, int]:
    """(tasks queued, of them held by a claim now), read straight from the database."""
    now = time.time()
    if db_url:
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as pg:
            row = pg.execute(
                "SELECT COUNT(*), COALESCE(SUM((claimed_until > %s)::int), 0) FROM tasks", (now,)
            ).fetchone()
    else:
        import sqlite3

        conn = sqlite3.connect(db, timeout=60)
        try:
            row = conn.execute("SELECT COUNT(*), COALESCE(SUM(claimed_until > ?), 0) FROM tasks", (now,)).fetchone()
        finally:
            conn.close()
    assert row is not None
    return int(row[0]), int(row[1])


def held_tasks(db: Path, db_url: str) -> list[tuple[int, str, float]]:
    """The tasks a claim holds now: (id, kind, when claimed, wall-clock)."""
    from cuedrecall.handlers.blocks import LEASE_S

    sql = "SELECT id, kind, claimed_until FROM tasks WHERE claimed_until > {mark} ORDER BY id"
    if db_url:
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as pg:
            rows = pg.execute(sql.format(mark="%s"), (time.time(),)).fetchall()
    else:
        import sqlite3

        conn = sqlite3.connect(db, timeout=60)
        try:
            rows = conn.execute(sql.format(mark="?"), (time.time(),)).fetchall()
        finally:
            conn.close()
    return [(int(i), str(kind), float(until) - LEASE_S) for i, kind, until in rows]


def _wait_queue(db: Path, db_url: str, run: Run, began_wall: float) -> None:
    """Give the live servers up to DRAIN_S to run the queue down to the tasks a claim holds (the killed
    server's, until its lease runs out; one a server is running); say which tasks a claim holds then, and
    when they were claimed."""
    started = time.monotonic()
    queued = held = -1
    while time.monotonic() - started < DRAIN_S:
        queued, held = queue_counts(db, db_url)
        if queued <= held:
            break
        time.sleep(1.0)
    claims = ", ".join(f"{kind} claimed at {at - began_wall:.1f} s" for _, kind, at in held_tasks(db, db_url))
    run.events.append(
        f"after the load the servers ran the queue down to {queued} task(s) in {time.monotonic() - started:.0f} s"
        + (f", those held by a claim: {claims}" if claims else "")
    )


def _task_counts(task_log: Path, run: Run) -> Counter[str]:
    """The tasks the servers ran to their end, by kind; a task logged twice is a failure."""
    lines = task_log.read_text().split("\n") if task_log.exists() else []
    entries = [line.split() for line in lines if line.strip()]
    twice = [ident for ident, n in Counter(e[0] for e in entries).items() if n > 1]
    run.failures += [f"task {ident} finished more than once" for ident in twice]
    return Counter(e[1] for e in entries)


def _dropped(logs: Path) -> list[str]:
    """Tasks a server dropped after TASK_ATTEMPTS failures (they did not finish)."""
    return _log_lines(logs, "dropped after")


def _unreleased(logs: Path) -> list[str]:
    """The tasks whose run failed and whose release (``retry_task``) failed too, by kind: the builder logs
    each as a failed step with both tracebacks."""
    marker = "ERROR:cuedrecall.blocks:the block builder failed a step"
    kinds = {"calibrate.run_task": "calibrate", "_build(": "build_blocks", "reembed.run_task": "reembed_vectors"}
    out = []
    for log in sorted(logs.glob("*.log")):
        for chunk in log.read_text(errors="replace").split(marker)[1:]:
            chunk = re.split(r"\n(?:ERROR|WARNING|INFO):", chunk)[0]
            if "in retry_task" in chunk:
                out.append(next((kind for words, kind in kinds.items() if words in chunk), "a task"))
    return out


def _log_lines(logs: Path, words: str) -> list[str]:
    """The servers' log lines holding ``words``, each with its file's name."""
    out = []
    for log in sorted(logs.glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        out += [f"{log.name}: {line.strip()[:200]}" for line in lines if words in line]
    return out


# -- afterwards ------------------------------------------------------------------------------------------------


def settle_and_check(run: Run, db: Path, db_url: str, task_log: Path) -> None:
    """The tasks still held run (the clock past the lease), then every check of the module's docstring."""
    from cuedrecall.api import Memory
    from cuedrecall.handlers.blocks import LEASE_S, RETRY_DELAY_S, BlockBuilder
    from cuedrecall.handlers.reembed import REEMBED
    from cuedrecall.store.base import MEMORY
    from cuedrecall.text.blocks import divide

    settled_log = task_log.with_name("settled.log")

    class Logged(BlockBuilder):
        def _run(self, rt: Any, task: Any) -> None:
            super()._run(rt, task)
            _log_task(str(settled_log), task)

    with Memory(db, settings=_settings(db, db_url), read_only=True) as memory:  # queues nothing
        stale_before = sum(memory.store_.stale_embeddings(memory.embedder.model).values())
        chain = memory.store_.pending_tasks(REEMBED)
    if stale_before and not chain:
        run.failures.append(f"{stale_before} row(s) carry another model's vector and no re-embedding is queued")
    with Memory(db, settings=_settings(db, db_url), background=False) as memory:
        later = LEASE_S + RETRY_DELAY_S + 1
        Logged(lambda: memory.runtime, now=lambda: time.time() + later).drain()
        entries = [line.split() for line in settled_log.read_text().splitlines()] if settled_log.exists() else []
        run.settled = Counter(e[1] for e in entries)
        served = {line.split()[0] for line in task_log.read_text().splitlines()} if task_log.exists() else set()
        run.failures += [
            f"task {e[0]} ({e[1]}) finished by a server and again at the end" for e in entries if e[0] in served
        ]
        pending = memory.store_.pending_tasks()
        stale = memory.store_.stale_embeddings(memory.embedder.model)
        rows = list(memory.store_.export_rows(MEMORY, ""))
        counts = memory.store_.block_counts("", memory.embedder.model)
        texts = {f"mem:{row['id']}": row["content"] for row in rows}
        spans = memory.store_.block_spans(list(texts))
    run.failures += [f"{pending} task(s) still queued at the end"] if pending else []
    run.failures += [f"{n} {kind} row(s) still carry another model's vector" for kind, n in stale.items() if n]
    wrong_blocks = [r for r, t in texts.items() if spans.get(r) != [(s.start, s.end, s.forced) for s in divide(t)]]
    run.failures += (
        [f"{len(wrong_blocks)} row(s) whose block set is not the division of their text: {wrong_blocks[:5]}"]
        if wrong_blocks
        else []
    )
    run.failures += (
        [f"{counts['records_lacking_blocks']} record(s) lacking blocks"] if counts["records_lacking_blocks"] else []
    )
    run.checks = check_rows(run.ledger, rows)
    run.checks["rows re-embedded and current"] = len(rows) - sum(stale.values())
    run.checks["block sets checked"] = len(texts) - len(wrong_blocks)
    run.failures += run.ledger.failures + run.ledger.misses


def check_rows(ledger: Ledger, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Every acknowledged write there once and whole, nothing crossed agents; the counts checked (the failures
    go to ``ledger.failures``)."""
    fail = ledger.failures.append
    by_msg: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_msg.setdefault(row["msg_id"], []).append(row)
    owner = {f"mem:{row['id']}": row["agent_id"] for row in rows}
    counts: Counter[str] = Counter()
    for msg_id, found in by_msg.items():
        if len(found) > 1:
            fail(f"{msg_id} is stored {len(found)} times")
        note = ledger.notes.get(msg_id)
        if msg_id in ledger.prefill:
            if (found[0]["agent_id"], found[0]["content"]) != ledger.prefill[msg_id]:
                fail(f"prefilled {msg_id} changed")
            counts["prefilled rows present once"] += len(found) == 1
        elif note is None:
            fail(f"row mem:{found[0]['id']} ({msg_id!r}, {found[0]['agent_id']}) is not a write that was sent")
        elif found[0]["agent_id"] != note.agent:
            fail(f"row mem:{found[0]['id']} of {note.agent} is under {found[0]['agent_id']}")
            counts["rows under another agent"] += 1
    counts["prefilled rows missing"] = sum(1 for m in ledger.prefill if m not in by_msg)
    for msg_id, note in ledger.notes.items():
        found = by_msg.get(msg_id, [])
        if note.ref:
            owner.setdefault(note.ref, note.agent)  # a deleted row's ref still belongs to its agent
        if not note.ref:  # never acknowledged: there at most once, whole
            counts["unacknowledged stores"] += 1
            counts["of them present (committed, answer lost)"] += len(found) == 1
            if found and found[0]["content"] not in note.texts:
                fail(f"unacknowledged {msg_id} holds a text that was not sent")
            continue
        if note.deleted == "yes":
            counts["acknowledged deletes"] += 1
            if found:
                fail(f"{note.ref} ({msg_id}) was deleted (acknowledged) and is still there")
            continue
        if note.deleted == "maybe" and not found:
            counts["unanswered deletes that happened"] += 1
            continue
        counts["acknowledged stores present"] += 1
        if len(found) != 1 or f"mem:{found[0]['id']}" != note.ref:
            fail(f"acknowledged {note.ref} ({msg_id}) is missing or under another ref: {[r['id'] for r in found]}")
            continue
        content = found[0]["content"]
        if (note.sure and content != note.texts[-1]) or content not in note.texts:
            fail(f"{note.ref} ({msg_id}) holds a text it was not given last: {content[:60]!r}")
        elif found[0].get("embedding") is None:
            fail(f"{note.ref} has no vector")
        else:
            counts["acknowledged stores present, whole"] += 1
        counts["of them with an acknowledged update checked"] += note.updated > 0
    crossed = [(agent, ref) for agent, ref in ledger.reads if owner.get(ref) != agent]
    for agent, ref in crossed[:20]:
        fail(f"a read of {agent} answered {ref}, a row of {owner.get(ref, 'nobody known')}")
    counts["refs answered by reads, checked"] = len(ledger.reads)
    counts["refs of another agent answered"] = len(crossed)
    counts["cross-agent probes sent"], counts["cross-agent probes refused"] = ledger.probes
    counts["recalls of an own row's token"], counts["of them found"] = ledger.own_token
    return dict(counts)


# -- the report ------------------------------------------------------------------------------------------------


def summary_line(run: Run) -> str:
    calls = sum(len(v) for v in run.ledger.calls.values())
    return (
        f"{run.backend}, {run.servers} server(s), {run.clients} clients: {calls} calls in {run.seconds:.0f} s "
        f"({calls / max(run.seconds, 1e-9):.1f}/s), {len(run.failures)} failure(s); load {run.load[0]} -> {run.load[1]}"
    )


def _cell(values: list[float], seconds: float) -> str:
    if not values:
        return "–"
    p50, p99 = np.percentile(values, 50) * 1000, np.percentile(values, 99) * 1000
    return f"{len(values)} ({len(values) / seconds:.1f}/s), {p50:.0f} / {p99:.0f} ms"


def markdown(runs: list[Run], command: str) -> str:
    """One section: the throughput table, the faults, the checks."""
    backend = "PostgreSQL" if runs[0].backend == "postgres" else "SQLite (one file)"
    ops = [op for op, _ in MIX]
    lines = [
        f"### {backend}",
        "",
        f"Command: `{command}`",
        "",
        "| servers | calls/s | "
        + " | ".join(f"{op}: n (/s), p50 / p99" for op in ops)
        + " | retried | unanswered | load before → after |",
        "|---:|---:|" + "---|" * len(ops) + "---:|---:|---|",
    ]
    for run in runs:
        calls = sum(len(v) for v in run.ledger.calls.values())
        lines.append(
            f"| {run.servers} | {calls / run.seconds:.1f} | "
            + " | ".join(_cell(run.ledger.calls[op], run.seconds) for op in ops)
            + f" | {sum(run.ledger.retried.values())} | {sum(run.ledger.unanswered.values())} | "
            f"{run.load[0]} → {run.load[1]} |"
        )
    lines += ["", "Faults and recovery:", ""]
    for run in runs:
        recovery = (
            f"; first write acknowledged {run.first_ack_after_pg_s:.1f} s after PostgreSQL was back, "
            f"{run.acked_after_pg} acknowledged after it"
            if run.first_ack_after_pg_s is not None
            else ""
        )
        failed = ", ".join(f"{n} {what}" for what, n in run.ledger.attempts_failed.most_common(4)) or "none"
        lines.append(
            f"- {run.servers} server(s): " + "; ".join(run.events) + recovery + f"; {run.acked_after_kill} writes "
            f"acknowledged after the killed server was back; failed attempts (retried): {failed}"
        )
    lines += ["", "Checks afterwards (the database read back with every server stopped):", ""]
    keys = sorted(
        {key for run in runs for key in run.checks},
        key=lambda k: list(_CHECK_ORDER).index(k) if k in _CHECK_ORDER else 99,
    )
    lines += ["| check | " + " | ".join(f"{r.servers} server(s)" for r in runs) + " |", "|---|" + "---:|" * len(runs)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(str(r.checks.get(key, 0)) for r in runs) + " |")
    lines.append(
        "| tasks finished by the servers (by kind) | "
        + " | ".join(", ".join(f"{n} {k}" for k, n in sorted(r.tasks.items())) or "0" for r in runs)
        + " |"
    )
    lines.append(
        "| tasks still claimed at the end, run past their lease | "
        + " | ".join(", ".join(f"{n} {k}" for k, n in sorted(r.settled.items())) or "0" for r in runs)
        + " |"
    )
    lines.append("| failures | " + " | ".join(str(len(r.failures)) for r in runs) + " |")
    for run in runs:
        for failure in run.failures[:10]:
            lines.append(f"\n- {run.servers} server(s): {failure}")
    return "\n".join(lines) + "\n"


_CHECK_ORDER = (
    "acknowledged stores present",
    "acknowledged stores present, whole",
    "of them with an acknowledged update checked",
    "acknowledged deletes",
    "unanswered deletes that happened",
    "unacknowledged stores",
    "of them present (committed, answer lost)",
    "prefilled rows present once",
    "prefilled rows missing",
    "rows under another agent",
    "refs answered by reads, checked",
    "refs of another agent answered",
    "cross-agent probes sent",
    "cross-agent probes refused",
    "recalls of an own row's token",
    "of them found",
    "rows re-embedded and current",
    "block sets checked",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="postgres")
    parser.add_argument("--servers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--prefill", type=int, default=250, help="rows per agent under the prior model")
    parser.add_argument("--outage", type=float, default=2.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--keep", type=Path, help="keep each run's folder (server logs, task logs, ACL file) here")
    parser.add_argument("--out", type=Path, help="the results file: this backend's section replaced, the other's kept")
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not postgres_available():
        parser.error(
            "the postgres backend needs pgserver and psycopg: pip install -c constraints.txt '.[test,postgres]'"
        )
    command = "python -m benchmarks.multi_server " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    pg = PrivatePostgres() if args.backend == "postgres" else None
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="multi-server-") as scratch:
            workdir = args.keep or Path(scratch)
            for count in args.servers:
                runs.append(
                    run_one(
                        args.backend,
                        count,
                        args.clients,
                        args.seconds,
                        workdir,
                        pg=pg,
                        prefill_rows=args.prefill,
                        outage=args.outage,
                        seed=args.seed,
                        progress=lambda line: print(line, flush=True),
                    )
                )
    finally:
        if pg is not None:
            pg.close()
    text = markdown(runs, command)
    print(text)
    if args.out:
        from benchmarks.pg import with_section

        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        backend = "sqlite" if args.backend == "sqlite" else "postgres"
        args.out.write_text(with_section(old, backend, text, _head(old)), encoding="utf-8")
    return 1 if any(run.failures for run in runs) else 0


def _head(old: str) -> str:
    """The results file's head as it is (edited by hand), or a title for a new one."""
    head = old.split("<!-- ", 1)[0].strip()
    return head or "# Several HTTP servers over one database, under load and faults (issue 30)"


if __name__ == "__main__":
    sys.exit(main())

"""Driving the peer, CPersona 2.6.14, and our own server the same way: over MCP stdio with the official client.

What lives here:

- ``ensure_peer()`` installs CPersona from PyPI into its own virtual environment
  (``benchmarks/.peer``, git-ignored: a link to a folder in the user cache) and reuses it when it is
  already there.
- ``write_cpersona_export()`` writes records (texts, timestamps, vectors) as
  ``cpersona-export/1.0`` JSONL, the format CPersona's ``import_memories`` reads,
  with each vector as ``embedding_b64`` (little-endian float32).
- ``ToolServer`` starts an MCP server as a subprocess, speaks to it with
  ``mcp.client.stdio`` and times each tool call; it also reads the server's peak
  resident memory (``VmHWM``) from ``/proc``.
- ``EmbedServer`` runs ``cuedrecall embed-server`` so that both servers ask one
  ``/embed`` endpoint for their query vectors.
- ``PEER_SETTINGS`` are the CPersona settings the benchmark changes, each with why.

Nothing here copies CPersona code: its installed source was read only to learn
how it is launched (``python -m cpersona``) and what its settings are called.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

from benchmarks import serving

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEER_VENV = HERE / ".peer"
PEER_PACKAGE = "cpersona"
PEER_VERSION = "2.6.14"
EXPORT_VERSION = "cpersona-export/1.0"
# CPersona refuses an import file over 100 MiB (CPERSONA_MAX_IMPORT_BYTES); a record with a
# 384-wide vector is about 2.3 kB, so 20,000 records a file stays well under the cap.
RECORDS_PER_IMPORT_FILE = 20_000

# The settings the benchmark gives CPersona beyond the embedding endpoint and the database path,
# each with the reason. Everything else stays at its default.
PEER_SETTINGS: dict[str, tuple[str, str]] = {
    "CPERSONA_EMBEDDING_MODE": ("http", "query vectors come from the shared `cuedrecall embed-server`"),
    "CPERSONA_UPDATE_CHECK": ("false", "no outbound request to the package index at start"),
    "CPERSONA_CALIBRATE_ON_MODEL_CHANGE": (
        "false",
        "a fresh database would otherwise start a background threshold calibration that embeds "
        "hundreds of texts through /embed while the timed recalls run; our server has no calibration "
        "either (fresh store), so both gate on the heuristic",
    ),
    "CPERSONA_BLOCK_BUILD_ENABLED": (
        "false",
        "block construction would queue a backfill of the whole corpus (embedding calls in the "
        "background during timing); retrieval follows it, so the block arm is off too, which can only make "
        "CPersona's recall faster",
    ),
    "CPERSONA_TASK_QUEUE_ENABLED": (
        "false",
        "no background worker (nodes, blocks, index files) competing for the 2 cores during timing",
    ),
    "CPERSONA_OPERATING_CONTEXT": ("off", "no operator sidecar read from the home directory"),
}


# -- the peer's virtual environment -------------------------------------------------------------


def peer_python(venv: Path = PEER_VENV) -> Path:
    return venv / "bin" / "python"


def installed_peer_version(venv: Path = PEER_VENV) -> str | None:
    """The CPersona version installed in the venv, or None when there is none."""
    python = peer_python(venv)
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({PEER_PACKAGE!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def _venv_home(venv: Path) -> Path:
    """Where the peer's environment really lives: ``benchmarks/.peer`` is a link to a folder in the user's cache,
    so that whatever walks ``benchmarks/`` for our own modules (the import-graph check, linters) never descends
    into a whole third-party environment. Returns the folder to create the environment in."""
    if venv != PEER_VENV or venv.exists():
        return venv
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuedrecall" / "peer-venv"
    home.parent.mkdir(parents=True, exist_ok=True)
    if venv.is_symlink():  # a link left dangling: point it again
        venv.unlink()
    venv.symlink_to(home, target_is_directory=True)
    return home


def ensure_peer(venv: Path = PEER_VENV, version: str = PEER_VERSION, log: Path | None = None) -> str:
    """Install ``cpersona==version`` into ``venv`` unless it is already there; returns what happened."""
    if installed_peer_version(venv) == version:
        return f"reused {venv.relative_to(REPO) if venv.is_relative_to(REPO) else venv}"
    if not peer_python(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(_venv_home(venv))], check=True, timeout=300)
    with ExitStack() as stack:
        out = stack.enter_context(open(log, "w", encoding="utf-8")) if log else subprocess.DEVNULL
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", f"{PEER_PACKAGE}=={version}"],
            check=True,
            timeout=900,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    found = installed_peer_version(venv)
    if found != version:
        raise RuntimeError(f"installing {PEER_PACKAGE}=={version} into {venv} left version {found!r}")
    return f"installed {PEER_PACKAGE}=={version} into {venv}"


def peer_environment(
    db_path: Path, embed_url: str, home: Path, settings: Mapping[str, tuple[str, str]] = PEER_SETTINGS
) -> dict[str, str]:
    """The environment CPersona runs under: its ``settings`` (name -> (value, why)), its database, the shared
    /embed endpoint, a private home directory."""
    env = {name: value for name, (value, _why) in settings.items()}
    env.update(
        {
            "CPERSONA_EMBEDDING_URL": embed_url,
            "CPERSONA_DB_PATH": str(db_path),
            "HOME": str(home),
            "CPERSONA_TRANSPORT": "stdio",
        }
    )
    return env


# -- the cpersona-export/1.0 writer -----------------------------------------------------------


@dataclass(frozen=True)
class ExportRecord:
    """One memory to hand CPersona: our id (the export's record id), text, timestamp, vector.

    ``msg_id`` and ``source`` are optional: the speed benchmark leaves the msg_id empty (see
    ``export_lines``), the retrieval comparison passes the turn's msg_id and speaker.
    """

    id: int
    content: str
    timestamp: str
    vector: np.ndarray | None
    msg_id: str = ""
    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class ExportEpisode:
    """One session summary to hand CPersona as an episode, with its time span and vector."""

    id: int
    summary: str
    keywords: str
    start_time: str
    end_time: str
    vector: np.ndarray | None


def embedding_b64(vector: np.ndarray) -> str:
    """A vector as CPersona stores it: little-endian float32 bytes, base64."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def sql_datetime(stamp: str) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC: how CPersona writes created_at (its newest-first scan order reads it)."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def export_lines(
    records: Sequence[ExportRecord], agent_id: str, exported_at: str, episodes: Sequence[ExportEpisode] = ()
) -> Iterator[str]:
    """The JSONL lines of one ``cpersona-export/1.0`` file: a header, one memory a line by id, then episodes."""
    header = {
        "_type": "header",
        "version": EXPORT_VERSION,
        "agent_id": agent_id,
        "exported_at": exported_at,
        "memory_count": len(records),
        "episode_count": len(episodes),
        "has_profile": False,
        "profile_count": 0,
    }
    yield json.dumps(header, ensure_ascii=False)
    for record in records:
        line: dict[str, Any] = {
            # the speed benchmark leaves msg_id empty: CPersona's import probes a non-empty msg_id with a
            # query SQLite plans on its isolation index (agent_id, project_id, created_at), a scan of the
            # agent's rows per record, which makes a 100k import take hours; its rows are matched to ours by
            # content instead. A few hundred records (a LoCoMo conversation) import quickly with msg_ids.
            "_type": "memory",
            "id": record.id,
            "agent_id": agent_id,
            "msg_id": record.msg_id,
            "content": record.content,
            "source": record.source or {},
            "timestamp": record.timestamp,
            "metadata": {},
            "created_at": sql_datetime(record.timestamp),
            "project_id": "",
            "channel": "",
            "locked": 0,
            "recall_count": 0,
            "last_recalled_at": None,
        }
        if record.vector is not None:
            line["embedding_b64"] = embedding_b64(record.vector)
        yield json.dumps(line, ensure_ascii=False)
    for episode in episodes:
        # created_at is the session's end: when our harness archives it (its clock reads end_time)
        item: dict[str, Any] = {
            "_type": "episode",
            "id": episode.id,
            "agent_id": agent_id,
            "summary": episode.summary,
            "keywords": episode.keywords,
            "start_time": episode.start_time,
            "end_time": episode.end_time,
            "created_at": sql_datetime(episode.end_time),
            "resolved": False,
            "project_id": "",
            "channel": "",
        }
        if episode.vector is not None:
            item["embedding_b64"] = embedding_b64(episode.vector)
        yield json.dumps(item, ensure_ascii=False)


def write_cpersona_export(
    records: Iterable[ExportRecord],
    folder: Path,
    agent_id: str,
    per_file: int = RECORDS_PER_IMPORT_FILE,
    episodes: Sequence[ExportEpisode] = (),
) -> list[Path]:
    """Write the records as one or more export files (each under CPersona's import size cap).

    Episodes, if any, go into the last file, after its memories.
    """
    folder.mkdir(parents=True, exist_ok=True)
    exported_at = datetime.now(UTC).isoformat()
    paths: list[Path] = []
    chunk: list[ExportRecord] = []

    def flush(with_episodes: Sequence[ExportEpisode] = ()) -> None:
        path = folder / f"import-{len(paths):03d}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for line in export_lines(chunk, agent_id, exported_at, with_episodes):
                out.write(line + "\n")
        paths.append(path)
        chunk.clear()

    for record in records:
        chunk.append(record)
        if len(chunk) == per_file:
            flush()
    if chunk or not paths or episodes:
        flush(episodes)
    return paths


# -- an MCP server over stdio, timed ---------------------------------------------------------


class ToolError(RuntimeError):
    """A tool call that the server answered with an MCP error or with non-JSON."""


def _children(parent: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: the ppid is the 2nd field after it
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            found.add(int(entry.name))
    return found


class ToolServer:
    """An MCP server subprocess driven with ``mcp.client.stdio``; ``await server.call(tool, args)``."""

    def __init__(
        self,
        name: str,
        command: str,
        args: list[str],
        env: dict[str, str],
        log_path: Path,
        cwd: Path | None = None,
        start_timeout: float = 300.0,
        client_name: str | None = None,
    ) -> None:
        self.name = name
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.client_name = client_name  # initialize's clientInfo name (None: the mcp client's own)
        self.log_path = log_path
        self.start_timeout = start_timeout
        self.startup_s: float | None = None
        self.pid: int | None = None
        self._stack: AsyncExitStack | None = None
        self.session: Any = None

    async def __aenter__(self) -> ToolServer:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.types import Implementation

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        stack = AsyncExitStack()
        await stack.__aenter__()
        self._stack = stack
        try:
            log = stack.enter_context(open(self.log_path, "a", encoding="utf-8"))  # noqa: SIM115 - the stack closes it
            before = _children(os.getpid())
            params = StdioServerParameters(
                command=self.command, args=self.args, env=self.env, cwd=str(self.cwd) if self.cwd else None
            )
            start = time.perf_counter()
            read, write = await stack.enter_async_context(stdio_client(params, errlog=log))
            info = None if self.client_name is None else Implementation(name=self.client_name, version="1.0")
            self.session = await stack.enter_async_context(ClientSession(read, write, client_info=info))
            with anyio.fail_after(self.start_timeout):
                await self.session.initialize()
            self.startup_s = time.perf_counter() - start
            new = sorted(_children(os.getpid()) - before)
            self.pid = new[-1] if new else None
        except BaseException:
            await stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> tuple[dict[str, Any], float]:
        """(the tool's JSON answer, milliseconds the call took seen from the client)."""
        start = time.perf_counter()
        with anyio.fail_after(timeout):
            result = await self.session.call_tool(tool, arguments)
        elapsed = (time.perf_counter() - start) * 1000
        text = "".join(getattr(part, "text", "") for part in result.content)
        if result.isError:
            raise ToolError(f"{self.name} {tool}: {text[:300]}")
        try:
            return json.loads(text), elapsed
        except ValueError as exc:
            raise ToolError(f"{self.name} {tool}: answer is not JSON: {text[:300]!r}") from exc

    def peak_rss_kib(self) -> int | None:
        """VmHWM (the peak resident set) of the server process in KiB; None where unreadable."""
        return serving.status_kib(self.pid, "VmHWM")


def planner_statistics(db_path: Path, keep: bool) -> None:
    """Gather SQLite's planner statistics for a CPersona database (``ANALYZE``), or drop them again.

    CPersona never runs ANALYZE, and without statistics SQLite answers its import's msg_id probe through the
    (agent_id, project_id) index, reading every row of the agent for each record: an import into one agent's
    store slows as it grows (about 2 hours for 100,000 records here). With statistics it takes the
    (agent_id, msg_id) index. The probe's answer is the same either way (a unique index holds at most one row),
    so what is stored is the same; the statistics are dropped before the questions, so CPersona's recall plans
    its queries as at its defaults.
    """
    with sqlite3.connect(db_path, timeout=60) as conn:
        if keep:
            conn.execute("ANALYZE")
        else:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%'").fetchall():
                conn.execute(f"DROP TABLE {table}")
    conn.close()


def db_copy(source: Path, target: Path) -> Path:
    """A consistent copy of an SQLite store (the online backup: WAL content included), with no derived file
    (WAL, shared memory) of an earlier copy left beside it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.glob(target.name + "*"):
        old.unlink()
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target


def served_copy(ours_db: Path, target: Path, embed_url: str) -> Path:
    """A copy of our store whose vectors are labelled with the embed server's model name (``http:<url>``), for
    ``our_server`` to serve.

    The vectors are the same (the embed server runs the embedder the store was built with), but under
    another label our server takes them for another model's: its vector arms would leave them out and it
    would re-embed every row in the background while the queries are timed (and write that into the store).
    """
    db_copy(ours_db, target)
    with sqlite3.connect(target) as dst:
        for table in ("memories", "episodes"):
            dst.execute(f"UPDATE {table} SET embedding_model = ? WHERE embedding IS NOT NULL", (f"http:{embed_url}",))
    dst.close()
    return target


def our_server(
    db_path: Path, embed_url: str, log_path: Path, settings: dict[str, str] | None = None, tree: Path = REPO
) -> ToolServer:
    """``cuedrecall serve --db ... --embedding http`` from ``tree`` with the shared /embed endpoint and
    ``settings`` (CPERSONA_* variables; none: every setting at its default)."""
    env = {"CPERSONA_EMBEDDING_URL": embed_url, "CPERSONA_DB_PATH": str(db_path), **(settings or {})}
    return ToolServer(
        "cuedrecall",
        sys.executable,
        ["-m", "cuedrecall.cli", "serve", "--db", str(db_path), "--embedding", "http"],
        env,
        log_path,
        cwd=tree,
    )  # ``-m`` finds the package in its cwd first


def peer_server(
    db_path: Path,
    embed_url: str,
    log_path: Path,
    start_timeout: float = 300.0,
    settings: Mapping[str, tuple[str, str]] = PEER_SETTINGS,
) -> ToolServer:
    """CPersona's console entry point, ``python -m cpersona`` in its own virtual environment, under ``settings``
    (its home beside the database)."""
    home = db_path.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    return ToolServer(
        "cpersona",
        str(peer_python()),
        ["-m", PEER_PACKAGE],
        peer_environment(db_path, embed_url, home, settings),
        log_path,
        cwd=db_path.parent,
        start_timeout=start_timeout,
    )


# -- the shared /embed endpoint ---------------------------------------------------------------


class EmbedServer:
    """``cuedrecall embed-server`` on a free local port, for as long as the ``with`` block lasts."""

    def __init__(self, mode: str, log_path: Path, timeout: float = 60.0) -> None:
        self.mode, self.log_path, self.timeout = mode, log_path, timeout
        self.port = serving.free_port()
        self.url = f"http://127.0.0.1:{self.port}/embed"
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def __enter__(self) -> EmbedServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cuedrecall.cli",
                "embed-server",
                "--port",
                str(self.port),
                "--embedding",
                self.mode,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
        health = self.url.rsplit("/", 1)[0] + "/health"

        def answers() -> bool:
            if self._process.poll() is not None:
                raise RuntimeError(f"embed-server exited with {self._process.returncode}; see {self.log_path}")
            try:
                return httpx.get(health, timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        if not serving.wait_until(answers, self.timeout, 0.2):
            self.__exit__()
            raise TimeoutError(f"embed-server did not answer within {self.timeout:.0f} s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            serving.stop(self._process, timeout=10)
        if self._log is not None:
            self._log.close()


def peer_ref_map(peer_db: Path, ours_db: Path, agent_id: str) -> dict[str, str]:
    """CPersona's ``mem:<its id>`` -> our ``mem:<our id>``, joined on the stored text (unique in the stores)."""

    def rows(path: Path) -> list[tuple[int, str]]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(
                "SELECT id, content FROM memories WHERE agent_id = ? ORDER BY id", (agent_id,)
            ).fetchall()
        finally:
            conn.close()

    ours = {content: row_id for row_id, content in rows(ours_db)}
    return {f"mem:{row_id}": f"mem:{ours[content]}" for row_id, content in rows(peer_db) if content in ours}


def peer_record_keys(peer_db: Path, agent_id: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """From CPersona's database: the agent's memories as (id, msg_id) and episodes as (id, summary), by id."""
    conn = sqlite3.connect(f"file:{peer_db}?mode=ro", uri=True)
    try:
        memories = conn.execute(
            "SELECT id, msg_id FROM memories WHERE agent_id = ? ORDER BY id", (agent_id,)
        ).fetchall()
        episodes = conn.execute(
            "SELECT id, summary FROM episodes WHERE agent_id = ? ORDER BY id", (agent_id,)
        ).fetchall()
        return [(int(i), str(m)) for i, m in memories], [(int(i), str(t)) for i, t in episodes]
    finally:
        conn.close()


# CPersona's import probe for a record's msg_id (memory import, 2.6.14), as written in its admin handlers.
MSG_ID_PROBE = "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? LIMIT 1"


def msg_id_probe(peer_db: Path, agent_id: str, repeat: int = 20) -> tuple[str, float]:
    """(SQLite's plan for CPersona's msg_id import probe, milliseconds per probe) on its database."""
    conn = sqlite3.connect(f"file:{peer_db}?mode=ro", uri=True)
    try:
        plan = "; ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + MSG_ID_PROBE, (agent_id, "", "x")))
        start = time.perf_counter()
        for i in range(repeat):
            conn.execute(MSG_ID_PROBE, (agent_id, "", f"no such id {i}")).fetchall()
        return plan, (time.perf_counter() - start) * 1000 / repeat
    finally:
        conn.close()

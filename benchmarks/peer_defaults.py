"""CPersona 2.6.14 at its defaults, and waiting out both servers' background work before timing.

The project's rule for a side by side: CPersona is measured at ITS defaults (block arm and
held seats on, its task queue on) with its background builds finished before the first
timed query; switching its features off to match ours is a variant, reported as one, never
the headline. Our server runs at its defaults too (blocks built through its own queue,
calibration on growth).

What lives here:

- ``peer_defaults_environment()``: benchmarks/peer.py's environment less the settings that
  switch a feature off (``FEATURE_SWITCHES``); what remains is what running here needs (the
  shared /embed endpoint, no update check, its home and operator sidecar kept in the work dir).
- ``wait_idle()``: polls a server's queue tool until nothing is pending (and, for CPersona,
  until its startup calibration, which runs beside the queue, has logged its end), bounded.
- ``build_file()``: CPersona's block index and contiguous vector index files brought current with
  its own operator commands once its queue is empty (the server never starts the vector index
  build, and leaves the block index behind until it is "too far behind"; recall reads both).

Nothing here copies CPersona code: its source was read to learn setting and tool names, and
what its log says when the startup calibration ends.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks import peer as peer_mod

# PEER_SETTINGS entries that turn one of CPersona's features off; the headline drops them.
FEATURE_SWITCHES = frozenset(
    {"CPERSONA_BLOCK_BUILD_ENABLED", "CPERSONA_TASK_QUEUE_ENABLED", "CPERSONA_CALIBRATE_ON_MODEL_CHANGE"}
)
QUEUE_TOOLS = ("get_queue_status",)  # preferred names; else any listed tool whose name holds "queue"
POLL_S = 2.0
SETTLE_POLLS = 3  # consecutive empty polls: a finishing task may queue a follow-up (CPersona's block index)
CALIBRATION_ENDED = ("startup calibration:", "startup calibration failed")  # its log, lowered


# benchmarks/peer.py's settings less the ones that switch a feature off: what remains is what running here needs
DEFAULT_SETTINGS = {name: value for name, value in peer_mod.PEER_SETTINGS.items() if name not in FEATURE_SWITCHES}


def peer_defaults_environment(db_path: Path, embed_url: str, home: Path) -> dict[str, str]:
    """CPersona's environment with every feature at its default; only the running-here settings stay."""
    return peer_mod.peer_environment(db_path, embed_url, home, DEFAULT_SETTINGS)


def peer_server_defaults(db_path: Path, embed_url: str, log_path: Path) -> peer_mod.ToolServer:
    """``python -m cpersona`` at its defaults over its database (its home beside the database)."""
    return peer_mod.peer_server(db_path, embed_url, log_path, settings=DEFAULT_SETTINGS)


async def queue_tool(server: peer_mod.ToolServer) -> str:
    """The server's queue tool, found by name in its tools/list (each server names its own)."""
    names = [tool.name for tool in (await server.session.list_tools()).tools]
    for name in QUEUE_TOOLS:
        if name in names:
            return name
    found = [name for name in names if "queue" in name]
    if not found:
        raise RuntimeError(f"{server.name} lists no queue tool: {names}")
    return found[0]


def calibration_logged(log_path: Path) -> Callable[[], bool]:
    """Whether CPersona's log says its startup calibration ended (it runs as a task of its own, not queued)."""

    def done() -> bool:
        text = log_path.read_text(encoding="utf-8", errors="replace").lower() if log_path.exists() else ""
        return any(marker in text for marker in CALIBRATION_ENDED)

    return done


async def wait_idle(
    servers: dict[str, peer_mod.ToolServer],
    started: dict[str, float],
    bound_s: float,
    extra: dict[str, Callable[[], bool]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Poll every server's queue until it is empty for SETTLE_POLLS polls running (and its ``extra`` holds).

    Per server: ``s`` (from its start to the first of the settled polls), ``finished`` (False when the bound
    ran out first: the caller times anyway and says so), ``polls`` and the ``last`` queue answer.
    """
    tools = {name: await queue_tool(server) for name, server in servers.items()}
    out: dict[str, dict[str, Any]] = {
        name: {"tool": tools[name], "finished": False, "polls": 0, "s": None} for name in servers
    }
    quiet: dict[str, float | None] = dict.fromkeys(servers)
    runs = dict.fromkeys(servers, 0)
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline and not all(row["finished"] for row in out.values()):
        for name, server in servers.items():
            if out[name]["finished"]:
                continue
            answer, _ms = await server.call(tools[name], {}, 60.0)
            now = time.monotonic()
            out[name]["polls"] += 1
            out[name]["last"] = answer
            idle = int(answer.get("pending", 0) or 0) == 0 and (extra is None or extra.get(name, lambda: True)())
            quiet[name] = (quiet[name] or now) if idle else None
            runs[name] = runs[name] + 1 if idle else 0
            if runs[name] >= SETTLE_POLLS:
                out[name].update(finished=True, s=quiet[name] - started[name])
        await anyio.sleep(POLL_S)
    for name, row in out.items():
        if not row["finished"]:
            row["s"] = time.monotonic() - started[name]  # how long it was given
    return out


def build_file(db_path: Path, embed_url: str, log_path: Path, module: str) -> dict[str, Any]:
    """One of CPersona's derived files for ``db_path``, by its own operator command; seconds and its answer.

    ``vector_index`` (the contiguous vector index file): CPersona never queues this build; its docs run the
    command from a timer beside the live server, and recall reads the file whenever it is present and current.
    ``block_index``: its queue rebuilds the file only once it is "too far behind", so after a backfill the
    file can lag by tens of thousands of blocks, which each recall then reads from SQLite. Both are built
    after the queue is empty, so each holds every row, and no derived file is left behind at the timing.
    """
    db_path = db_path.resolve()  # the command runs beside the database
    env = peer_defaults_environment(db_path, embed_url, db_path.parent / "home")
    command = [str(peer_mod.peer_python()), "-m", f"cpersona.{module}", "--db", str(db_path), "--json"]
    started = time.perf_counter()
    with open(log_path, "a", encoding="utf-8") as log:
        done = subprocess.run(
            [*command, "build"], env=env, cwd=db_path.parent, capture_output=True, text=True, timeout=1800
        )
        log.write(done.stderr)
    return {"s": time.perf_counter() - started, "rc": done.returncode, "built": _json(done.stdout)}


def index_status(db_path: Path, embed_url: str, module: str = "vector_index") -> dict[str, Any]:
    """CPersona's own report on one of its derived files (``vector_index`` or ``block_index``): ``usable``, and
    how many rows changed since its build (those a recall reads live from SQLite instead)."""
    db_path = db_path.resolve()  # the command runs beside the database
    env = peer_defaults_environment(db_path, embed_url, db_path.parent / "home")
    done = subprocess.run(
        [str(peer_mod.peer_python()), "-m", f"cpersona.{module}", "--db", str(db_path), "--json", "status"],
        env=env,
        cwd=db_path.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return _json(done.stdout)


# Where each side keeps its blocks: (table, record id column, the embedded block's column).
BLOCK_TABLES = {"ours": ("blocks", "record_id", "bits"), "cpersona": ("record_blocks", "parent_id", "embedding_bits")}


def block_coverage(db_path: Path, side: str) -> dict[str, int]:
    """Evidence that a build finished, read from the database: records with block rows, and embedded blocks.

    A record of one block is a marker row on our side and no row on CPersona's, so the record counts differ
    by design; what matters is that they stop growing once the queue is empty.
    """
    table, record, bits = BLOCK_TABLES[side]
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        records, embedded = conn.execute(f"SELECT COUNT(DISTINCT {record}), COUNT({bits}) FROM {table}").fetchone()
        memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    finally:
        conn.close()
    return {"memories": int(memories), "records_with_rows": int(records), "embedded_blocks": int(embedded)}


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"raw": text[-400:]}
    return value if isinstance(value, dict) else {"value": value}

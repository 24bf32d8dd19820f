"""The realistic corpus side by side with CPersona 2.6.14 over MCP stdio (benchmarks/speed_realistic.py, step 6).

Both servers run at once over the same rows and vectors (CPersona loads ours through
``import_memories``: benchmarks/speed.py's import and its verbatim-recall probe), both
ask one ``cuedrecall embed-server`` (hash) for each query's vector, and each question
is asked of both, alternating which goes first. Blocks are off on both sides (CPersona:
benchmarks/peer.py's PEER_SETTINGS). Times are seen from the client; peak memory is each
server process's VmHWM after its queries.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from benchmarks import peer as peer_mod
from benchmarks import realistic
from benchmarks.harness import WITHOUT_BLOCKS
from benchmarks.speed import prepare_peer_store

TIMEOUT = 120.0
BUDGET = 3600.0  # seconds one size's import may take


def our_server(db_path: Path, embed_url: str, log_path: Path) -> peer_mod.ToolServer:
    """``cuedrecall serve --embedding http`` with blocks off and no calibration on growth (as in process)."""
    env = {"CPERSONA_EMBEDDING_URL": embed_url, "CPERSONA_DB_PATH": str(db_path), **WITHOUT_BLOCKS,
           "CPERSONA_CALIBRATE_ON_GROWTH": "false"}
    return peer_mod.ToolServer("cuedrecall", sys.executable,
                               ["-m", "cuedrecall.cli", "serve", "--db", str(db_path), "--embedding", "http"],
                               env, log_path, cwd=peer_mod.REPO)


def served_copy(ours_db: Path, target: Path, embed_url: str) -> Path:
    """A copy of our store whose vectors are labelled with the embed server's model name (``http:<url>``).

    The vectors are the same (the server embeds with the hash embedder too), but under another
    label our server would re-embed every row in the background while the queries are timed.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    with sqlite3.connect(ours_db) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
        dst.execute("UPDATE memories SET embedding_model = ? WHERE embedding IS NOT NULL", (f"http:{embed_url}",))
    src.close()
    dst.close()
    return target


async def _one_size(size: int, ours_db: Path, workdir: Path, embed_url: str, questions: list[str]) -> dict[str, Any]:
    store = await prepare_peer_store(size, ours_db, workdir, embed_url, False, TIMEOUT, time.monotonic() + BUDGET)
    ours_db = served_copy(ours_db, workdir / f"ours-served-{size}.db", embed_url)
    out: dict[str, Any] = {"import_s": store.import_s, "imported": store.imported, "probe": store.probe,
                           "ms": {"ours": [], "cpersona": []}, "peak_kib": {}}
    logs = workdir / "logs"
    async with AsyncExitStack() as stack:
        servers = {"ours": await stack.enter_async_context(our_server(ours_db, embed_url, logs / f"r-ours-{size}.log")),
                   "cpersona": await stack.enter_async_context(
                       peer_mod.peer_server(store.path, embed_url, logs / f"r-peer-{size}.log"))}
        for server in servers.values():
            for text in ("warm up", "hello there", "what happened last week", "how are you", "tell me more"):
                await server.call("recall", {"agent_id": realistic.AGENT, "query": text, "limit": 10}, TIMEOUT)
        for i, text in enumerate(questions):
            for name in (("ours", "cpersona") if i % 2 == 0 else ("cpersona", "ours")):
                answer, ms = await servers[name].call("recall", {"agent_id": realistic.AGENT, "query": text,
                                                                 "limit": 10}, TIMEOUT)
                if answer.get("ok") is False:
                    raise RuntimeError(f"{name} recall failed: {str(answer)[:300]}")
                out["ms"][name].append(ms)
        out["peak_kib"] = {name: server.peak_rss_kib() for name, server in servers.items()}
    for suffix in ("", "-wal", "-shm"):
        Path(f"{ours_db}{suffix}").unlink(missing_ok=True)
    return out


def side_by_side(args: argparse.Namespace, questions: list[str]) -> dict[int, dict[str, Any]]:
    """Each peer size's figures; an error names what failed instead of the figures."""
    import anyio

    peer_mod.ensure_peer(log=args.workdir / "logs" / "peer-install.log")
    out: dict[int, dict[str, Any]] = {}
    with peer_mod.EmbedServer("hash", args.workdir / "logs" / "embed-server.log") as embed:
        for size in args.peer_sizes:
            ours_db = args.workdir / f"realistic-{size}.db"
            try:
                out[size] = anyio.run(_one_size, size, ours_db, args.workdir / "peer", embed.url, questions)
            except Exception as exc:  # the in-process figures stand without the peer's
                out[size] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return out

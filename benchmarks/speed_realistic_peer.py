"""The realistic corpus side by side with CPersona 2.6.14 over MCP stdio (benchmarks/speed_realistic.py, step 6).

    python -m benchmarks.speed_realistic_peer --locomo PATH --sizes 10000 100000 --modes defaults blocks-off

The rule: CPersona is measured at ITS defaults (block arm and held seats on, its task queue
on), its background work finished before timing; switching its features off to match ours
is a variant, never the headline. So each size runs in two modes:

- ``defaults`` (the headline): both servers at their defaults; only what running here needs
  is set (benchmarks/peer_defaults.py). Before the first timed query both queues are polled
  until empty (bounded: past the bound the queries are timed anyway and the report says the
  builds were unfinished); CPersona's contiguous vector index file is then built with its own
  operator command. Each side's background time is recorded.
- ``blocks-off`` (the variant): blocks off on both sides, CPersona's task queue and startup
  calibration off (benchmarks/peer.py's PEER_SETTINGS), ours without calibration on growth.

Both servers run at once over the same rows and vectors (CPersona loads ours through
``import_memories``: benchmarks/speed.py's import and its verbatim-recall probe), both ask one
``cuedrecall embed-server`` (hash) for each query's vector, and each question is asked of both,
alternating which goes first. Per recall: the time seen from the client and the rows returned
(its ``messages``); per server: VmHWM (peak) and VmRSS (resident after the queries).
Writes ``benchmarks/results/speed_realistic_peer.json`` and ``.md`` (the command at the top).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from benchmarks import peer as peer_mod
from benchmarks import peer_defaults as defaults
from benchmarks import realistic, serving
from benchmarks.harness import WITHOUT_BLOCKS
from benchmarks.speed import prepare_peer_store

HERE = Path(__file__).resolve().parent
TIMEOUT = 120.0
BUDGET = 3600.0  # seconds one size's import may take
MODES = ("defaults", "blocks-off")
WAIT_BOUND_S = 2400.0  # the longest the background builds are waited for (40 minutes)
WARMUP = ("warm up", "hello there", "what happened last week", "how are you", "tell me more")


def our_server(
    db_path: Path, embed_url: str, log_path: Path, mode: str, tree: Path = peer_mod.REPO
) -> peer_mod.ToolServer:
    """Our server at its defaults, or (blocks-off) as in process: blocks and calibration on growth off."""
    settings = {**WITHOUT_BLOCKS, "CPERSONA_CALIBRATE_ON_GROWTH": "false"} if mode == "blocks-off" else None
    return peer_mod.our_server(db_path, embed_url, log_path, settings, tree)


async def _start(
    stack: AsyncExitStack, key: str, server: peer_mod.ToolServer, started: dict[str, float]
) -> peer_mod.ToolServer:
    started[key] = time.monotonic()  # its background work starts with the process
    return await stack.enter_async_context(server)


async def _timed(servers: dict[str, peer_mod.ToolServer], questions: list[str], out: dict[str, Any]) -> None:
    """Warm-up, then every question asked of both, alternating which goes first: ms and rows per recall."""
    for server in servers.values():
        for text in WARMUP:
            await server.call("recall", {"agent_id": realistic.AGENT, "query": text, "limit": 10}, TIMEOUT)
    for i, text in enumerate(questions):
        for name in ("ours", "cpersona") if i % 2 == 0 else ("cpersona", "ours"):
            answer, ms = await servers[name].call(
                "recall", {"agent_id": realistic.AGENT, "query": text, "limit": 10}, TIMEOUT
            )
            if answer.get("ok") is False:
                raise RuntimeError(f"{name} recall failed: {str(answer)[:300]}")
            out["ms"][name].append(ms)
            out["rows"][name].append(len(answer.get("messages") or []))


async def _one_mode(
    size: int,
    mode: str,
    store_path: Path,
    ours_src: Path,
    workdir: Path,
    embed_url: str,
    questions: list[str],
    bound_s: float,
    tree: Path,
) -> dict[str, Any]:
    ours_db = peer_mod.served_copy(ours_src, workdir / f"ours-served-{size}-{mode}.db", embed_url)
    # the defaults' builds write into a copy: the cached import stays as imported, for the variant too
    peer_db = (
        peer_mod.db_copy(store_path, workdir / f"peer-{size}" / "defaults" / "cpersona.db")
        if mode == "defaults"
        else store_path
    )
    logs = workdir / "logs"
    peer_log, ours_log = logs / f"r-peer-{size}-{mode}.log", logs / f"r-ours-{size}-{mode}.log"
    for log in (peer_log, ours_log):  # the calibration's end is read from this run's log alone
        log.unlink(missing_ok=True)
    out: dict[str, Any] = {"ms": {"ours": [], "cpersona": []}, "rows": {"ours": [], "cpersona": []}}
    started: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        peer = (
            defaults.peer_server_defaults(peer_db, embed_url, peer_log)
            if mode == "defaults"
            else peer_mod.peer_server(peer_db, embed_url, peer_log)
        )
        servers = {
            "ours": await _start(stack, "ours", our_server(ours_db, embed_url, ours_log, mode, tree), started),
            "cpersona": await _start(stack, "cpersona", peer, started),
        }
        if mode == "defaults":
            out["background"] = await defaults.wait_idle(
                servers, started, bound_s, {"cpersona": defaults.calibration_logged(peer_log)}
            )
            out["blocks"] = {
                "ours": defaults.block_coverage(ours_db, "ours"),
                "cpersona": defaults.block_coverage(peer_db, "cpersona"),
            }
            out["block_index_before"] = defaults.index_status(peer_db, embed_url, "block_index")
            for module in ("block_index", "vector_index"):  # CPersona's derived files, current at the timing
                out[module] = await anyio.to_thread.run_sync(
                    defaults.build_file, peer_db, embed_url, logs / f"peer-{size}-{module}.log", module
                )
        await _timed(servers, questions, out)
        out["peak_kib"] = {name: server.peak_rss_kib() for name, server in servers.items()}
        out["rss_kib"] = {name: serving.status_kib(server.pid, "VmRSS") for name, server in servers.items()}
    if mode == "defaults":  # after the queries: what the timed recalls could read from each file
        out["vector_index_status"] = defaults.index_status(peer_db, embed_url, "vector_index")
        out["block_index_status"] = defaults.index_status(peer_db, embed_url, "block_index")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{ours_db}{suffix}").unlink(missing_ok=True)
    return out


async def _one_size(
    size: int,
    ours_db: Path,
    workdir: Path,
    embed_url: str,
    questions: list[str],
    modes: tuple[str, ...],
    bound_s: float,
    tree: Path,
    save: Any = None,
) -> dict[str, Any]:
    store = await prepare_peer_store(size, ours_db, workdir, embed_url, False, TIMEOUT, time.monotonic() + BUDGET)
    out: dict[str, Any] = {"import_s": store.import_s, "imported": store.imported, "probe": store.probe, "modes": {}}
    for mode in modes:
        try:
            out["modes"][mode] = await _one_mode(
                size, mode, store.path, ours_db, workdir, embed_url, questions, bound_s, tree
            )
        except Exception as exc:  # the other mode's figures stand without these
            out["modes"][mode] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        if save:
            save(size, out)
    return out


def side_by_side(args: argparse.Namespace, questions: list[str], save: Any = None) -> dict[int, dict[str, Any]]:
    """Each peer size's figures, by mode; an error names what failed instead of the figures."""
    (args.workdir / "logs").mkdir(parents=True, exist_ok=True)
    peer_mod.ensure_peer(log=args.workdir / "logs" / "peer-install.log")
    modes = tuple(getattr(args, "modes", MODES))
    bound_s = float(getattr(args, "wait_bound", WAIT_BOUND_S))
    tree = getattr(args, "ours_tree", None) or peer_mod.REPO
    out: dict[int, dict[str, Any]] = {}
    with peer_mod.EmbedServer("hash", args.workdir / "logs" / "embed-server.log") as embed:
        for size in args.peer_sizes:
            ours_db = args.workdir / f"realistic-{size}.db"
            try:
                out[size] = anyio.run(
                    _one_size, size, ours_db, args.workdir / "peer", embed.url, questions, modes, bound_s, tree, save
                )
            except Exception as exc:  # the in-process figures stand without the peer's
                out[size] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return out


def git_output(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=peer_mod.REPO, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def ours_snapshot(rev: str) -> Path:
    """Our package as committed at ``rev`` (``git archive``, the repository untouched), for the timed server.

    Others edit cuedrecall/ while a run lasts: a server started from the working tree would run whatever
    half-made state it found at its start (one failed to start), and the figures could not name their code.
    """
    sha = git_output("rev-parse", "--short", rev)
    # outside benchmarks/: a copy of cuedrecall/ there would be walked as benchmarks' own modules
    target = Path(tempfile.gettempdir()) / "cuedrecall-ours-trees" / sha
    if not (target / "cuedrecall" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", "--format=tar", sha, "cuedrecall"],
            cwd=peer_mod.REPO,
            capture_output=True,
            timeout=300,
            check=True,
        )
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
    return target


def tree_note(rev: str | None) -> str:
    """Which of our trees the server ran: a commit's snapshot, or the working tree (and whether it was edited)."""
    if rev:
        commit = git_output("rev-parse", "--short", rev)
        return f"Our server: commit {commit} (a `git archive` snapshot of cuedrecall/)."
    dirty = git_output("status", "--porcelain", "--", "cuedrecall")
    return f"Our server: the working tree at commit {git_output('rev-parse', '--short', 'HEAD')}" + (
        f", with uncommitted edits under cuedrecall/ ({len(dirty.splitlines())} files) at the start."
        if dirty
        else ", cuedrecall/ clean at the start."
    )


def main(argv: list[str] | None = None) -> int:
    """Only the side by side (the in-process sizes are speed_realistic's); results written after each mode."""
    from benchmarks.speed_realistic_report import render_peers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", dest="peer_sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--wait-bound", type=float, default=WAIT_BOUND_S, help="seconds to wait for the builds")
    parser.add_argument(
        "--ours-rev",
        help="run our server from this commit's cuedrecall/ (default: the working tree, which others may be editing)",
    )
    parser.add_argument("--workdir", type=Path, default=HERE / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "speed_realistic_peer.md")
    args = parser.parse_args(argv)
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    for size in args.peer_sizes:  # the cached store of that size (built as speed_realistic builds it)
        realistic.build(args.workdir, args.locomo, size)
    questions = realistic.questions(args.locomo, args.queries)
    if args.ours_rev:  # resolved once: others commit while a run lasts
        args.ours_rev = git_output("rev-parse", "--short", args.ours_rev)
    args.ours_tree = ours_snapshot(args.ours_rev) if args.ours_rev else None
    load, tree = [os.getloadavg()[0]], tree_note(args.ours_rev)
    done: dict[int, dict[str, Any]] = {}

    def save(size: int, figures: dict[str, Any]) -> None:
        done[size] = figures
        load_now = [*load, os.getloadavg()[0]]
        args.out.with_suffix(".json").write_text(
            json.dumps({"command": argv_text, "load": load_now, "tree": tree, "sizes": done}, indent=1)
        )
        header = [
            f"Command: `python -m benchmarks.speed_realistic_peer {argv_text}`",
            "",
            f"CPython {platform.python_version()}, 2 shared CPUs; load average (1 min) {load[0]:.2f} at the "
            f"start, {load_now[-1]:.2f} at the last write. Other processes may share the machine (the load "
            "averages say how busy it was): figures carry their noise; the two servers are timed alternately, "
            f"query by query, so the ratio is fair. {len(questions)} questions (LoCoMo's and long-span's). {tree}",
            "",
        ]
        args.out.write_text("\n".join(header + render_peers(done)) + "\n")

    side_by_side(args, questions, save)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

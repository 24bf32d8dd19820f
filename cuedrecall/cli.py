"""The ``cuedrecall`` command: serve, demo, recall, import, export, calibrate, build-blocks, backup, migrate,
embed-server, view, ui, traces."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cuedrecall.config import Settings
from cuedrecall.embedding_models import DEFAULT_MODEL, accepted
from cuedrecall.errors import CuedRecallError
from cuedrecall.version import __version__


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "db", None):
        overrides["db_path"] = args.db
    if getattr(args, "embedding", None):
        overrides["embedding_mode"] = args.embedding
    return Settings.from_env(**overrides)


def _memory(args: argparse.Namespace, background: bool = False, read_only: bool = False) -> Any:
    """The store the command works on. Only the server builds blocks in the background: a one-shot command
    leaves the queue to the server (or to ``build-blocks``) and exits as soon as its work is done.
    ``read_only`` (the explorer without --write) writes nothing at all (``Memory``'s ``read_only``)."""
    from cuedrecall.api import Memory

    return Memory(settings=_settings(args), background=background, read_only=read_only)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until the client goes (stdin closed), Ctrl-C or SIGTERM; then close the store, which folds the
    WAL into the database file, so the .db alone holds every write (a copy of it loses nothing)."""
    import anyio

    from cuedrecall.server import serve_http, serve_stdio

    memory = _memory(args, background=True)
    stopped = False
    try:
        if args.http:
            settings = memory.settings
            serve_http(memory, args.host or settings.http_host, args.port or settings.http_port)
        else:
            with _sigterm_exits():
                anyio.run(serve_stdio, memory)
    except (KeyboardInterrupt, SystemExit):
        stopped = True  # Ctrl-C, or SIGTERM (``_sigterm_exits``): how a server is stopped, a clean stop
    finally:
        memory.close()
    if stopped and not args.http:
        # the store is closed; the transport's thread blocked reading stdin would keep the process alive
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM (how a client or a service manager stops the stdio server) raises SystemExit in the main
    thread instead of ending the process on the spot, so the store is closed on the way out."""
    if threading.current_thread() is not threading.main_thread():  # signals go to the main thread only
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_demo(args: argparse.Namespace) -> int:
    from cuedrecall.demo import run_demo

    run_demo(args.embedding or Settings.from_env().embedding_mode)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from cuedrecall.demo import rows_table

    arguments: dict[str, Any] = {"agent_id": args.agent, "query": args.query, "limit": args.limit}
    if args.cue:
        arguments["time_cue"] = json.loads(args.cue)
    if args.trace:
        arguments["trace"] = True
    with _memory(args) as memory:
        answer = memory.recall(**arguments)
        empty = None if answer.get("ok") is False or answer["messages"] else _nothing_found(memory, args)
    if args.json or answer.get("ok") is False:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return 1 if answer.get("ok") is False else 0
    if empty is not None:
        print(empty)
    else:
        Console().print(rows_table(f"recall {args.query!r}", answer["messages"]))
    if args.trace:
        from cuedrecall.trace_view import print_trace

        print_trace(answer["trace"], Console())
    return 0


_AGENTS_NAMED = 10  # the most agent ids an empty recall lists


def _nothing_found(memory: Any, args: argparse.Namespace) -> str:
    """Why a recall printed no row: the agent holds nothing (and which agents do), or nothing matched."""
    held = [a for a in memory.agents()["agents"] if a["memories"] or a["episodes"]]
    if any(a["agent_id"] == args.agent for a in held):
        cue = " within the time cue" if args.cue else ""
        return f"no memory of agent {args.agent!r} matches {args.query!r}{cue}"
    names = ", ".join(repr(a["agent_id"]) for a in held[:_AGENTS_NAMED])
    names += ", ..." if len(held) > _AGENTS_NAMED else ""
    where = f"agents with memories: {names} (choose one with --agent)" if held else "the database holds none"
    return f"agent {args.agent!r} has no memories in {memory.settings.db_path}; {where}"


def cmd_export(args: argparse.Namespace) -> int:
    """Write an agent's (or every agent's) records to a JSONL file; an existing file only with --force."""
    # the operator's command on the server's own machine: any path (anywhere=True, which no tool caller can send)
    target = os.path.abspath(os.path.expanduser(args.path))
    if not args.force and os.path.lexists(target):
        refusal = (
            f"output_path names an existing file, {target}: export replaces a file only with --force "
            "(backup refuses the same way)"
        )
        return _finish({"ok": False, "error": refusal})
    with _memory(args) as memory:
        result = memory.call(
            "export_memories",
            {"agent_id": args.agent, "output_path": args.path, "include_embeddings": args.embeddings},
            anywhere=True,
        )
    return _finish(result)


def cmd_import(args: argparse.Namespace) -> int:
    # any path the operator gives, ours or a CPersona export: one command moves a CPersona user over
    with _memory(args) as memory, _progress() as progress:
        task = progress.add_task("importing", total=_record_count(args.path))
        result = memory.call(
            "import_memories",
            {"input_path": args.path, "target_agent_id": args.agent, "dry_run": args.dry_run},
            progress=lambda n: progress.advance(task, n),
            anywhere=True,
        )
    return _finish(result)


def _finish(result: dict[str, Any], indent: int | None = None) -> int:
    """Print a tool's result as JSON; a failure also says why on stderr and exits 1."""
    print(json.dumps(result, ensure_ascii=False, indent=indent))
    if result.get("ok"):
        return 0
    print(f"cuedrecall: {result.get('error', 'failed')}", file=sys.stderr)
    return 1


def _record_count(path: str) -> int:
    """Records after the header, for the progress bar; 0 when unreadable (the import itself says why)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return max(sum(1 for line in handle if line.strip()) - 1, 0)
    except (OSError, UnicodeDecodeError):
        return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        if args.precision:
            result = memory.set_recall_precision(agent_id=args.agent, precision=args.precision)
        else:
            result = memory.calibrate_threshold(agent_id=args.agent, method=args.method)
    return _finish(result, indent=2)


def cmd_build_blocks(args: argparse.Namespace) -> int:
    """Run the block queue (builds and the backfill) until nothing is due, then print what is left."""
    from cuedrecall.handlers.blocks import build_report

    with _memory(args) as memory:
        if memory.blocks is None:
            print(
                "cuedrecall: blocks are not built (CUEDRECALL_BLOCK_BUILD_ENABLED is off, or the embedder "
                "makes no vectors)",
                file=sys.stderr,
            )
            return 1
        memory.blocks.queue_backfill()  # what was stored before blocks existed, too
        ran = memory.blocks.drain(args.max_tasks)
        result = {"ok": True, "tasks_run": ran, **build_report(memory.runtime)}
    return _finish(result)


def cmd_backup(args: argparse.Namespace) -> int:
    """A consistent copy of a (live) database: handlers/backup.py."""
    from cuedrecall.handlers.backup import backup

    return _finish(backup(args.source, args.dest, force=args.force))


def cmd_embed_server(args: argparse.Namespace) -> int:
    from cuedrecall.embed import make_embedder, serve_embeddings

    settings = _settings(args)
    embedder = make_embedder(
        settings.embedding_mode,
        model=settings.embedding_model,
        url=settings.embedding_url,
        timeout_s=settings.embedding_timeout_secs,
    )
    serve_embeddings(embedder, host=args.host, port=args.port)
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from cuedrecall.ui import commands

    return commands.view(args)


def cmd_ui(args: argparse.Namespace) -> int:
    from cuedrecall.ui import commands

    return commands.ui(args, _memory)


def cmd_traces(args: argparse.Namespace) -> int:
    from cuedrecall.ui import commands

    return commands.traces(args)


def cmd_migrate(args: argparse.Namespace) -> int:
    """Copy a SQLite store into an empty PostgreSQL database, with a progress bar; the counts verified."""
    from cuedrecall.store.migrate import migrate_sqlite, source_counts

    source = args.source.removeprefix("sqlite:")
    if not args.target.startswith(("postgresql://", "postgres://")) or source == args.source:
        print("cuedrecall: migrate --from sqlite:<path> --to postgresql://...", file=sys.stderr)
        return 2
    with _progress() as progress:
        task = progress.add_task("migrating", total=sum(source_counts(source).values()))
        result = migrate_sqlite(
            source, args.target, lambda table, n: progress.update(task, advance=n, description=f"migrating {table}")
        )
    return _finish(result)


def _progress() -> Progress:
    # on stderr: stdout carries only the JSON result, so scripts can parse it
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )


DB_HELP = "database file (default: CUEDRECALL_DB_PATH or ~/.cuedrecall/memory.db)"
BUILD_BLOCKS_EPILOG = (
    "It prints JSON: tasks_run (queue tasks run now), pending_tasks (left queued), model, and the records "
    "under the current model: records = records_divided (text of two or more blocks, each block embedded "
    "and searched) + records_single_block (text of one block: nothing to search beyond the record's own "
    "vector) + records_lacking_blocks (not done yet); block_rows counts the blocks of the divided records."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cuedrecall", description="Long-term memory server for AI agents.")
    parser.add_argument("--version", action="version", version=f"cuedrecall {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(
        name: str, handler: Any, help_text: str, db: bool = True, embedding: bool = True, epilog: str | None = None
    ) -> argparse.ArgumentParser:
        """A subcommand; ``--db`` and ``--embedding`` only where the command opens a store or an embedder."""
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog)
        p.set_defaults(handler=handler)
        if db:
            p.add_argument("--db", help=DB_HELP)
        if embedding:
            p.add_argument(
                "--embedding",
                choices=["local", "http", "hash", "none"],
                help="embedder (default: CUEDRECALL_EMBEDDING_MODE or local); local runs CUEDRECALL_EMBEDDING_MODEL, "
                f"one of {accepted()} (default {DEFAULT_MODEL})",
            )
        return p

    p = add("serve", cmd_serve, "Run the MCP server (stdio by default).")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    p.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="HTTP port (default 8402)")

    add("demo", cmd_demo, "Build a store from a bundled sample conversation and show recalls.", db=False)

    p = add("recall", cmd_recall, "Recall from a database and print the answer.")
    p.add_argument("query", help='what to look for ("" lists the newest memories)')
    p.add_argument("--agent", default="default", help="agent id (default: default)")
    p.add_argument("--limit", type=int, default=10, help="rows to return (default 10)")
    p.add_argument("--trace", action="store_true", help="print the recall trace as tables")
    p.add_argument(
        "--cue",
        help='time cue as JSON, e.g. \'{"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"}\'',
    )
    p.add_argument("--json", action="store_true", help="print the raw JSON response")

    p = add("export", cmd_export, "Export memories, episodes and profile to JSONL.")
    p.add_argument("path", help="file to write (refused if it exists, unless --force)")
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.add_argument("--agent", default="", help="agent id (default: every agent)")
    p.add_argument("--embeddings", action="store_true", help="include vectors")

    p = add("import", cmd_import, "Import a JSONL export (idempotent), with a progress bar.")
    p.add_argument("path", help="file to read")
    p.add_argument("--agent", default="", help="file every record under this agent")
    p.add_argument("--dry-run", action="store_true", help="count without writing")

    p = add("calibrate", cmd_calibrate, "Calibrate an agent's quality gate from its own memories.")
    p.add_argument("--agent", required=True, help='agent id ("" = the global cosine threshold)')
    p.add_argument("--method", default="separation", choices=["separation", "percentile", "zscore"])
    p.add_argument(
        "--precision", choices=["strict", "balanced", "lenient"], help="set the agent's precision first, then calibrate"
    )

    p = add(
        "build-blocks",
        cmd_build_blocks,
        "Build the queued blocks now (and the backfill), in this process.",
        epilog=BUILD_BLOCKS_EPILOG,
    )
    p.add_argument("--max-tasks", type=int, default=None, help="stop after this many tasks (default: all due)")

    p = add(
        "backup",
        cmd_backup,
        "Copy a database, live or not, as one committed state (SQLite's online backup).",
        db=False,
        embedding=False,
    )
    p.add_argument("source", help="the database file to copy")
    p.add_argument("dest", help="the file to write (refused if it exists, unless --force)")
    p.add_argument("--force", action="store_true", help="replace an existing destination file")

    p = add(
        "migrate",
        cmd_migrate,
        "Move a SQLite store into an empty PostgreSQL database (counts verified).",
        db=False,
        embedding=False,
    )
    p.add_argument("--from", dest="source", required=True, help="sqlite:<path> of the store to copy")
    p.add_argument("--to", dest="target", required=True, help="postgresql://... URL of an empty database")

    p = add("embed-server", cmd_embed_server, "Serve the configured embedder over POST /embed.", db=False)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8401, help="port (default 8401)")

    from cuedrecall.ui.commands import add_parsers

    add_parsers(add, {"view": cmd_view, "ui": cmd_ui, "traces": cmd_traces})
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CuedRecallError as exc:
        print(f"cuedrecall: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

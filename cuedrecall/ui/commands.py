"""The browser commands of ``cuedrecall``: ``view`` (a trace as an HTML file), ``ui`` (the explorer), ``traces``.

``view FILE`` reads a trace, a recall or reconstruct response holding one (``recall
--json`` with ``--trace``), a trace log entry, or a trace log (JSONL: the entry named by
``--entry``, else the newest), writes the self-contained page beside it (or to ``--out``)
and prints the page's path. ``traces PATH`` lists a trace log's entries, newest first;
with ``--summary`` it counts a window of them instead (``handlers/trace_stats.py``),
and ``--prune-days N`` drops the entries older than N days.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cuedrecall.clock import parse_instant, system_clock
from cuedrecall.handlers.trace_log import TraceLog, read_entries, stored_query_hash
from cuedrecall.handlers.trace_stats import EVENTS, summarize_log
from cuedrecall.ui.traces import summary


def _load(path: Path, entry_id: str | None) -> tuple[Any, str]:
    """The object to render and a suffix for the page's name; ValueError when the file holds no trace."""
    if entry_id is None and path.suffix != ".jsonl":
        try:
            return json.loads(path.read_text(encoding="utf-8")), ""
        except ValueError:
            pass  # not one JSON document: a trace log, one entry per line
    if not path.exists():
        raise ValueError(f"no file {path}")
    entries = [entry for _, entry in read_entries(path, rotated=entry_id is not None)]
    if entry_id is not None:
        entries = [entry for entry in entries if entry.get("id") == entry_id]
    if not entries:
        raise ValueError(f"{path}: no trace{f' log entry {entry_id}' if entry_id else ''} in it")
    return entries[-1], f"-{entries[-1].get('id')}"


def view(args: argparse.Namespace) -> int:
    source = Path(args.file)
    try:
        obj, suffix = _load(source, args.entry)
    except (OSError, ValueError) as exc:
        print(f"cuedrecall: {exc}", file=sys.stderr)
        return 1
    from cuedrecall.trace_view import write_page
    from cuedrecall.ui.trace_html import trace_page

    out = Path(args.out) if args.out else source.with_name(f"{source.stem}{suffix}.html")
    try:
        write_page(out, trace_page(obj, question=args.question))  # 0600, never through a link
    except OSError as exc:
        print(f"cuedrecall: {exc}", file=sys.stderr)
        return 1
    print(out.resolve())
    return 0


def traces(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists() and not path.with_name(path.name + ".1").exists():
        print(f"cuedrecall: no trace log at {path}", file=sys.stderr)
        return 1
    try:
        if args.prune_days is not None:
            return _prune(path, args)
        if args.summary:
            return _summary(path, args)
        return _listing(path, args)
    except (OSError, ValueError) as exc:
        print(f"cuedrecall: {path}: {exc}", file=sys.stderr)
        return 1
    except OverflowError:
        print("cuedrecall: the window or the age reaches past the dates a clock can hold", file=sys.stderr)
        return 1


def _instant(text: str | None, flag: str) -> datetime | None:
    """A command-line instant (ISO-8601 date or time; UTC when it names no offset); ValueError names it."""
    if text is None:
        return None
    moment = parse_instant(text)
    if moment is None:
        raise ValueError(f"{flag} {text!r} is not an ISO-8601 date or time (e.g. 2025-06-01, 2025-06-01T12:00Z)")
    return moment


def _window(args: argparse.Namespace) -> tuple[datetime, datetime | None]:
    """[since, until) of --summary: --since, else --days before --until (or now)."""
    until = _instant(args.until, "--until")
    since = _instant(args.since, "--since")
    if since is None:
        if not args.days > 0:  # NaN too
            raise ValueError(f"--days {args.days:g} must be above 0")
        since = (until or system_clock()) - timedelta(days=args.days)
    if until is not None and until <= since:
        raise ValueError("--until must come after the window's start")
    return since, until


def _prune(path: Path, args: argparse.Namespace) -> int:
    if not args.prune_days > 0:  # NaN too
        raise ValueError(f"--prune-days {args.prune_days:g} must be above 0")
    now = _instant(args.until, "--until") or system_clock()
    dropped = TraceLog(path, max_bytes=1 << 62).prune_before(now - timedelta(days=args.prune_days))
    print(f"dropped {dropped} entries older than {args.prune_days:g} days from {path}")
    return 0


def _summary(path: Path, args: argparse.Namespace) -> int:
    since, until = _window(args)
    stats = summarize_log(path, since=since, until=until)
    if args.json:
        print(json.dumps(stats, ensure_ascii=False, indent=1))
        return 0
    console = Console()
    window = stats["window"]
    tools = ", ".join(f"{n} {tool}" for tool, n in stats["tools"].items()) or "none"
    print(
        f"trace log {path}: {stats['recalls']} recalls ({tools}) from {window['since']} to {window['until'] or 'now'}"
    )
    table = Table(title="suspected per stage")
    for column in ("stage", "code", "count", "rate"):
        table.add_column(column)
    for row in stats["suspected"]:
        table.add_row(str(row["stage"]), row["code"], str(row["count"]), f"{row['rate']:.1%}")
    console.print(table if stats["suspected"] else "suspected: nothing")
    table = Table(title="recalls where it happened")
    for column in ("event", "count", "rate"):
        table.add_column(column)
    for name in EVENTS:
        event = stats["events"][name]
        label = f"{name} ({stats['relief_rows']} rows)" if name == "relief" else name
        table.add_row(label, str(event["count"]), f"{event['rate']:.1%}")
    console.print(table)
    if stats["timing_ms"]:
        table = Table(title="timing_ms")
        for column in ("key", "n", "median", "p95"):
            table.add_column(column)
        for key, timing in stats["timing_ms"].items():
            table.add_row(key, str(timing["n"]), f"{timing['median']:g}", f"{timing['p95']:g}")
        console.print(table)
    skipped = stats["skipped"]
    print(
        f"skipped: {skipped['malformed_lines']} malformed lines, {skipped['no_trace']} entries without a "
        f"trace, {skipped['undated']} without a time; {stats['outside_window']} outside the window"
    )
    return 0


def _listing(path: Path, args: argparse.Namespace) -> int:
    wanted = stored_query_hash(args.query, args.db) if args.query is not None else None
    rows = [summary(entry) for _, entry in read_entries(path) if wanted is None or entry.get("query_sha256") == wanted]
    rows = rows[::-1][: args.limit]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    table = Table(title=f"trace log {path} ({len(rows)} shown, newest first)")
    for column in ("id", "at", "tool", "agent", "refs", "policy", "query sha256"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            str(r["id"]),
            str(r["at"]),
            str(r["tool"]),
            str(r["agent_id"]),
            str(r["refs"]),
            f"{r['process'] or '-'}{' (cued)' if r['cued'] else ''}",
            r["query_sha256"],
        )
    Console().print(table)
    print("open one with: cuedrecall view PATH --entry ID (or in cuedrecall ui --traces PATH)")
    return 0


def ui(args: argparse.Namespace, memory: Callable[..., Any]) -> int:
    from cuedrecall.ui.app import serve

    with memory(args, background=args.write, read_only=not args.write) as opened:  # read-only: writes nothing
        traces_path = args.traces or opened.settings.trace_log or None

        def announce(line: str) -> None:
            print(line, flush=True)

        serve(opened, port=args.port, write=args.write, traces=traces_path, announce=announce)
    return 0


def add_parsers(add: Callable[..., argparse.ArgumentParser], handlers: dict[str, Callable[..., int]]) -> None:
    """The three subcommands, on the ``cuedrecall`` parser's ``add`` (name, handler, help, db, embedding)."""
    p = add(
        "view",
        handlers["view"],
        "Write a recall or reconstruct trace as a self-contained HTML page.",
        db=False,
        embedding=False,
    )
    p.add_argument("file", help="a trace, a response holding one (recall --json --trace), or a trace log (JSONL)")
    p.add_argument("--out", help="the page to write (default: beside the file, .html)")
    p.add_argument("--question", help="the question asked: the coverage ledger marks its words")
    p.add_argument("--entry", help="with a trace log: the entry id (default: the newest)")

    p = add("ui", handlers["ui"], "Browse, search and (with --write) edit memory in the browser: a local page.")
    p.add_argument("--write", action="store_true", help="allow edit, delete, lock/unlock and the profile")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--traces", help="a trace log to open (default: CUEDRECALL_TRACE_LOG)")

    p = add(
        "traces",
        handlers["traces"],
        "List a trace log's entries (CUEDRECALL_TRACE_LOG), newest first.",
        db=False,
        embedding=False,
    )
    p.add_argument("path", help="the trace log (its rotated file <path>.1 is read too)")
    p.add_argument("--limit", type=int, default=50, help="entries to list (default 50)")
    p.add_argument(
        "--query",
        help="only the entries of this question (matched by its hash, keyed by the database's secret: see --db)",
    )
    p.add_argument(
        "--db",
        help="with --query: the database the log was written for (default: "
        "CUEDRECALL_DB_PATH or ~/.cuedrecall/memory.db)",
    )
    p.add_argument("--json", action="store_true", help="print the listing (or the summary) as JSON")
    p.add_argument(
        "--summary",
        action="store_true",
        help="count a window instead: suspected codes per stage, gate fallback, autocut, time cues, relief, timings",
    )
    p.add_argument("--days", type=float, default=7.0, help="with --summary: the window's length (default 7)")
    p.add_argument("--since", help="with --summary: the window's start (ISO-8601; overrides --days)")
    p.add_argument("--until", help="the window's end, or --prune-days's now (ISO-8601; default: now)")
    p.add_argument(
        "--prune-days",
        type=float,
        help="drop the entries older than this many days (rewritten through a temporary file)",
    )

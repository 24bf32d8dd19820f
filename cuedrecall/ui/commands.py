"""The browser commands of ``cuedrecall``: ``view`` (a trace as an HTML file), ``ui`` (the explorer), ``traces``.

``view FILE`` reads a trace, a recall or reconstruct response holding one (``recall
--json`` with ``--trace``), a trace log entry, or a trace log (JSONL: the entry named by
``--entry``, else the newest), writes the self-contained page beside it (or to ``--out``)
and prints the page's path. ``traces PATH`` lists a trace log's entries, newest first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from cuedrecall.handlers.trace_log import query_hash, read_entries
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
    from cuedrecall.ui.trace_html import trace_page

    out = Path(args.out) if args.out else source.with_name(f"{source.stem}{suffix}.html")
    out.write_text(trace_page(obj, question=args.question), encoding="utf-8")
    print(out.resolve())
    return 0


def traces(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists() and not path.with_name(path.name + ".1").exists():
        print(f"cuedrecall: no trace log at {path}", file=sys.stderr)
        return 1
    wanted = query_hash(args.query) if args.query is not None else None
    rows = [summary(entry) for _, entry in read_entries(path) if wanted is None or entry.get("query_sha256") == wanted]
    rows = rows[::-1][: args.limit]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    table = Table(title=f"trace log {path} ({len(rows)} shown, newest first)")
    for column in ("id", "at", "tool", "agent", "refs", "policy", "query sha256"):
        table.add_column(column)
    for r in rows:
        table.add_row(str(r["id"]), str(r["at"]), str(r["tool"]), str(r["agent_id"]), str(r["refs"]),
                      f"{r['process'] or '-'}{' (cued)' if r['cued'] else ''}", r["query_sha256"])
    Console().print(table)
    print("open one with: cuedrecall view PATH --entry ID (or in cuedrecall ui --traces PATH)")
    return 0


def ui(args: argparse.Namespace, memory: Callable[..., Any]) -> int:
    from cuedrecall.ui.app import serve

    with memory(args, background=args.write) as opened:
        traces_path = args.traces or opened.settings.trace_log or None

        def announce(line: str) -> None:
            print(line, flush=True)

        serve(opened, port=args.port, write=args.write, traces=traces_path, announce=announce)
    return 0


def add_parsers(add: Callable[..., argparse.ArgumentParser], handlers: dict[str, Callable[..., int]]) -> None:
    """The three subcommands, on the ``cuedrecall`` parser's ``add`` (name, handler, help, db)."""
    p = add("view", handlers["view"], "Write a recall or reconstruct trace as a self-contained HTML page.", db=False)
    p.add_argument("file", help="a trace, a response holding one (recall --json --trace), or a trace log (JSONL)")
    p.add_argument("--out", help="the page to write (default: beside the file, .html)")
    p.add_argument("--question", help="the question asked: the coverage ledger marks its words")
    p.add_argument("--entry", help="with a trace log: the entry id (default: the newest)")

    p = add("ui", handlers["ui"], "Browse, search and (with --write) edit memory in the browser: a local page.")
    p.add_argument("--write", action="store_true", help="allow edit, delete, lock/unlock and the profile")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--traces", help="a trace log to open (default: CUEDRECALL_TRACE_LOG)")

    p = add("traces", handlers["traces"], "List a trace log's entries (CUEDRECALL_TRACE_LOG), newest first.",
            db=False)
    p.add_argument("path", help="the trace log (its rotated file <path>.1 is read too)")
    p.add_argument("--limit", type=int, default=50, help="entries to list (default 50)")
    p.add_argument("--query", help="only the entries of this question (matched by its hash)")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")

"""Report writing shared by the benchmarks: markdown tables and sections, the command line a report names,
which code ran, and a summary table on the console.

The studies reach these through ``benchmarks.harness`` (``h.markdown_table``, ``h.section``...); the rest import
them from here, without the stores and embedders the harness loads.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
Rows = Sequence[dict[str, Any]]  # a study's rows: one a question (or a call), its fields by name


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None, left: int = 1
) -> list[str]:
    """A markdown table; ``align`` is one letter per column (l or r); without it the first ``left`` columns are
    left-aligned and the rest right-aligned. Floats print with 3 decimals, NaN as n/a."""
    align = align or "l" * left + "r" * (len(header) - left)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def section(title: str, body: Iterable[str]) -> list[str]:
    """A report section: its ``## title``, a blank line, ``body`` and a blank line."""
    return [f"## {title}", "", *body, ""]


def command_line(prog: str, argv: Sequence[str]) -> str:
    return f"python -m {prog} {' '.join(argv)}".rstrip()


def git(*args: str) -> str:
    """What ``git ARGS`` prints in the repository, stripped; "" where git fails."""
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def code_tree() -> str:
    """Which code ran: the commit, and whether cuedrecall/ had uncommitted edits (others edit it)."""
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "cuedrecall")
    return f"commit {head}" + (
        f", with uncommitted edits in {len(dirty.splitlines())} file(s) under cuedrecall/"
        if dirty
        else ", cuedrecall/ clean"
    )


def print_table(console: Any, title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A summary on the console: a rich table of ``columns``, each row's cells as text."""
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*map(str, row))
    console.print(table)

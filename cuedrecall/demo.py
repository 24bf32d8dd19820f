"""``cuedrecall demo``: a store built from a bundled sample conversation, then recalls shown readably."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

SAMPLE = "sample_conversation.json"


def load_sample(memory: Memory) -> dict[str, int]:
    """Store every turn of the sample, one episode per session, and the profile."""
    sample = json.loads(resources.files("cuedrecall.data").joinpath(SAMPLE).read_text(encoding="utf-8"))
    agent = sample["agent_id"]
    stored = episodes = 0
    for number, session in enumerate(sample["sessions"], 1):
        start = datetime.fromisoformat(session["date"])
        history = []
        for turn, (speaker, text) in enumerate(session["turns"]):
            stamp = (start + timedelta(minutes=2 * turn)).isoformat()
            message = {
                "content": text,
                "id": f"s{number}t{turn}",
                "timestamp": stamp,
                "source": {"type": speaker, "id": "mara" if speaker == "User" else "assistant"},
            }
            stored += memory.store(agent_id=agent, message=message)["result"] == "stored"
            history.append({"timestamp": stamp})
        memory.archive_episode(
            agent_id=agent, summary=session["summary"], keywords=session["keywords"], history=history
        )
        episodes += 1
    memory.update_profile(agent_id=agent, profile=sample["profile"])
    return {"memories": stored, "episodes": episodes}


def rows_table(
    title: str, messages: list[dict[str, Any]], highlight: Callable[[dict[str, Any]], bool] | None = None
) -> Table:
    """A recall answer, best row first by its ``rank`` (docs/tools.md#recall-rows-order-and-rank); ``highlight``
    rows in bold green."""
    table = Table(title=title, show_lines=False)
    for column in ("rank", "ref", "when", "why", "content"):
        table.add_column(column, overflow="fold")
    for row in sorted(messages, key=lambda message: message["rank"]):
        reason = row.get("match_reason") or {}
        why = " ".join(
            f"{k}={_short(v)}" for k, v in reason.items() if k in ("signal", "score", "cue_rank", "admission")
        )
        style = "bold green" if highlight is not None and highlight(row) else None
        table.add_row(
            str(row["rank"]),
            row.get("ref", "-"),
            (row.get("timestamp") or "")[:10],
            why,
            row["content"][:90],
            style=style,
        )
    return table


def _short(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


def run_demo(embedding_mode: str = "local", console: Console | None = None) -> dict[str, Any]:
    """Print the demo; return the answers it showed (recall, and the cue demonstration's uncued and cued)."""
    console = console or Console()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env(embedding_mode=embedding_mode, db_path=str(Path(tmp) / "demo.db"))
        clock = fixed_clock("2025-11-01T12:00:00+00:00")
        with Memory(settings=settings, clock=clock, background=False) as memory:
            console.rule("[bold]cuedrecall demo")
            console.print(
                f"embedder: [cyan]{memory.embedder.mode}[/] ({memory.embedder.model or 'no vectors'}), "
                f"database: {settings.db_path}"
            )
            counts = load_sample(memory)
            console.print(
                f"stored {counts['memories']} memories and {counts['episodes']} episodes "
                "from a sample conversation dated March to October 2025"
            )
            if memory.blocks is not None:  # the blocks a server builds in the background, built here and now
                memory.blocks.drain()
                built = memory.store_.block_counts("demo")
                single = built["records_with_blocks"] - built["records_divided"]
                console.print(
                    f"divided {built['records_divided']} records into {built['block_rows']} blocks for "
                    f"the block arm ({single} short enough to stay one block)"
                )
            query = "what did the bike shop do?"
            answer = memory.recall(agent_id="demo", query=query, limit=5)
            console.print(rows_table(f"recall {query!r}", answer["messages"]))
            return {"recall": answer, **show_time_cue(memory, console)}


# The time cue demonstration: the bike came up in March, June and September; the caller remembers June.
CUE_QUERY = "how much did the bike repair cost?"
JUNE_CUE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"}


def show_time_cue(memory: Memory, console: Console) -> dict[str, Any]:
    """The same recall without and with a cue naming June, and why the rows moved, read from the trace."""
    console.print()
    console.rule("[bold]the time cue")
    console.print(
        f"The bike went to the shop in March, June and September. Asked {CUE_QUERY!r}, the store cannot "
        "tell which visit is meant. A caller who remembers June says so with a time cue:"
    )
    console.print(f"  time_cue={json.dumps(JUNE_CUE, separators=(',', ':'))}", highlight=False)
    uncued = memory.recall(agent_id="demo", query=CUE_QUERY, limit=5)
    cued = memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE, trace=True)
    console.print(rows_table(f"recall {CUE_QUERY!r}, no cue", uncued["messages"], highlight=_in_june))
    console.print(
        rows_table(
            f"recall {CUE_QUERY!r}, time_cue June ({JUNE_CUE['confidence']})", cued["messages"], highlight=_in_june
        )
    )
    _explain_cue(console, uncued, cued)
    return {"uncued": uncued, "cued": cued}


_MARGIN = {
    "sure": "as given",
    "likely": "widened by half its length on each side",
    "vague": "widened by its whole length on each side",
}


def _in_june(row: dict[str, Any]) -> bool:
    return str(row.get("timestamp", "")).startswith("2025-06")


def _explain_cue(console: Console, uncued: dict[str, Any], cued: dict[str, Any]) -> None:
    summary, trace = cued["time_cue"], cued["trace"]
    cue = trace["cue"]
    when = {row["ref"]: (row.get("timestamp") or "")[:10] for row in cued["messages"] if "ref" in row}
    start, end = (datetime.fromisoformat(t) for t in summary["period"])
    points = [
        f"the cue arm searched {start:%Y-%m-%d} to {end - timedelta(seconds=1):%Y-%m-%d}: June "
        f"{_MARGIN[summary['confidence']]}, because the confidence is {summary['confidence']}. It found "
        f"{trace['stages'][-1]['found']} records there."
    ]
    lifted = [move for move in cue["lifted"] if move["to"] < move["from"]]
    pushed = len(cue["lifted"]) - len(lifted)
    if lifted:
        moves = ", ".join(
            f"{m['ref']} ({when.get(m['ref'], '?')}) from #{m['from'] + 1} to #{m['to'] + 1}" for m in lifted
        )
        passed = (
            f"; the {pushed} rows passed each stepped down one place"
            if pushed > 1
            else ("; the row passed stepped down one place" if pushed else "")
        )
        points.append(f"moved up, by at most L = {cue['bound']} places: {moves}{passed}.")
    else:
        points.append("no row moved: the answer's rows the cue arm found already stood ahead of those it did not.")
    if cue["seated"]:
        seats = ", ".join(f"{ref} ({when.get(ref, '?')}, cue rank {_cue_rank(cued, ref)})" for ref in cue["seated"])
        points.append(
            f"seats, at most {cue['bound']}, added after the answer: {seats}. They are the cue arm's best "
            "records from the period that the answer lacked."
        )
    kept = {row.get("ref") for row in uncued["messages"]} <= {row.get("ref") for row in cued["messages"]}
    points.append(
        f"every row returned without the cue is still there: {'yes' if kept else 'NO'}. A cue reorders "
        "the answer and adds seats; it never removes a row or changes a score."
    )
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for point in points:
        grid.add_row(" •", point)
    console.print("[bold]why[/], read from the trace:")
    console.print(grid)


def _cue_rank(answer: dict[str, Any], ref: str) -> Any:
    rows = (row for row in answer["messages"] if row.get("ref") == ref)
    return next(((row.get("match_reason") or {}).get("cue_rank") for row in rows), None)

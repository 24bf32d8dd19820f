"""``cuedrecall demo``: a store built from a bundled sample conversation, then recalls shown readably."""

from __future__ import annotations

import json
import tempfile
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
            message = {"content": text, "id": f"s{number}t{turn}", "timestamp": stamp,
                       "source": {"type": speaker, "id": "mara" if speaker == "User" else "assistant"}}
            stored += memory.store(agent_id=agent, message=message)["result"] == "stored"
            history.append({"timestamp": stamp})
        memory.archive_episode(agent_id=agent, summary=session["summary"], keywords=session["keywords"],
                               history=history)
        episodes += 1
    memory.update_profile(agent_id=agent, profile=sample["profile"])
    return {"memories": stored, "episodes": episodes}


def rows_table(title: str, messages: list[dict[str, Any]]) -> Table:
    """A recall answer, best row first (the wire order is worst to best)."""
    table = Table(title=title, show_lines=False)
    for column in ("#", "ref", "when", "why", "content"):
        table.add_column(column, overflow="fold")
    for place, row in enumerate(reversed(messages), 1):
        reason = row.get("match_reason") or {}
        why = " ".join(f"{k}={v}" for k, v in reason.items() if k in ("signal", "score", "cue_rank", "admission"))
        table.add_row(str(place), row.get("ref", "-"), (row.get("timestamp") or "")[:10], why, row["content"][:90])
    return table


def run_demo(embedding_mode: str = "local", console: Console | None = None) -> None:
    console = console or Console()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env(embedding_mode=embedding_mode, db_path=str(Path(tmp) / "demo.db"))
        clock = fixed_clock("2025-11-01T12:00:00+00:00")
        with Memory(settings=settings, clock=clock) as memory:
            console.rule("[bold]cuedrecall demo")
            console.print(f"embedder: [cyan]{memory.embedder.mode}[/] ({memory.embedder.model or 'no vectors'}), "
                          f"database: {settings.db_path}")
            counts = load_sample(memory)
            console.print(f"stored {counts['memories']} memories and {counts['episodes']} episodes "
                          "from a sample conversation dated March to October 2025")
            query = "what did the bike shop do?"
            answer = memory.recall(agent_id="demo", query=query, limit=5)
            console.print(rows_table(f"recall {query!r}", answer["messages"]))

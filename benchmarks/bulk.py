"""Filling a store the way an import does, written once: texts embedded in one batch, their rows inserted in one
transaction (the synthetic, realistic, block-speed and load stores)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cuedrecall.api import Memory


def insert_memories(memory: Memory, rows: Sequence[tuple[str, str, str]], *, epoch: bool = True) -> None:
    """``(agent, text, ISO time)`` rows embedded together and inserted in one transaction, the time as the row's
    timestamp and creation time and (``epoch``) as its ``ts_epoch``."""
    vectors = memory.embed([text for _, text, _ in rows])
    model = memory.embedder.model
    with memory.store_.write() as conn:
        for (agent, text, when), vector in zip(rows, vectors):
            row = {"agent_id": agent, "content": text, "timestamp": when, "created_at": when}
            if epoch:
                row["ts_epoch"] = datetime.fromisoformat(when).timestamp()
            memory.store_.insert_memory(conn, {**row, "embedding": vector, "embedding_model": model})

"""The values the storage layer hands upward, and the scope every query runs in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMORY = "mem"
EPISODE = "ep"


def make_ref(kind: str, row_id: int) -> str:
    return f"{kind}:{row_id}"


def split_ref(ref: str) -> tuple[str, int]:
    """``"mem:12"`` -> ``("mem", 12)``; ValueError for anything else."""
    kind, _, number = ref.partition(":")
    if kind not in (MEMORY, EPISODE) or not number.isdigit():
        raise ValueError(f"not a record ref: {ref!r} (expected mem:<id> or ep:<id>)")
    return kind, int(number)


@dataclass(frozen=True)
class Scope:
    """The isolation axes of one read: the space a search happens in, never widened.

    agent_id is exact. project_id None = every project, "" = the global pool only,
    "X" = X and the global pool. channel "" = every channel, "C" = C and the shared
    channel "". source_id is a prefix of the stored source's id (memories only).
    """

    agent_id: str
    project_id: str | None = None
    channel: str = ""
    source_id: str = ""

    @property
    def episodes_visible(self) -> bool:
        """Episodes carry no per-user source: a source filter hides them unless a channel scopes the read."""
        return not self.source_id or bool(self.channel)

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "project_id": self.project_id,
            "channel": self.channel,
            "source_id": self.source_id,
        }


@dataclass(frozen=True)
class Hit:
    """One row of a retrieval arm: its ref, 0-based rank on that arm and raw score."""

    ref: str
    rank: int
    raw: float | None


@dataclass(frozen=True)
class Record:
    """A stored memory or episode as recall and the read tools see it."""

    ref: str
    kind: str
    id: int
    agent_id: str
    project_id: str
    channel: str
    text: str  # memory content, or episode summary (without any label)
    timestamp: str  # caller's time (memories) or start_time else created_at (episodes)
    created_at: str
    msg_id: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    keywords: str = ""
    resolved: bool = False
    locked: bool = False
    start_time: str | None = None  # episodes: as given, possibly absent
    end_time: str | None = None

    @property
    def display_content(self) -> str:
        return f"[Episode] {self.text}" if self.kind == EPISODE else self.text

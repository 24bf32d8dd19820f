"""The golden corpus: a fixed store written through the tools, hash embedder, pinned clock.

Several agents, projects and channels, episodes, profiles, Japanese and English
text, and identifiers (v2.4.1, bug-218, #354, src/app.py). Changing anything here
changes the golden: regenerate it in the same commit and say why.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

NOW = "2025-11-01T12:00:00+00:00"
ATLAS, BOREALIS, CYGNUS = "atlas", "borealis", "cygnus"

KEN = {"type": "User", "id": "user-ken", "name": "Ken"}
MIO = {"type": "User", "id": "user-mio", "name": "Mio"}
BOT = {"type": "Agent", "id": "atlas-bot", "name": "Atlas"}

LONG_NOTE = "Design review notes for the search service. " + " ".join(
    f"Section {i}: the ranking stage keeps candidates from every arm, the gate judges each on its own "
    f"signal, and the count returns the best rows; item {i} was agreed after the review of bug-{300 + i}."
    for i in range(1, 9)
)

# (agent, project, channel, source, timestamp, content, msg_id)
MEMORIES: list[tuple[str, str, str, dict[str, Any] | None, str, str, str]] = [
    (
        ATLAS,
        "",
        "",
        KEN,
        "2025-09-01T09:00:00+00:00",
        "We agreed to release v2.4.1 on Friday after the login crash fix.",
        "m-001",
    ),
    (
        ATLAS,
        "",
        "",
        BOT,
        "2025-09-01T09:20:00+00:00",
        "Release v2.4.1 changelog: login crash fixed, cache warmup faster.",
        "m-002",
    ),
    (
        ATLAS,
        "web",
        "dev",
        KEN,
        "2025-09-03T14:00:00+00:00",
        "bug-218 is the cache eviction race in the session store.",
        "m-003",
    ),
    (
        ATLAS,
        "web",
        "dev",
        BOT,
        "2025-09-03T14:10:00+00:00",
        "The fix for bug-218 locks the session store before eviction.",
        "m-004",
    ),
    (
        ATLAS,
        "web",
        "",
        MIO,
        "2025-09-05T10:00:00+00:00",
        "Issue #354 tracks the slow dashboard query on the web app.",
        "m-005",
    ),
    (
        ATLAS,
        "web",
        "ops",
        BOT,
        "2025-09-08T16:30:00+00:00",
        "The deploy entry point lives in src/app.py and reads config.yaml.",
        "m-006",
    ),
    (
        ATLAS,
        "mobile",
        "",
        MIO,
        "2025-09-10T08:00:00+00:00",
        "The mobile app uses push notifications through the gateway service.",
        "m-007",
    ),
    (
        ATLAS,
        "mobile",
        "dev",
        MIO,
        "2025-09-12T11:00:00+00:00",
        "Mobile login screen crashes on rotation; tracked as bug-219.",
        "m-008",
    ),
    (ATLAS, "", "", KEN, "2025-09-15T09:00:00+00:00", "データベースの移行は十月に予定しています。", "m-009"),
    (ATLAS, "", "", MIO, "2025-09-15T09:10:00+00:00", "データベース移行のリハーサルは週末に行います。", "m-010"),
    (
        ATLAS,
        "",
        "ops",
        KEN,
        "2025-09-18T13:00:00+00:00",
        "The database migration plan moves billing tables to PostgreSQL.",
        "m-011",
    ),
    (
        ATLAS,
        "",
        "ops",
        BOT,
        "2025-09-18T13:15:00+00:00",
        "Database migration rehearsal is scheduled for the weekend.",
        "m-012",
    ),
    (ATLAS, "", "", KEN, "2025-09-20T19:00:00+00:00", "Ken prefers short answers and dislikes long meetings.", "m-013"),
    (ATLAS, "", "", KEN, "2025-09-22T12:30:00+00:00", "Lunch was ramen near the office again.", "m-014"),
    (
        ATLAS,
        "web",
        "dev",
        KEN,
        "2025-09-25T10:00:00+00:00",
        "Code review: src/app.py needs tests for the config loader.",
        "m-015",
    ),
    (
        ATLAS,
        "web",
        "",
        BOT,
        "2025-09-28T15:00:00+00:00",
        "Dashboard query for #354 now uses an index on created_at.",
        "m-016",
    ),
    (ATLAS, "", "", MIO, "2025-10-01T09:00:00+00:00", "東京オフィスの会議室は三階にあります。", "m-017"),
    (ATLAS, "", "", KEN, "2025-10-03T17:00:00+00:00", "The release v2.4.2 is planned for the end of October.", "m-018"),
    (ATLAS, "", "dev", BOT, "2025-10-05T10:00:00+00:00", LONG_NOTE, "m-019"),
    (ATLAS, "", "", MIO, "2025-10-08T08:30:00+00:00", "The cache warmup job runs every night at two.", "m-020"),
    (
        ATLAS,
        "mobile",
        "",
        KEN,
        "2025-10-10T14:00:00+00:00",
        "Push notification gateway timeouts happen during deploys.",
        "m-021",
    ),
    (ATLAS, "", "", KEN, "2025-10-12T09:00:00+00:00", "The session store moves to Redis next quarter.", "m-022"),
    (ATLAS, "", "", MIO, "2025-10-15T11:00:00+00:00", "Mio asked for the billing report every Monday.", "m-023"),
    (ATLAS, "", "", KEN, "2025-10-20T16:00:00+00:00", "会議の議事録は共有フォルダに保存してください。", "m-024"),
    (
        ATLAS,
        "web",
        "ops",
        BOT,
        "2025-10-25T10:00:00+00:00",
        "Login crash in v2.4.1 reappeared on the staging server.",
        "m-025",
    ),
    (ATLAS, "", "", KEN, "2025-10-30T09:00:00+00:00", "ok", "m-026"),
    (
        BOREALIS,
        "",
        "",
        KEN,
        "2025-09-02T09:00:00+00:00",
        "Borealis: the release v2.4.1 is not ours, ignore it.",
        "b-001",
    ),
    (
        BOREALIS,
        "web",
        "dev",
        KEN,
        "2025-09-04T09:00:00+00:00",
        "Borealis tracks bug-218 separately in its own tracker.",
        "b-002",
    ),
    (BOREALIS, "", "", MIO, "2025-09-16T09:00:00+00:00", "データベースの移行はボレアリスには関係ありません。", "b-003"),
    (
        BOREALIS,
        "",
        "",
        MIO,
        "2025-10-02T09:00:00+00:00",
        "The database migration plan for Borealis is on hold.",
        "b-004",
    ),
    (CYGNUS, "", "", None, "2025-10-01T09:00:00+00:00", "Cygnus keeps a single note about the cache warmup.", "c-001"),
]

_TOPICS = [
    "the search index",
    "the billing export",
    "the onboarding guide",
    "the metrics dashboard",
    "the email templates",
    "the backup rotation",
]

# Older standup notes of atlas: they fill the pool past 50 (so the profile row can pass the gate)
# and fill the scan window, so a small CPERSONA_MAX_MEMORIES leaves the older rows to the far list.
FILLERS = [
    (
        ATLAS,
        "",
        "",
        KEN if i % 2 else MIO,
        f"2025-08-{i + 1:02d}T09:30:00+00:00",
        f"Standup note {i + 1}: worked on {_TOPICS[i % len(_TOPICS)]}, nothing blocked.",
        f"f-{i + 1:03d}",
    )
    for i in range(24)
]

# (agent, project, channel, start, end, summary, keywords, resolved)
EPISODES: list[tuple[str, str, str, str, str, str, str, bool]] = [
    (
        ATLAS,
        "web",
        "dev",
        "2025-09-03T13:30:00+00:00",
        "2025-09-03T15:00:00+00:00",
        "Debugging session on bug-218: the session store eviction race was reproduced and fixed.",
        "bug-218 session eviction race",
        True,
    ),
    (
        ATLAS,
        "",
        "ops",
        "2025-09-18T12:30:00+00:00",
        "2025-09-18T14:00:00+00:00",
        "Planning meeting for the database migration to PostgreSQL and its rehearsal.",
        "database migration postgresql",
        False,
    ),
    (
        ATLAS,
        "",
        "",
        "2025-10-20T15:00:00+00:00",
        "2025-10-20T16:30:00+00:00",
        "会議で東京オフィスの移転とデータベース移行の日程を決めました。",
        "会議 移行 東京",
        False,
    ),
    (
        BOREALIS,
        "",
        "",
        "2025-09-16T08:00:00+00:00",
        "2025-09-16T09:30:00+00:00",
        "Borealis retrospective on the database migration that never happened.",
        "retrospective migration",
        True,
    ),
]

PROFILES = {
    ATLAS: "Ken leads the web team; Mio owns mobile and billing. Release notes go out on Fridays.",
    BOREALIS: "Borealis is a separate team's agent.",
}


def settings(**overrides: Any) -> Settings:
    """Settings from an empty environment (no CPERSONA_* leaks in), hash embedder unless overridden; the golden
    pins recall with block retrieval off (block building and the block arm are tested on their own) and with no
    calibration on growth: a case's gate is the one it sets (``replace_gate``), never a background measurement."""
    return Settings.from_env(
        {},
        **{
            "embedding_mode": "hash",
            "block_build_enabled": False,
            "block_retrieval_enabled": False,
            "calibrate_on_growth": False,
            "word_arm_enabled": False,
            **overrides,
        },
    )


def open_memory(path: Path | str, **overrides: Any) -> Memory:
    return Memory(path, settings=settings(**overrides), clock=fixed_clock(NOW))


def replace_gate(memory: Memory, thresholds: Iterable[tuple[str, str, float]]) -> None:
    """Make these the only calibrated thresholds in the store, in one transaction.

    Thresholds live in the database, so a case that calibrates would otherwise
    leave its gate to every case after it.
    """
    store = memory.store_
    with store.write() as conn:
        store.drop_thresholds(conn, sorted({t.agent_id for t in store.thresholds()}))
        store.set_thresholds(conn, [memory.calibration.threshold(*t) for t in thresholds])


def build(path: Path | str) -> None:
    """Write the corpus into a new database at ``path`` (hash embedder, pinned clock)."""
    with open_memory(path) as memory:
        for agent, project, channel, source, timestamp, content, msg_id in FILLERS + MEMORIES:
            message: dict[str, Any] = {"content": content, "timestamp": timestamp, "id": msg_id}
            if source is not None:
                message["source"] = source
            result = memory.store(agent_id=agent, message=message, project_id=project, channel=channel)
            assert result.get("result") == "stored", (content, result)
        for agent, project, channel, start, end, summary, keywords, resolved in EPISODES:
            result = memory.archive_episode(
                agent_id=agent,
                summary=summary,
                keywords=keywords,
                start_time=start,
                end_time=end,
                resolved=resolved,
                project_id=project,
                channel=channel,
            )
            assert result.get("ok"), (summary, result)
        for agent, text in PROFILES.items():
            assert memory.update_profile(agent_id=agent, profile=text).get("ok")

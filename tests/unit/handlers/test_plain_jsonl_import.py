"""import_memories reads plain JSONL: CPersona's records one a line, with no export header line
(docs/tools.md#moving-memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from tests.conftest import failed, snapshot

A = "agent-a"


def write(memory: Memory, name: str, records: list[Any]) -> str:
    folder = Path(memory.settings.db_path).parent / "exports"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return name


RECORDS = [
    {"_type": "memory", "agent_id": A, "content": "Ana prefers green tea", "msg_id": "m1", "timestamp": "t"},
    {"_type": "memory", "agent_id": A, "content": "Ana prefers green tea", "msg_id": "m1"},  # the same again
    {"_type": "memory", "agent_id": A, "content": "the hike is in April", "source": {"type": "User", "id": "u1"}},
    {"_type": "episode", "agent_id": A, "summary": "a session about tea"},
    {"_type": "episode", "agent_id": A, "summary": "a session about tea"},
    {"_type": "profile", "agent_id": A, "content": "likes tea"},
]
COUNTS = {
    "imported_memories": 2,
    "skipped_memories": 1,
    "imported_episodes": 1,
    "skipped_episodes": 1,
    "profile_updated": 1,
    "skipped_profiles": 0,
}


def counts(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: answer[key] for key in COUNTS}


def test_records_without_a_header_import_and_the_preview_says_the_same(memory: Memory) -> None:
    name = write(memory, "plain.jsonl", RECORDS)
    before = snapshot(memory, agents=(A,))
    preview = memory.import_memories(input_path=name, dry_run=True)
    assert preview["ok"] is True and counts(preview) == COUNTS
    assert snapshot(memory, agents=(A,)) == before
    real = memory.import_memories(input_path=name)
    assert counts(real) == COUNTS
    assert {row["content"] for row in memory.list_memories(agent_id=A)["memories"]} == {
        "Ana prefers green tea",
        "the hike is in April",
    }
    assert memory.get_profile(agent_id=A)["profile"] == "likes tea"
    again = memory.import_memories(input_path=name)
    assert again["imported_memories"] == again["imported_episodes"] == 0  # a second run adds nothing


def test_a_record_the_store_already_holds_is_counted_skipped(memory: Memory) -> None:
    memory.store(agent_id=A, content="dup line", timestamp="t")
    name = write(memory, "dup.jsonl", [{"_type": "memory", "agent_id": A, "content": "dup line"}])
    preview = memory.import_memories(input_path=name, target_agent_id=A, dry_run=True)
    assert (preview["imported_memories"], preview["skipped_memories"]) == (0, 1)


@pytest.mark.parametrize(
    "records",
    [
        [{"_type": "memory", "agent_id": A, "content": "fine"}, {"_type": "gossip"}],
        [{"_type": "memory", "agent_id": A, "content": "fine"}, {"_type": "header", "version": "cpersona-export/1.2"}],
        [{"_type": "gossip", "agent_id": A}],
        [["not", "an", "object"]],
    ],
)
def test_a_line_that_is_no_record_refuses_the_whole_file(memory: Memory, records: list[Any]) -> None:
    name = write(memory, "bad.jsonl", records)
    before = snapshot(memory, agents=(A,))
    assert failed(memory.import_memories(input_path=name), "'input_path'")
    assert snapshot(memory, agents=(A,)) == before

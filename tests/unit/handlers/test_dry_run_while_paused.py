"""A dry run writes nothing, so merge_memories and import_memories answer their real preview while the session is
paused; the real run is still held (docs/tools.md#answers-while-paused-and-refusals)."""

from __future__ import annotations

from cuedrecall.api import Memory
from tests.conftest import snapshot

A, B = "agent-a", "agent-b"
KEY = "s1"


def test_a_merge_preview_while_paused_counts_what_a_merge_would_do(memory: Memory) -> None:
    for text in ("one", "two"):
        memory.store(agent_id=A, content=text, timestamp="t")
    memory.pause_persistence(ttl_seconds=60, session_key=KEY)
    before = snapshot(memory)
    preview = memory.merge_memories(source_agent_id=A, target_agent_id=B, dry_run=True, session_key=KEY)
    assert preview["merged_memories"] == 2 and preview.get("persisted") is not False
    held = memory.merge_memories(source_agent_id=A, target_agent_id=B, session_key=KEY)
    assert held["persisted"] is False and held["merged_memories"] == 0
    assert snapshot(memory) == before


def test_an_import_preview_while_paused_counts_what_an_import_would_do(memory: Memory) -> None:
    memory.store(agent_id=A, content="kept for the export")
    assert memory.export_memories(agent_id=A, output_path="a.jsonl")["ok"] is True
    memory.pause_persistence(ttl_seconds=60, session_key=KEY)
    before = snapshot(memory)
    preview = memory.import_memories(input_path="a.jsonl", target_agent_id=B, dry_run=True, session_key=KEY)
    assert preview["imported_memories"] == 1 and preview.get("persisted") is not False
    held = memory.import_memories(input_path="a.jsonl", target_agent_id=B, session_key=KEY)
    assert held["persisted"] is False and held["imported_memories"] == 0
    assert snapshot(memory) == before

"""Export to JSONL and import it back: a faithful round trip, idempotent, dry runs and bad files change nothing.

Files live in the export folder: ``exports/`` beside the database (every database
of a test sits in ``tmp_path``, so they share it); paths are given relative to it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.api import Memory
from tests.conftest import failed, open_memory, snapshot

A, B = "agent-a", "agent-b"


def _exports(tmp_path: Path) -> Path:
    """The default export folder of every database in tmp_path (export makes it; a test writing first makes it too)."""
    folder = tmp_path / "exports"
    folder.mkdir(exist_ok=True)
    return folder


def _fill(memory: Memory) -> None:
    memory.store(
        agent_id=A,
        message={
            "content": "the boiler was serviced",
            "id": "m1",
            "timestamp": "2025-02-03T04:05:06+01:00",
            "source": {"type": "User", "id": "discord:42", "name": "Mara"},
            "metadata": {"tags": ["house"], "mood": "relieved", "ünïcode": "ja"},
        },
        channel="c1",
        project_id="home",
    )
    memory.store(agent_id=A, message={"content": "café opens at nine", "source": "assistant"})
    memory.store(agent_id=B, message={"content": "agent b remembers the harbour"}, project_id="sea")
    memory.archive_episode(
        agent_id=A,
        summary="planned the kitchen renovation",
        keywords="kitchen plan",
        history=[{"timestamp": "2025-01-05T10:00:00Z"}, {"timestamp": "2025-01-05T11:30:00Z"}],
        resolved=True,
        channel="c1",
        project_id="home",
    )
    memory.archive_episode(agent_id=B, summary="a sailing weekend")
    memory.update_profile(agent_id=A, profile="lives in Porto; likes quiet mornings")
    memory.update_profile(agent_id=B, profile="sails on weekends")


def _content_view(memory: Memory, agents: tuple[str, ...] = (A, B)) -> dict[str, Any]:
    """What a round trip must reproduce: every field but ids (a fresh database numbers rows anew)."""
    memories = [
        {k: v for k, v in m.items() if k not in ("id", "ref")}
        for m in memory.list_memories(agent_id="", limit=500)["memories"]
    ]
    episodes = [
        {k: v for k, v in e.items() if k not in ("id", "ref")}
        for e in memory.list_episodes(agent_id="", limit=200)["episodes"]
    ]
    rows = {
        row["content"]: (row["metadata"], row["msg_id"], row["source_id"])
        for row in memory.store_.export_rows("mem", "")
    }
    spans = {
        row["summary"]: (row["start_time"], row["end_time"], row["keywords"], row["resolved"])
        for row in memory.store_.export_rows("ep", "")
    }
    profiles = {agent: memory.get_profile(agent_id=agent)["profile"] for agent in agents}
    return {"memories": memories, "episodes": episodes, "rows": rows, "spans": spans, "profiles": profiles}


@pytest.fixture
def filled(memory: Memory) -> Memory:
    _fill(memory)
    return memory


@pytest.mark.parametrize("include_embeddings", [False, True])
def test_export_then_import_into_a_fresh_database_reproduces_everything(
    filled: Memory, tmp_path: Path, include_embeddings: bool
) -> None:
    exported = filled.export_memories(agent_id="", output_path="all.jsonl", include_embeddings=include_embeddings)
    assert exported == {
        "ok": True,
        "path": str(tmp_path / "exports" / "all.jsonl"),
        "memories": 3,
        "episodes": 2,
        "profiles": 2,
    }
    with open_memory(tmp_path / "fresh.db") as fresh:
        result = fresh.import_memories(input_path="all.jsonl")
        assert result == {
            "ok": True,
            "dry_run": False,
            "imported_memories": 3,
            "skipped_memories": 0,
            "imported_episodes": 2,
            "skipped_episodes": 0,
            "profile_updated": 2,
            "skipped_profiles": 0,
        }
        assert _content_view(fresh) == _content_view(filled)
        # vectors arrive too (from the file, or embedded afresh): the imported rows are searchable
        for row in fresh.store_.export_rows("mem", ""):
            assert row["embedding"] is not None
            assert np.allclose(row["embedding"], fresh.embedder.embed([row["content"]])[0])
        answer = fresh.recall(agent_id=A, query="the boiler was serviced", limit=3)
        assert answer["messages"][-1]["content"] == "the boiler was serviced"


def test_the_export_file_is_a_header_then_one_record_a_line(filled: Memory, tmp_path: Path) -> None:
    path = tmp_path / "exports" / "a.jsonl"
    filled.export_memories(agent_id=A, output_path="a.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    header, records = lines[0], lines[1:]
    assert header["_type"] == "header" and header["version"] == "cuedrecall-export/1" and header["agent_id"] == A
    assert (header["memory_count"], header["episode_count"], header["profile_count"]) == (2, 1, 1)
    assert [r["_type"] for r in records] == ["memory", "memory", "episode", "profile"]
    assert all(r["agent_id"] == A for r in records)
    first = records[0]
    assert first["source"] == {"type": "User", "id": "discord:42", "name": "Mara"}  # objects, not JSON text
    assert first["metadata"] == {"tags": ["house"], "mood": "relieved", "ünïcode": "ja"}
    assert first["timestamp"] == "2025-02-03T04:05:06+01:00"
    assert "embedding_b64" not in first
    assert "ünïcode" in path.read_text(encoding="utf-8")  # non-ASCII left unescaped


def test_importing_the_same_file_twice_imports_nothing_the_second_time(filled: Memory, tmp_path: Path) -> None:
    filled.export_memories(agent_id="", output_path="all.jsonl")
    with open_memory(tmp_path / "fresh.db") as fresh:
        fresh.import_memories(input_path="all.jsonl")
        before = snapshot(fresh, agents=(A, B))
        again = fresh.import_memories(input_path="all.jsonl")
        assert again["ok"] is True
        assert (again["imported_memories"], again["imported_episodes"], again["profile_updated"]) == (0, 0, 0)
        assert (again["skipped_memories"], again["skipped_episodes"], again["skipped_profiles"]) == (3, 2, 2)
        assert snapshot(fresh, agents=(A, B)) == before


def test_importing_an_export_into_its_own_database_changes_nothing(filled: Memory, tmp_path: Path) -> None:
    filled.export_memories(agent_id="", output_path="self.jsonl")
    before = snapshot(filled, agents=(A, B))
    result = filled.import_memories(input_path="self.jsonl")
    assert (result["imported_memories"], result["imported_episodes"]) == (0, 0)
    assert snapshot(filled, agents=(A, B)) == before


def test_target_agent_id_files_every_record_under_one_agent(filled: Memory, tmp_path: Path) -> None:
    filled.export_memories(agent_id="", output_path="all.jsonl")
    with open_memory(tmp_path / "fresh.db") as fresh:
        result = fresh.import_memories(input_path="all.jsonl", target_agent_id="merged")
        assert (result["imported_memories"], result["imported_episodes"]) == (3, 2)
        assert fresh.list_memories(agent_id="merged")["count"] == 3
        assert fresh.list_memories(agent_id=A)["count"] == 0
        # the file's first profile becomes merged's; the second would overwrite it, so it is skipped
        assert (result["profile_updated"], result["skipped_profiles"]) == (1, 1)
        assert fresh.get_profile(agent_id="merged")["profile"] == "lives in Porto; likes quiet mornings"


def test_a_dry_run_counts_and_writes_nothing(filled: Memory, tmp_path: Path) -> None:
    filled.export_memories(agent_id="", output_path="all.jsonl")
    with open_memory(tmp_path / "fresh.db") as fresh:
        before = snapshot(fresh, agents=(A, B))
        result = fresh.import_memories(input_path="all.jsonl", dry_run=True)
        assert result == {
            "ok": True,
            "dry_run": True,
            "imported_memories": 3,
            "skipped_memories": 0,
            "imported_episodes": 2,
            "skipped_episodes": 0,
            "profile_updated": 2,
            "skipped_profiles": 0,
        }
        assert snapshot(fresh, agents=(A, B)) == before
        # ... and the real import afterwards still imports everything
        assert fresh.import_memories(input_path="all.jsonl")["imported_memories"] == 3


@pytest.mark.parametrize("key", ["memory_count", "episode_count", "profile_count"])
def test_a_header_count_mismatch_aborts_and_writes_nothing(filled: Memory, tmp_path: Path, key: str) -> None:
    path = tmp_path / "exports" / "all.jsonl"
    filled.export_memories(agent_id="", output_path="all.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header[key] += 1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    with open_memory(tmp_path / "fresh.db") as fresh:
        before = snapshot(fresh, agents=(A, B))
        result = fresh.import_memories(input_path="all.jsonl")
        assert failed(result, "input_path") and "header" in result["error"]
        assert snapshot(fresh, agents=(A, B)) == before


@pytest.mark.parametrize(
    "content",
    [
        "",  # empty file
        '{"_type": "gossip", "agent_id": "a", "content": "neither a header nor a record"}\n',
        '{"_type": "header", "version": "someone-else/9"}\n',
        '{"_type": "header", "version": "cuedrecall-export/1"}\nnot json\n',
        '{"_type": "header", "version": "cuedrecall-export/1"}\n{"_type": "gossip"}\n',
        '{"_type": "header", "version": "cuedrecall-export/1"}\n[1, 2]\n',
        # a lone surrogate escape: valid JSON, but text UTF-8 cannot store
        '{"_type": "header", "version": "cuedrecall-export/1", "memory_count": 1}\n'
        '{"_type": "memory", "agent_id": "a", "content": "half \\ud800 a pair"}\n',
    ],
)
def test_a_malformed_file_is_refused_naming_input_path_and_writes_nothing(
    memory: Memory, tmp_path: Path, content: str
) -> None:
    (_exports(tmp_path) / "bad.jsonl").write_text(content, encoding="utf-8")
    before = snapshot(memory)
    assert failed(memory.import_memories(input_path="bad.jsonl"), "'input_path'")
    assert snapshot(memory) == before


def test_a_vector_made_by_another_model_is_re_embedded(memory: Memory, tmp_path: Path) -> None:
    path = _exports(tmp_path) / "vec.jsonl"
    foreign = base64.b64encode(np.ones(7, dtype="<f4").tobytes()).decode("ascii")
    lines = [
        {"_type": "header", "version": "cuedrecall-export/1", "memory_count": 1},
        {
            "_type": "memory",
            "agent_id": "a",
            "content": "a foreign vector",
            "embedding_b64": foreign,
            "embedding_model": "some-other-model",
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert memory.import_memories(input_path="vec.jsonl")["imported_memories"] == 1
    vector = next(memory.store_.export_rows("mem", "a"))["embedding"]
    assert vector.shape == (384,) and np.allclose(vector, memory.embedder.embed(["a foreign vector"])[0])


def test_a_record_without_an_agent_aborts_the_whole_import(memory: Memory, tmp_path: Path) -> None:
    path = _exports(tmp_path) / "noagent.jsonl"
    lines = [
        {"_type": "header", "version": "cuedrecall-export/1", "memory_count": 2},
        {"_type": "memory", "agent_id": "a", "content": "has an agent"},
        {"_type": "memory", "content": "has none"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    before = snapshot(memory)
    assert failed(memory.import_memories(input_path="noagent.jsonl"), "'target_agent_id'")
    assert snapshot(memory) == before  # the first record was rolled back with the rest
    assert memory.import_memories(input_path="noagent.jsonl", target_agent_id="z")["imported_memories"] == 2


def test_a_non_utf8_file_is_refused(memory: Memory, tmp_path: Path) -> None:
    path = _exports(tmp_path) / "latin1.jsonl"
    path.write_bytes(b'{"_type": "header", "version": "cuedrecall-export/1"}\n{"content": "caf\xe9"}\n')
    assert failed(memory.import_memories(input_path="latin1.jsonl"), "'input_path'")


@pytest.mark.parametrize("path", ["../outside.jsonl", "sub/../../outside.jsonl", ".."])
def test_dot_dot_paths_are_refused(filled: Memory, path: str) -> None:
    before = snapshot(filled, agents=(A, B))
    assert failed(filled.export_memories(agent_id="", output_path=path), "'output_path'")
    assert failed(filled.import_memories(input_path=path), "'input_path'")
    assert snapshot(filled, agents=(A, B)) == before


def test_export_writes_the_file_whole_or_not_at_all(filled: Memory, tmp_path: Path) -> None:
    folder = _exports(tmp_path) / "nested" / "dir"
    folder.mkdir(parents=True)  # a sub-folder of the export folder is used when it exists (export makes none)
    assert filled.export_memories(agent_id=A, output_path="nested/dir/out.jsonl")["ok"] is True
    assert [p.name for p in folder.iterdir()] == ["out.jsonl"]  # no temp file left behind


@pytest.mark.parametrize("blob", ["not base64!", "AAAAAAA=", 12])
def test_an_unreadable_embedding_is_refused_and_nothing_is_written(memory: Memory, tmp_path: Path, blob: Any) -> None:
    path = _exports(tmp_path) / "vec.jsonl"
    lines = [
        {"_type": "header", "version": "cuedrecall-export/1", "memory_count": 2},
        {"_type": "memory", "agent_id": "a", "content": "fine"},
        {
            "_type": "memory",
            "agent_id": "a",
            "content": "broken vector",
            "embedding_b64": blob,
            "embedding_model": memory.embedder.model,
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    before = snapshot(memory)
    assert failed(memory.import_memories(input_path="vec.jsonl"), "'input_path'")
    assert snapshot(memory) == before


def test_an_import_never_overwrites_an_agents_profile(filled: Memory, tmp_path: Path) -> None:
    filled.export_memories(agent_id="", output_path="all.jsonl")
    with open_memory(tmp_path / "fresh.db") as fresh:
        fresh.update_profile(agent_id=A, profile="the profile A already has")
        result = fresh.import_memories(input_path="all.jsonl")
        assert (result["profile_updated"], result["skipped_profiles"]) == (1, 1)  # B's is new, A's is kept
        assert fresh.get_profile(agent_id=A)["profile"] == "the profile A already has"
        assert fresh.get_profile(agent_id=B)["profile"] == "sails on weekends"


def _locked_file(tmp_path: Path) -> str:
    lines = [
        {"_type": "header", "version": "cuedrecall-export/1", "memory_count": 2},
        {"_type": "memory", "agent_id": A, "content": "a locked memory of A", "locked": True},
        {"_type": "memory", "agent_id": B, "content": "a locked memory of B", "locked": True},
    ]
    (_exports(tmp_path) / "locked.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    return "locked.jsonl"


def _locks(memory: Memory, agent: str) -> dict[str, bool]:
    return {m["content"]: m["locked"] for m in memory.list_memories(agent_id=agent)["memories"]}


def test_a_locked_flag_is_kept_only_for_the_agent_the_caller_named(memory: Memory, tmp_path: Path) -> None:
    name = _locked_file(tmp_path)
    memory.import_memories(input_path=name, target_agent_id=A)
    # A's own record stays locked; B's record, filed under A by the import, arrives unlocked
    assert _locks(memory, A) == {"a locked memory of A": True, "a locked memory of B": False}


def test_a_locked_flag_is_dropped_when_each_record_keeps_its_own_agent(memory: Memory, tmp_path: Path) -> None:
    memory.import_memories(input_path=_locked_file(tmp_path))  # target_agent_id "": nobody was named
    assert _locks(memory, A) == {"a locked memory of A": False}
    assert _locks(memory, B) == {"a locked memory of B": False}

"""Moving a CPersona user over: its own export files (tests/fixtures, written by CPersona) import whole.

CPersona 2.6.0 writes ``cpersona-export/1.0``; 2.6.14 writes ``1.1`` (its declared graph
follows the records) and ``1.2`` once declared folders exist. The graph and the folders
arrive too (tests/contract/test_migration_graph.py checks them record by record).
"""

from __future__ import annotations

import base64
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main
from tests.conftest import FIXTURES, failed, open_memory, snapshot

LATEST = "cpersona-2.6.14-export.jsonl"  # 1.1
FOLDERS = "cpersona-2.6.14-export-folders.jsonl"  # 1.2
OLDEST = "cpersona-2.6.0-export.jsonl"  # 1.0
VECTORS = "cpersona-2.6.14-export-vectors.jsonl"  # 1.1 with hash-384 vectors
MARA, HARBOUR = "mara-assistant", "harbour-bot"
BOILER, CAFE, TEA = (
    "Mara's boiler was serviced on 3 February",
    "The café on Rua Nova opens at nine",
    "Mara prefers tea over coffee in the morning",
)
SHIFT = "The harbour master changes shift at six"
AGENTS = (MARA, HARBOUR)


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def _place(memory: Memory, name: str, lines: list[dict[str, Any]] | None = None) -> str:
    """Put a fixture (or lines made from one) into the memory's export folder; its name there."""
    folder = Path(memory.settings.db_path).parent / "exports"
    folder.mkdir(exist_ok=True)
    if lines is None:
        shutil.copyfile(FIXTURES / name, folder / name)
    else:
        (folder / name).write_text(
            "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
        )
    return name


def _rows(memory: Memory) -> dict[str, dict[str, Any]]:
    return {row["content"]: row for row in memory.store_.export_rows("mem", "")}


def _sql_time(stamp: str) -> str:
    """CPersona's created_at (SQLite's UTC ``YYYY-MM-DD HH:MM:SS``) in ISO-8601 with offset."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).isoformat()


# -- the fixture, whole ------------------------------------------------------------------------


def test_the_cpersona_export_imports_every_memory_episode_and_profile(memory: Memory) -> None:
    result = memory.import_memories(input_path=_place(memory, LATEST))
    assert result == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 4,
        "skipped_memories": 0,
        "imported_episodes": 1,
        "skipped_episodes": 0,
        "profile_updated": 1,
        "skipped_profiles": 0,
        "associations": {"entities": 2, "aliases": 1, "mentions": 2, "relations": 1},
    }
    assert {m["content"] for m in memory.list_memories(agent_id=MARA)["memories"]} == {BOILER, CAFE, TEA}
    assert [m["content"] for m in memory.list_memories(agent_id=HARBOUR)["memories"]] == [SHIFT]


def test_contents_sources_metadata_and_msg_ids_arrive_as_cpersona_held_them(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, LATEST))
    rows = _rows(memory)
    boiler = rows[BOILER]
    assert (boiler["agent_id"], boiler["project_id"], boiler["channel"], boiler["msg_id"]) == (
        MARA,
        "home",
        "c1",
        "msg-001",
    )
    assert json.loads(boiler["source"]) == {"type": "User", "id": "discord:42", "name": "Mara"}
    assert boiler["source_id"] == "discord:42"  # the derived column a source filter reads
    assert json.loads(boiler["metadata"]) == {"tags": ["house"], "mood": "relieved"}
    assert json.loads(rows[TEA]["metadata"]) == {"confidence": 0.9}
    assert (rows[SHIFT]["agent_id"], rows[SHIFT]["channel"], rows[SHIFT]["msg_id"]) == (HARBOUR, "docks", "hb-1")
    answer = memory.recall(agent_id=MARA, query="boiler serviced", limit=3)
    assert BOILER in [m["content"] for m in answer["messages"]]


def test_timestamps_are_kept_and_created_at_is_read_from_sqlites_spelling(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, LATEST))
    by_content = {line["content"]: line for line in _lines(LATEST) if line["_type"] == "memory"}
    for row in memory.list_memories(agent_id=MARA)["memories"]:
        line = by_content[row["content"]]
        assert row["timestamp"] == line["timestamp"]  # the caller's time of the event, offset and all
        assert row["created_at"] == _sql_time(line["created_at"])
    boiler = _rows(memory)[BOILER]
    assert boiler["ts_epoch"] == datetime.fromisoformat("2025-02-03T04:05:06+01:00").timestamp()


def test_the_episode_keeps_its_span_keywords_axes_and_resolution(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, LATEST))
    (episode,) = memory.list_episodes(agent_id=MARA)["episodes"]
    assert {
        k: episode[k] for k in ("summary", "keywords", "start_time", "end_time", "resolved", "project_id", "channel")
    } == {
        "summary": "Planned the kitchen renovation with Mara",
        "keywords": "kitchen renovation plan",
        "start_time": "2025-01-05T10:00:00Z",
        "end_time": "2025-01-05T11:30:00Z",
        "resolved": True,
        "project_id": "home",
        "channel": "c1",
    }


def test_the_agents_profile_arrives(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, LATEST))
    assert memory.get_profile(agent_id=MARA)["profile"] == "Lives in Porto; likes quiet mornings"


def test_the_locked_memory_stays_locked_when_the_caller_names_its_agent(memory: Memory) -> None:
    result = memory.import_memories(input_path=_place(memory, LATEST), target_agent_id=MARA)
    assert result["imported_memories"] == 4  # the harbour bot's memory is filed under MARA too
    locked = {m["content"]: m["locked"] for m in memory.list_memories(agent_id=MARA)["memories"]}
    assert locked == {BOILER: False, CAFE: True, TEA: False, SHIFT: False}
    refused = memory.delete_memory(agent_id=MARA, memory_id=_rows(memory)[CAFE]["id"])
    assert failed(refused, "memory_id") and "locked" in refused["error"]  # and so it cannot be deleted


def test_without_a_named_target_every_memory_arrives_unlocked(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, LATEST))
    assert not any(row["locked"] for row in _rows(memory).values())


def test_a_second_import_of_the_file_adds_nothing(memory: Memory) -> None:
    name = _place(memory, LATEST)
    memory.import_memories(input_path=name)
    before = snapshot(memory, agents=AGENTS)
    again = memory.import_memories(input_path=name)
    assert (again["imported_memories"], again["imported_episodes"], again["profile_updated"]) == (0, 0, 0)
    assert (again["skipped_memories"], again["skipped_episodes"], again["skipped_profiles"]) == (4, 1, 1)
    assert snapshot(memory, agents=AGENTS) == before


def test_a_dry_run_of_the_cpersona_file_counts_and_writes_nothing(memory: Memory) -> None:
    before = snapshot(memory, agents=AGENTS)
    result = memory.import_memories(input_path=_place(memory, LATEST), dry_run=True)
    assert (result["dry_run"], result["imported_memories"], result["imported_episodes"]) == (True, 4, 1)
    assert snapshot(memory, agents=AGENTS) == before


def test_the_cuedrecall_import_command_moves_a_cpersona_user_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "moved.db"
    # the operator's command reads the file where it lies: no export folder involved
    assert main(["import", str(FIXTURES / LATEST), "--db", str(db), "--embedding", "hash"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["imported_memories"], result["imported_episodes"], result["profile_updated"]) == (4, 1, 1)
    assert main(["import", str(FIXTURES / LATEST), "--db", str(db), "--embedding", "hash"]) == 0
    assert json.loads(capsys.readouterr().out)["imported_memories"] == 0
    with open_memory(db) as moved:
        assert moved.get_profile(agent_id=MARA)["profile"] == "Lives in Porto; likes quiet mornings"
        assert moved.list_memories(agent_id=MARA)["count"] == 3
        answer = moved.recall(agent_id=MARA, query="tea or coffee in the morning", limit=3)
        assert TEA in [m["content"] for m in answer["messages"]]


# -- the three versions ------------------------------------------------------------------------


def _essence(memory: Memory) -> tuple[Any, ...]:
    memories = sorted(
        (
            r["agent_id"],
            r["content"],
            r["msg_id"],
            r["source"],
            r["metadata"],
            r["timestamp"],
            r["project_id"],
            r["channel"],
        )
        for r in memory.store_.export_rows("mem", "")
    )
    episodes = sorted((r["summary"], r["start_time"], r["end_time"]) for r in memory.store_.export_rows("ep", ""))
    return memories, episodes, memory.get_profile(agent_id=MARA)["profile"]


@pytest.mark.parametrize(
    "name, version, declared",
    [
        (OLDEST, "cpersona-export/1.0", ()),
        (LATEST, "cpersona-export/1.1", ("associations",)),
        (FOLDERS, "cpersona-export/1.2", ("associations", "folders")),
    ],
)
def test_each_version_cpersona_writes_is_accepted(
    name: str, version: str, declared: tuple[str, ...], tmp_path: Path
) -> None:
    assert _lines(name)[0]["version"] == version  # the files are what CPersona wrote
    with open_memory(tmp_path / "v.db") as memory:
        result = memory.import_memories(input_path=_place(memory, name))
        assert (result["ok"], result["imported_memories"], result["imported_episodes"]) == (True, 4, 1)
        assert "not_imported" not in result  # everything the file holds arrived
        assert tuple(key for key in ("associations", "folders") if key in result) == declared
        with open_memory(tmp_path / "reference.db") as reference:
            reference.import_memories(input_path=_place(reference, LATEST))
            # 2.6.0 stored a memory given no source as {}; 2.6.14 fills in the storing agent
            assert _essence(memory)[1:] == _essence(reference)[1:]
            assert [m[:3] for m in _essence(memory)[0]] == [m[:3] for m in _essence(reference)[0]]


def test_an_old_1_0_header_without_profile_count_is_checked_by_has_profile(memory: Memory) -> None:
    lines = _lines(OLDEST)
    del lines[0]["profile_count"]
    assert memory.import_memories(input_path=_place(memory, "old.jsonl", lines))["profile_updated"] == 1
    lines[0]["has_profile"] = False
    before = snapshot(memory, agents=AGENTS)
    result = memory.import_memories(input_path=_place(memory, "cut.jsonl", lines))
    assert failed(result, "'input_path'") and "has_profile" in result["error"]
    assert snapshot(memory, agents=AGENTS) == before


@pytest.mark.parametrize(
    "version, extra",
    [
        ("cpersona-export/1.0", {"_type": "entity", "id": 9, "agent_id": MARA, "name": "x"}),  # graph came in 1.1
        ("cpersona-export/1.1", {"_type": "folder", "id": 9, "agent_id": MARA, "name": "x"}),  # folders in 1.2
        ("cpersona-export/1.2", {"_type": "gossip"}),
    ],
)
def test_a_record_its_version_does_not_have_is_refused(memory: Memory, version: str, extra: dict[str, Any]) -> None:
    lines = [{**_lines(OLDEST)[0], "version": version}, *_lines(OLDEST)[1:], extra]
    before = snapshot(memory, agents=AGENTS)
    result = memory.import_memories(input_path=_place(memory, "odd.jsonl", lines))
    assert failed(result, "'input_path'") and version in result["error"]
    assert snapshot(memory, agents=AGENTS) == before


@pytest.mark.parametrize(
    "key", ["memory_count", "episode_count", "profile_count", "entity_count", "mention_count", "relation_count"]
)
def test_a_cpersona_header_count_that_does_not_match_refuses_the_whole_file(memory: Memory, key: str) -> None:
    lines = _lines(LATEST)
    lines[0][key] += 1
    before = snapshot(memory, agents=AGENTS)
    result = memory.import_memories(input_path=_place(memory, "cut.jsonl", lines))
    assert failed(result, "'input_path'") and "header" in result["error"]
    assert snapshot(memory, agents=AGENTS) == before


def test_a_cut_1_2_file_is_refused_by_its_folder_counts(memory: Memory) -> None:
    lines = _lines(FOLDERS)[:-1]  # the last line, the folder member, is lost
    result = memory.import_memories(input_path=_place(memory, "cut.jsonl", lines))
    assert failed(result, "'input_path'") and "folder_member" in result["error"]


# -- CPersona's particulars ----------------------------------------------------------------------


def test_only_the_profile_row_without_a_user_is_the_agents_profile(memory: Memory) -> None:
    lines = _lines(OLDEST)
    per_user = {**lines[-1], "user_id": "u-42", "content": "a profile of one of Mara's users"}
    lines[0]["profile_count"] = 2
    lines.append(per_user)
    result = memory.import_memories(input_path=_place(memory, "users.jsonl", lines))
    assert (result["profile_updated"], result["skipped_profiles"]) == (1, 1)
    assert memory.get_profile(agent_id=MARA)["profile"] == "Lives in Porto; likes quiet mornings"


def test_an_existing_profile_is_never_overwritten_by_a_cpersona_file(memory: Memory) -> None:
    memory.update_profile(agent_id=MARA, profile="what this server already knows")
    result = memory.import_memories(input_path=_place(memory, LATEST))
    assert (result["profile_updated"], result["skipped_profiles"]) == (0, 1)
    assert memory.get_profile(agent_id=MARA)["profile"] == "what this server already knows"


def test_columns_cpersona_carried_as_text_are_kept(memory: Memory) -> None:
    lines = _lines(OLDEST)[:2]
    lines[0].update(memory_count=1, episode_count=0, profile_count=0, has_profile=False)
    lines[1].update(source={}, source_text="assistant", metadata={}, metadata_text="legacy note")
    memory.import_memories(input_path=_place(memory, "text.jsonl", lines))
    row = _rows(memory)[BOILER]
    assert json.loads(row["source"]) == {"type": "Agent"}  # the legacy word, folded as store folds it
    assert json.loads(row["metadata"]) == {"text": "legacy note"}


class _Counting:
    """The hash embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, []
        self.mode, self.model, self.available = inner.mode, inner.model, inner.available

    def embed(self, texts: Any) -> np.ndarray:
        self.texts += list(texts)
        return self.inner.embed(texts)


def test_vectors_labelled_with_our_model_are_kept(memory: Memory) -> None:
    counting = _Counting(memory.embedder)
    memory.embedder = counting
    assert memory.embedder.model == "hash-384"  # the label CPersona wrote (CPERSONA_EMBEDDING_MODEL=hash-384)
    result = memory.import_memories(input_path=_place(memory, VECTORS))
    assert (result["imported_memories"], result["imported_episodes"]) == (2, 1)
    assert counting.texts == ["width"]  # one probe of our width; no record was re-embedded
    vectors = {
        line.get("content") or line.get("summary"): line["embedding_b64"]
        for line in _lines(VECTORS)
        if "embedding_b64" in line
    }
    for kind, key in (("mem", "content"), ("ep", "summary")):
        for row in memory.store_.export_rows(kind, MARA):
            stored = np.asarray(row["embedding"], dtype="<f4").tobytes()
            assert base64.b64encode(stored).decode("ascii") == vectors[row[key]]


@pytest.mark.parametrize("change", ["no label", "another model", "another width"])
def test_other_vectors_are_re_embedded(memory: Memory, change: str) -> None:
    lines = _lines(VECTORS)
    for line in lines[1:]:
        if change == "no label":  # CPersona before labels (1.0), or a backend nobody could name: ""
            line.pop("embedding_model")
        elif change == "another model":
            line["embedding_model"] = "text-embedding-3-small"
        else:
            line["embedding_b64"] = base64.b64encode(np.ones(8, dtype="<f4").tobytes()).decode("ascii")
    counting = _Counting(memory.embedder)
    memory.embedder = counting
    memory.import_memories(input_path=_place(memory, "other.jsonl", lines))
    texts = [t for t in counting.texts if t != "width"]
    assert sorted(texts) == sorted([BOILER, CAFE, "Talked about the boiler"])
    for row in memory.store_.export_rows("mem", MARA):
        assert row["embedding"].shape == (384,)
        assert np.allclose(row["embedding"], counting.inner.embed([row["content"]])[0])

"""Export and import touch only the export folder; the database and export files are private (0600).

Each test is named after the rule it holds. A tool caller's path is taken inside the
export folder (``CPERSONA_EXPORT_DIR``, default ``exports/`` beside the database), and a
refusal never says whether something exists outside it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from cuedrecall.access import READ, WRITE, Principal
from cuedrecall.api import Memory
from tests.conftest import failed, make_settings, open_memory, snapshot

AGENT = "agent-a"
HEADER = {"_type": "header", "version": "cuedrecall-export/1", "memory_count": 1}
RECORD = {"_type": "memory", "agent_id": AGENT, "content": "a memory that came from a file"}


def _file(path: Path, lines: list[dict[str, Any]] | None = None) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in (lines or [HEADER, RECORD])), encoding="utf-8")
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the export folder, holding a readable export file."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    _file(path / "secret.jsonl")
    return path


def _refused_both_ways(memory: Memory, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    before = snapshot(memory, agents=(AGENT,))
    exported = memory.export_memories(agent_id=AGENT, output_path=path)
    imported = memory.import_memories(input_path=path)
    assert failed(exported, "argument 'output_path'"), exported
    assert failed(imported, "argument 'input_path'"), imported
    assert snapshot(memory, agents=(AGENT,)) == before
    return exported, imported


# -- inside the folder ------------------------------------------------------------------------


def test_a_relative_path_is_taken_inside_the_export_folder(confined: Memory, folder: Path) -> None:
    exported = confined.export_memories(agent_id=AGENT, output_path="backup.jsonl")
    assert exported["ok"] is True and exported["path"] == str(folder / "backup.jsonl")
    assert confined.import_memories(input_path="backup.jsonl", target_agent_id="copy")["imported_memories"] == 1


def test_an_absolute_path_inside_the_export_folder_is_accepted(confined: Memory, folder: Path) -> None:
    assert confined.export_memories(agent_id=AGENT, output_path=str(folder / "abs.jsonl"))["ok"] is True
    assert confined.import_memories(input_path=str(folder / "abs.jsonl"), dry_run=True)["ok"] is True


def test_an_existing_sub_folder_of_the_export_folder_is_used(confined: Memory, folder: Path) -> None:
    (folder / "weekly").mkdir()
    assert confined.export_memories(agent_id=AGENT, output_path="weekly/w1.jsonl")["ok"] is True
    assert (folder / "weekly" / "w1.jsonl").is_file()


def test_a_symlink_that_stays_inside_the_export_folder_is_followed(confined: Memory, folder: Path) -> None:
    (folder / "real").mkdir()
    (folder / "alias").symlink_to(folder / "real")
    assert confined.export_memories(agent_id=AGENT, output_path="alias/x.jsonl")["ok"] is True
    assert (folder / "real" / "x.jsonl").is_file()


def test_an_export_folder_reached_through_a_symlink_accepts_both_spellings(tmp_path: Path, folder: Path) -> None:
    link = tmp_path / "link-to-exchange"
    link.symlink_to(folder)
    with open_memory(tmp_path / "m.db", settings=make_settings(export_dir=str(link))) as memory:
        assert memory.export_memories(agent_id="", output_path=str(link / "a.jsonl"))["ok"] is True
        assert memory.export_memories(agent_id="", output_path=str(folder / "b.jsonl"))["ok"] is True


UNREADABLE = "argument 'input_path' is not a readable file in the export folder (missing, or not a regular file)"


# -- the refusals -----------------------------------------------------------------------------


def test_a_relative_path_never_reaches_outside_the_folder(confined: Memory, tmp_path: Path) -> None:
    # the same name exists beside the database and beside the export folder: neither is read
    _file(tmp_path / "db" / "stray.jsonl")
    _file(tmp_path / "stray.jsonl")
    result = confined.import_memories(input_path="stray.jsonl")
    assert result == {"ok": False, "error": UNREADABLE}


def test_an_absolute_path_outside_the_export_folder_is_refused(confined: Memory, outside: Path) -> None:
    exported, imported = _refused_both_ways(confined, str(outside / "secret.jsonl"))
    assert "outside the export folder" in exported["error"] and "outside the export folder" in imported["error"]
    assert (outside / "secret.jsonl").read_text(encoding="utf-8").count("\n") == 2  # not overwritten


@pytest.mark.parametrize("path", ["../elsewhere/secret.jsonl", "sub/../../x.jsonl", "..", "a/..", "./../x"])
def test_a_dot_dot_traversal_is_refused(confined: Memory, path: str) -> None:
    exported, imported = _refused_both_ways(confined, path)
    assert "'..'" in exported["error"] and "'..'" in imported["error"]


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_symlink_leading_out_of_the_folder_is_refused(
    confined: Memory, folder: Path, outside: Path, where: str
) -> None:
    if where == "file":
        (folder / "link.jsonl").symlink_to(outside / "secret.jsonl")
        path = "link.jsonl"
    else:
        (folder / "door").symlink_to(outside)
        path = "door/secret.jsonl"
    exported, imported = _refused_both_ways(confined, path)
    assert "symbolic link" in exported["error"] and "symbolic link" in imported["error"]
    assert (outside / "secret.jsonl").read_text(encoding="utf-8").count("\n") == 2


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal", ".calibration.json", ".calibration.json.tmp"])
def test_the_databases_own_files_are_refused_even_in_the_export_folder(tmp_path: Path, suffix: str) -> None:
    # the export folder set to the database's own folder: its files are still out of reach
    with open_memory(tmp_path / "m.db", settings=make_settings(export_dir=str(tmp_path))) as memory:
        memory.store(agent_id=AGENT, message={"content": "kept safe"})
        before = (tmp_path / "m.db").read_bytes()
        for path in ("m.db" + suffix, str(tmp_path / ("m.db" + suffix))):
            exported, imported = _refused_both_ways(memory, path)
            assert "database's own files" in exported["error"] and "database's own files" in imported["error"]
        assert (tmp_path / "m.db").read_bytes() == before
        assert memory.list_memories(agent_id=AGENT)["count"] == 1


def test_a_symlink_to_the_database_is_refused(confined: Memory, folder: Path) -> None:
    (folder / "innocent.jsonl").symlink_to(confined.settings.db_path)
    exported, _imported = _refused_both_ways(confined, "innocent.jsonl")
    assert "symbolic link" in exported["error"]  # it leads out of the folder first


def test_a_missing_export_folder_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "not-there"
    with open_memory(tmp_path / "m.db", settings=make_settings(export_dir=str(missing))) as memory:
        exported, imported = _refused_both_ways(memory, "x.jsonl")
        assert "export folder does not exist" in exported["error"]
        assert exported["error"].replace("output_path", "input_path") == imported["error"]
    assert not missing.exists()


def test_a_missing_sub_folder_is_refused_and_not_created(confined: Memory, folder: Path) -> None:
    result = confined.export_memories(agent_id=AGENT, output_path="new/deeper/x.jsonl")
    assert failed(result, "argument 'output_path'") and "never creates folders" in result["error"]
    assert not (folder / "new").exists()


def test_the_default_folder_is_made_on_the_first_export_only(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m.db") as memory:
        refused = memory.import_memories(input_path="x.jsonl")
        assert failed(refused, "argument 'input_path'") and not (tmp_path / "exports").exists()
        refused = memory.export_memories(agent_id="", output_path=str(tmp_path / "x.jsonl"))
        assert failed(refused, "argument 'output_path'") and not (tmp_path / "exports").exists()
        assert memory.export_memories(agent_id="", output_path="first.jsonl")["ok"] is True
    assert (tmp_path / "exports" / "first.jsonl").is_file()
    assert _mode(tmp_path / "exports") & 0o077 == 0  # made private: 0700 less the umask


def test_an_in_memory_database_without_an_export_folder_refuses_export_and_import() -> None:
    with open_memory(":memory:") as memory:
        exported = memory.export_memories(agent_id="", output_path="x.jsonl")
        imported = memory.import_memories(input_path="x.jsonl")
        for result, name in ((exported, "output_path"), (imported, "input_path")):
            assert failed(result, f"argument '{name}'") and "in memory" in result["error"]


def test_an_in_memory_database_with_an_export_folder_uses_it(folder: Path) -> None:
    with open_memory(":memory:", settings=make_settings(export_dir=str(folder))) as memory:
        memory.store(agent_id=AGENT, message={"content": "only in memory"})
        assert memory.export_memories(agent_id="", output_path="mem.jsonl")["ok"] is True
    assert (folder / "mem.jsonl").is_file()


# -- no oracle --------------------------------------------------------------------------------


def test_a_refused_path_gets_the_same_answer_whether_or_not_it_exists(
    confined: Memory, folder: Path, outside: Path
) -> None:
    def answers(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return (confined.import_memories(input_path=path), confined.export_memories(agent_id=AGENT, output_path=path))

    assert answers("/etc/passwd") == answers("/etc/does-not-exist")
    assert answers("/etc/shadow") == answers("/etc/does-not-exist")
    assert answers(str(outside / "secret.jsonl")) == answers(str(outside / "absent.jsonl"))
    assert answers("../elsewhere/secret.jsonl") == answers("../elsewhere/absent.jsonl")
    (folder / "door").symlink_to(outside)
    assert answers("door/secret.jsonl") == answers("door/absent.jsonl")
    (folder / "dangling").symlink_to(outside / "absent-too")
    (folder / "pointing").symlink_to(outside / "secret.jsonl")
    assert answers("dangling") == answers("pointing")


def test_a_missing_file_and_a_non_file_in_the_folder_get_one_answer(confined: Memory, folder: Path) -> None:
    (folder / "a-folder").mkdir()
    os.mkfifo(folder / "a-pipe")  # opened without blocking, then refused
    answers = [confined.import_memories(input_path=name) for name in ("absent.jsonl", "a-folder", "a-pipe", ".")]
    assert answers == [{"ok": False, "error": UNREADABLE}] * 4


def test_a_directory_path_is_answered_not_raised(confined: Memory, folder: Path) -> None:
    (folder / "a-folder").mkdir()
    for path in ("a-folder", ".", str(folder), "a-folder/"):
        exported = confined.export_memories(agent_id=AGENT, output_path=path)
        imported = confined.import_memories(input_path=path)
        assert failed(exported, "argument 'output_path'") and "folder" in exported["error"], exported
        assert failed(imported, "argument 'input_path'"), imported
        assert "inside the server" not in exported["error"] + imported["error"]  # not an internal failure


def test_a_nul_character_is_refused(confined: Memory) -> None:
    _refused_both_ways(confined, "a\x00b.jsonl")


# -- size -------------------------------------------------------------------------------------


def test_an_import_over_max_import_bytes_is_refused(tmp_path: Path, folder: Path) -> None:
    small = _file(folder / "small.jsonl")
    limit = small.stat().st_size
    with open_memory(
        tmp_path / "m.db", settings=make_settings(export_dir=str(folder), max_import_bytes=limit)
    ) as memory:
        assert memory.import_memories(input_path="small.jsonl")["imported_memories"] == 1  # exactly the limit
        _file(folder / "big.jsonl", [HEADER, {**RECORD, "content": RECORD["content"] + "!"}])
        before = snapshot(memory, agents=(AGENT,))
        result = memory.import_memories(input_path="big.jsonl")
        assert failed(result, "argument 'input_path'") and "CPERSONA_MAX_IMPORT_BYTES" in result["error"]
        assert snapshot(memory, agents=(AGENT,)) == before


# -- 0600 -------------------------------------------------------------------------------------


def test_the_database_and_its_side_files_are_created_0600(tmp_path: Path, open_umask: None) -> None:
    db = tmp_path / "fresh" / "m.db"
    with open_memory(db) as memory:
        memory.store(agent_id=AGENT, message={"content": "private"})
        side = [Path(str(db) + suffix) for suffix in ("-wal", "-shm")]
        assert [p.exists() for p in side] == [True, True]
        assert [_mode(p) for p in (db, *side)] == [0o600, 0o600, 0o600]


def test_an_existing_database_keeps_its_mode(tmp_path: Path, open_umask: None) -> None:
    db = tmp_path / "m.db"
    with open_memory(db):
        pass
    db.chmod(0o640)  # the operator's choice
    with open_memory(db) as memory:
        memory.store(agent_id=AGENT, message={"content": "still readable by the group"})
        assert _mode(db) == 0o640


def test_an_export_file_is_created_0600(confined: Memory, folder: Path, open_umask: None) -> None:
    assert confined.export_memories(agent_id=AGENT, output_path="new.jsonl")["ok"] is True
    assert _mode(folder / "new.jsonl") == 0o600
    old = folder / "old.jsonl"
    old.write_text("an earlier file\n", encoding="utf-8")
    old.chmod(0o644)
    # not an export of this agent: replaced only when the caller says overwrite
    assert confined.export_memories(agent_id=AGENT, output_path="old.jsonl", overwrite=True)["ok"] is True
    assert _mode(old) == 0o600 and old.read_text(encoding="utf-8").startswith('{"_type": "header"')
    assert sorted(p.name for p in folder.iterdir()) == ["new.jsonl", "old.jsonl"]  # no temp file left


# -- only the operator goes anywhere ---------------------------------------------------------------


def test_a_tool_caller_cannot_ask_for_the_operators_any_path(confined: Memory, outside: Path) -> None:
    for tool, arguments in (
        ("import_memories", {"input_path": str(outside / "secret.jsonl")}),
        ("export_memories", {"agent_id": AGENT, "output_path": str(outside / "x.jsonl")}),
    ):
        result = confined.call(tool, {**arguments, "anywhere": True})  # not a tool argument: ignored, and named
        assert result["ok"] is False and "outside the export folder" in result["error"]
        assert result["ignored_arguments"] == ["anywhere"]
        strict = replace(confined.settings, strict_arguments=True)
        confined.runtime = replace(confined.runtime, settings=strict)
        refused = confined.call(tool, {**arguments, "anywhere": True})
        assert refused["ok"] is False and "unknown argument" in refused["error"] and "anywhere" in refused["error"]
        confined.runtime = replace(confined.runtime, settings=replace(strict, strict_arguments=False))
    assert not (outside / "x.jsonl").exists()


def test_the_python_caller_may_go_anywhere_but_never_onto_the_database(confined: Memory, outside: Path) -> None:
    assert (
        confined.call("import_memories", {"input_path": str(outside / "secret.jsonl")}, anywhere=True)[
            "imported_memories"
        ]
        == 1
    )
    refused = confined.call(
        "export_memories", {"agent_id": "", "output_path": confined.settings.db_path}, anywhere=True
    )
    assert failed(refused, "argument 'output_path'") and "database" in refused["error"]


def test_importing_another_agents_export_needs_read_access_on_that_agent(tmp_path: Path) -> None:
    """A client that may write agent x cannot read agent y's memory by importing y's export into x."""
    with open_memory(tmp_path / "m.db", settings=make_settings(export_dir=str(tmp_path))) as memory:
        memory.store(agent_id="y", content="y's secret plan")
        assert memory.export_memories(agent_id="y", output_path="y.jsonl")["ok"] is True
        writer_of_x = Principal("x-only", MappingProxyType({"x": WRITE}))
        refused = memory.call(
            "import_memories", {"input_path": "y.jsonl", "target_agent_id": "x"}, principal=writer_of_x
        )
        assert refused["error"] == "permission_denied" and refused["agent_id"] == "y"
        assert memory.list_memories(agent_id="x")["memories"] == []
        reader_of_y = Principal("x-and-y", MappingProxyType({"x": WRITE, "y": READ}))
        allowed = memory.call(
            "import_memories", {"input_path": "y.jsonl", "target_agent_id": "x"}, principal=reader_of_y
        )
        assert allowed["imported_memories"] == 1


def test_an_export_never_replaces_another_agents_export_without_write_access_on_it(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m.db", settings=make_settings(export_dir=str(tmp_path))) as memory:
        memory.store(agent_id="y", content="y's notes")
        memory.store(agent_id="x", content="x's notes")
        assert memory.export_memories(agent_id="y", output_path="shared.jsonl")["ok"] is True
        before = (tmp_path / "shared.jsonl").read_bytes()
        writer_of_x = Principal("x-only", MappingProxyType({"x": WRITE}))
        refused = memory.call(
            "export_memories", {"agent_id": "x", "output_path": "shared.jsonl"}, principal=writer_of_x
        )
        assert refused["error"] == "permission_denied" and refused["agent_id"] == "y"
        assert (tmp_path / "shared.jsonl").read_bytes() == before
        assert (
            memory.call("export_memories", {"agent_id": "x", "output_path": "x.jsonl"}, principal=writer_of_x)["ok"]
            is True
        )

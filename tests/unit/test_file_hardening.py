"""Attacks on the files export, import, backup and the trace log touch, each reproduced and refused.

A local user who can write in the export folder races the server (swapping a
sub-folder for a symbolic link), plants a pipe or a ``.partial`` file, or shares the
folder with other tenants; a reader of the trace log tries to recover a query.
Each test names the rule it holds.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from benchmarks.race_probe import Swapper, export_file
from cuedrecall.access import WRITE, Principal
from cuedrecall.api import Memory
from tests.conftest import failed, make_settings, open_memory

AGENT = "agent-a"
OTHER = "agent-b"
RACE_ATTEMPTS = 150  # exports and imports made while the racer swaps the sub-folder


# -- 1. a symbolic link swapped in while export or import runs ---------------------------------


def test_a_symlink_swapped_in_during_export_or_import_never_leads_outside(
    tmp_path: Path, folder: Path, confined: Memory
) -> None:
    db_folder = tmp_path / "db"
    db = db_folder / "m.db"
    db_folder.mkdir(exist_ok=True)  # made by the store on SQLite; not on PostgreSQL
    (db_folder / "victim.jsonl").write_text(export_file(AGENT, "read from outside the folder"), "utf-8")
    (folder / "sub").mkdir()
    (folder / "sub" / "victim.jsonl").write_text(export_file(AGENT, "read from inside"), "utf-8")
    outside_before = sorted(p.name for p in db_folder.iterdir())
    db_inode = db.stat().st_ino if db.exists() else None  # no file on PostgreSQL
    with Swapper(folder, db_folder, rest=0) as swapper:
        for attempt in range(RACE_ATTEMPTS):
            confined.export_memories(agent_id=AGENT, output_path=f"sub/x{attempt}.jsonl")
            confined.export_memories(agent_id=AGENT, output_path="sub/m.db", overwrite=True)
            confined.import_memories(input_path="sub/victim.jsonl", target_agent_id="copy", dry_run=True)
            confined.import_memories(input_path="sub/victim.jsonl", target_agent_id="copy")
    assert swapper.swaps > 0
    written_outside = sorted(p.name for p in db_folder.iterdir() if not p.name.startswith("m.db-"))
    assert written_outside == [n for n in outside_before if not n.startswith("m.db-")]
    assert db_inode is None or db.stat().st_ino == db_inode  # the live database was never replaced
    contents = [m["content"] for m in confined.list_memories(agent_id="copy")["memories"]]
    assert "read from outside the folder" not in contents
    assert confined.list_memories(agent_id=AGENT)["count"] == 1


def test_a_symlink_inside_the_folder_is_walked_from_the_folders_already_open(confined: Memory, folder: Path) -> None:
    (folder / "real").mkdir()
    (folder / "real" / "deeper").mkdir()
    (folder / "alias").symlink_to("real/deeper")  # relative, stays inside
    (folder / "up").symlink_to("real/deeper/../..")  # back to the folder itself, never past it
    (folder / "out").symlink_to("real/../..")  # one step past the folder
    assert confined.export_memories(agent_id=AGENT, output_path="alias/x.jsonl")["ok"] is True
    assert (folder / "real" / "deeper" / "x.jsonl").is_file()
    assert confined.export_memories(agent_id=AGENT, output_path="up/y.jsonl")["ok"] is True
    assert (folder / "y.jsonl").is_file()
    refused = confined.export_memories(agent_id=AGENT, output_path="out/z.jsonl")
    assert failed(refused, "argument 'output_path'") and "symbolic link" in refused["error"]
    (folder / "loop").symlink_to("loop")
    refused = confined.import_memories(input_path="loop/z.jsonl")
    assert failed(refused, "argument 'input_path'")


# -- 3. a pipe (or another non-file) at the destination ------------------------------------------


@pytest.mark.parametrize("tool", ["export", "import"])
def test_a_pipe_in_the_export_folder_is_refused_without_waiting(confined: Memory, folder: Path, tool: str) -> None:
    pipe = folder / "pipe.jsonl"
    os.mkfifo(pipe)
    answers: list[dict[str, Any]] = []

    def call() -> None:
        if tool == "export":
            answers.append(confined.export_memories(agent_id=AGENT, output_path="pipe.jsonl"))
        else:
            answers.append(confined.import_memories(input_path="pipe.jsonl"))

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # it waits on the pipe: let it go, then fail
        open(pipe, "wb").close()
        worker.join(10)
        pytest.fail("the call waited on a pipe")
    argument = "output_path" if tool == "export" else "input_path"
    assert failed(answers[0], f"argument '{argument}'"), answers
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)  # left as it was


def test_a_symlink_at_the_destination_is_never_written_through(confined: Memory, folder: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours\n", "utf-8")
    (folder / "link.jsonl").symlink_to(target)
    refused = confined.export_memories(agent_id=AGENT, output_path="link.jsonl", overwrite=True)
    assert failed(refused, "argument 'output_path'") and "symbolic link" in refused["error"]
    assert target.read_text("utf-8") == "not yours\n" and (folder / "link.jsonl").is_symlink()


# -- 5. other tenants' files in a shared export folder --------------------------------------------


def _only(agent: str) -> Principal:
    return Principal(f"{agent}-only", MappingProxyType({agent: WRITE}))


@pytest.mark.parametrize(
    "name, content",
    [
        ("notes.txt", "an operator's notes, not an export\n"),
        ("cpersona.jsonl", json.dumps({"_type": "header", "version": "cpersona-export/1.2", "agent_id": OTHER}) + "\n"),
        ("theirs.jsonl", export_file(OTHER, "b's export")),
        ("empty.jsonl", ""),
    ],
)
def test_an_export_never_replaces_a_file_it_did_not_write_for_the_same_agent(
    confined: Memory, folder: Path, name: str, content: str
) -> None:
    (folder / name).write_text(content, "utf-8")
    for extra in ({}, {"overwrite": True}):  # overwrite needs write access on what the file holds
        answer = confined.call(
            "export_memories", {"agent_id": AGENT, "output_path": name, **extra}, principal=_only(AGENT)
        )
        assert answer["ok"] is False, answer
        assert (folder / name).read_text("utf-8") == content


def test_an_agents_own_export_is_replaced_and_overwrite_replaces_what_the_caller_may_write(
    confined: Memory, folder: Path
) -> None:
    first = confined.call("export_memories", {"agent_id": AGENT, "output_path": "mine.jsonl"}, principal=_only(AGENT))
    again = confined.call("export_memories", {"agent_id": AGENT, "output_path": "mine.jsonl"}, principal=_only(AGENT))
    assert first["ok"] is True and again["ok"] is True
    (folder / "notes.txt").write_text("notes\n", "utf-8")
    refused = confined.export_memories(agent_id=AGENT, output_path="notes.txt")
    assert failed(refused, "argument 'output_path'") and "overwrite" in refused["error"]
    assert confined.export_memories(agent_id=AGENT, output_path="notes.txt", overwrite=True)["ok"] is True
    assert (folder / "notes.txt").read_text("utf-8").startswith('{"_type": "header"')


# -- 4. a dry run takes no write lock -------------------------------------------------------------


def test_a_dry_run_counts_as_the_import_would_and_never_takes_the_write_lock(
    confined: Memory, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        {
            "_type": "header",
            "version": "cuedrecall-export/1",
            "memory_count": 5,
            "episode_count": 2,
            "profile_count": 2,
        },
        {"_type": "memory", "agent_id": AGENT, "content": "what the database holds"},  # already stored
        {"_type": "memory", "agent_id": AGENT, "content": "new one", "msg_id": "m1"},
        {"_type": "memory", "agent_id": AGENT, "content": "new one again", "msg_id": "m1"},  # same msg_id
        {"_type": "memory", "agent_id": AGENT, "content": "new one"},  # same content
        {"_type": "memory", "agent_id": AGENT, "content": "  "},  # empty
        {"_type": "episode", "agent_id": AGENT, "summary": "a week"},
        {"_type": "episode", "agent_id": AGENT, "summary": "a week"},
        {"_type": "profile", "agent_id": AGENT, "content": "first profile"},
        {"_type": "profile", "agent_id": AGENT, "content": "second profile"},
    ]
    (folder / "f.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")

    def no_write() -> Any:
        raise AssertionError("a dry run asked for the write lock")

    with monkeypatch.context() as patched:
        patched.setattr(confined.store_, "write", no_write)
        dry = confined.import_memories(input_path="f.jsonl", dry_run=True)
    real = confined.import_memories(input_path="f.jsonl")
    assert dry["ok"] is True and dry["dry_run"] is True
    assert {k: v for k, v in dry.items() if k != "dry_run"} == {k: v for k, v in real.items() if k != "dry_run"}
    assert (dry["imported_memories"], dry["skipped_memories"], dry["imported_episodes"]) == (1, 4, 1)


# -- argument errors name the argument ------------------------------------------------------------


def test_a_name_too_long_for_the_file_system_is_a_clear_refusal(confined: Memory) -> None:
    name = "x" * 256 + ".jsonl"
    exported = confined.export_memories(agent_id=AGENT, output_path=name)
    imported = confined.import_memories(input_path=f"sub/{name}")
    assert failed(exported, "argument 'output_path'") and "255 bytes" in exported["error"], exported
    assert failed(imported, "argument 'input_path'") and "255 bytes" in imported["error"], imported


# -- 2. backup never follows a planted partial file -----------------------------------------------


@pytest.mark.skipif(os.environ.get("CUEDRECALL_TEST_BACKEND") == "postgres", reason="backup copies a SQLite file")
def test_a_backup_never_follows_a_planted_partial_file_and_is_created_0600(tmp_path: Path, open_umask: None) -> None:
    from cuedrecall.cli import main

    db = tmp_path / "m.db"
    with open_memory(db) as memory:
        memory.store(agent_id=AGENT, message={"content": "backed up"})
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's file\n", "utf-8")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "copy.db.partial").symlink_to(victim)  # planted by whoever can write in the folder
    assert main(["backup", str(db), str(shared / "copy.db")]) == 0
    assert victim.read_text("utf-8") == "someone else's file\n"
    assert (shared / "copy.db.partial").is_symlink()
    assert stat.S_IMODE((shared / "copy.db").stat().st_mode) == 0o600
    assert sorted(p.name for p in shared.iterdir()) == ["copy.db", "copy.db.partial"]  # no temporary left


# -- 6. the trace log and view pages are private; a logged query needs the database's secret -----


def test_the_trace_log_and_its_rotated_file_are_created_0600(tmp_path: Path, open_umask: None) -> None:
    from cuedrecall.handlers.trace_log import TraceLog

    log = TraceLog(tmp_path / "t.jsonl", max_bytes=200)
    assert log.append({"id": "a", "pad": "x" * 150}) and log.append({"id": "b", "pad": "x" * 150})
    assert stat.S_IMODE((tmp_path / "t.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "t.jsonl.1").stat().st_mode) == 0o600


def test_a_pipe_at_the_trace_log_path_drops_the_entry_without_waiting(tmp_path: Path) -> None:
    from cuedrecall.handlers.trace_log import TraceLog

    os.mkfifo(tmp_path / "t.jsonl")
    done: list[bool] = []
    worker = threading.Thread(
        target=lambda: done.append(TraceLog(tmp_path / "t.jsonl", 10**6).append({"id": "a"})), daemon=True
    )
    worker.start()
    worker.join(10)
    if worker.is_alive():
        open(tmp_path / "t.jsonl", "rb").close()  # let it go, then fail
        pytest.fail("the append waited on a pipe")
    assert done == [False]


def test_a_view_page_is_created_0600_and_never_through_a_link(
    tmp_path: Path, open_umask: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from cuedrecall.cli import main

    with open_memory(tmp_path / "m.db") as memory:
        memory.store(agent_id=AGENT, message={"content": "the ferry timetable changed"})
        answer = memory.recall(agent_id=AGENT, query="ferry", limit=2, trace=True)
    traced = tmp_path / "answer.json"
    traced.write_text(json.dumps(answer), "utf-8")
    assert main(["view", str(traced), "--out", str(tmp_path / "page.html")]) == 0
    assert stat.S_IMODE((tmp_path / "page.html").stat().st_mode) == 0o600
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n", "utf-8")
    (tmp_path / "link.html").symlink_to(victim)
    assert main(["view", str(traced), "--out", str(tmp_path / "link.html")]) == 1
    assert victim.read_text("utf-8") == "keep\n" and "symbolic link" in capsys.readouterr().err


def test_a_logged_query_is_hashed_with_the_databases_own_secret(tmp_path: Path) -> None:
    import hashlib

    from cuedrecall.handlers.trace_log import QUERY_SECRET, query_hash, query_secret, read_entries
    from cuedrecall.store.database_secret import stored_secret

    query = "ok"  # short: an unkeyed hash of it would be found by trying every two letters
    hashes = []
    for name in ("one", "two", "one"):
        log = tmp_path / f"{name}.jsonl"
        with open_memory(tmp_path / f"{name}.db", settings=make_settings(trace_log=str(log))) as memory:
            memory.store(agent_id=AGENT, message={"content": "ok then"})
            memory.recall(agent_id=AGENT, query=query, limit=1)
            secret = query_secret(memory.runtime)
            assert len(secret) == 32
            # what `traces --query --db` reads back, without writing (either backend)
            assert stored_secret(memory.settings.db_path, memory.settings.db_url, QUERY_SECRET) == secret
        entry = [entry for _, entry in read_entries(log)][-1]
        assert entry["query_sha256"] == query_hash(query, secret) != hashlib.sha256(query.encode()).hexdigest()
        hashes.append(entry["query_sha256"])
    assert hashes[0] != hashes[1]  # each database its own secret
    assert hashes[0] == hashes[2]  # made once, kept with the database

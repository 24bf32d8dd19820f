"""A newcomer's first hour with the command line: help that names our variables, options only where they
act, export that keeps an existing file, a server that leaves its writes in the .db, an empty recall that
says so, and build-blocks counts that add up."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.cli import build_parser, main
from tests.conftest import REPO_ROOT, open_memory

REPO = REPO_ROOT
ON_POSTGRES = os.environ.get("CUEDRECALL_TEST_BACKEND", "") == "postgres"
sqlite_only = pytest.mark.skipif(ON_POSTGRES, reason="the WAL is SQLite's")
# the commands that open a store or run an embedder: the only ones --embedding changes anything for
EMBEDDING_ACTS = {"serve", "demo", "recall", "export", "import", "calibrate", "build-blocks", "embed-server", "ui"}
LONG = " ".join(f"Entry {i}: we talked about the garden shed for a while." for i in range(30))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _db(tmp_path: Path, texts: list[str], agent: str = "default") -> Path:
    path = tmp_path / "store.db"
    with open_memory(path) as memory:
        for text in texts:
            memory.store(agent_id=agent, message={"content": text})
    return path


# -- 1. help names CUEDRECALL_* --------------------------------------------------------------------------


def test_no_help_names_a_cpersona_variable_and_the_defaults_name_ours() -> None:
    commands = _subcommands()
    texts = {name: parser.format_help() for name, parser in commands.items()}
    texts[""] = build_parser().format_help()
    assert not [name for name, text in texts.items() if "CPERSONA_" in text]
    for name, parser in commands.items():
        flat = " ".join(texts[name].split())  # argparse folds long help lines
        if "--db" in _options(parser):
            assert "CUEDRECALL_DB_PATH" in flat, name
        if "--embedding" in _options(parser):
            assert "CUEDRECALL_EMBEDDING_MODE" in flat, name


def test_the_readme_names_the_cpersona_aliases_once_in_its_settings_section() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    settings = readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    assert "`CPERSONA_<NAME>`" in settings and "is read too" in settings
    assert readme.count("`CPERSONA_<NAME>`") == 1
    assert readme.count("CPERSONA_") == settings.count("CPERSONA_")  # nowhere else: our names everywhere


# -- 2. --embedding only where it acts --------------------------------------------------------------------


def test_embedding_is_offered_only_where_an_embedder_runs() -> None:
    offered = {name for name, parser in _subcommands().items() if "--embedding" in _options(parser)}
    assert offered == EMBEDDING_ACTS


@pytest.mark.parametrize(
    "argv",
    [
        ["backup", "a.db", "b.db"],
        ["view", "trace.json"],
        ["traces", "log.jsonl"],
        ["migrate", "--from", "sqlite:a.db", "--to", "postgresql://x/y"],
    ],
)
def test_embedding_is_a_usage_error_where_it_does_nothing(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([*argv, "--embedding", "hash"])
    assert caught.value.code == 2
    assert "--embedding" in capsys.readouterr().err


# -- 3. export keeps an existing file ---------------------------------------------------------------------


def test_export_refuses_an_existing_file_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["buy oat milk on the way home"])
    out = tmp_path / "notes.jsonl"
    out.write_text("my own notes\n", encoding="utf-8")
    assert main(["export", str(out), "--db", str(db), "--embedding", "hash"]) == 1
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["ok"] is False and "output_path" in result["error"] and "--force" in result["error"]
    assert str(out) in result["error"] and "--force" in captured.err
    assert out.read_text(encoding="utf-8") == "my own notes\n"  # untouched

    assert main(["export", str(out), "--db", str(db), "--embedding", "hash", "--force"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 1
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["_type"] == "header"


def test_export_refuses_a_dangling_link_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["anything"])
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")
    assert main(["export", str(link), "--db", str(db), "--embedding", "hash"]) == 1
    assert "--force" in json.loads(capsys.readouterr().out)["error"]
    assert not (tmp_path / "nowhere.jsonl").exists()


def test_export_to_a_new_file_needs_no_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["anything"])
    assert main(["export", str(tmp_path / "new.jsonl"), "--db", str(db), "--embedding", "hash"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


# -- 4. a clean stop leaves the writes in the .db ---------------------------------------------------------


def _count_alone(db: Path, tmp_path: Path) -> int:
    """The memories a copy of the .db file alone holds (no -wal beside it)."""
    copy = tmp_path / "copied" / "alone.db"
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(db, copy)
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def _wal_empty(db: Path) -> bool:
    wal = Path(str(db) + "-wal")
    return not wal.exists() or wal.stat().st_size == 0


@sqlite_only
def test_a_closed_memory_folds_its_wal_into_the_database_file_while_another_connection_is_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = open_memory(db)
    other = sqlite3.connect(db)  # another process's connection (the explorer, a second server), idle
    try:
        for i in range(40):
            memory.store(agent_id="a", message={"content": f"note {i}: the spare key is under the bench"})
        assert other.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 40
        memory.close()
        assert _wal_empty(db)
        assert _count_alone(db, tmp_path) == 40
    finally:
        other.close()


@sqlite_only
def test_a_read_only_memory_writes_nothing_when_it_closes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db) as memory:
        memory.store(agent_id="a", message={"content": "a note"})
    before = db.read_bytes()
    with open_memory(db, read_only=True) as memory:
        assert memory.recall(agent_id="a", query="")["messages"]
    assert db.read_bytes() == before


def _serve(db: Path, tmp_path: Path) -> subprocess.Popen[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "cuedrecall.cli", "serve", "--db", str(db), "--embedding", "hash"],
        env=env,
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ask(server: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message; the answer to a request (None for a notification)."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = server.stdout.readline()
        assert line, "the server closed its output"
        answer = json.loads(line)
        if answer.get("id") == message["id"]:
            return answer


def _store_over_stdio(server: subprocess.Popen[str], count: int) -> None:
    _ask(
        server,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "newcomer", "version": "0"},
            },
        },
    )
    _ask(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(count):
        answer = _ask(
            server,
            {
                "jsonrpc": "2.0",
                "id": 10 + i,
                "method": "tools/call",
                "params": {
                    "name": "store",
                    "arguments": {"agent_id": "a", "message": {"content": f"note {i}: {LONG}"}},
                },
            },
        )
        assert answer is not None and "result" in answer and not answer["result"].get("isError")


@sqlite_only
@pytest.mark.parametrize("stop", ["stdin closed", "SIGTERM"])
def test_the_stdio_server_stopped_cleanly_leaves_its_writes_in_the_db_file(tmp_path: Path, stop: str) -> None:
    db = tmp_path / "served.db"
    server = _serve(db, tmp_path)
    try:
        _store_over_stdio(server, 12)
        if stop == "SIGTERM":
            server.send_signal(signal.SIGTERM)
        else:
            assert server.stdin is not None
            server.stdin.close()
        assert server.wait(timeout=90) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert _wal_empty(db)
    assert _count_alone(db, tmp_path) == 12


# -- 5. an empty recall says why --------------------------------------------------------------------------


def test_recall_for_an_agent_with_no_memories_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["buy oat milk on the way home"])
    assert main(["recall", "oat milk", "--db", str(db), "--embedding", "hash", "--agent", "nobody"]) == 0
    out = capsys.readouterr().out
    assert "agent 'nobody' has no memories" in out
    assert "agents with memories: 'default'" in out and "--agent" in out
    assert "recall 'oat milk'" not in out  # no empty table


def test_recall_in_an_empty_database_says_it_holds_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "", "--db", str(tmp_path / "empty.db"), "--embedding", "hash"]) == 0
    out = capsys.readouterr().out
    assert "agent 'default' has no memories" in out and "the database holds none" in out


def test_recall_with_nothing_matching_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["buy oat milk on the way home"])
    assert main(["recall", "zzz qqq", "--db", str(db), "--embedding", "hash"]) == 0
    assert "no memory of agent 'default' matches 'zzz qqq'" in capsys.readouterr().out


def test_recall_json_stays_the_raw_answer_when_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["buy oat milk on the way home"])
    assert main(["recall", "x", "--db", str(db), "--embedding", "hash", "--agent", "nobody", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == []


# -- 6. build-blocks counts that add up -------------------------------------------------------------------


def test_build_blocks_counts_add_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path, ["buy oat milk", "the plumber comes on wednesday", LONG, "call mum"])
    assert main(["build-blocks", "--db", str(db), "--embedding", "hash"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["records"] == 4
    assert (result["records_divided"], result["records_single_block"], result["records_lacking_blocks"]) == (1, 3, 0)
    assert result["records"] == (
        result["records_divided"] + result["records_single_block"] + result["records_lacking_blocks"]
    )
    assert result["block_rows"] == 30  # the divided record's blocks; the single-block ones have none
    assert result["pending_tasks"] == 0 and result["model"] and result["tasks_run"] >= 1


def test_build_blocks_help_says_what_each_count_means() -> None:
    text = " ".join(_subcommands()["build-blocks"].format_help().split())
    for field in ("records_divided", "records_single_block", "records_lacking_blocks", "block_rows", "pending_tasks"):
        assert field in text

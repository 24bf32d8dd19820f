"""``cuedrecall backup <db> <dest>``: a consistent copy of a live database, taken while writes go on, that restores
to the same answers; refusals write nothing (handlers/backup.py, store/sqlite/backup.py)."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main
from tests.conftest import open_memory

QUERIES = ("ferry timetable", "grandmother's birthday cake", "the red bicycle", "", "dentist appointment")
TEXTS = (
    "the ferry timetable changed in June",
    "grandmother's birthday cake was lemon",
    "I sold the red bicycle",
    "the dentist appointment moved to Tuesday",
    "we planted tomatoes and basil on the balcony",
)


def _fill(memory: Memory, rounds: int = 6) -> None:
    for i in range(rounds):
        for j, text in enumerate(TEXTS):
            assert memory.store(agent_id="a", message={"content": f"{text} ({i})", "id": f"m{i}-{j}"})["ok"]
    memory.archive_episode(agent_id="a", summary="a session about the ferry and the bicycle")


def _answers(memory: Memory) -> list[list[tuple[str, str]]]:
    return [
        [(m.get("ref", ""), m["content"]) for m in memory.recall(agent_id="a", query=q, limit=5)["messages"]]
        for q in QUERIES
    ]


def test_a_restored_backup_recalls_the_same_answers(
    tmp_path: Path, db_path: Path, memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory)
    dest = tmp_path / "copy.db"
    assert main(["backup", str(db_path), str(dest)]) == 0
    assert '"ok": true' in capsys.readouterr().out
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    with open_memory(dest) as restored:
        assert _answers(restored) == _answers(memory)
        assert restored.check_health(agent_id="")["issues"] == memory.check_health(agent_id="")["issues"]


def test_a_backup_taken_while_writes_go_on_is_one_committed_state(
    tmp_path: Path, db_path: Path, memory: Memory
) -> None:
    _fill(memory, rounds=2)
    stop = threading.Event()
    acknowledged: list[str] = []

    def keep_storing() -> None:  # another connection (as another server process would) writes throughout
        with open_memory(db_path) as writer:
            i = 0
            while not stop.is_set() and i < 5000:
                answer = writer.store(agent_id="a", message={"content": f"written during the backup {i}"})
                assert answer["ok"] is True
                acknowledged.append(answer["ref"])
                i += 1

    thread = threading.Thread(target=keep_storing)
    thread.start()
    try:
        while len(acknowledged) < 20:
            threading.Event().wait(0.01)
        dest = tmp_path / "live.db"
        assert main(["backup", str(db_path), str(dest)]) == 0
        threading.Event().wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=60)
    conn = sqlite3.connect(dest)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    copied = [row[0] for row in conn.execute("SELECT id FROM memories ORDER BY id")]
    conn.close()
    # one committed state: a prefix of the writes, every store before it whole, none half-written
    assert copied == list(range(1, len(copied) + 1))
    assert len(copied) >= 2 * len(TEXTS) + 20
    with open_memory(dest) as restored:
        health = restored.check_health(agent_id="")
        assert health["severity_summary"]["critical"] == 0 and health["severity_summary"]["warn"] == 0
        rows = restored.get_contents(agent_id="a", refs=[f"mem:{i}" for i in copied[-3:]])
        assert len(rows["items"]) == 3 and rows["missing"] == []
    with open_memory(db_path) as source:  # and the writes went on: every acknowledged store is in the source
        found = source.get_contents(agent_id="a", refs=acknowledged[-20:])
        assert found["missing"] == []


def test_a_backup_refuses_a_missing_source_an_existing_destination_and_the_database_itself(
    tmp_path: Path, db_path: Path, memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory, rounds=1)
    missing = tmp_path / "nothing.db"
    assert main(["backup", str(missing), str(tmp_path / "out.db")]) == 1
    assert not missing.exists() and not (tmp_path / "out.db").exists()  # no database made where there was none
    assert "no database file" in capsys.readouterr().err

    existing = tmp_path / "existing.db"
    existing.write_bytes(b"keep me")
    assert main(["backup", str(db_path), str(existing)]) == 1
    assert existing.read_bytes() == b"keep me" and "--force" in capsys.readouterr().err
    assert main(["backup", str(db_path), str(existing), "--force"]) == 0
    assert sqlite3.connect(existing).execute("SELECT COUNT(*) FROM memories").fetchone()[0] == len(TEXTS)

    for target in (db_path, Path(str(db_path) + "-wal"), tmp_path):
        assert main(["backup", str(db_path), str(target)]) == 1
    assert "database itself" in capsys.readouterr().err

    not_ours = tmp_path / "plain.db"
    sqlite3.connect(not_ours).execute("CREATE TABLE t(x)")
    assert main(["backup", str(not_ours), str(tmp_path / "plain-copy.db")]) == 1
    assert "not a cuedrecall database" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))

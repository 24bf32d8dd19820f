"""The ``cuedrecall`` command: help for every subcommand, the demo, recall, export, import and calibrate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from cuedrecall.cli import build_parser, main
from tests.conftest import REPO_ROOT, open_memory

REPO = REPO_ROOT
SUBCOMMANDS = [
    "serve",
    "demo",
    "recall",
    "export",
    "import",
    "calibrate",
    "build-blocks",
    "backup",
    "migrate",
    "embed-server",
    "view",
    "ui",
    "traces",
]


def _subcommands() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices)


def test_the_subcommands_are_the_documented_ones() -> None:
    assert _subcommands() == set(SUBCOMMANDS)


def test_top_level_help_exits_zero_and_names_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_each_subcommand_help_exits_zero(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([command, "--help"])
    assert caught.value.code == 0
    assert f"cuedrecall {command}" in capsys.readouterr().out


def test_the_installed_entry_point_runs_as_a_module(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "cuedrecall.cli", "--help"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "serve" in done.stdout


def test_no_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert "usage" in capsys.readouterr().err


def test_demo_prints_a_recall_holding_stored_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row a line, so stored text is not folded apart
    assert main(["demo", "--embedding", "hash"]) == 0
    out = capsys.readouterr().out
    sample = json.loads(resources.files("cuedrecall.data").joinpath("sample_conversation.json").read_text("utf-8"))
    turns = [text for session in sample["sessions"] for _, text in session["turns"]]
    assert "recall" in out and "mem:" in out
    assert any(text[:60] in out for text in turns)


def _db_with(tmp_path: Path, name: str, texts: list[str]) -> Path:
    path = tmp_path / name
    with open_memory(path) as memory:
        for text in texts:
            memory.store(agent_id="default", message={"content": text})
        memory.archive_episode(agent_id="default", summary="a chat about errands")
        memory.update_profile(agent_id="default", profile="keeps lists")
    return path


def test_recall_prints_json_holding_the_stored_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db_with(tmp_path, "r.db", ["buy oat milk on the way home", "the plumber comes on wednesday"])
    assert main(["recall", "the plumber comes on wednesday", "--db", str(db), "--embedding", "hash", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["messages"][-1]["content"] == "the plumber comes on wednesday"


def test_recall_pretty_output_and_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    db = _db_with(tmp_path, "p.db", ["buy oat milk on the way home"])
    assert main(["recall", "oat milk", "--db", str(db), "--embedding", "hash", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "buy oat milk on the way home" in out


def test_recall_with_a_malformed_cue_prints_the_error_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _db_with(tmp_path, "c.db", ["anything"])
    code = main(["recall", "x", "--db", str(db), "--embedding", "hash", "--cue", '{"after": "2025-01-01"}'])
    assert code == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is False and "time_cue" in answer["error"]


def test_export_then_import_through_the_cli_round_trips_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _db_with(tmp_path, "src.db", ["buy oat milk on the way home", "the plumber comes on wednesday"])
    out_file = tmp_path / "export.jsonl"
    assert main(["export", str(out_file), "--db", str(source), "--embedding", "hash"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported == {"ok": True, "path": str(out_file), "memories": 2, "episodes": 1, "profiles": 1}

    target = tmp_path / "dst.db"
    assert main(["import", str(out_file), "--db", str(target), "--embedding", "hash", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)  # stdout holds only the JSON: the progress bar is on stderr
    assert dry["dry_run"] is True and dry["imported_memories"] == 2
    assert main(["import", str(out_file), "--db", str(target), "--embedding", "hash"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert (imported["imported_memories"], imported["imported_episodes"], imported["profile_updated"]) == (2, 1, 1)
    assert main(["import", str(out_file), "--db", str(target), "--embedding", "hash"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["imported_memories"], again["skipped_memories"]) == (0, 2)

    with open_memory(source) as before, open_memory(target) as after:

        def view(memory: object) -> list[tuple[str, str]]:
            rows = memory.list_memories(agent_id="default")["memories"]  # type: ignore[attr-defined]
            return [(m["content"], m["timestamp"]) for m in rows]

        assert view(after) == view(before)
        assert after.get_profile(agent_id="default") == {"profile": "keeps lists"}


def test_import_of_a_missing_file_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["import", str(tmp_path / "absent.jsonl"), "--db", str(tmp_path / "d.db"), "--embedding", "hash"])
    assert code == 1
    err = capsys.readouterr().err
    assert "input_path" in err and "Traceback" not in err


def test_the_operators_export_and_import_take_any_path_they_are_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line runs on the server's own machine: no export folder confines it (tools stay confined)."""
    db = _db_with(tmp_path, "e.db", ["anything"])
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["export", "../outside.jsonl", "--db", str(db), "--embedding", "hash"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is True and result["path"] == str(tmp_path / "outside.jsonl")
    assert (tmp_path / "outside.jsonl").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "exports").exists()  # the command line never made the export folder
    assert main(["import", "../outside.jsonl", "--db", str(tmp_path / "f.db"), "--embedding", "hash"]) == 0
    assert json.loads(capsys.readouterr().out)["imported_memories"] == 1


def test_the_operators_export_still_refuses_the_database_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _db_with(tmp_path, "e.db", ["anything"])
    before = db.read_bytes()
    for target in (db, Path(str(db) + "-wal")):  # even with --force, which replaces any other existing file
        assert main(["export", str(target), "--db", str(db), "--embedding", "hash", "--force"]) == 1
        result = json.loads(capsys.readouterr().out)
        assert result["ok"] is False and "output_path" in result["error"] and "database" in result["error"]
    assert db.read_bytes() == before


def test_export_into_a_missing_folder_fails_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db_with(tmp_path, "e.db", ["anything"])
    assert main(["export", str(tmp_path / "no" / "such" / "x.jsonl"), "--db", str(db), "--embedding", "hash"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False and "output_path" in result["error"]
    assert not (tmp_path / "no").exists()


def test_a_malformed_setting_fails_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CPERSONA_RECALL_MODE", "sum")
    assert main(["recall", "x", "--db", str(tmp_path / "s.db"), "--embedding", "hash"]) == 1
    err = capsys.readouterr().err
    assert "CPERSONA_RECALL_MODE" in err and "rrf, rsf" in err


def test_calibrate_sets_the_agents_gate_and_prints_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    with open_memory(db) as memory:
        for day in range(1, 29):
            for minute in (0, 10):
                memory.store(
                    agent_id="a",
                    message={
                        "content": f"note {day} {minute} about topic {day % 5}",
                        "timestamp": f"2025-03-{day:02d}T10:{minute:02d}:00+00:00",
                    },
                )
    assert main(["calibrate", "--db", str(db), "--embedding", "hash", "--agent", "a"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and "cosine" in report["new_thresholds"]
    with open_memory(db) as memory:  # kept in the database, where the next process reads it
        assert memory.calibration.thresholds("a") == report["new_thresholds"]


def test_calibrate_without_enough_memories_fails_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "--db", str(tmp_path / "empty.db"), "--embedding", "hash", "--agent", "a"]) == 1
    assert "Need at least 10" in json.loads(capsys.readouterr().out)["error"]

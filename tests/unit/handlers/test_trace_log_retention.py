"""The trace log's age bound (CUEDRECALL_TRACE_LOG_MAX_AGE_DAYS, handlers/trace_log.py): entries older than
the limit by the recall's clock are dropped from both files, younger ones and unreadable lines kept; the pass
is bounded (at most once an hour, only when the oldest line is old), crash-safe (a temporary file and
os.replace) and never rewrites through a symbolic link; ``cuedrecall traces --prune-days`` runs it by hand."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main as cli_main
from cuedrecall.clock import iso
from cuedrecall.config import Settings
from cuedrecall.demo import CUE_QUERY, JUNE_CUE, load_sample
from cuedrecall.errors import SettingsError
from cuedrecall.handlers.trace_log import TraceLog, read_entries
from tests.conftest import NOW, make_settings

T0 = datetime.fromisoformat(NOW)


def line(name: str, at: datetime | str) -> str:
    return json.dumps({"id": name, "at": at if isinstance(at, str) else iso(at), "trace": {}}) + "\n"


def ids(path: Path, rotated: bool = True) -> list[str]:
    return [str(entry.get("id")) for _, entry in read_entries(path, rotated=rotated)]


class Clock:
    """A clock a test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def test_the_age_bound_is_off_by_default_and_a_bad_value_stops_startup_naming_it(tmp_path: Path) -> None:
    assert Settings.from_env({}).trace_log_max_age_days == 0
    assert Settings.from_env({"CUEDRECALL_TRACE_LOG_MAX_AGE_DAYS": "7.5"}).trace_log_max_age_days == 7.5
    for bad in ("-1", "week"):
        with pytest.raises(SettingsError, match="TRACE_LOG_MAX_AGE_DAYS"):
            Settings.from_env({"CUEDRECALL_TRACE_LOG_MAX_AGE_DAYS": bad})
    path = tmp_path / "t.jsonl"
    path.write_text(line("ancient", T0 - timedelta(days=3650)), encoding="utf-8")
    log = TraceLog(path, max_bytes=10**6)
    assert log.append({"id": "new", "at": NOW}, now=T0) and log.prune(T0) == 0
    assert ids(path) == ["ancient", "new"]  # off: the size bound alone


def test_entries_older_than_the_limit_are_dropped_from_both_files_younger_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    week = timedelta(days=7)
    (tmp_path / "t.jsonl.1").write_text(
        line("r-old", T0 - week - timedelta(days=2))
        + line("r-edge", T0 - week - timedelta(seconds=1))
        + line("r-young", T0 - week + timedelta(seconds=1)),
        encoding="utf-8",
    )
    main = [
        line("m-old", T0 - week - timedelta(hours=1)),
        "not json\n",
        line("m-undated", "whenever"),
        line("m-young", T0 - timedelta(days=1)),
    ]
    path.write_text("".join(main), encoding="utf-8")
    log = TraceLog(path, max_bytes=10**6, max_age_days=7)
    assert log.append({"id": "new", "at": NOW}, now=T0)
    # only what is proved older than the limit goes: the unreadable and undated lines stay
    assert ids(path) == ["r-young", "m-undated", "m-young", "new"]
    assert "not json" in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl", "t.jsonl.1"]  # no temporary file left


def test_the_recall_clock_decides_the_age_through_the_setting(tmp_path: Path) -> None:
    log = tmp_path / "traces.jsonl"
    clock = Clock(T0)
    settings = make_settings(trace_log=str(log), trace_log_max_age_days=7)
    memory = Memory(tmp_path / "m.db", settings=settings, clock=clock)
    load_sample(memory)
    memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
    clock.at = T0 + timedelta(days=6)
    memory.reconstruct(agent_id="demo", query=CUE_QUERY)
    assert [e["at"] for _, e in read_entries(log)] == [NOW, iso(T0 + timedelta(days=6))]
    clock.at = T0 + timedelta(days=8)  # the first entry is now 8 days old, the second 2
    memory.recall(agent_id="demo", query="tomatoes on the balcony", limit=2)
    assert [(e["tool"], e["at"]) for _, e in read_entries(log)] == [
        ("reconstruct", iso(T0 + timedelta(days=6))),
        ("recall", iso(T0 + timedelta(days=8))),
    ]
    memory.close()


def test_an_append_looks_for_old_entries_at_most_once_an_hour(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = TraceLog(path, max_bytes=10**6, max_age_days=1)
    assert log.append({"id": "a", "at": NOW}, now=T0)
    with open(path, "a", encoding="utf-8") as handle:  # an old line arriving after the check (another clock)
        handle.write(line("late-old", T0 - timedelta(days=5)))
    assert log.append({"id": "b", "at": NOW}, now=T0 + timedelta(minutes=30))
    assert ids(path) == ["a", "late-old", "b"]  # not looked at again within the hour
    # an hour on, the oldest line is young (a), so the bounded check leaves the file alone ...
    assert log.append({"id": "c", "at": NOW}, now=T0 + timedelta(minutes=61))
    assert ids(path) == ["a", "late-old", "b", "c"]
    # ... and a day on, the oldest line has passed the limit: the whole file is filtered
    assert log.append({"id": "d", "at": NOW}, now=T0 + timedelta(days=1, minutes=1))
    assert ids(path) == ["d"]


def test_a_symlinked_log_is_never_rewritten_and_the_entry_still_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "real.jsonl"
    target.write_text(line("old", T0 - timedelta(days=30)), encoding="utf-8")
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "t.jsonl"
    path.symlink_to(target)
    log = TraceLog(path, max_bytes=10**6, max_age_days=7)
    with pytest.raises(OSError, match="symbolic link"):
        log.prune(T0)
    with caplog.at_level(logging.WARNING, logger="cuedrecall"):
        assert log.append({"id": "new", "at": NOW}, now=T0)
    assert path.is_symlink() and ids(target) == ["old", "new"]  # the link kept, nothing dropped through it
    assert os.listdir(folder) == ["t.jsonl"] and os.listdir(elsewhere) == ["real.jsonl"]
    assert sum("cannot be dropped" in r.getMessage() for r in caplog.records) == 1


def test_a_rotated_file_that_is_a_symlink_is_never_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "other.jsonl"
    target.write_text(line("old", T0 - timedelta(days=30)), encoding="utf-8")
    (tmp_path / "t.jsonl.1").symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        TraceLog(tmp_path / "t.jsonl", max_bytes=10**6, max_age_days=7).prune(T0)
    assert ids(target) == ["old"]


def test_a_failure_mid_pass_leaves_the_file_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    before = line("old", T0 - timedelta(days=30)) + line("young", T0)
    path.write_text(before, encoding="utf-8")

    def crash(*args: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    log = TraceLog(path, max_bytes=10**6, max_age_days=7)
    with pytest.raises(OSError, match="disk gone"):
        log.prune(T0)
    assert path.read_text(encoding="utf-8") == before and os.listdir(tmp_path) == ["t.jsonl"]
    assert log.append({"id": "new", "at": NOW}, now=T0)  # the append still happens
    assert ids(path) == ["old", "young", "new"]


def test_prune_days_drops_old_entries_by_hand_and_refuses_a_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line("old", T0 - timedelta(days=40)) + line("young", T0 - timedelta(days=2)), encoding="utf-8")
    assert cli_main(["traces", str(path), "--prune-days", "30", "--until", NOW]) == 0
    assert "dropped 1 entries" in capsys.readouterr().out and ids(path) == ["young"]
    assert cli_main(["traces", str(path), "--prune-days", "0"]) == 1
    assert "--prune-days 0 must be above 0" in capsys.readouterr().err
    assert cli_main(["traces", str(path), "--prune-days", "3", "--until", "soon"]) == 1
    assert "--until 'soon' is not an ISO-8601" in capsys.readouterr().err
    assert ids(path) == ["young"]


def test_the_age_pass_compares_instants_not_text(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    # 2025-10-25T23:00-05:00 is 2025-10-26T04:00Z: 6 days 8 hours before NOW, young under a 7-day limit
    path.write_text(
        line("offset", "2025-10-25T23:00:00-05:00") + line("z-old", "2025-10-24T11:59:59Z"), encoding="utf-8"
    )
    assert TraceLog(path, max_bytes=10**6, max_age_days=7).prune(T0.astimezone(UTC)) == 1
    assert ids(path) == ["offset"]

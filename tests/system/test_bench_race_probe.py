"""The race probe runs end to end: swaps really race the calls, and no confinement rule breaks."""

from __future__ import annotations

from pathlib import Path

from benchmarks import race_probe


def test_the_race_probe_races_the_calls_and_breaks_no_rule(tmp_path: Path) -> None:
    out = tmp_path / "race.md"
    assert race_probe.main(["--attempts", "40", "--backups", "4", "--out", str(out)]) == 0
    row = next(line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("| symlink"))
    calls, served, swaps, _, broken = (cell.strip() for cell in row.strip("|").split("|")[1:])
    assert calls == "160" and int(swaps.replace(",", "")) > 0 and broken == "0"
    assert int(served.replace(",", "")) > 0  # some calls got far enough to be raced, not all refused at once


def test_the_probe_leaves_the_process_umask_as_it_found_it(tmp_path: Path) -> None:
    import os

    before = os.umask(0o022)
    os.umask(before)
    race_probe.main(["--attempts", "2", "--backups", "1"])
    after = os.umask(before)
    assert after == before

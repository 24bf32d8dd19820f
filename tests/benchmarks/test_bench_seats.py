"""benchmarks/seats.py and the ``--setting`` option of the studies: a tiny run, and the settings parser."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks import harness as h
from benchmarks.seats import main
from tests.conftest import study_argv


def test_parse_setting_reads_a_known_setting_and_refuses_the_rest() -> None:
    assert h.parse_setting("CPERSONA_KEYWORD_SEATS=2") == {"CPERSONA_KEYWORD_SEATS": "2"}
    assert h.parse_setting("cuedrecall_far_seats_enabled=true") == {"CUEDRECALL_FAR_SEATS_ENABLED": "true"}
    for wrong in ("CPERSONA_NO_SUCH=1", "CPERSONA_KEYWORD_SEATS", "CPERSONA_KEYWORD_SEATS=11"):
        with pytest.raises(argparse.ArgumentTypeError):
            h.parse_setting(wrong)


def test_a_tiny_run_compares_each_question_and_a_seat_never_loses_evidence(tmp_path: Path) -> None:
    out = tmp_path / "seats.md"
    argv = study_argv(
        tmp_path, out, "--modes", "rrf", "--extra-rows", "2", "--variant", "CPERSONA_KEYWORD_SEATS=2", locomo=False
    )
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Held seats against the gate\n\nCommand: `python -m benchmarks.seats --locomo none")
    rows = {
        cells[3]: cells
        for line in text.splitlines()
        if line.startswith("| long-span-small | hash | rrf |")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
        if len(cells) > 12
    }
    assert set(rows) == {"ours", "ours limit=12", "ours keyword_seats=2"}
    seats = rows["ours keyword_seats=2"]
    assert float(seats[5]) >= float(rows["ours"][5])  # mean rows: a seat only adds
    assert " / 0 (" in seats[12]  # the answer is ours, so no question loses its evidence over all rows
    assert float(seats[8]) >= float(rows["ours"][8])

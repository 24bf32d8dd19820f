"""``cuedrecall demo`` shows the time cue: the June bike repair ranks higher when the cue names June."""

from __future__ import annotations

import os
import re

import pytest
from rich.console import Console

from cuedrecall.demo import run_demo

ROW = re.compile(r"^│\s*(\d+)\s*│\s*((?:mem|ep):\d+)\s*│\s*(\d{4}-\d{2}-\d{2})\s*│")


def tables(text: str) -> dict[str, list[tuple[int, str, str]]]:
    """Each printed table's rows (place, ref, date), keyed by the line of its title."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    current = None
    for line in text.splitlines():
        if line.strip().startswith("recall '"):
            current = line.strip()
            found[current] = []
        match = ROW.match(line)
        if match and current is not None:
            found[current].append((int(match[1]), match[2], match[3]))
    return found


def first_june(rows: list[tuple[int, str, str]]) -> int:
    return min(place for place, _, day in rows if day.startswith("2025-06"))


@pytest.fixture
def demo_text(monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict]:
    for name in list(os.environ):
        if name.startswith("CPERSONA_"):
            monkeypatch.delenv(name)  # the demo reads settings from the environment
    console = Console(record=True, width=160, color_system=None)
    shown = run_demo("hash", console=console)
    return console.export_text(), shown


def test_june_evidence_ranks_higher_with_the_cue_than_without(demo_text):
    text, shown = demo_text
    printed = tables(text)
    uncued = next(rows for title, rows in printed.items() if title.endswith("no cue"))
    cued = next(rows for title, rows in printed.items() if "time_cue June" in title)
    assert first_june(cued) < first_june(uncued)
    # the rows returned without the cue are all still there, reordered, plus at most L = 2 seats
    assert {ref for _, ref, _ in uncued} <= {ref for _, ref, _ in cued}
    assert len(uncued) < len(cued) <= len(uncued) + 2
    # the printed tables are the answers run_demo returns
    assert [ref for _, ref, _ in cued] == [row["ref"] for row in reversed(shown["cued"]["messages"])]
    assert [ref for _, ref, _ in uncued] == [row["ref"] for row in reversed(shown["uncued"]["messages"])]
    assert shown["cued"]["time_cue"]["confidence"] == "likely"


def test_demo_explains_the_move_from_the_trace(demo_text):
    text, shown = demo_text
    cue = shown["cued"]["trace"]["cue"]
    assert "the cue arm searched 2025-05-17 to 2025-07-15" in text
    lifted = [move for move in cue["lifted"] if move["to"] < move["from"]]
    assert lifted
    for move in lifted:
        assert f"{move['ref']} (2025-06" in text and f"from #{move['from'] + 1} to #{move['to'] + 1}" in text
    for ref in cue["seated"]:
        assert ref in text.split("seats, at most 2")[1]
    assert "still there: yes" in text

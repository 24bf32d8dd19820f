"""The realistic corpus is conversational and distinct, and its speed and noisy-neighbour benchmarks run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import noisy_neighbours, realistic, speed_realistic
from tests.conftest import LOCOMO_MINI as LOCOMO


def test_the_corpus_mixes_locomo_and_long_span_turns_and_every_text_is_distinct() -> None:
    texts = realistic.texts(LOCOMO, 12_000)
    assert len(texts) == len(set(texts)) == 12_000
    assert ":" in texts[0]  # LoCoMo's turns name their speaker
    assert not texts[1].split(":")[0].istitle() or ":" not in texts[1]  # the long-span generator's do not


def test_a_corpus_past_its_distinct_pool_repeats_with_a_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(realistic, "DISTINCT_SEEDS", 1)
    pool = realistic.turn_pool(LOCOMO, 10**6)
    texts = realistic.texts(LOCOMO, len(pool) + 3)
    assert texts[len(pool)] == pool[0] + " [1]" and len(set(texts)) == len(texts)


def test_the_questions_alternate_locomo_and_long_span() -> None:
    questions = realistic.questions(LOCOMO, 6)
    assert len(questions) == 6 and len(set(questions)) == 6


def test_the_speed_benchmark_reports_each_measurement_for_its_size(tmp_path: Path) -> None:
    out = tmp_path / "speed_realistic.md"
    argv = ["--locomo", str(LOCOMO), "--sizes", "300", "--queries", "8", "--workdir", str(tmp_path), "--out", str(out)]
    assert speed_realistic.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| 300 |")]
    assert len(rows) == 2  # the recall table and the build/ingest/memory table
    assert "Worst inputs (300 memories)" in text and "16,000-character CJK query" in text
    assert "Realistic corpus" in text


def test_the_noisy_neighbours_benchmark_times_alice_at_each_size_of_the_others(tmp_path: Path) -> None:
    out = tmp_path / "noisy.md"
    argv = [
        "--locomo",
        str(LOCOMO),
        "--others",
        "0",
        "200",
        "--queries",
        "6",
        "--workdir",
        str(tmp_path),
        "--json",
        str(tmp_path / "n.json"),
        "--out",
        str(out),
    ]
    assert noisy_neighbours.main(argv) == 0
    rows = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith(("| 0 |", "| 200 |"))]
    assert len(rows) == 2


def test_the_latency_benchmark_builds_the_realistic_corpus_when_asked(tmp_path: Path) -> None:
    from benchmarks import recall_latency

    out = tmp_path / "latency.md"
    argv = [
        "--corpus",
        "realistic",
        "--locomo",
        str(LOCOMO),
        "--sizes",
        "300",
        "--queries",
        "6",
        "--workdir",
        str(tmp_path),
        "--out",
        str(out),
    ]
    assert recall_latency.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "realistic corpus" in text and "| 300 |" in text


def test_the_side_by_side_makes_its_log_folder_before_installing_the_peer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh --workdir has no logs/ yet: the install log used to die with FileNotFoundError there."""
    import argparse

    from benchmarks import peer, speed_realistic_peer

    def install(log: Path) -> str:
        log.write_text("installed\n", encoding="utf-8")
        raise RuntimeError("stop here")

    monkeypatch.setattr(peer, "ensure_peer", install)
    args = argparse.Namespace(workdir=tmp_path / "fresh", peer_sizes=[])
    with pytest.raises(RuntimeError, match="stop here"):
        speed_realistic_peer.side_by_side(args, [])
    assert (tmp_path / "fresh" / "logs" / "peer-install.log").read_text(encoding="utf-8") == "installed\n"

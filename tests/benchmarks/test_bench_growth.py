"""benchmarks/growth.py and the other conversations it grows a store with (benchmarks.datasets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import growth
from benchmarks import retrieval_peer as rp
from benchmarks.datasets import generate_long_span, load_locomo, other_conversations
from benchmarks.harness import Dataset
from benchmarks.retrieval import SESSION_BLOCK, laid_out
from tests.conftest import LOCOMO_MINI


def test_other_conversations_hold_exactly_the_turns_asked_each_text_once_and_never_an_avoided_one() -> None:
    avoid = {turn.content for turn in generate_long_span(seed=1, size="large").turns[:50]}
    others = other_conversations(6_000, avoid)
    texts = [turn.content for c in others for turn in c.turns]
    assert len(texts) == 6_000 == len(set(texts))
    assert not set(texts) & avoid
    assert len(others) >= 2 and all(not c.questions for c in others)  # more than one seed; nothing is asked
    for c in others:
        assert {s.session for s in c.sessions} == {t.session for t in c.turns}  # a summary where a turn is kept


def test_a_grown_one_agent_layout_adds_the_others_as_conversations_never_asked(tmp_path: Path) -> None:
    locomo = Dataset("locomo", load_locomo(LOCOMO_MINI))
    asked = sum(len(c.turns) for c in locomo.conversations)
    (plain,) = laid_out([locomo], "one-agent")
    (grown,) = laid_out([locomo], "one-agent", 300)
    (merged,), (bigger,) = plain.conversations, grown.conversations
    assert len(bigger.turns) == asked + 300 and bigger.questions == merged.questions
    homes = {t.session // SESSION_BLOCK for t in bigger.turns} - {t.session // SESSION_BLOCK for t in merged.turns}
    assert homes  # the other conversations sit in session blocks of their own: their rows count as foreign
    with pytest.raises(ValueError, match="one-agent"):
        laid_out([locomo], "per-conversation", 300)


def test_a_rung_without_the_peer_skips_it_and_each_rung_writes_beside_the_ladder(tmp_path: Path) -> None:
    args = growth.build_parser().parse_args(
        ["--sizes", "0", "500", "--peer-sizes", "0", "--embedders", "hash", "--out", str(tmp_path / "g.md")]
    )
    assert "--skip-peer" not in growth.size_args(args, 0)
    rung = growth.size_args(args, 500)
    assert rung[rung.index("--grow") + 1] == "500" and "--skip-peer" in rung
    assert rung[-1] == str(tmp_path / "g-500.md")


def test_the_peers_call_and_queue_timeouts_reach_each_rung(tmp_path: Path) -> None:
    args = growth.build_parser().parse_args(["--sizes", "100000", "--timeout", "900", "--queue-timeout", "7200"])
    rung = growth.size_args(args, 100_000)
    parsed = rp.build_parser().parse_args(rung)
    assert (parsed.timeout, parsed.queue_timeout) == (900.0, 7200.0)


def test_the_ladder_runs_end_to_end_ours_only(tmp_path: Path) -> None:
    out = tmp_path / "growth.md"
    argv = ["--locomo", str(LOCOMO_MINI), "--sizes", "0", "200", "--peer-sizes", "--embedders", "hash"]
    assert growth.main([*argv, "--out", str(out), "--workdir", str(tmp_path / "w")]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# The growth ladder") and "Command: `python -m benchmarks.growth --locomo" in text
    rows = [line for line in text.splitlines() if line.startswith(("| 0 |", "| 200 |"))]
    assert len(rows) == 2 and all("| hash | ours |" in row for row in rows)
    assert (tmp_path / "growth-200.md").exists()

"""benchmarks/harness.py and benchmarks/retrieval.py: the metrics on hand-made rankings, the loader, a tiny run."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from benchmarks import harness as h
from benchmarks.datasets import generate_long_span
from benchmarks.retrieval import main
from tests.conftest import LOCOMO_MINI

LOG3 = math.log2(3)


# -- metrics ------------------------------------------------------------------------------------


def test_ndcg_on_hand_made_rankings() -> None:
    assert h.ndcg(["g", "x", "y"], {"g"}, 10) == 1.0
    assert h.ndcg(["x", "g", "y"], {"g"}, 10) == pytest.approx(1 / LOG3)
    # two relevant, one found at rank 1: DCG 1, ideal 1 + 1/log2(3)
    assert h.ndcg(["g1", "x"], {"g1", "g2"}, 10) == pytest.approx(1 / (1 + 1 / LOG3))
    assert h.ndcg(["x", "y"], {"g"}, 10) == 0.0
    assert h.ndcg(["g"], set(), 10) == 0.0
    # cut at k: a hit below k does not count
    assert h.ndcg(["x", "y", "g"], {"g"}, 2) == 0.0


def test_ndcg_over_the_returned_rows_uses_the_list_length_for_the_ideal() -> None:
    # one row returned, two relevant: the ideal list of length 1 holds one relevant row
    assert h.ndcg(["g1"], {"g1", "g2"}) == 1.0
    # the same ranking scored at k = 10 expects both
    assert h.ndcg(["g1"], {"g1", "g2"}, 10) < 1.0
    # rows added below the evidence never lower it while the ideal is unchanged
    assert h.ndcg(["x", "g", "y", "z"], {"g"}) == h.ndcg(["x", "g"], {"g"})


def test_recall_any_all_mrr_and_best_rank() -> None:
    ranked = ["a", "g1", "b", "c", "d", "g2"]
    gold = ["g1", "g2"]
    assert h.recall_any(ranked, gold, 1) == 0.0
    assert h.recall_any(ranked, gold, 2) == 1.0
    assert h.recall_all(ranked, gold, 5) == 0.0
    assert h.recall_all(ranked, gold, 6) == 1.0
    assert h.recall_all(ranked, [], 6) == 0.0
    assert h.best_rank(ranked, gold) == 2
    assert h.reciprocal_rank(ranked, gold) == 0.5
    assert h.best_rank(ranked, ["zz"]) is None
    assert h.reciprocal_rank(ranked, ["zz"]) == 0.0
    metrics = h.retrieval_metrics(ranked, gold)
    assert metrics["recall_any@5"] == 1.0 and metrics["recall_all@10"] == 1.0 and metrics["mrr"] == 0.5


def test_best_first_reverses_the_messages_and_finds_the_seats() -> None:
    response = {
        "messages": [
            {"ref": "mem:9", "match_reason": {"signal": "cue", "admission": "reservation"}},
            {"content": "profile without a ref"},
            {"ref": "mem:2", "match_reason": {"signal": "rrf"}},
            {"ref": "mem:1", "match_reason": {"signal": "rrf"}},
        ]
    }
    assert h.best_first(response) == ["mem:1", "mem:2", "mem:9"]
    assert h.seat_refs(response) == ["mem:9"]
    assert h.best_first({}) == []


def test_markdown_table() -> None:
    lines = h.markdown_table(["name", "value"], [["x", 0.5], ["y", float("nan")]])
    assert lines == ["| name | value |", "| --- | ---: |", "| x | 0.500 |", "| y | n/a |"]


# -- loading ------------------------------------------------------------------------------------


def test_the_prefetching_embedder_gives_the_base_vectors() -> None:
    embedder = h.new_embedder("hash")
    texts = ["one sentence", "another sentence", "one sentence"]
    assert embedder.pending(texts) == 2
    embedder.prefetch(texts)
    assert embedder.pending(texts) == 0
    assert np.allclose(embedder.embed(texts), embedder.base.embed(texts))
    assert embedder.embed(["not prefetched"]).shape == (1, embedder.base.embed(["x"]).shape[1])


def test_a_replay_stores_only_what_came_before_each_question(tmp_path: Path) -> None:
    conversation = generate_long_span(seed=0, size="small")
    store = h.ConversationStore(conversation, h.new_embedder("hash"), "rrf", tmp_path)
    try:
        seen = 0
        for question in h.replay(store, conversation.questions, "asked"):
            asked = datetime.fromisoformat(question.asked_at)
            assert max(store.times.values()) <= asked
            gold = store.gold(question)
            assert gold and all(ref.startswith("mem:") for ref in gold)
            assert set(gold) <= set(store.gold(question, with_episodes=True))
            assert any(ref.startswith("ep:") for ref in store.gold(question, with_episodes=True))
            seen += 1
        assert seen == len(conversation.questions)
        store.advance(None)
        assert len(store.refs) == len(conversation.turns)  # every turn has a ref, duplicates included
        assert len(store.episodes) == len(conversation.sessions)
        stored = store.memory.store_.pool_counts(store.memory.scope(store.agent_id, None, "", ""))
        assert stored == (len(conversation.turns) - store.duplicates, len(conversation.sessions))
    finally:
        store.close()


def test_a_replay_with_blocks_on_builds_them_before_each_question(tmp_path: Path) -> None:
    conversation = generate_long_span(seed=0, size="small")
    environ = {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}
    store = h.ConversationStore(conversation, h.new_embedder("hash"), "rrf", tmp_path, environ)
    try:
        assert store.memory.blocks is not None and store.memory.blocks._thread is None  # no builder thread
        for question in h.replay(store, conversation.questions[:3], "asked"):
            assert store.memory.store_.pending_tasks() == 0  # every record stored so far has its blocks
            store.ask(question)
        assert store.block_tasks > 0 and store.block_build_s >= 0.0
    finally:
        store.close()
    plain = h.ConversationStore(conversation, h.new_embedder("hash"), "rrf", tmp_path / "off")
    try:  # the harness's default: blocks off, nothing of theirs queued; the queue's runner is there for the
        # calibrations the defaults queue as the store grows (drained too, so none is pending at a question)
        assert plain.memory.blocks is not None and plain.memory.blocks._thread is None
        plain.advance(None)
        assert plain.memory.store_.pending_tasks() == 0
        assert plain.memory.calibration.record(plain.agent_id)["origin"] == "auto"  # ~300 turns: at 50 and 200
    finally:
        plain.close()


# -- the script ---------------------------------------------------------------------------------


def test_main_runs_end_to_end_on_tiny_data(tmp_path: Path) -> None:
    out = tmp_path / "results" / "retrieval.md"
    dump = tmp_path / "traces.jsonl"
    locomo = LOCOMO_MINI
    argv = [
        "--locomo",
        str(locomo),
        "--limit-conversations",
        "1",
        "--long-span",
        "small",
        "--embedders",
        "hash",
        "--modes",
        "rrf",
        "--out",
        str(out),
        "--workdir",
        str(tmp_path / "db"),
        "--dump-traces",
        str(dump),
    ]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Retrieval quality\n\nCommand: `python -m benchmarks.retrieval --locomo")
    assert out.with_suffix(".png").stat().st_size > 0
    rows = [line for line in text.splitlines() if line.startswith("| long-span-small | hash | rrf | **all**")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[-1] == str(len(generate_long_span(seed=0, size="small").questions))  # every question is scored
    assert all(0.0 <= float(c) <= 1.0 for c in cells[4:9])
    assert "| locomo | hash | rrf | 5 adversarial" not in text  # category 5 is left out
    assert "| locomo | hash | rrf | 4 single-hop" in text
    items = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert items and {"id", "gold", "trace"} <= set(items[0])
    assert "Why the evidence was missed" in text


def test_session_recall_counts_a_question_when_an_evidence_session_is_among_the_first_rows() -> None:
    from benchmarks import harness as h

    assert h.session_recall([3, None, 7], {7}, 3) == 1.0
    assert h.session_recall([3, None, 7], {7}, 2) == 0.0
    assert h.session_recall([3], set(), 5) == 0.0

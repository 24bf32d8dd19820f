"""benchmarks/embedders.py on hand-made data: the cosine ranking, the query form, the timings, the report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks import embedders as study
from benchmarks.datasets import Conversation, Question, SessionSummary, Turn
from cuedrecall.embed import HashEmbedder

T0 = "2025-03-01T10:00:00+00:00"
ASKED = "2025-03-02T09:00:00+00:00"  # after every turn


def conversation() -> Conversation:
    turns = tuple(
        Turn(f"c:{i}", text, f"2025-03-01T10:0{i}:00+00:00", "Ann", 1)
        for i, text in enumerate(
            [
                "Ann: I adopted a grey kitten called Pepper",
                "Ann: the bakery on Elm street closed",
                "Ann: my violin lesson moved to Friday",
                "Ann: Pepper the kitten chewed my violin bow",
            ]
        )
    )
    questions = (
        Question("q0", "what is the kitten called", ASKED, ("c:0",), "1", "Pepper"),
        Question("q1", "when is the violin lesson", ASKED, ("c:2",), "2", "Friday"),
        Question("q2", "adversarial about the kitten", ASKED, ("c:0",), "5", ""),  # category 5: left out
        Question("q3", "no evidence at all", ASKED, (), "1", ""),  # no evidence: left out
    )
    return Conversation("c", turns, (SessionSummary(1, "a chat", "kitten", T0, T0),), questions)


class Asymmetric(HashEmbedder):
    """A model with a query form: a query is embedded with a word of its own, so its vectors differ."""

    model = "hash-asymmetric"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries += list(texts)
        return self.embed([f"{text} query" for text in texts])


def ticking() -> object:
    """A clock that moves on 0.5 s a reading."""
    now = [0.0]

    def clock() -> float:
        now[0] += 0.5
        return now[0]

    return clock


def test_the_ranking_is_by_cosine_best_first_ties_keeping_the_earlier_turn() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    assert study.ranked_by_cosine(["a", "b", "c"], vectors, np.array([1.0, 0.0])) == ["a", "c", "b"]
    assert study.ranked_by_cosine(["a", "b", "c"], vectors, np.array([0.0, 1.0])) == ["b", "a", "c"]


def test_only_questions_with_evidence_outside_category_5_are_scored() -> None:
    assert [q.qid for q in study.scored_questions(conversation())] == ["q0", "q1"]


def test_the_cosine_study_scores_each_question_with_its_query_vector() -> None:
    embedder = Asymmetric()
    rows = study.cosine_study([conversation()], embedder, "fake")
    assert [row["qid"] for row in rows] == ["q0", "q1"]
    assert rows[0]["recall_any@10"] == 1.0 and rows[1]["recall_any@10"] == 1.0  # four turns: all in the top 10
    assert rows[1]["mrr"] == 1.0  # "violin lesson" ranks its own turn first
    assert embedder.queries == ["what is the kitten called", "when is the violin lesson"]  # the query form


def test_the_timings_take_turns_after_a_warm_up_and_count_queries_and_turns() -> None:
    first, second = Asymmetric(), Asymmetric()
    timings = study.timing_study({"a": first, "b": second}, ["t1", "t2", "t3"], ["q1", "q2"], rounds=2, clock=ticking())
    assert first.queries == ["warm up", "q1", "q2", "q1", "q2"] and second.queries == first.queries
    assert timings["a"]["turns"] == 6 and timings["a"]["ingest_s"] == 1.0 and timings["a"]["query_ms"] == [500.0] * 4
    summary = study.timing_summary(timings["b"])
    assert summary["query_ms_p50"] == 500.0 and summary["turns_per_s"] == 6.0


def test_a_paired_difference_is_the_mean_over_the_same_questions_with_its_interval() -> None:
    mean, low, high = study.paired_difference([0, 0, 1, 1], [1, 1, 1, 1])
    assert mean == 0.5 and 0.0 <= low <= mean <= high <= 1.0
    assert study.paired_difference([1, 0], [1, 0]) == (0.0, 0.0, 0.0)
    rows = {"a": [{"recall_any@10": 0.0, "ndcg@10": 0.0}] * 3, "b": [{"recall_any@10": 1.0, "ndcg@10": 0.5}] * 3}
    assert study.differences(rows) == [["b - a", "+1.000 [+1.000, +1.000]", "+0.500 [+0.500, +0.500]"]]


def test_the_pipeline_study_recalls_through_the_store_with_query_vectors(tmp_path: Path) -> None:
    embedder = Asymmetric()
    rows = study.pipeline_study([conversation()], embedder, "fake", tmp_path)
    assert [row["qid"] for row in rows] == ["q0", "q1"]
    assert all(set(study.METRICS) <= set(row) and 0.0 <= row["ndcg@10"] <= 1.0 for row in rows)
    # the questions were embedded in their query form, once each, ahead of the recalls that read them
    assert sorted(embedder.queries) == ["what is the kitten called", "when is the violin lesson"]


def test_the_report_names_the_command_the_models_the_tables_and_the_timings() -> None:
    rows = [{"qid": "q", **{m: 0.5 for m in study.METRICS}}] * 2
    better = [{"qid": "q", **{m: 0.75 for m in study.METRICS}}] * 2
    cosine = {"paraphrase-minilm-l3": rows, "multilingual-e5-small": better}
    timings = {"paraphrase-minilm-l3": {"query_ms_p50": 6.2, "query_ms_p95": 9.0, "turns_per_s": 120.0}}
    text = study.render(
        ["--models", "paraphrase-minilm-l3"], ["- a fact."], cosine, {"paraphrase-minilm-l3": rows}, timings
    )
    assert "`python -m benchmarks.embedders --models paraphrase-minilm-l3`" in text and "- a fact." in text
    assert "| paraphrase-minilm-l3 | `paraphrase-MiniLM-L3-v2-onnx` | 0.500 | 0.500 | 0.500 | 0.500 | 2 |" in text
    assert "| multilingual-e5-small - paraphrase-minilm-l3 | +0.250 [+0.250, +0.250] |" in text
    assert "## Whole pipeline" in text and "| paraphrase-minilm-l3 | 6.2 | 9.0 | 120 |" in text
    assert "## Whole pipeline" not in study.render([], [], cosine, {}, {})

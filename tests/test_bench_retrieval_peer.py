"""benchmarks/retrieval_peer.py: what it hands CPersona, how it reads CPersona's answers, and its report.

Nothing here starts CPersona or an embedder: the inputs are made by hand.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import numpy as np

from benchmarks import harness as h
from benchmarks.datasets import Conversation, Question, SessionSummary, Turn
from benchmarks.peer import export_lines, write_cpersona_export
from benchmarks.retrieval_peer import (
    ALL, agreement_rows, build_parser, export_items, headline_rows, late_questions, metric_rows,
    our_episode_refs, pairs, parse_variant, peer_ref_table, question_row, ranking, render, systems_in,
)


class FakeEmbedder:
    """A vector per text from its length, so a test can tell which text a vector belongs to."""

    mode = "hash"
    model = "fake-4"

    def embed(self, texts):
        return np.stack([np.array([len(t), 1.0, 0.0, 0.0], dtype=np.float32) for t in texts])


def conversation() -> Conversation:
    turns = (
        Turn("D1:2", "second [Memory from x] turn ", "2023-05-08T13:56:01+00:00", "Bob", 1),
        Turn("D1:1", "first turn", "2023-05-08T13:56:00+00:00", "Alice", 1),
        Turn("D2:1", "third turn", "2023-05-20T10:00:00+00:00", "Alice", 2),
    )
    sessions = (
        SessionSummary(2, " Session two. ", "b c", "2023-05-20T10:00:00+00:00", "2023-05-20T10:00:00+00:00"),
        SessionSummary(1, "Session one.", "a", "2023-05-08T13:56:00+00:00", "2023-05-08T13:56:01+00:00"),
    )
    questions = (
        Question("q1", "what first?", "2023-06-01T00:00:00+00:00", ("D1:1",), "4", "x"),
        Question("q2", "what early?", "2023-05-10T00:00:00+00:00", ("D1:2",), "1", "y"),
    )
    return Conversation("conv-1", turns, sessions, questions)


def test_export_items_are_our_texts_in_time_order_with_msg_ids_speakers_and_vectors() -> None:
    records, episodes = export_items(conversation(), FakeEmbedder(), 16000)
    assert [r.msg_id for r in records] == ["D1:1", "D1:2", "D2:1"] and [r.id for r in records] == [1, 2, 3]
    assert records[1].content == "second turn"  # sanitised as our store keeps it: annotation gone, trimmed
    assert records[1].source == {"type": "User", "id": "Bob"}
    assert records[1].vector[0] == len("second turn")
    assert [e.summary for e in episodes] == ["Session one.", "Session two."]
    assert episodes[0].start_time == "2023-05-08T13:56:00+00:00" and episodes[0].keywords == "a"
    assert episodes[1].vector[0] == len("Session two.")


def test_export_lines_carry_msg_ids_and_episodes(tmp_path: Path) -> None:
    records, episodes = export_items(conversation(), FakeEmbedder(), 16000)
    lines = [json.loads(line) for line in export_lines(records, "conv-1", "2026-01-01T00:00:00+00:00", episodes)]
    header, body = lines[0], lines[1:]
    assert header["memory_count"] == 3 and header["episode_count"] == 2
    assert [line["_type"] for line in body] == ["memory"] * 3 + ["episode"] * 2
    assert body[0]["msg_id"] == "D1:1" and body[0]["source"] == {"type": "User", "id": "Alice"}
    episode = body[3]
    assert episode["summary"] == "Session one." and episode["end_time"] == "2023-05-08T13:56:01+00:00"
    assert episode["created_at"] == "2023-05-08 13:56:01" and episode["resolved"] is False
    vector = np.frombuffer(base64.b64decode(episode["embedding_b64"]), dtype="<f4")
    assert vector[0] == len("Session one.")
    paths = write_cpersona_export(records, tmp_path / "export", "conv-1", per_file=2, episodes=episodes)
    heads = [json.loads(p.read_text().splitlines()[0]) for p in paths]
    assert [(x["memory_count"], x["episode_count"]) for x in heads] == [(2, 0), (1, 2)]
    assert all(len(p.read_text().splitlines()) == 1 + x["memory_count"] + x["episode_count"]
               for p, x in zip(paths, heads))


def test_peer_refs_map_through_msg_id_and_summary() -> None:
    our_refs = {"D1:1": "mem:1", "D1:2": "mem:2", "D1:3": "mem:1"}  # D1:3 repeated D1:1's text
    our_episodes = our_episode_refs(conversation(), {1: "ep:7", 2: "ep:8"}, 16000)
    assert our_episodes == {"Session one.": "ep:7", "Session two.": "ep:8"}
    table = peer_ref_table([(10, "D1:2"), (11, "D1:1"), (12, ""), (13, "nobody")],
                           [(1, "Session two.\n"), (2, "Session three.")], our_refs, our_episodes)
    assert table == {"mem:10": "mem:2", "mem:11": "mem:1", "ep:1": "ep:8"}


def test_ranking_is_best_first_and_foreign_refs_stay_foreign() -> None:
    answer = {"messages": [{"ref": "mem:13", "content": "held"}, {"content": "[Profile] p"},
                           {"ref": "ep:1"}, {"ref": "mem:11"}]}
    table = {"mem:11": "mem:1", "ep:1": "ep:8"}
    assert ranking(answer, table) == ["mem:1", "ep:8", "peer:mem:13"]
    assert ranking(answer) == ["mem:11", "ep:1", "mem:13"]
    assert ranking({"messages": []}, table) == []


def test_late_questions_counts_questions_before_the_last_record() -> None:
    conv = conversation()
    assert late_questions(conv, conv.questions) == 1  # q2 comes before session 2


def rows_by_hand() -> list[dict]:
    question = conversation().questions
    gold = ["mem:1"]
    return [
        question_row("hash", "ours", "conv-1", question[0], "4 single-hop", gold, ["mem:1", "mem:2"], 0),
        question_row("hash", "cpersona", "conv-1", question[0], "4 single-hop", gold, ["mem:2", "mem:3"], 1),
        question_row("hash", "ours", "conv-1", question[1], "1 multi-hop", gold, ["mem:5", "mem:1"], 0),
        question_row("hash", "cpersona", "conv-1", question[1], "1 multi-hop", gold, ["mem:1", "mem:5"], 0),
    ]


def test_tables_compare_the_systems_per_category_and_agree_by_jaccard() -> None:
    rows = rows_by_hand()
    assert len(pairs(rows)) == 2
    lines = metric_rows(rows)
    assert [line[:3] for line in lines] == [["hash", ALL, "ours"], ["hash", ALL, "cpersona"],
                                            ["hash", "1 multi-hop", "ours"], ["hash", "1 multi-hop", "cpersona"],
                                            ["hash", "4 single-hop", "ours"], ["hash", "4 single-hop", "cpersona"]]
    # columns: recall_any@5, recall_any@10, recall_all@10, ndcg@10, mrr, rows, n
    assert lines[0][3:] == [1.0, 1.0, 1.0, lines[0][6], 0.75, 2.0, 2]
    assert lines[1][3:6] == [0.5, 0.5, 0.5] and lines[1][7] == 0.5
    assert lines[3][7] == 1.0 and lines[5][7] == 0.0
    agreement = agreement_rows(rows)
    assert agreement[0][:3] == ["hash", ALL, "ours"] and agreement[0][3] == (1 / 3 + 1.0) / 2
    assert agreement[0][5:] == [0.0, 2]  # no question ranked identically
    assert agreement[1][1:] == ["1 multi-hop", "ours", 1.0, 1.0, 0.0, 1]
    headline = headline_rows(rows)
    assert headline == [["hash", 1.0, 0.5, lines[0][6], lines[1][6], (1 / 3 + 1.0) / 2, 0.0, 2]]


def test_a_variant_of_ours_gets_its_own_lines_and_agreement() -> None:
    label, environ = parse_variant("CPERSONA_KEYWORD_COMMON_RATIO=1")
    assert label == "ours keyword_common_ratio=1" and environ == {"CPERSONA_KEYWORD_COMMON_RATIO": "1"}
    for bad in ("CPERSONA_NO_SUCH_THING=1", "KEYWORD_COMMON_RATIO", "CPERSONA_KEYWORD_COMMON_RATIO=lots"):
        try:
            parse_variant(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
    rows = rows_by_hand()
    question = conversation().questions[0]
    rows.append(question_row("hash", label, "conv-1", question, "4 single-hop", ["mem:1"], ["mem:2", "mem:3"], 0))
    assert systems_in(rows) == ["ours", label, "cpersona"]
    assert [line[2] for line in metric_rows(rows)[:3]] == ["ours", label, "cpersona"]
    mine = [line for line in agreement_rows(rows) if line[2] == label]
    assert mine[0][1] == ALL and mine[0][3:] == [1.0, 1.0, 1.0, 1]  # the one question, ranked as CPersona did
    assert len(pairs(rows, label)) == 1


def test_harness_settings_read_a_variant_environment(tmp_path: Path) -> None:
    assert h.settings_for("hash", "rrf", tmp_path / "x.db").keyword_common_ratio == 0.1
    variant = h.settings_for("hash", "rrf", tmp_path / "x.db", {"CPERSONA_KEYWORD_COMMON_RATIO": "1"})
    assert variant.keyword_common_ratio == 1.0 and variant.recall_mode == "rrf"


def test_render_writes_the_command_and_every_table() -> None:
    argv = ["--embedders", "hash", "--limit-conversations", "1"]
    args = build_parser().parse_args(argv)
    facts = {"install": "reused benchmarks/.peer", "models": {"hash": "fake-4"},
             "vectors": {"hash": {"texts": 2, "max_abs": 0.0, "min_cosine": 1.0}},
             "imports": [{"embedder": "hash", "conversation": "conv-1", "imported_memories": 3,
                          "skipped_memories": 0, "imported_episodes": 2, "skipped_episodes": 0, "rows": 5,
                          "mapped": 5}],
             "ours": [{"embedder": "hash", "conversation": "conv-1", "memories": 3, "episodes": 2, "duplicates": 0}],
             "late": 0}
    text = render(argv, args, [h.Dataset("locomo", [conversation()])], rows_by_hand(), facts)
    assert text.startswith("# Retrieval quality: ours against CPersona 2.6.14")
    assert "Command: `python -m benchmarks.retrieval_peer --embedders hash --limit-conversations 1`" in text
    assert "| hash | **all** | cpersona | 0.500 | 0.500 | 0.500 |" in text
    assert "| hash | 1.000 | 0.500 |" in text  # the headline: recall_any@10 ours, CPersona
    assert "5 of CPersona's 5 rows map to ours" in text and "CPERSONA_BLOCK_BUILD_ENABLED=false" in text
    assert "`hash`, cpersona: 2 of 2 answers hold fewer than 10 ranked rows; 1 carry held seats" in text
    assert "- `ours` returned exactly CPersona's rows in CPersona's order on 0 of 2 questions (`hash`)." in text
    assert ("`hash`, recall_any@10 question by question: ours finds evidence in its first 10 where CPersona finds "
            "none on 1 questions, the reverse on 0.") in text
    assert "## Agreement" in text and "| hash | 1 multi-hop | ours | 1.000 | 1.000 | 0.000 | 1 |" in text


def test_parser_defaults() -> None:
    args = build_parser().parse_args([])
    assert args.embedders == ["local", "hash"] and args.limit == 10 and isinstance(args, argparse.Namespace)
    assert args.out.name == "retrieval_peer.md"

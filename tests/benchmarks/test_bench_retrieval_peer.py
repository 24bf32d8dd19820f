"""benchmarks/retrieval_peer.py: what it hands CPersona, how it reads CPersona's answers, and its report.

Nothing here starts CPersona or an embedder: the inputs are made by hand.
"""

from __future__ import annotations

import argparse
import base64
import json
import sqlite3
from pathlib import Path

import anyio
import numpy as np

from benchmarks import harness as h
from benchmarks.datasets import Conversation, Question, SessionSummary, Turn
from benchmarks.peer import export_lines, peer_environment, planner_statistics, write_cpersona_export
from benchmarks.retrieval_peer import (
    ALL,
    PEER_DEFAULTS,
    PEER_VARIANTS,
    agreement_rows,
    build_parser,
    equal_cut,
    export_items,
    headline_rows,
    held_kinds,
    late_questions,
    metric_rows,
    our_episode_refs,
    pairs,
    parse_variant,
    peer_ref_table,
    question_row,
    ranking,
    render,
    setting_on,
    systems_in,
    wait_for_queue,
    wins,
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
    assert all(
        len(p.read_text().splitlines()) == 1 + x["memory_count"] + x["episode_count"] for p, x in zip(paths, heads)
    )


def test_peer_refs_map_through_msg_id_and_summary() -> None:
    our_refs = {"D1:1": "mem:1", "D1:2": "mem:2", "D1:3": "mem:1"}  # D1:3 repeated D1:1's text
    our_episodes = our_episode_refs(conversation(), {1: "ep:7", 2: "ep:8"}, 16000)
    assert our_episodes == {"Session one.": "ep:7", "Session two.": "ep:8"}
    table = peer_ref_table(
        [(10, "D1:2"), (11, "D1:1"), (12, ""), (13, "nobody")],
        [(1, "Session two.\n"), (2, "Session three.")],
        our_refs,
        our_episodes,
    )
    assert table == {"mem:10": "mem:2", "mem:11": "mem:1", "ep:1": "ep:8"}


def test_ranking_is_best_first_and_foreign_refs_stay_foreign() -> None:
    answer = {
        "messages": [
            {"ref": "mem:13", "content": "held"},
            {"content": "[Profile] p"},
            {"ref": "ep:1"},
            {"ref": "mem:11"},
        ]
    }
    table = {"mem:11": "mem:1", "ep:1": "ep:8"}
    assert ranking(answer, table) == ["mem:1", "ep:8", "peer:mem:13"]
    assert ranking(answer) == ["mem:11", "ep:1", "mem:13"]
    assert ranking({"messages": []}, table) == []


def test_held_rows_are_counted_by_the_signal_that_seated_them() -> None:
    answer = {
        "messages": [
            {"ref": "mem:9", "match_reason": {"signal": "block", "admission": "reservation"}},
            {"ref": "mem:8", "match_reason": {"signal": "block", "admission": "reservation"}},
            {"ref": "mem:7", "match_reason": {"signal": "keyword", "admission": "reservation"}},
            {"content": "no ref", "match_reason": {"admission": "reservation"}},
            {"ref": "mem:1", "match_reason": {"signal": "rrf"}},
        ]
    }
    assert held_kinds(answer) == {"block": 2, "keyword": 1} and held_kinds({}) == {}


def test_late_questions_counts_questions_before_the_last_record() -> None:
    conv = conversation()
    assert late_questions(conv, conv.questions) == 1  # q2 comes before session 2


def rows_by_hand() -> list[dict]:
    question = conversation().questions
    gold = ["mem:1"]
    return [
        question_row(
            "hash",
            "ours",
            "conv-1",
            question[0],
            "4 single-hop",
            gold,
            ["mem:1", "mem:2"],
            0,
            ["mem:1", "mem:2", "mem:4"],
        ),
        question_row("hash", "cpersona", "conv-1", question[0], "4 single-hop", gold, ["mem:2", "mem:3"], 1),
        question_row(
            "hash",
            "ours",
            "conv-1",
            question[1],
            "1 multi-hop",
            gold,
            ["mem:5", "mem:6"],
            0,
            ["mem:5", "mem:6", "mem:1"],
        ),
        question_row("hash", "cpersona", "conv-1", question[1], "1 multi-hop", gold, ["mem:1", "mem:5", "mem:7"], 1),
    ]


def test_tables_compare_the_systems_per_category_at_every_cut_with_the_rows_beside() -> None:
    rows = rows_by_hand()
    assert len(pairs(rows)) == 2
    lines = metric_rows(rows)
    assert [line[:3] for line in lines] == [
        ["hash", ALL, "ours"],
        ["hash", ALL, "cpersona"],
        ["hash", "1 multi-hop", "ours"],
        ["hash", "1 multi-hop", "cpersona"],
        ["hash", "4 single-hop", "ours"],
        ["hash", "4 single-hop", "cpersona"],
    ]
    # columns: recall_any@5, @10, recall_all@10, ndcg@10, rows@10, recall_any (returned), ndcg (returned), mrr,
    # rows, recall_any (equal), ndcg (equal), rows (equal), n
    ours, peer = lines[0][3:], lines[1][3:]
    assert ours[:3] == [0.5, 0.5, 0.5] and ours[4] == 2.0 and ours[5] == 0.5 and ours[8] == 2.0
    # equal cut: n = CPersona's rows (2, then 3); ours' 2-row answer is topped up from its wider one on q2
    assert ours[9] == 1.0 and ours[11] == 2.5 and ours[12] == 2
    assert peer[:3] == [0.5, 0.5, 0.5] and peer[8] == 2.5 and peer[9] == 0.5 and peer[11] == 2.5
    assert lines[3][3:6] == [1.0, 1.0, 1.0] and lines[5][3:6] == [0.0, 0.0, 0.0]
    agreement = agreement_rows(rows)
    assert agreement[0][:3] == ["hash", ALL, "ours"] and agreement[0][3] == (1 / 3 + 1 / 4) / 2
    assert agreement[0][5:] == [0.0, 2]  # no question ranked identically
    headline = headline_rows(rows)
    assert [line[:2] for line in headline] == [["hash", "ours"], ["hash", "cpersona"]]
    assert headline[0][2:5] == [0.5, ours[3], 2.0] and headline[0][8:] == [1.0, ours[10], 2.5, 2]
    assert headline[1][2] == 0.5 and headline[1][7] == 2.5 and headline[1][8] == 0.5


def test_the_equal_cut_trims_or_tops_up_and_wins_are_counted_per_cut() -> None:
    rows = rows_by_hand()
    assert equal_cut(rows[0], 1) == ["mem:1"]
    assert equal_cut(rows[2], 3) == ["mem:5", "mem:6", "mem:1"]  # topped up from the wider answer
    assert equal_cut(rows[3], 5) == ["mem:1", "mem:5", "mem:7"]  # a peer has only its answer
    matched = pairs(rows)
    assert wins(matched, "first 10") == (1, 1)  # q1: ours finds it, CPersona not; q2 the reverse
    assert wins(matched, "returned") == (1, 1)
    assert wins(matched, "equal") == (1, 0)  # at CPersona's 3 rows ours finds q2's evidence too


def test_a_variant_of_ours_gets_its_own_lines_and_agreement() -> None:
    label, environ = parse_variant("CPERSONA_KEYWORD_COMMON_RATIO=1")
    assert label == "ours keyword_common_ratio=1" and environ == {"CPERSONA_KEYWORD_COMMON_RATIO": "1"}
    label, environ = parse_variant(["CPERSONA_BLOCK_BUILD_ENABLED=true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED=true"])
    assert label == "ours blocks-on" and environ == {
        "CPERSONA_BLOCK_BUILD_ENABLED": "true",
        "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true",
    }
    for bad in (
        "CPERSONA_NO_SUCH_THING=1",
        "KEYWORD_COMMON_RATIO",
        "CPERSONA_KEYWORD_COMMON_RATIO=lots",
        "CPERSONA_BLOCK_RETRIEVAL_ENABLED=true",
    ):  # the last: retrieval on while the harness builds none
        try:
            parse_variant(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
    label = "ours keyword_common_ratio=1"
    rows = rows_by_hand()
    question = conversation().questions[0]
    rows.append(question_row("hash", label, "conv-1", question, "4 single-hop", ["mem:1"], ["mem:2", "mem:3"], 1))
    rows.append(
        question_row("hash", "cpersona blocks-off", "conv-1", question, "4 single-hop", ["mem:1"], ["mem:2"], 0)
    )
    assert systems_in(rows) == ["ours", label, "cpersona", "cpersona blocks-off"]
    assert [line[2] for line in metric_rows(rows)[:4]] == ["ours", label, "cpersona", "cpersona blocks-off"]
    mine = [line for line in agreement_rows(rows) if line[2] == label]
    assert mine[0][1] == ALL and mine[0][3:] == [1.0, 1.0, 1.0, 1]  # the one question, ranked as CPersona did
    assert len(pairs(rows, label)) == 1 and len(pairs(rows, "ours", "cpersona blocks-off")) == 1


def test_cpersona_runs_at_its_defaults_but_for_what_running_here_needs(tmp_path: Path) -> None:
    assert set(PEER_DEFAULTS) == {"CPERSONA_EMBEDDING_MODE", "CPERSONA_UPDATE_CHECK", "CPERSONA_OPERATING_CONTEXT"}
    assert all(why for _value, why in PEER_DEFAULTS.values())
    assert setting_on(PEER_DEFAULTS, "CPERSONA_BLOCK_BUILD_ENABLED")  # not set: its default, on
    assert setting_on(PEER_DEFAULTS, "CPERSONA_TASK_QUEUE_ENABLED")
    assert setting_on(PEER_DEFAULTS, "CPERSONA_CALIBRATE_ON_MODEL_CHANGE")  # its default: it calibrates at start
    assert not setting_on(PEER_VARIANTS["uncalibrated"][1], "CPERSONA_CALIBRATE_ON_MODEL_CHANGE")
    off = PEER_VARIANTS["blocks-off"][1]
    assert not setting_on(off, "CPERSONA_BLOCK_BUILD_ENABLED") and not setting_on(off, "CPERSONA_TASK_QUEUE_ENABLED")
    env = peer_environment(tmp_path / "c.db", "http://x/embed", tmp_path, PEER_DEFAULTS)
    assert env["CPERSONA_DB_PATH"] == str(tmp_path / "c.db") and "CPERSONA_BLOCK_BUILD_ENABLED" not in env


class FakeQueue:
    """get_queue_status answering the pending counts given, then 0."""

    def __init__(self, pending: list[int]) -> None:
        self.pending = list(pending)
        self.calls = 0

    async def call(self, tool: str, arguments: dict, timeout: float):
        assert tool == "get_queue_status"
        self.calls += 1
        return {"enabled": True, "pending": self.pending.pop(0) if self.pending else 0}, 1.0


def test_waiting_for_the_queue_needs_it_empty_on_several_polls_in_a_row() -> None:
    server = FakeQueue([2, 0, 1, 0])  # an empty poll between two tasks is not the end
    status = anyio.run(wait_for_queue, server, 10.0, 1.0, 3, 0.0)
    assert server.calls == 6 and status["first_pending"] == 2 and status["peak_pending"] == 2
    try:
        anyio.run(wait_for_queue, FakeQueue([5] * 1000), 0.05, 1.0, 3, 0.01)
    except TimeoutError:
        pass
    else:
        raise AssertionError("a queue that never empties did not time out")


def test_harness_settings_read_a_variant_environment(tmp_path: Path) -> None:
    assert h.settings_for("hash", "rrf", tmp_path / "x.db").keyword_common_ratio == 0.1
    variant = h.settings_for("hash", "rrf", tmp_path / "x.db", {"CPERSONA_KEYWORD_COMMON_RATIO": "1"})
    assert variant.keyword_common_ratio == 1.0 and variant.recall_mode == "rrf"


def test_render_writes_the_command_and_every_table() -> None:
    argv = ["--embedders", "hash", "--limit-conversations", "1", "--peer-variant", "blocks-off"]
    args = build_parser().parse_args(argv)
    facts = {
        "install": "reused benchmarks/.peer",
        "models": {"hash": "fake-4"},
        "vectors": {"hash": {"texts": 2, "max_abs": 0.0, "min_cosine": 1.0}},
        "variants": {
            "ours blocks-on": {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}
        },
        "peer_variants": ["defaults", "blocks-off"],
        "imports": [
            {
                "embedder": "hash",
                "conversation": "conv-1",
                "imported_memories": 3,
                "skipped_memories": 0,
                "imported_episodes": 2,
                "skipped_episodes": 0,
                "rows": 5,
                "mapped": 5,
                "system": "cpersona",
                "blocks": (2, 7),
                "pending_after": 0,
                "queue": {"seconds": 1.5, "polls": 5, "first_pending": 1, "peak_pending": 2},
            }
        ],
        "ours": [
            {
                "embedder": "hash",
                "conversation": "conv-1",
                "system": "ours",
                "memories": 3,
                "episodes": 2,
                "duplicates": 0,
                "block_tasks": 0,
                "block_build_s": 0.0,
                "blocks": (0, 0),
            },
            {
                "embedder": "hash",
                "conversation": "conv-1",
                "system": "ours blocks-on",
                "memories": 3,
                "episodes": 2,
                "duplicates": 0,
                "block_tasks": 5,
                "block_build_s": 0.2,
                "blocks": (2, 7),
            },
        ],
        "late": 0,
    }
    text = render(argv, args, [h.Dataset("locomo", [conversation()])], rows_by_hand(), facts)
    assert text.startswith("# Retrieval quality: ours against CPersona 2.6.14")
    assert (
        "Command: `python -m benchmarks.retrieval_peer --embedders hash --limit-conversations 1 "
        "--peer-variant blocks-off`"
    ) in text
    assert "| hash | **all** | cpersona | 0.500 | 0.500 | 0.500 |" in text
    assert "| hash | ours | 0.500 |" in text and "| hash | cpersona | 0.500 |" in text  # the headline
    assert "5 of CPersona's 5 rows map to ours" in text and "CPERSONA_BLOCK_BUILD_ENABLED=false" in text
    assert "it was empty after 1.5 s in all" in text and "7 embedded blocks over 2 records" in text
    assert "`ours blocks-on`: 5 tasks run by the replay in 0.2 s" in text
    assert "`hash`, cpersona: 2 of 2 answers hold fewer than 10 ranked rows; 2 carry held seats" in text
    assert "- `ours` returned exactly CPersona's rows in CPersona's order on 0 of 2 questions (`hash`)." in text
    assert (
        "`hash`, `ours` against `cpersona`, question by question, `ours` finds evidence where `cpersona` finds "
        "none: first 10: 1 questions, the reverse on 1; returned: 1 questions, the reverse on 1; equal: 1 "
        "questions, the reverse on 0."
    ) in text
    assert "the answers at limit 10 hold unequal numbers of rows (ours 2.00, cpersona 2.50" in text
    assert "## Agreement" in text and "| hash | 1 multi-hop | ours |" in text


def test_parser_defaults() -> None:
    args = build_parser().parse_args([])
    assert args.embedders == ["local", "hash"] and args.limit == 10 and isinstance(args, argparse.Namespace)
    assert args.out.name == "retrieval_peer.md" and args.peer_variant == [] and args.queue_timeout == 1800.0


def test_a_variant_reads_the_same_under_our_names_and_cpersonas() -> None:
    ours = parse_variant(["CUEDRECALL_BLOCK_BUILD_ENABLED=true", "CUEDRECALL_BLOCK_RETRIEVAL_ENABLED=true"])
    theirs = parse_variant(["CPERSONA_BLOCK_BUILD_ENABLED=true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED=true"])
    assert ours == theirs and ours[0].endswith("blocks-on")
    before = ["CUEDRECALL_EPISODE_CONTEXT_ENABLED=false", "CUEDRECALL_TIME_CONTEXT_ENABLED=false"]
    label, _env = parse_variant([*before, "CUEDRECALL_RECALL_DEPTH_FLOOR=0", "CUEDRECALL_RRF_K=60"])
    assert label.endswith("before-27")


def _plan(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? LIMIT 1",
            ("a", "", "m7"),
        ).fetchall()
    conn.close()
    return " ".join(str(r[-1]) for r in rows)


def test_planner_statistics_steer_the_msg_id_probe_to_its_index_and_drop_back_to_the_defaults(tmp_path: Path) -> None:
    """The import's msg_id probe reads the agent's rows through (agent_id, project_id) without statistics; with
    them it takes (agent_id, msg_id); dropped, the database plans as before and holds no statistics table."""
    db = tmp_path / "cpersona.db"
    with sqlite3.connect(db) as conn:  # CPersona's memories table and its two candidate indexes, in its order
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, agent_id TEXT, project_id TEXT, msg_id TEXT, "
            "created_at TEXT)"
        )
        conn.execute("CREATE INDEX idx_memories_msg_id ON memories(agent_id, msg_id)")
        conn.execute("CREATE INDEX idx_memories_isolation ON memories(agent_id, project_id, created_at DESC)")
        conn.executemany(
            "INSERT INTO memories (agent_id, project_id, msg_id, created_at) VALUES ('a', '', ?, ?)",
            [(f"m{i}", f"2024-01-01 00:{i % 60:02d}") for i in range(2000)],
        )
    conn.close()
    before = _plan(db)
    assert "idx_memories_isolation" in before  # every row of the agent, per record
    planner_statistics(db, keep=True)
    assert "idx_memories_msg_id" in _plan(db)
    planner_statistics(db, keep=False)
    assert _plan(db) == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlite_stat%'").fetchone() == (0,)
    conn.close()

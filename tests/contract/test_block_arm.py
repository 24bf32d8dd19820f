"""The block arm in recall: a long record's far passage is reached through its blocks and held by a block seat.

Rules checked: the arm's records the answer lacks are appended after the count
(at most 2, marked ``signal: block``, ``admission: reservation`` with the block
index), never a row already returned or one the caller holds, never another
agent's; the trace records the arm, its order and the reservation; with block
retrieval off the recall is what it was before blocks existed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from tests.conftest import make_settings, open_memory

A, B = "agent-a", "agent-b"
FILLER = " ".join(f"Paragraph {i} of the quarterly report covers routine figures and staffing." for i in range(60))
ENGLISH = FILLER + " The lighthouse keeper Ingrid repaired the foghorn on the northern pier."
JAPANESE = (
    "。".join(f"第{i}段落は四半期報告の定例の数字と人員について述べる" for i in range(60))
    + "。灯台守のイングリッドは北の桟橋の霧笛を修理した。"
)
SHORT = [
    "weekly groceries: milk, eggs and bread",
    "the car needs new tyres before winter",
    "call the plumber about the kitchen sink",
    "book tickets for the concert in March",
]


def blocks_memory(path: Path, **overrides: Any) -> Memory:
    settings = make_settings(block_build_enabled=True, block_retrieval_enabled=True, **overrides)
    return open_memory(path, settings=settings, background=False)


def fill(memory: Memory, agent: str = A, long_texts: tuple[str, ...] = (ENGLISH,)) -> list[str]:
    refs = [memory.store(agent_id=agent, content=text)["ref"] for text in long_texts]
    for text in SHORT:
        memory.store(agent_id=agent, content=text)
    assert memory.blocks is not None
    memory.blocks.drain()
    return refs


def seats(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in answer["messages"] if m.get("match_reason", {}).get("signal") == "block"]


@pytest.mark.parametrize(
    ("text", "query"),
    [(ENGLISH, "lighthouse keeper Ingrid foghorn northern pier"), (JAPANESE, "灯台守のイングリッドは霧笛を修理")],
    ids=["english", "japanese"],
)
def test_a_passage_far_into_a_long_record_is_held_by_a_block_seat(tmp_path: Path, text: str, query: str) -> None:
    with blocks_memory(tmp_path / "b.db") as memory:
        memory.calibration.set(A, "cosine", 0.99)  # the whole record's vector alone cannot pass
        memory.calibration.set(A, "rrf", 1.0)
        (long_ref,) = fill(memory, long_texts=(text,))
        answer = memory.recall(agent_id=A, query=query, trace=True)
        held = seats(answer)
        assert [m["ref"] for m in held] == [long_ref]
        reason = held[0]["match_reason"]
        assert reason["admission"] == "reservation" and reason["block"] > 0 and reason["order"] in ("vector", "hamming")
        trace = answer["trace"]
        assert long_ref in [hit["ref"] for hit in trace["arms"]["block"]]
        assert {"ref": long_ref, "kind": "block"} in trace["reservation"]
        assert trace["block"]["order"] == reason["order"]
    with open_memory(tmp_path / "b.db") as off:  # block retrieval off: the record is not returned
        off.calibration.set(A, "cosine", 0.99)
        off.calibration.set(A, "rrf", 1.0)
        assert long_ref not in [m.get("ref") for m in off.recall(agent_id=A, query=query)["messages"]]


def test_block_seats_are_at_most_two_and_never_a_row_the_answer_holds(tmp_path: Path) -> None:
    texts = tuple(FILLER + f" The lighthouse keeper Ingrid repaired foghorn number {i}." for i in range(4))
    with blocks_memory(tmp_path / "b.db") as memory:
        memory.calibration.set(A, "cosine", 0.0)  # everything passes: the answer may already hold long rows
        fill(memory, long_texts=texts)
        answer = memory.recall(agent_id=A, query="lighthouse keeper Ingrid foghorn", limit=2)
        refs = [m["ref"] for m in answer["messages"] if "ref" in m]
        held = [m["ref"] for m in seats(answer)]
        assert len(held) <= 2 and len(refs) == len(set(refs))
        answered = [m["ref"] for m in answer["messages"] if m.get("match_reason", {}).get("signal") != "block"]
        assert not set(held) & set(answered)
        assert answer["messages"][-1]["match_reason"]["signal"] != "block"  # seats come first: the last is best


def test_a_block_seat_never_holds_another_agents_record_or_one_the_caller_holds(tmp_path: Path) -> None:
    with blocks_memory(tmp_path / "b.db") as memory:
        memory.calibration.set(A, "cosine", 0.99)
        memory.calibration.set(A, "rrf", 1.0)
        (other,) = fill(memory, agent=B)
        (mine,) = fill(memory, agent=A)
        query = "lighthouse keeper Ingrid foghorn northern pier"
        assert [m["ref"] for m in seats(memory.recall(agent_id=A, query=query))] == [mine]
        held = seats(memory.recall(agent_id=A, query=query, exclude_contents=[ENGLISH]))
        assert held == [] and other != mine


def test_a_cue_never_moves_a_block_seat_and_its_own_seats_follow_it(tmp_path: Path) -> None:
    with blocks_memory(tmp_path / "b.db") as memory:
        memory.calibration.set(A, "cosine", 0.99)
        memory.calibration.set(A, "rrf", 1.0)
        (long_ref,) = fill(memory)
        query = "lighthouse keeper Ingrid foghorn northern pier"
        cue = {"after": "2025-01-01", "before": "2026-01-01", "confidence": "vague"}
        answer = memory.recall(agent_id=A, query=query, time_cue=cue, trace=True)
        kinds = [item["kind"] for item in answer["trace"]["reservation"]]
        assert kinds[0] == "block" and kinds == sorted(kinds, key=("block", "cue").index)
        assert long_ref in [m["ref"] for m in seats(answer)]
